"""expkit doctor's bootstrap: Python imports this at interpreter start because ``expkit doctor`` put this
folder first on PYTHONPATH. It arms the probe for when the program imports torch, then runs the
``sitecustomize`` it shadows (if the environment has one), so the user's program starts unchanged."""

import os
import sys


def _expkit_doctor_boot() -> None:
    if not os.environ.get("EXPKIT_DOCTOR_OUT"):
        return
    try:
        from expkit.doctor.child import arm_from_environment
    except ImportError:  # a python without expkit installed: use the tree expkit doctor runs from
        sys.path.append(os.environ.get("EXPKIT_DOCTOR_ROOT", ""))
        from expkit.doctor.child import arm_from_environment
    arm_from_environment()


def _chain_shadowed_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_expkit_doctor_boot()
_chain_shadowed_sitecustomize()
