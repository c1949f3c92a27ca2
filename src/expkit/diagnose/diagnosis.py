"""What ``expkit why`` does with a log, minus the printing: clean it (escape sequences, per-line
prefixes), parse the traceback, explain it; an NCCL watchdog timeout is explained with or without a
traceback."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from expkit.diagnose.collective import NcclTimeout, parse_nccl_timeout
from expkit.diagnose.explanations import Explanation, explain
from expkit.diagnose.logtext import clean_log_text
from expkit.diagnose.tracebacks import Traceback, parse_traceback

__all__ = ["Diagnosis", "diagnose_source", "diagnose_text", "explain_nccl_timeout"]


@dataclass(frozen=True)
class Diagnosis:
    """What ``expkit why`` reports: the parsed traceback and its explanation. ``log_lines_cleaned``:
    lines whose escape sequences or logger prefixes were removed before parsing."""

    traceback: Traceback
    explanation: Explanation
    log_lines_cleaned: int = 0

    @property
    def found(self) -> bool:
        """Whether there was anything to explain (a traceback, or a collective timeout without one)."""
        return bool(self.traceback.exceptions) or self.explanation.kind == "nccl_timeout"


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.3g} s" if ms < 120_000 else f"{ms / 60_000:.3g} min"


def explain_nccl_timeout(t: NcclTimeout) -> Explanation:
    """What an NCCL watchdog timeout means: which ranks waited in which collective, for how long, and
    where to look (the rank that never joined).

    References: PyTorch ProcessGroupNCCL (the watchdog, TORCH_NCCL_ASYNC_ERROR_HANDLING, the flight
    recorder TORCH_NCCL_TRACE_BUFFER_SIZE / TORCH_NCCL_DUMP_ON_TIMEOUT); NCCL's NCCL_DEBUG=INFO.
    """
    f = t.first
    ranks = ", ".join(str(r.rank) for r in t.reports)
    size = f" of {f.numel_in:,} element{'s' if f.numel_in != 1 else ''}" if f.numel_in is not None else ""
    parts = [
        f"Rank(s) {ranks} waited {_seconds(f.ran_for_ms)} in collective #{f.seq_num} ({f.op}{size}); the "
        f"limit is Timeout(ms)={f.timeout_ms} ({_seconds(f.timeout_ms)}). A collective completes only when every "
        "rank of the group calls it: some rank never did."
    ]
    if not t.ranks_agree:
        where = "; ".join(f"rank {r.rank} in {r.op} #{r.seq_num}" for r in t.reports)
        parts.append(
            f"The ranks are not in the same collective ({where}): their control flow diverged (a branch "
            "taken on some ranks only, a different number of batches per rank)."
        )
    if t.silent_ranks:
        parts.append(
            f"Rank(s) {', '.join(map(str, t.silent_ranks))} reported no timeout: look there first (crashed, "
            "stuck, or busy elsewhere)."
        )
    if t.root_cause_rank is not None:
        code = f" with exitcode {t.root_cause_exitcode}" if t.root_cause_exitcode is not None else ""
        abort = " (-6: SIGABRT, the watchdog taking the process down)." if t.root_cause_exitcode == -6 else "."
        parts.append(f"torchrun names rank {t.root_cause_rank}{code} as the first failure{abort}")
    if f.last_enqueued is not None and f.last_completed is not None:
        parts.append(
            f"Rank {f.rank} had enqueued work up to #{f.last_enqueued} and completed up to #{f.last_completed}."
        )
    fixes = (
        "find the rank that did not reach this collective: its own traceback or exit code earlier in the log "
        "(an OOM or exception on one rank leaves the others waiting), or a rank still busy",
        "check control flow that differs by rank around collectives: `if rank == 0:` blocks (evaluation, "
        "checkpoint saving, logging) that call a collective or take longer than the timeout, and uneven data "
        "(DistributedSampler without drop_last, a different number of batches per rank)",
        "rerun with NCCL_DEBUG=INFO and TORCH_DISTRIBUTED_DEBUG=DETAIL to see each rank's collectives; "
        "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 dumps the flight recorder at the timeout",
        "keep TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (the default in recent PyTorch) so a timeout ends the job instead "
        "of hanging it",
        "only when one step legitimately outlasts the limit (a long rank-0 save): raise it with "
        "init_process_group(timeout=datetime.timedelta(minutes=...))",
    )
    return Explanation(
        kind="nccl_timeout",
        title=(
            f"NCCL watchdog timeout: {f.op} #{f.seq_num} on rank(s) {ranks}"
            if t.ranks_agree
            else f"NCCL watchdog timeout on rank(s) {ranks}, in different collectives"
        )
        + f" after {_seconds(f.timeout_ms)}",
        summary=" ".join(parts),
        fixes=fixes,
        exception_type=None,
        message="",
        frame=None,
        nccl=t,
    )


def diagnose_text(text: str) -> Diagnosis:
    """``expkit why`` minus the printing: clean the log (escape sequences, per-line timestamps and
    logger prefixes), parse the traceback, explain it. An NCCL watchdog timeout is explained even
    without a Python traceback (and instead of torchrun's generic ChildFailedError); beside a rank's own
    error it is named as that error's consequence."""
    clean = clean_log_text(text)
    tb = parse_traceback(clean.text)
    explanation = explain(tb)
    nccl = parse_nccl_timeout(clean.text)
    if nccl is not None and explanation.kind == "unknown":
        explanation = explain_nccl_timeout(nccl)
        if not tb.exceptions:
            tb = replace(tb, warnings=tuple(w for w in tb.warnings if not w.startswith("no traceback found")))
    elif nccl is not None:
        # a rank failed with a Python error and the others then timed out waiting for it: the error is the cause
        ranks = ", ".join(str(r.rank) for r in nccl.reports)
        failed = f"rank {tb.rank}" if tb.rank is not None else "the failed rank"
        explanation = replace(
            explanation,
            nccl=nccl,
            summary=explanation.summary
            + (
                f" Rank(s) {ranks} then hit the NCCL watchdog timeout in {nccl.first.op} #{nccl.first.seq_num} waiting "
                f"for {failed}: a consequence of this error, not a second problem."
            ),
        )
    return Diagnosis(
        traceback=tb,
        explanation=explanation,
        log_lines_cleaned=max(clean.lines_with_escapes, clean.lines_with_prefixes),
    )


def diagnose_source(path: str | Path) -> Diagnosis:
    """:func:`diagnose_text` of a log file, or of standard input for ``-``.

    Raises:
        InputError: a missing file or a directory; a text that holds neither a Python traceback nor an
            NCCL watchdog timeout.
    """
    from expkit.data.sources import read_source_text
    from expkit.errors import InputError

    source = read_source_text(path, kind="log file", hint="give the log or paste file")
    result = diagnose_text(source.text)
    if not result.found:
        raise InputError(
            f"no Python traceback found in {source.where} (nor an NCCL watchdog timeout)",
            hint="paste from the 'Traceback (most recent call last):' line to the error line",
        )
    return result
