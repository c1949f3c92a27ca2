"""Will it be fast: the GPU registry, the roofline, measured roofs, decode measured, and the profiler read
into buckets (claims C6.1, C6.2, C6.6). Nothing here imports torch at import time."""

from expkit.perf.buckets import BUCKETS, BucketShare, OpTime, ProfileReport, bucket_of, bucket_trace
from expkit.perf.decode import DecodePoint, build_tiny_decoder, measure_decode_throughput
from expkit.perf.hardware import GPUSpec, find_gpu_for_device, get_gpu, list_gpus
from expkit.perf.profiler import ScriptProfile, profile, profile_script
from expkit.perf.roofline import Roof, RooflineEstimate, RooflinePart, estimate_roofline, roof_for_gpu
from expkit.perf.roofs import (
    CopyMeasurement,
    GemmMeasurement,
    MeasuredRoofs,
    RoofQuery,
    measure_copy_bandwidth,
    measure_gemm,
    measure_numpy_copy_bandwidth,
    measure_roofs,
)
from expkit.perf.trace import Trace, load_trace, parse_trace

__all__ = [
    "BUCKETS",
    "BucketShare",
    "CopyMeasurement",
    "DecodePoint",
    "GPUSpec",
    "GemmMeasurement",
    "MeasuredRoofs",
    "OpTime",
    "ProfileReport",
    "Roof",
    "RoofQuery",
    "RooflineEstimate",
    "RooflinePart",
    "ScriptProfile",
    "Trace",
    "bucket_of",
    "bucket_trace",
    "build_tiny_decoder",
    "estimate_roofline",
    "find_gpu_for_device",
    "get_gpu",
    "list_gpus",
    "load_trace",
    "measure_copy_bandwidth",
    "measure_decode_throughput",
    "measure_gemm",
    "measure_numpy_copy_bandwidth",
    "measure_roofs",
    "parse_trace",
    "profile",
    "profile_script",
    "roof_for_gpu",
]
