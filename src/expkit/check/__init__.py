"""Stage 3: trust your ops. Compare with dtype tolerances, numpy reference operators, shape guards."""

from expkit.check.against import AgainstQuery, AgainstReport, CaseReport, against, check_op, load_callable
from expkit.check.attention import AttentionCheck, check_attention, sdpa_causal
from expkit.check.compare import (
    DEFAULT_TOLERANCES,
    CompareReport,
    Float64Copy,
    Tolerance,
    compare,
    default_tolerance,
    to_numpy,
)
from expkit.check.reference import causal_attention, cross_entropy, layer_norm, rms_norm, softmax
from expkit.check.shapes import Dims, ShapeError, expect_shape

__all__ = [
    "DEFAULT_TOLERANCES",
    "AgainstQuery",
    "AgainstReport",
    "AttentionCheck",
    "CaseReport",
    "CompareReport",
    "Dims",
    "Float64Copy",
    "ShapeError",
    "Tolerance",
    "against",
    "causal_attention",
    "check_attention",
    "check_op",
    "compare",
    "cross_entropy",
    "default_tolerance",
    "expect_shape",
    "layer_norm",
    "load_callable",
    "rms_norm",
    "sdpa_causal",
    "softmax",
    "to_numpy",
]
