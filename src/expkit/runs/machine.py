"""The hardware and software a result was produced on, and the code version that produced it.

One description of a machine (``MachineInfo``: the run record's ``hardware`` and the lab report's
``machine``) and one of the code (``CodeRecord``, from ``expkit.runs.codestate``). Values that cannot be
read are ``None`` with the reason in ``missing``; nothing is invented.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import NamedTuple

from expkit.runs.codestate import CodeRecord, capture_code

__all__ = ["CodeRecord", "CodeVersion", "MachineInfo", "describe_code_version", "describe_machine"]


@dataclass(frozen=True)
class MachineInfo:
    """Where a run or measurement ran. ``ram_bytes`` is total physical memory; GPU fields are empty
    without a GPU (``missing["gpu"]`` says why). ``os``/``python``/``torch``/``cuda`` are None in run
    records written before the two machine descriptions became one."""

    cpu_model: str | None = None
    cpu_cores_logical: int | None = None
    cpu_cores_physical: int | None = None
    ram_bytes: int | None = None
    hostname: str | None = None
    os: str | None = None
    python: str | None = None
    torch: str | None = None
    cuda: str | None = None
    gpu_names: tuple[str, ...] = ()
    gpu_memory_bytes: tuple[int, ...] = ()
    gpu_driver: str | None = None
    missing: dict[str, str] = field(default_factory=dict)


# The older name of the code record (lab reports); one class now.
CodeVersion = CodeRecord


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "processor\t: arm")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


class NvidiaSmiGpus(NamedTuple):
    """What ``nvidia-smi`` says: GPU names, memory per GPU in bytes, the driver, and why not (None when read)."""

    names: list[str]
    memory_bytes: list[int]
    driver: str | None
    missing: str | None


def nvidia_smi_gpus() -> NvidiaSmiGpus:
    """The GPUs ``nvidia-smi`` lists (no torch import); ``missing`` says why none were read."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return NvidiaSmiGpus([], [], None, "no NVIDIA driver found (nvidia-smi is not on PATH)")
    try:
        res = subprocess.run(
            [exe, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return NvidiaSmiGpus([], [], None, f"nvidia-smi failed: {exc}")
    if res.returncode != 0:
        return NvidiaSmiGpus([], [], None, f"nvidia-smi failed: {res.stderr.strip()}")
    names, mems, driver = [], [], None
    for line in res.stdout.strip().splitlines():
        name, mem_mib, drv = (p.strip() for p in line.split(","))
        names.append(name)
        mems.append(int(float(mem_mib)) * 1024 * 1024)
        driver = drv
    return NvidiaSmiGpus(names, mems, driver, None)


def describe_machine(*, probe_gpu: bool = True, import_torch: bool = True) -> MachineInfo:
    """Describe this machine.

    Args:
        probe_gpu: look for GPUs at all. When False, GPU fields are left empty and ``missing["gpu"]``
            says so.
        import_torch: ask CUDA through torch, importing it if needed (~1 s the first time). When False
            (the run record: starting a run must stay cheap), torch is used only if the process already
            imported it, else ``nvidia-smi`` names the GPUs.
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
    driver: str | None = None
    torch_mod = sys.modules.get("torch")
    if probe_gpu and torch_mod is None and import_torch and torch_version is not None:
        try:
            import torch as torch_mod
        except ImportError as exc:  # installed but not importable (a broken build, a hidden torch): no GPU probe
            missing["torch"] = f"torch {torch_version} is installed but does not import: {exc}"
            torch_mod = None
    if not probe_gpu:
        missing["gpu"] = "not probed"
    elif torch_mod is not None:
        torch_version = torch_mod.__version__
        cuda = torch_mod.version.cuda
        if torch_mod.cuda.is_available():
            for i in range(torch_mod.cuda.device_count()):
                props = torch_mod.cuda.get_device_properties(i)
                names.append(props.name)
                mems.append(int(props.total_memory))
            driver = nvidia_smi_gpus().driver
            if driver is None:
                missing["gpu_driver"] = "nvidia-smi did not report the driver"
        else:
            missing["gpu"] = "torch sees no CUDA device"
    else:
        names, mems, driver, why = nvidia_smi_gpus()
        if why:
            missing["gpu"] = why
    return MachineInfo(
        cpu_model=cpu,
        cpu_cores_logical=os.cpu_count(),
        cpu_cores_physical=psutil.cpu_count(logical=False),
        ram_bytes=int(psutil.virtual_memory().total),
        hostname=platform.node(),
        os=platform.platform(),
        python=sys.version.split()[0],
        torch=torch_version,
        cuda=cuda,
        gpu_names=tuple(names),
        gpu_memory_bytes=tuple(mems),
        gpu_driver=driver,
        missing=missing,
    )


def describe_code_version(path: str | Path = ".") -> CodeRecord:
    """The code record of the git work tree containing ``path`` without the patch text (its size and
    file counts stay): what a lab report shows."""
    return dataclasses.replace(capture_code(path), patch=None)
