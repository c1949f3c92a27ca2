"""Stage 7: make it reproducible. The seven records of a run, the run store, and the machine a
result came from.

    with expkit.runs.start(config=cfg, data=["train.jsonl"], seed=0) as run:
        run.log(step, loss=loss)
        run.save_checkpoint({"model": model.state_dict()}, "last")
"""

from expkit.runs.machine import CodeRecord, CodeVersion, MachineInfo, describe_code_version, describe_machine
from expkit.runs.run import Capture, Run, RunTerminated, start
from expkit.runs.runrecord import RunRecord
from expkit.runs.store import list_runs, read_record

__all__ = [
    "Capture",
    "CodeRecord",
    "CodeVersion",
    "MachineInfo",
    "Run",
    "RunRecord",
    "RunTerminated",
    "describe_code_version",
    "describe_machine",
    "list_runs",
    "read_record",
    "start",
]
