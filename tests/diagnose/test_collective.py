"""NCCL watchdog timeouts parsed from ProcessGroupNCCL's lines (format of PyTorch 2.x, as in
pytorch/pytorch#118369 and NVIDIA/Megatron-LM#1207) and explained without a Python traceback."""

from __future__ import annotations

from pathlib import Path

from expkit.diagnose import diagnose_text
from expkit.diagnose.collective import parse_nccl_timeout
from expkit.diagnose.logtext import clean_log_text

FIXTURES = Path(__file__).parent / "fixtures"


def test_torchrun_log_rank_collective_seqnum_timeout_and_root_cause():
    d = diagnose_text((FIXTURES / "nccl_watchdog_torchrun.log").read_text())
    e = d.explanation
    assert e.kind == "nccl_timeout"  # not "unknown ChildFailedError"
    (r,) = e.nccl.reports
    got = (r.rank, r.op, r.seq_num, r.numel_in, r.timeout_ms, r.ran_for_ms)
    assert got == (0, "ALLREDUCE", 808, 9801523, 600000, 600020)
    assert (r.last_enqueued, r.last_completed) == (811, 807)
    assert e.nccl.root_cause_rank == 0 and e.nccl.root_cause_exitcode == -6
    assert "Timeout(ms)=600000" in e.summary and "SIGABRT" in e.summary
    assert any("NCCL_DEBUG=INFO" in f for f in e.fixes) and any("TORCH_NCCL_ASYNC_ERROR_HANDLING" in f for f in e.fixes)
    assert any("rank == 0" in f for f in e.fixes)
    assert d.traceback.chosen_frame is None  # bin/torchrun is the launcher, not the user's code


def test_no_traceback_ranks_that_disagree_and_a_silent_rank():
    text = (FIXTURES / "nccl_k8s_no_traceback.log").read_text()
    t = parse_nccl_timeout(clean_log_text(text).text)
    assert [(r.rank, r.op, r.seq_num) for r in t.reports] == [
        (0, "ALLREDUCE", 1204),
        (1, "BROADCAST", 1203),
        (2, "ALLREDUCE", 1204),
    ]
    assert not t.ranks_agree and t.silent_ranks == (3,)
    d = diagnose_text(text)
    assert d.found and not d.traceback.exceptions and d.traceback.warnings == ()
    assert "rank 1 in BROADCAST #1203" in d.explanation.summary
    assert "Rank(s) 3 reported no timeout" in d.explanation.summary


def test_old_format_without_numel():
    t = parse_nccl_timeout(
        "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 "
        "milliseconds before timing out."
    )
    assert t.first.numel_in is None and t.first.timeout_ms == 1800000 and t.silent_ranks == (0,)


def test_a_plain_log_is_not_a_timeout():
    assert parse_nccl_timeout("step 1 loss 2.3\nTimeout(ms)=5\n") is None


def test_a_ranks_own_error_stays_the_cause_and_the_timeout_its_consequence():
    shape = (FIXTURES / "torchrun_rank1_shape.log").read_text()
    timeout = (
        "[rank0]:[E1129 22:54:18.1 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, Timeout(ms)=600000) ran for "
        "600010 milliseconds before timing out.\n"
    )
    d = diagnose_text(timeout + shape)
    assert d.explanation.kind == "shape_mismatch" and d.traceback.rank == 1
    assert d.explanation.nccl is not None and d.explanation.nccl.first.rank == 0
    assert d.explanation.summary.endswith(
        "Rank(s) 0 then hit the NCCL watchdog timeout in ALLREDUCE #12 waiting "
        "for rank 1: a consequence of this error, not a second problem."
    )
