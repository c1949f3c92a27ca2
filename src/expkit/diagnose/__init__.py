"""When it breaks: read a traceback (yours / framework / stdlib frames, the place to look) and explain
the PyTorch errors people hit most, out-of-memory included (claims C1.4, C4.6); real logs cleaned first
(timestamps, logger prefixes, ANSI), NCCL watchdog timeouts explained without a traceback."""

from expkit.diagnose.collective import CollectiveTimeout, NcclTimeout, parse_nccl_timeout
from expkit.diagnose.diagnosis import Diagnosis, diagnose_source, diagnose_text, explain_nccl_timeout
from expkit.diagnose.explanations import Explanation, explain, explain_exception
from expkit.diagnose.hook import install, uninstall
from expkit.diagnose.logtext import CleanLog, clean_log_text, sanitize_for_terminal, strip_ansi
from expkit.diagnose.oom import OomInfo, Phase, PhaseGuess, detect_phase, parse_oom_message, parse_size_bytes
from expkit.diagnose.report import FrameGroup, collapse_frames, format_report
from expkit.diagnose.tracebacks import ExceptionRecord, Frame, FrameKind, Traceback, classify_frame, parse_traceback

__all__ = [
    "CleanLog",
    "CollectiveTimeout",
    "Diagnosis",
    "ExceptionRecord",
    "Explanation",
    "Frame",
    "FrameGroup",
    "FrameKind",
    "NcclTimeout",
    "OomInfo",
    "Phase",
    "PhaseGuess",
    "Traceback",
    "classify_frame",
    "clean_log_text",
    "collapse_frames",
    "detect_phase",
    "diagnose_source",
    "diagnose_text",
    "explain",
    "explain_exception",
    "explain_nccl_timeout",
    "format_report",
    "install",
    "parse_nccl_timeout",
    "parse_oom_message",
    "parse_size_bytes",
    "parse_traceback",
    "sanitize_for_terminal",
    "strip_ansi",
    "uninstall",
]
