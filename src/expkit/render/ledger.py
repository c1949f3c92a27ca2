"""The memory ledger for the terminal: header, counts, one row per line with its formula, the peak, the
fits verdict, approximations; the conventions side by side; replica measurements; an OOM reconciled."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from expkit.memory.activation_fit import ActivationFit
    from expkit.memory.conventions import ConventionComparison
    from expkit.memory.ledger import Ledger
    from expkit.memory.oom import OomExplanation
    from expkit.memory.report import MemoryReport
    from expkit.models.counting import ParameterCount

__all__ = ["render_memory_report"]

_GIB = 2**30


def _gib(n: int | float | None) -> str:
    return "-" if n is None else f"{n / _GIB:,.2f} GiB"


def _ledger(led: Ledger, count: ParameterCount | None) -> None:
    from rich.table import Table

    from expkit.render.console import out_console

    con = out_console()
    head = (
        f"{led.model}: {led.mode} {led.method}, {led.precision}, "
        + (
            f"optimizer {led.optimizer}, batch {led.batch} x seq {led.seq}, grad-ckpt {led.grad_ckpt}, "
            f"attention {led.attention}, "
            if led.mode == "train"
            else f"batch {led.batch}, context {led.seq}, "
        )
        + f"{led.gpus} GPU(s), shard {led.shard}, convention {led.convention}"
    )
    con.print(head, markup=False)
    if count is not None:
        con.print(
            f"parameters: {led.total_params:,} total, {led.trainable_params:,} trainable "
            f"({100 * led.trainable_fraction:.2f}% of the base"
            + (f"; {100 * count.trainable_fraction_of_all:.2f}% of base + adapters" if count.adapter_params else "")
            + f"); {count.counted_by}",
            markup=False,
        )
        con.print(
            f"active per token: {count.active_params:,} ({count.active_params_with_embedding:,} with the "
            "input embedding)" + (f"; towers {count.tower_params:,}" if count.tower_params else ""),
            markup=False,
        )
        if len(count.layer_kinds) > 1 or any("MoE" in k.label for k in count.layer_kinds):
            for k in count.layer_kinds:
                con.print(f"  {k.layers} x {k.label}: {k.params_per_layer:,} params per layer", markup=False)
    table = Table(title="bytes per GPU (GiB = 2^30 B)")
    table.add_column("line")
    table.add_column("GiB", justify="right")
    table.add_column("formula")
    for ln in led.lines:
        table.add_row(ln.name + (" (estimate)" if ln.estimate else ""), f"{ln.bytes / _GIB:,.3f}", ln.formula)
    table.add_row("sum of lines (per GPU)", f"{led.per_gpu_bytes / _GIB:,.3f}", "every block at once")
    con.print(table)
    con.print(f"predicted peak per GPU: {_gib(led.peak_bytes)} at {led.peak_phase}", markup=False)
    if led.gpus > 1:
        con.print(f"all {led.gpus} GPUs together: {_gib(led.total_bytes)}")
    if led.fits is not None:
        verdict = "fits" if led.fits else "does NOT fit"
        con.print(f"{led.gpu} ({_gib(led.gpu_memory_bytes)}): {verdict}", markup=False)
    approx = set(led.approximations)
    for note in led.notes:
        if note not in approx:
            con.print(f"note: {note}", markup=False)
    for note in led.approximations:
        con.print(f"approximation: {note}", markup=False)
    for note in led.assumptions:
        con.print(f"assumed: {note}", markup=False)


def _comparison(cmp: ConventionComparison) -> None:
    from rich.table import Table

    from expkit.render.console import out_console

    table = Table(title="the same run under each tool's convention (GiB per GPU)")
    table.add_column("line")
    for c in cmp.conventions:
        table.add_column(c, justify="right")
    for row in cmp.rows:
        cells = ["-" if v is None else f"{v / _GIB:,.2f}" for v in row.bytes_by_convention.values()]
        table.add_row(row.line, *cells)
    table.add_row("total", *[f"{cmp.per_gpu_bytes[c] / _GIB:,.2f}" for c in cmp.conventions])
    if cmp.model_state_bytes_per_param:
        table.add_row(
            "model state B/param (1 GPU)", *[f"{cmp.model_state_bytes_per_param[c]:.1f}" for c in cmp.conventions]
        )
    con = out_console()
    con.print(table)
    con.print("why they differ:")
    for row in cmp.rows:
        con.print(f"  {row.line}: {row.why}", markup=False)


def _fit(fit: ActivationFit) -> None:
    from expkit.render.console import out_console

    con = out_console()
    con.print(f"activations measured on replicas ({fit.note}):", markup=False)
    for n, b in zip(fit.layers, fit.measured_bytes, strict=True):
        con.print(f"  {n} layer(s): {b / 2**20:,.2f} MiB saved for backward")
    con.print(
        f"  fit: {fit.per_layer_bytes / 2**20:,.3f} MiB per layer + {fit.fixed_bytes / 2**20:,.3f} MiB fixed "
        f"(largest residual {fit.residual_bytes:,.0f} B)"
    )
    con.print(
        f"  extrapolated to {fit.num_layers} layers, {fit.batch} x {fit.seq}: {_gib(fit.extrapolated_bytes)}; "
        f"ledger formula {_gib(fit.formula_bytes)}; Korthikanti 34sbhL {_gib(fit.korthikanti_bytes)}"
    )
    if fit.ckpt_extrapolated_bytes is not None:
        con.print(
            f"  with gradient checkpointing: {_gib(fit.ckpt_extrapolated_bytes)}, forward+backward time x"
            f"{fit.ckpt_time_ratio:.2f} (measured here)"
        )
    if fit.cached:
        con.print("  (from the cache)")


def _oom(ex: OomExplanation) -> None:
    from expkit.render.console import out_console

    con = out_console()
    con.print(f"OOM: {ex.reason}", markup=False)
    for i, r in enumerate(ex.remedies, 1):
        fits = "" if r.fits is None else (", fits" if r.fits else ", still too big")
        con.print(
            f"  {i}. {r.name} ({r.option}): saves {_gib(r.savings_bytes)} -> peak {_gib(r.peak_bytes)}"
            f"{fits}; cost: {r.cost}",
            markup=False,
        )


def render_memory_report(report: MemoryReport) -> None:
    """Print an ``expkit.memory.report.MemoryReport`` for a person."""
    _ledger(report.ledger, report.parameters)
    if report.conventions is not None:
        _comparison(report.conventions)
    if report.measured is not None:
        _fit(report.measured)
    if report.oom is not None:
        _oom(report.oom)
