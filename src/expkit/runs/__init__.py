"""Stage 7: make it reproducible. For now: what machine and code version a result came from."""

from expkit.runs.machine import CodeVersion, MachineInfo, describe_code_version, describe_machine

__all__ = ["CodeVersion", "MachineInfo", "describe_code_version", "describe_machine"]
