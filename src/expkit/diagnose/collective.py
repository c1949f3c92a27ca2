"""NCCL watchdog timeouts: the lines ``ProcessGroupNCCL`` prints when a collective never completes
(often with no Python traceback at all), parsed per rank, and what they mean.

The format (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, PyTorch 1.x-2.x)::

    [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE,
    NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
    [PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at
    work: 808, last enqueued NCCL work: 811, last completed NCCL work: 807.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CollectiveTimeout", "NcclTimeout", "parse_nccl_timeout"]

_WATCHDOG = re.compile(
    r"Rank (\d+)\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), "
    r"OpType=(\w+)(?:, NumelIn=(-?\d+), NumelOut=(-?\d+))?, Timeout\(ms\)=(\d+)\) ran for (\d+) "
    r"milliseconds"
)
_PROGRESS = re.compile(
    r"Rank (\d+)\] Exception \(either an error or timeout\) detected by watchdog at work: (\d+), "
    r"last enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+)"
)
_LINE_RANK = re.compile(r"^\[rank(\d+)\]:")
_ROOT_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)")
_EXITCODE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)")


@dataclass(frozen=True)
class CollectiveTimeout:
    """One rank's watchdog report: the collective it waited in (``op``, ``seq_num``), its size in
    elements, the timeout and how long it had run (ms); the last enqueued/completed work when printed."""

    rank: int
    op: str
    seq_num: int
    numel_in: int | None
    numel_out: int | None
    timeout_ms: int
    ran_for_ms: int
    last_enqueued: int | None = None
    last_completed: int | None = None


@dataclass(frozen=True)
class NcclTimeout:
    """Every rank's first timeout report. ``ranks_agree``: all ranks wait in the same collective (same
    SeqNum and op); ``silent_ranks``: ranks below the highest rank seen that reported no timeout (the
    usual suspects: dead or elsewhere); ``root_cause_rank``/``exitcode`` from torchrun's summary."""

    reports: tuple[CollectiveTimeout, ...]
    ranks_agree: bool
    silent_ranks: tuple[int, ...]
    root_cause_rank: int | None
    root_cause_exitcode: int | None

    @property
    def first(self) -> CollectiveTimeout:
        return self.reports[0]


def parse_nccl_timeout(text: str) -> NcclTimeout | None:
    """The NCCL watchdog timeouts in a (cleaned) log, or None when there are none.

    Example:
        >>> t = parse_nccl_timeout("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
        ...     "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before "
        ...     "timing out.")
        >>> t.first.rank, t.first.op, t.first.seq_num, t.first.timeout_ms
        (1, 'ALLREDUCE', 5, 600000)
    """
    reports: dict[int, CollectiveTimeout] = {}
    progress: dict[int, tuple[int, int]] = {}
    seen_ranks: set[int] = set()
    root_rank = exitcode = None
    in_root = False
    for line in text.splitlines():
        lr = _LINE_RANK.match(line)
        if lr:
            seen_ranks.add(int(lr.group(1)))
        m = _WATCHDOG.search(line)
        if m:
            rank = int(m.group(1))
            seen_ranks.add(rank)
            if rank not in reports:
                reports[rank] = CollectiveTimeout(
                    rank=rank,
                    seq_num=int(m.group(2)),
                    op=m.group(3),
                    numel_in=int(m.group(4)) if m.group(4) else None,
                    numel_out=int(m.group(5)) if m.group(5) else None,
                    timeout_ms=int(m.group(6)),
                    ran_for_ms=int(m.group(7)),
                )
            continue
        p = _PROGRESS.search(line)
        if p:
            progress.setdefault(int(p.group(1)), (int(p.group(3)), int(p.group(4))))
            continue
        if "Root Cause (first observed failure)" in line:
            in_root = True
        elif in_root:
            r, e = _ROOT_RANK.match(line), _EXITCODE.match(line)
            if r:
                root_rank = int(r.group(1))
            if e:
                exitcode = int(e.group(1))
                in_root = False
    if not reports:
        return None
    ordered = []
    for rank in sorted(reports):
        rep = reports[rank]
        if rank in progress:
            enq, done = progress[rank]
            rep = CollectiveTimeout(**{**rep.__dict__, "last_enqueued": enq, "last_completed": done})
        ordered.append(rep)
    agree = len({(r.seq_num, r.op) for r in ordered}) == 1
    world = max(seen_ranks | set(reports)) + 1
    silent = tuple(r for r in range(world) if r not in reports)
    return NcclTimeout(tuple(ordered), agree, silent, root_rank, exitcode)
