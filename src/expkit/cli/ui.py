"""``expkit ui``: a local, read-only web view of the run store, a sweep's grid, comparisons, evals and labs."""

from __future__ import annotations

from pathlib import Path

import typer


def _is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP literal; anything else that is not an IP literal is refused (no name is
    looked up: a bind address is given as an address)."""
    import ipaddress

    from expkit.errors import UsageError

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise UsageError(
            f"--host {host!r} is not an IP address", hint="give an address such as 127.0.0.1, ::1 or 0.0.0.0"
        ) from None


def ui(
    store: Path = typer.Option(None, "--store", help="Run store directory (default $EXPKIT_STORE or ./runs)."),
    port: int = typer.Option(8765, "--port", help="TCP port (0: any free port; the URL is printed)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind. Anything but loopback needs --expose."),
    expose: bool = typer.Option(
        False, "--expose", help="Allow a --host other than loopback: anyone who can reach it reads the whole store."
    ),
    open_browser: bool = typer.Option(False, "--open", help="Open the runs page in the default browser."),
    evals: list[str] = typer.Option(None, "--evals", help="Eval result files for the evals page (repeat)."),
    evals_from: str = typer.Option(
        "items",
        "--evals-from",
        help="Reader of --evals, as `stats table --from`; or leaderboard: one per-item file per model, read and "
        "ranked as `stats leaderboard` does (MMLU-Pro's files need nothing else).",
    ),
    report: Path = typer.Option(None, "--report", help="A labs report folder (expkit labs run --out DIR)."),
) -> None:
    """Serve a read-only web view: runs (sortable, filtered, paged), a run's records, curves, doctor findings
    and log, comparisons with the verdict `expkit compare` gives, sweeps, evals and the labs report. Running
    runs update live. GET only; nothing outside the store, the given files and the package's assets is served.

    Examples:

      expkit ui                                   # ./runs at http://127.0.0.1:8765

      expkit ui --store runs --port 0 --open

      expkit ui --evals results.jsonl --report report

      expkit ui --evals-from leaderboard --evals outputs/*.json.gz

      expkit ui --host 0.0.0.0 --expose           # a shared machine: anyone on the network can read the store
    """
    from expkit.errors import UsageError, require
    from expkit.render.ui import say_exposed, say_serving
    from expkit.runs.store import resolve_store

    require("starlette", extra="ui")
    require("uvicorn", extra="ui")
    from expkit.ui import UiConfig, serve

    loopback = _is_loopback(host)
    if not loopback and not expose:
        raise UsageError(
            f"--host {host} would let other machines read the run store",
            hint="add --expose to serve beyond this machine, or leave --host at 127.0.0.1",
        )
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is not a TCP port", hint="use 0 to 65535 (0: any free port)")
    if report is not None and not (report / "results.json").is_file():
        raise UsageError(f"--report {report} has no results.json", hint="write one with `expkit labs run --out DIR`")
    from expkit.ui.evals import EvalSources

    config = UiConfig(store=resolve_store(store), evals=EvalSources(evals_from, tuple(evals or ())), report=report)
    if not loopback:
        say_exposed(host, config.store)
    serve(
        config,
        host=host,
        port=port,
        open_browser=open_browser,
        on_ready=say_serving,
    )


def register(root: typer.Typer) -> None:
    root.command("ui")(ui)
