"""Will it fit: parameter counts from config.json, the memory ledger, measured replicas, OOM explanation."""

from __future__ import annotations

from expkit.memory.activations import ActivationEstimate, ActivationQuery, estimate_activations, korthikanti_bytes
from expkit.memory.conventions import ConventionComparison, compare_conventions, ledger_for_convention
from expkit.memory.inference import InferenceQuery, estimate_inference_memory, ledger_for_inference
from expkit.memory.ledger import Ledger, LedgerLine, TrainingQuery, estimate_training_memory
from expkit.memory.oom import OomExplanation, Remedy, attribute_oom, rank_remedies
from expkit.memory.params import count_parameters
from expkit.models.counting import ParameterCount
from expkit.models.description import ModelDescription, catalog_names, load_model_description

__all__ = [
    "ActivationEstimate",
    "ActivationQuery",
    "ConventionComparison",
    "InferenceQuery",
    "Ledger",
    "LedgerLine",
    "ModelDescription",
    "OomExplanation",
    "ParameterCount",
    "Remedy",
    "TrainingQuery",
    "attribute_oom",
    "catalog_names",
    "compare_conventions",
    "count_parameters",
    "estimate_activations",
    "estimate_inference_memory",
    "estimate_training_memory",
    "korthikanti_bytes",
    "ledger_for_convention",
    "ledger_for_inference",
    "load_model_description",
    "rank_remedies",
]
