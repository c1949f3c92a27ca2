"""``expkit check``: compare an operator with a reference to floating-point precision."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import typer

from expkit.cli.output import emit_json

if TYPE_CHECKING:
    from expkit.check.against import Backend

app = typer.Typer(
    help="Trust your ops: compare an operator with a reference at dtype tolerances.", no_args_is_help=True
)

_DTYPE_HELP = "float32 or float64 (also float16, bfloat16 for torch-only checks)."


def _parse_shape(text: str) -> tuple[int, ...]:
    from expkit.errors import UsageError

    shown = text if len(text) <= 60 else text[:57] + "..."
    try:
        dims = tuple(int(p) for p in text.replace("x", ",").split(",") if p.strip())
    except ValueError:
        raise UsageError(
            f"--shape {shown!r} is not a comma-separated list of sizes", hint="e.g. --shape 2,64,32"
        ) from None
    if not dims or any(d <= 0 for d in dims):
        raise UsageError(f"--shape {shown!r} needs positive sizes", hint="e.g. --shape 2,64,32")
    return dims


def _parse_backend(value: str, option: str) -> Backend:
    """``value`` of ``option`` as a backend: numpy or torch."""
    from expkit.errors import UsageError

    if value not in ("numpy", "torch"):
        raise UsageError(f"{option} {value!r} is not a backend", hint="use numpy or torch")
    return cast("Backend", value)


def _print_report(report, title: str) -> None:  # noqa: ANN001 - AgainstReport, imported lazily
    from rich.table import Table

    from expkit.render.console import out_console

    t = Table("shapes", "dtype", "max abs error", "max rel error", "tolerance", "worst index", "ok", title=title)
    for c in report.cases:
        rows = [("out", c.output)] + [(f"grad {i}", g) for i, g in enumerate(c.grads)]
        for label, r in rows:
            shapes = " ".join("x".join(map(str, s)) for s in c.shapes)
            t.add_row(
                f"{shapes} ({label})",
                c.dtype,
                f"{r.max_abs_error:.3g}",
                f"{r.max_rel_error:.3g}",
                f"{r.tolerance:.3g} ({r.tolerance_source})",
                str(r.worst_index),
                "yes" if r.ok else f"NO: {r.reason}",
            )
    con = out_console()
    if not con.is_terminal:  # a pipe or a file: do not squeeze the table into 80 columns
        con.width = 200
    con.print(t)


@app.command("attention")
def attention(
    dtype: str = typer.Option("float32", "--dtype", help="float32 or float64."),
    shape: str = typer.Option("2,64,32", "--shape", help="B,T,D or B,H,T,D of q, k and v."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random q, k, v."),
    json_out: bool = typer.Option(False, "--json", help="Print max_abs_error, tolerance and ok as JSON."),
) -> None:
    """Numpy causal attention (expkit.check.reference) vs torch's scaled_dot_product_attention.

    Exit 1 when the max error is over the dtype's tolerance.

    Examples:

      expkit check attention                         # float32, tolerance ~1e-6

      expkit check attention --dtype float64 --shape 4,8,128,64 --json
    """
    from expkit.errors import CheckFailed, require

    require("torch")  # the light install has `check op --backend numpy`; SDPA is torch's
    from expkit.check.attention import check_attention

    dims = _parse_shape(shape)
    out = check_attention(shape=dims, dtype=dtype, seed=seed)
    if json_out:
        emit_json(out)
    else:
        print(
            f"numpy causal attention vs torch SDPA, shape {','.join(map(str, dims))} {dtype}: "
            f"max abs error {out.max_abs_error:.3g} (tolerance {out.tolerance:.3g} = atol {out.atol:g} + "
            f"rtol {out.rtol:g} * max|ref|): {'ok' if out.ok else 'OVER TOLERANCE'}"
        )
    if not out.ok:
        raise CheckFailed(f"attention: {out.reason}", hint=f"max abs error {out.max_abs_error:.3g}")


@app.command("op")
def op(
    fn: str = typer.Argument(..., help="The operator under test, PKG.MOD:FN."),
    reference: str = typer.Option(..., "--reference", "-r", help="The reference, PKG.MOD:FN."),
    shape: list[str] = typer.Option(
        ...,
        "--shape",
        help="Input shapes of one case, ';' between arguments (e.g. 4,8 or '4,8;8,16'); repeat for more cases.",
    ),
    dtype: list[str] = typer.Option(["float32", "float64"], "--dtype", help=_DTYPE_HELP + " Repeatable."),
    backend: str = typer.Option("torch", "--backend", help="What FN takes: torch tensors or numpy arrays."),
    reference_backend: str = typer.Option("torch", "--reference-backend", help="What the reference takes."),
    grad: bool = typer.Option(False, "--grad", help="Also compare input gradients (both backends torch)."),
    rtol: float = typer.Option(None, "--rtol", help="Override the dtype's default rtol."),
    atol: float = typer.Option(None, "--atol", help="Override the dtype's default atol."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random inputs."),
    json_out: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
) -> None:
    """Check a user's operator FN against a REFERENCE on the same seeded inputs. Exit 1 if over tolerance.

    Examples:

      expkit check op mypkg.ops:fused_softmax --reference torch:softmax --shape 4,128

      expkit check op mypkg.ops:my_matmul --reference torch:matmul --shape '4,8;8,16' --grad --json

      expkit check op mypkg.ops:attn --reference expkit.check.reference:causal_attention \\
          --reference-backend numpy --shape '2,16,8;2,16,8;2,16,8'
    """
    from dataclasses import replace

    from expkit.check.against import against, load_callable
    from expkit.errors import CheckFailed, require

    fn_backend = _parse_backend(backend, "--backend")
    ref_backend = _parse_backend(reference_backend, "--reference-backend")
    if "torch" in (fn_backend, ref_backend) or grad:
        require("torch")  # numpy on both sides runs on the light install

    cases = [[_parse_shape(s) for s in case.split(";")] for case in shape]
    rep = against(
        load_callable(fn),
        load_callable(reference),
        shapes=cases,
        dtypes=dtype,
        seed=seed,
        grad=grad,
        fn_backend=fn_backend,
        reference_backend=ref_backend,
        rtol=rtol,
        atol=atol,
    )
    rep = replace(rep, fn=fn, reference=reference)  # the names as the user wrote them
    if json_out:
        emit_json(rep)
    else:
        _print_report(rep, f"{fn} vs {reference}")
    if not rep.ok:
        bad = next(c for c in rep.cases if not c.ok)
        raise CheckFailed(f"{fn} differs from {reference} at shapes {bad.shapes} {bad.dtype}: {bad.output.reason}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="check")
