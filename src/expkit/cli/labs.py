"""``expkit labs``: list the labs and run them into an HTML + JSON report."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.output import emit
from expkit.errors import CheckFailed

app = typer.Typer(help="Labs: every claim of the field guide measured on this machine.", no_args_is_help=True)


@app.command("list")
def list_labs(json_out: bool = typer.Option(False, "--json", help="Print the labs as JSON.")) -> None:
    """List the labs with the claims they cover and the seed's figures.

    Example:

      expkit labs list
    """
    from expkit.labs.registry import all_labs
    from expkit.render.labs import render_lab_list

    emit(all_labs(), json_out, human=render_lab_list)


@app.command("run")
def run(
    ids: list[str] = typer.Argument(None, help="Lab or claim IDs (default: all)."),
    out: Path = typer.Option(Path("report"), "--out", "-o", help="Report directory."),
    quick: bool = typer.Option(False, "--quick", help="Small budget: every lab, all together under ~2 min."),
    seed: int = typer.Option(0, "--seed", help="Root seed for the labs' randomness."),
    device: str = typer.Option(
        "cpu", "--device", help="cpu, or cuda to run the labs' CUDA paths (exit 2 when this machine has no CUDA GPU)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print results.json to stdout at the end."),
) -> None:
    """Run labs and write OUT/index.html and OUT/results.json (written after every lab).

    Exit 1 when a lab failed (the report shows it and the other labs still ran).

    Examples:

      expkit labs run --out report

      expkit labs run C2.2 --quick --json

      expkit labs run --device cuda --out report-gpu
    """
    import os

    # labs build their models, tokenizers and data locally: never wait on a Hugging Face Hub timeout
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    # torch 2.13's kineto prints two "USDT ... profiler_start/stop" lines per profiled step to stderr;
    # the labs profile many steps. Level 6 silences them (set KINETO_LOG_LEVEL yourself to see them).
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")

    from expkit.cli.flags import fields_as_flags
    from expkit.labs.registry import select_labs
    from expkit.labs.runner import check_lab_device, run_labs
    from expkit.render.console import progress_steps
    from expkit.render.labs import render_lab_run

    with fields_as_flags({"device": "--device"}):
        check_lab_device(device)  # before any lab runs: a refusal writes no report
    labs = select_labs(ids or [])
    with progress_steps(len(labs), "labs") as advance:
        report = run_labs(
            labs, out_dir=out, quick=quick, seed=seed, device=device, on_start=lambda i, lab: advance(lab.id)
        )
    emit(report, json_out, human=lambda r: render_lab_run(r, html_path=out / "index.html"))
    if report.failed_ids:
        raise CheckFailed(f"labs failed: {', '.join(report.failed_ids)} (see the report)")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="labs")
