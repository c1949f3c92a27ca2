"""Get data in: stream JSONL, compose generator stages, map over a process pool, probe peak memory
(claims C1.1-C1.3)."""

from expkit.data.jsonl import JsonlSummary, JsonlTally, iter_jsonl, iter_jsonl_objects
from expkit.data.memory_probe import PeakMemory, ProbeFailed, peak_memory
from expkit.data.pipeline import Pipeline, iter_batches, iter_filter, iter_map, iter_shuffled, iter_take
from expkit.data.pool import check_picklable_function, default_workers, parallel_map
from expkit.data.profile import DatasetProfile, KeyStats, LengthStats, profile_jsonl, text_of
from expkit.data.sampling import NumberedRecord, RecordSample, head_records, sample_records
from expkit.data.schema import ValidationReport, Violation, validate_jsonl
from expkit.data.sources import SourceText, open_binary, read_source_text

__all__ = [
    "DatasetProfile",
    "JsonlSummary",
    "JsonlTally",
    "KeyStats",
    "LengthStats",
    "NumberedRecord",
    "PeakMemory",
    "Pipeline",
    "ProbeFailed",
    "RecordSample",
    "SourceText",
    "ValidationReport",
    "Violation",
    "check_picklable_function",
    "default_workers",
    "head_records",
    "iter_batches",
    "iter_filter",
    "iter_jsonl",
    "iter_jsonl_objects",
    "iter_map",
    "iter_shuffled",
    "iter_take",
    "open_binary",
    "parallel_map",
    "peak_memory",
    "profile_jsonl",
    "read_source_text",
    "sample_records",
    "text_of",
    "validate_jsonl",
]
