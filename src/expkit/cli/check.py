"""``expkit check``: compare an operator with a reference to floating-point precision."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import typer

from expkit.cli.output import emit

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
    from expkit.errors import require

    require("torch")  # the light install has `check op --backend numpy`; SDPA is torch's
    from expkit.check.attention import check_attention
    from expkit.render.check import render_attention

    out = check_attention(shape=_parse_shape(shape), dtype=dtype, seed=seed)
    emit(out, json_out, human=render_attention)
    out.raise_if_failed()


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
    from expkit.check.against import AgainstQuery, check_op
    from expkit.errors import require
    from expkit.render.check import render_against

    fn_backend = _parse_backend(backend, "--backend")
    ref_backend = _parse_backend(reference_backend, "--reference-backend")
    if "torch" in (fn_backend, ref_backend) or grad:
        require("torch")  # numpy on both sides runs on the light install

    query = AgainstQuery(
        shapes=[[_parse_shape(s) for s in case.split(";")] for case in shape],
        dtypes=dtype,
        seed=seed,
        grad=grad,
        fn_backend=fn_backend,
        reference_backend=ref_backend,
        rtol=rtol,
        atol=atol,
    )
    rep = check_op(fn, reference, query)
    emit(rep, json_out, human=render_against)
    rep.raise_if_failed()


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="check")
