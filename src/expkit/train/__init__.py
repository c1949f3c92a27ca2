"""Stage 4: train something small. The char LM, its corpus, the visible loop, the schedule, the sanity
checks no trainer runs by default, checkpoints for an exact resume, DDP through torchrun.

Importing this package imports torch; the CLI and the labs import it inside their functions.
"""

from expkit.train.budget import Calibration
from expkit.train.checkpoint import (
    TrainCheckpoint,
    open_train_checkpoint,
    restore_train_checkpoint,
    save_train_checkpoint,
)
from expkit.train.config import TrainConfig, TrainRequest, apply_overrides
from expkit.train.corpus import Corpus, encode_ascii, load_corpus
from expkit.train.events import CheckReported, Evaluated, RunPlanned, StepLogged, TrainEvent
from expkit.train.loop import StepOutput, TrainingSetup, estimate_val_loss, setup_training, train_step
from expkit.train.model import CharLM, CharLMConfig, count_parameters, flops_per_token
from expkit.train.sanity import (
    FirstLossCheck,
    GradCheck,
    NonFiniteCheck,
    check_first_loss,
    find_params_without_grad,
    find_stale_grads,
    locate_first_nonfinite,
)
from expkit.train.schedule import WarmupCosine
from expkit.train.training import CorpusInfo, MfuEstimate, TrainResult, measure_mfu, train_charlm

__all__ = [
    "Calibration",
    "CharLM",
    "CharLMConfig",
    "CheckReported",
    "Corpus",
    "CorpusInfo",
    "Evaluated",
    "FirstLossCheck",
    "GradCheck",
    "MfuEstimate",
    "NonFiniteCheck",
    "RunPlanned",
    "StepLogged",
    "StepOutput",
    "TrainCheckpoint",
    "TrainConfig",
    "TrainEvent",
    "TrainRequest",
    "TrainResult",
    "TrainingSetup",
    "WarmupCosine",
    "apply_overrides",
    "check_first_loss",
    "count_parameters",
    "encode_ascii",
    "estimate_val_loss",
    "find_params_without_grad",
    "find_stale_grads",
    "flops_per_token",
    "load_corpus",
    "locate_first_nonfinite",
    "measure_mfu",
    "open_train_checkpoint",
    "restore_train_checkpoint",
    "save_train_checkpoint",
    "setup_training",
    "train_charlm",
    "train_step",
]
