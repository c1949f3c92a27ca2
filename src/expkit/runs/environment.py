"""The environment, hardware and seed records of a run.

Packages come from ``importlib.metadata`` (no pip subprocess). torch facts that need ``import torch``
(cuDNN version, determinism flags) are read only when the process has already imported torch;
otherwise they are None with the reason, never guessed.
"""

from __future__ import annotations

import ast
import os
import platform
import random
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata, util
from pathlib import Path
from typing import Any

from expkit.runs.machine import MachineInfo, describe_machine

__all__ = [
    "NUMERICS_ENV_VARS",
    "EnvironmentRecord",
    "HardwareRecord",
    "SeedRecord",
    "capture_environment",
    "capture_hardware",
    "seed_everything",
]

# Environment variables that change numerics or their reproducibility (cuBLAS workspace: PyTorch
# "Reproducibility" notes; thread counts change reduction order; TF32 overrides change matmul precision).
NUMERICS_ENV_VARS = (
    "CUBLAS_WORKSPACE_CONFIG",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "PYTHONHASHSEED",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "MKL_CBWR",
    "KMP_DETERMINISTIC_REDUCTION",
    "ATEN_CPU_CAPABILITY",
    "TF_ENABLE_ONEDNN_OPTS",
    "XLA_FLAGS",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "TORCH_DETERMINISTIC",
    "EXPKIT_SEED",
    "EXPKIT_DETERMINISTIC",
)


@dataclass(frozen=True)
class EnvironmentRecord:
    """Software: Python, every installed distribution, torch/CUDA/cuDNN and the numerics switches.

    ``env_vars`` holds the set variables among NUMERICS_ENV_VARS (unset ones are absent: unset is a
    value, not an unknown). ``determinism`` is None unless torch was imported (``missing`` says so).
    """

    python: str
    python_executable: str
    platform: str
    packages: dict[str, str]
    torch: str | None
    cuda: str | None
    cudnn: int | None
    determinism: dict[str, Any] | None
    env_vars: dict[str, str]
    missing: dict[str, str] = field(default_factory=dict)


# The hardware record of a run is the one machine description (``expkit.runs.machine.MachineInfo``).
HardwareRecord = MachineInfo


@dataclass(frozen=True)
class SeedRecord:
    """The root seed and what it seeded. ``source`` is ``argument``, ``EXPKIT_SEED`` or ``generated``;
    ``deterministic`` whether torch's deterministic algorithms were asked for."""

    seed: int | None
    source: str | None
    seeded: tuple[str, ...] = ()
    not_seeded: dict[str, str] = field(default_factory=dict)
    note: str | None = None
    deterministic: bool = False


def _torch_version_file() -> dict[str, str | None]:
    """``torch/version.py`` read as text: the versions without paying for ``import torch``."""
    spec = util.find_spec("torch")
    if spec is None or spec.origin is None:
        return {}
    out: dict[str, str | None] = {}
    try:
        tree = ast.parse((Path(spec.origin).parent / "version.py").read_text())
    except (OSError, SyntaxError):
        return {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name) and isinstance(node.value, ast.Constant):
                value = node.value.value
                out[target.id] = value if value is None or isinstance(value, str) else str(value)
    return out


def _determinism_flags(torch: Any) -> dict[str, Any]:
    return {
        "use_deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "num_threads": torch.get_num_threads(),
    }


_PACKAGES_CACHE: dict[tuple[tuple[str, int | None], ...], dict[str, str]] = {}


def _mtime_ns(path: str) -> int | None:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return None


def _installed_packages() -> dict[str, str]:
    """Name -> version of every installed distribution (reading ~300 METADATA files: ~0.1 s idle, ~1 s on a
    busy machine). Kept per process while no directory on ``sys.path`` changed: installing, upgrading or
    removing a package adds or removes a ``*.dist-info`` directory, which changes its directory's mtime.
    ``expkit sweep`` records every trial from one process, so it reads them once."""
    key = tuple((p, _mtime_ns(p)) for p in sys.path)
    cached = _PACKAGES_CACHE.get(key)
    if cached is None:
        cached = {}
        for dist in metadata.distributions():
            try:
                name = dist.metadata["Name"]
            except Exception:  # noqa: BLE001 - a dist-info without METADATA (a half-done install) is no package;
                continue  # importlib_metadata >= 8 raises MetadataNotFound here where the stdlib returns None
            if name:
                cached.setdefault(name.lower().replace("_", "-"), dist.version)
        _PACKAGES_CACHE.clear()
        _PACKAGES_CACHE[key] = cached
    return dict(cached)


_ENVIRONMENT_CACHE: dict[tuple[Any, ...], EnvironmentRecord] = {}


def capture_environment() -> EnvironmentRecord:
    """Record the software environment of this process. The package list is read once per process while
    ``sys.path`` is unchanged (see ``_installed_packages``); while torch is not imported, the whole record is
    made once per process and handed out again while the packages and the numerics variables are unchanged:
    ``expkit sweep`` records every trial of a sweep from one process, and they share one environment."""
    if "torch" in sys.modules:  # its determinism flags can change at any time: read them now
        return _environment_now()
    key = (
        tuple((p, _mtime_ns(p)) for p in sys.path),
        tuple((k, os.environ[k]) for k in NUMERICS_ENV_VARS if k in os.environ),
    )
    cached = _ENVIRONMENT_CACHE.get(key)
    if cached is None:
        cached = _environment_now()
        _ENVIRONMENT_CACHE.clear()
        _ENVIRONMENT_CACHE[key] = cached
    return cached


def _environment_now() -> EnvironmentRecord:
    missing: dict[str, str] = {}
    packages = _installed_packages()
    torch_mod = sys.modules.get("torch")
    cuda: str | None = None
    cudnn: int | None = None
    determinism: dict[str, Any] | None = None
    torch_version = packages.get("torch")
    if torch_mod is not None:
        torch_version = torch_mod.__version__
        cuda = torch_mod.version.cuda
        if cuda is None:
            missing["cuda"] = "this torch build has no CUDA"
        try:
            cudnn = torch_mod.backends.cudnn.version()
        except Exception as exc:  # noqa: BLE001 - a broken cuDNN install is a fact to record
            missing["cudnn"] = f"torch.backends.cudnn.version() raised {exc!r}"
        if cudnn is None and "cudnn" not in missing:
            missing["cudnn"] = "cuDNN is not available to this torch"
        determinism = _determinism_flags(torch_mod)
    elif torch_version is not None:
        info = _torch_version_file()
        cuda = info.get("cuda")
        if cuda is None:
            missing["cuda"] = "this torch build has no CUDA" if info else "torch/version.py could not be read"
        missing["cudnn"] = "torch was not imported by this process; cuDNN is only known after import torch"
        missing["determinism"] = "torch was not imported by this process, so its flags are at their defaults"
    else:
        missing["torch"] = "torch is not installed"
    env_vars = {k: os.environ[k] for k in NUMERICS_ENV_VARS if k in os.environ}
    return EnvironmentRecord(
        python=platform.python_version(),
        python_executable=sys.executable,
        platform=platform.platform(),
        packages=dict(sorted(packages.items())),
        torch=torch_version,
        cuda=cuda,
        cudnn=cudnn,
        determinism=determinism,
        env_vars=env_vars,
        missing=missing,
    )


_HARDWARE_CACHE: dict[bool, tuple[float, MachineInfo]] = {}
HARDWARE_CACHE_S = 60.0  # a sweep's trials started within this long of each other share one hardware record


def capture_hardware() -> MachineInfo:
    """Record this machine: CPU, RAM, hostname and the GPUs (torch only if already imported, else
    ``nvidia-smi``: starting a run does not pay for ``import torch``). The record is kept for
    HARDWARE_CACHE_S per process (and per whether torch is imported): ``expkit sweep`` starts many runs
    from one process on one machine, and describing it (``nvidia-smi``, package metadata) cost ~30 ms a trial.
    """
    key = "torch" in sys.modules
    now = time.monotonic()
    hit = _HARDWARE_CACHE.get(key)
    if hit is not None and now - hit[0] < HARDWARE_CACHE_S:
        return hit[1]
    info = describe_machine(import_torch=False)
    _HARDWARE_CACHE[key] = (now, info)
    return info


class _SeedTorchOnImport:
    """A one-shot import hook: ``torch.manual_seed(seed)`` right after ``import torch`` completes."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "torch":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        loader, seed = spec.loader, self.seed
        exec_module = loader.exec_module

        def exec_and_seed(module: Any) -> None:
            exec_module(module)
            module.manual_seed(seed)

        loader.exec_module = exec_and_seed  # type: ignore[method-assign]
        return spec


def seed_everything(seed: int | None = None, *, source: str | None = None) -> SeedRecord:
    """Seed python's ``random``, numpy's global generator and torch (CPU and CUDA) with one root seed.

    Args:
        seed: the root seed. None takes ``EXPKIT_SEED`` from the environment, else draws one from
            ``os.urandom`` (and records that it was generated).
        source: how the caller got ``seed`` (recorded); defaults to ``argument``.

    Returns:
        A SeedRecord naming what was seeded; torch is seeded only if installed (it is imported then).

    Example:
        >>> seed_everything(3).seeded
        ('python', 'numpy', 'torch')
    """
    note = None
    env = os.environ.get("EXPKIT_SEED")
    if seed is None:
        if env is not None:
            seed, source = int(env), "EXPKIT_SEED"
        else:
            seed, source = int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF, "generated"
    else:
        source = source or "argument"
        if env is not None and int(env) != seed:
            note = f"EXPKIT_SEED={env} is set but the code passed seed={seed}; the code's seed was used"
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        from expkit.errors import UsageError

        raise UsageError(f"seed={seed!r} is not an integer in [0, 2**32)", hint="pass e.g. seed=0")
    seeded, not_seeded = ["python"], {}
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
        seeded.append("numpy")
    except ImportError:
        not_seeded["numpy"] = "numpy is not installed"
    for hook in [h for h in sys.meta_path if isinstance(h, _SeedTorchOnImport)]:
        sys.meta_path.remove(hook)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)  # seeds every CUDA device too
        seeded.append("torch")
    elif util.find_spec("torch") is not None:
        # importing torch costs ~1 s; seed it the moment the script imports it instead
        sys.meta_path.insert(0, _SeedTorchOnImport(seed))
        seeded.append("torch")
        note = (note + "; " if note else "") + "torch is seeded when it is first imported"
    else:
        not_seeded["torch"] = "torch is not installed"
    return SeedRecord(seed=seed, source=source, seeded=tuple(seeded), not_seeded=not_seeded, note=note)
