"""``expkit labs``: list the labs and run them into an HTML + JSON report."""

from __future__ import annotations

from pathlib import Path

import typer

from expkit.cli.output import emit_json

app = typer.Typer(help="Labs: every claim of the field guide measured on this machine.", no_args_is_help=True)


@app.command("list")
def list_labs(json_out: bool = typer.Option(False, "--json", help="Print the labs as JSON.")) -> None:
    """List the labs with the claims they cover and the seed's figures.

    Example:

      expkit labs list
    """
    from expkit.labs.registry import all_labs

    labs = all_labs()
    if json_out:
        emit_json([{"id": lab.id, "title": lab.title, "claims": lab.claims, "seed": lab.seed_figures} for lab in labs])
        return
    from rich.table import Table

    from expkit.render.console import out_console

    table = Table("lab", "claims", "title", "seed figures")
    for lab in labs:
        seed_figures = "; ".join(s.text for s in lab.seed_figures) or "(behaviour)"
        table.add_row(lab.id, ", ".join(lab.claims), lab.title, seed_figures)
    out_console().print(table)


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
    import sys

    # labs build their models, tokenizers and data locally: never wait on a Hugging Face Hub timeout
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    # torch 2.13's kineto prints two "USDT ... profiler_start/stop" lines per profiled step to stderr;
    # the labs profile many steps. Level 6 silences them (set KINETO_LOG_LEVEL yourself to see them).
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")

    from expkit.labs.registry import select_labs
    from expkit.labs.runner import check_lab_device, run_labs
    from expkit.render.console import progress_steps

    check_lab_device(device)  # before any lab runs: a refusal writes no report
    labs = select_labs(ids or [])
    with progress_steps(len(labs), "labs") as advance:
        report = run_labs(
            labs, out_dir=out, quick=quick, seed=seed, device=device, on_start=lambda i, lab: advance(lab.id)
        )
    failed = [r.id for r in report.results if r.status == "failed"]
    if json_out:
        emit_json(report)
    else:
        from expkit.render.report import format_value

        for r in report.results:
            if r.status == "failed":
                print(f"{r.id:8s} FAILED ({r.elapsed_s:.1f} s)")
                continue
            for m in r.measurements:
                if m.seed is not None or m.verdict is not None:
                    seed_text = f" (seed: {m.seed.text})" if m.seed is not None else ""
                    verdict = f" -> {m.verdict}" if m.verdict is not None else ""
                    rule = f" [rule: {m.rule}]" if m.rule is not None else ""
                    print(f"{r.id:8s} {m.label}: {format_value(m.value, m.unit)}{seed_text}{verdict}{rule}")
        from expkit.render.report import verdict_counts

        counts = verdict_counts(report.results)
        print("verdicts: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        print(f"report: {(out / 'index.html').resolve()}", file=sys.stderr)
    if failed:
        print(f"labs failed: {', '.join(failed)} (see the report)", file=sys.stderr)
        raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="labs")
