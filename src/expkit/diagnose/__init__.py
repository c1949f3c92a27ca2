"""When it breaks: read a traceback (yours / framework / stdlib frames, the place to look) and explain
the PyTorch errors people hit most, out-of-memory included (claims C1.4, C4.6)."""

from expkit.diagnose.explanations import Diagnosis, Explanation, diagnose_text, explain, explain_exception
from expkit.diagnose.hook import install, uninstall
from expkit.diagnose.oom import OomInfo, Phase, detect_phase, parse_oom_message, parse_size_bytes
from expkit.diagnose.report import FrameGroup, collapse_frames, format_report
from expkit.diagnose.tracebacks import ExceptionRecord, Frame, FrameKind, Traceback, classify_frame, parse_traceback

__all__ = [
    "Diagnosis",
    "ExceptionRecord",
    "Explanation",
    "Frame",
    "FrameGroup",
    "FrameKind",
    "OomInfo",
    "Phase",
    "Traceback",
    "classify_frame",
    "collapse_frames",
    "detect_phase",
    "diagnose_text",
    "explain",
    "explain_exception",
    "format_report",
    "install",
    "parse_oom_message",
    "parse_size_bytes",
    "parse_traceback",
    "uninstall",
]
