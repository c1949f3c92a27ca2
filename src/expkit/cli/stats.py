"""``expkit stats``: intervals, and (later) paired comparison, power and eval tables."""

from __future__ import annotations

import typer

from expkit.stats.intervals import METHODS

app = typer.Typer(help="Judge results honestly: intervals for accuracy on n items.", no_args_is_help=True)


@app.command("ci")
def ci(
    correct: int = typer.Option(..., "--correct", "-k", help="Number of correct items."),
    n: int = typer.Option(..., "--n", "-n", help="Number of items."),
    method: str = typer.Option("wilson", "--method", "-m", help=f"One of: {', '.join(METHODS)}."),
    level: float = typer.Option(0.95, "--level", help="Confidence level in (0, 1)."),
    json_out: bool = typer.Option(False, "--json", help="Print the interval as JSON."),
) -> None:
    """Confidence interval for an accuracy of CORRECT out of N.

    Examples:

      expkit stats ci --correct 40 --n 80 --method wald       # the seed's +-10.96 points

      expkit stats ci -k 73 -n 100 --json
    """
    from expkit.stats.intervals import proportion_interval

    iv = proportion_interval(correct, n, method=method, level=level)
    if json_out:
        from expkit.render.jsonout import dumps

        print(dumps(iv))
        return
    print(
        f"{iv.k}/{iv.n} = {iv.estimate:.4f}   {iv.level:.0%} {iv.method} interval "
        f"[{iv.low:.4f}, {iv.high:.4f}]   half-width {iv.half_width:.4f} (+-{100 * iv.half_width:.2f} points)"
    )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="stats")
