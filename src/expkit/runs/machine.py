"""The hardware and software a result was produced on, and the code version that produced it.

Values that cannot be read are ``None`` with the reason in ``missing``; nothing is invented.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

__all__ = ["CodeVersion", "MachineInfo", "describe_code_version", "describe_machine"]


@dataclass(frozen=True)
class MachineInfo:
    """Where a measurement ran. ``ram_bytes`` is total physical memory; GPU fields are None without CUDA."""

    cpu_model: str | None
    cpu_cores_logical: int | None
    cpu_cores_physical: int | None
    ram_bytes: int | None
    os: str
    python: str
    torch: str | None
    cuda: str | None
    gpu_names: tuple[str, ...]
    gpu_memory_bytes: tuple[int, ...]
    missing: dict[str, str] = field(default_factory=dict)


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "processor\t: arm")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def describe_machine(*, probe_gpu: bool = True) -> MachineInfo:
    """Describe this machine.

    Args:
        probe_gpu: import torch to ask CUDA for devices (costs ~1 s the first time). When False,
            GPU fields are left empty and ``missing["gpu"]`` says so.
    """
    import psutil

    missing: dict[str, str] = {}
    cpu = _cpu_model()
    if cpu is None:
        missing["cpu_model"] = "neither /proc/cpuinfo nor platform.processor() named the CPU"
    try:
        torch_version: str | None = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = None
        missing["torch"] = "torch is not installed"
    cuda = None
    names: list[str] = []
    mems: list[int] = []
    if probe_gpu and torch_version is not None:
        import torch

        cuda = torch.version.cuda
        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                props = torch.cuda.get_device_properties(i)
                names.append(props.name)
                mems.append(int(props.total_memory))
    elif not probe_gpu:
        missing["gpu"] = "not probed"
    return MachineInfo(
        cpu_model=cpu,
        cpu_cores_logical=os.cpu_count(),
        cpu_cores_physical=psutil.cpu_count(logical=False),
        ram_bytes=int(psutil.virtual_memory().total),
        os=platform.platform(),
        python=sys.version.split()[0],
        torch=torch_version,
        cuda=cuda,
        gpu_names=tuple(names),
        gpu_memory_bytes=tuple(mems),
        missing=missing,
    )


@dataclass(frozen=True)
class CodeVersion:
    """The git commit of a working tree, or None with the reason when it is not a git checkout."""

    commit: str | None
    dirty: bool | None
    reason: str | None = None


def describe_code_version(path: str | Path = ".") -> CodeVersion:
    """Read the commit and dirty flag of the git work tree containing ``path``."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True, timeout=10
        )
        if commit.returncode != 0:
            return CodeVersion(None, None, reason=commit.stderr.strip() or "not a git repository")
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=path, capture_output=True, text=True, timeout=30,
        )
        return CodeVersion(commit.stdout.strip(), bool(status.stdout.strip()))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return CodeVersion(None, None, reason=f"git could not be run: {exc}")
