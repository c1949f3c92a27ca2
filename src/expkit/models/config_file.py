"""Finding and reading a model's config.json: a file, a model directory, a cached Hugging Face Hub entry or the
shipped catalog; size, JSON and dtype checks before anything reads a field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from expkit.errors import InputError, UsageError

__all__ = ["CATALOG_DIR", "DTYPE_NAMES", "MAX_CONFIG_BYTES", "catalog_names", "read_model_config"]

CATALOG_DIR = Path(__file__).with_name("catalog")
MAX_CONFIG_BYTES = 4 * 2**20  # a real config.json is a few KiB; 4 MiB is refused before parsing


def catalog_names() -> list[str]:
    """Names of the shipped configs, e.g. ``qwen2.5-0.5b``, ``deepseek-v3``."""
    return sorted(p.stem for p in CATALOG_DIR.glob("*.json"))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise InputError(
                f"{size:,} bytes is too large for a config.json (limit {MAX_CONFIG_BYTES:,})",
                path=path,
                hint="point at the model's config.json",
            )
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text (byte {exc.start})", path=path, hint="config.json must be a JSON object"
        ) from exc
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        line = exc.lineno if isinstance(exc, json.JSONDecodeError) else None
        raise InputError(
            f"not valid JSON: {msg}", path=path, line=line, hint="config.json must be a JSON object"
        ) from exc
    if not isinstance(data, dict):
        raise InputError(f"config is a JSON {type(data).__name__}, not an object", path=path)
    for where in (data, data.get("text_config")):
        if isinstance(where, dict):
            _check_dtype(where, path)
    return data


# The dtype names torch 2.13 defines (transformers reads a config's dtype as getattr(torch, name)), and "auto".
DTYPE_NAMES = frozenset((
    "bfloat16", "float16", "float32", "float64", "half", "float", "double", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "complex32", "complex64", "complex128",
    "chalf", "cfloat", "cdouble", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "short", "int", "long", "qint8", "qint32", "quint8", "quint4x2", "quint2x4", "auto",
))  # fmt: skip


def _check_dtype(config: dict[str, Any], path: Path) -> None:
    """A ``torch_dtype``/``dtype`` that torch does not define (``float128``) is refused by name: transformers
    raised an AttributeError traceback from ``getattr(torch, ...)`` (issue 21)."""
    for key in ("torch_dtype", "dtype"):
        value = config.get(key)
        if value is not None and (not isinstance(value, str) or value not in DTYPE_NAMES):
            raise InputError(
                f"{key} {value!r} is not a torch dtype",
                path=path,
                hint="use one of float32, float16, bfloat16, float64, float8_e4m3fn, float8_e5m2, auto "
                "(or another torch dtype name)",
            )


def _from_hf_cache(repo_id: str) -> Path | None:
    """``config.json`` of ``repo_id`` in the local Hugging Face cache (offline), or None."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except ValueError:  # an invalid repo id for huggingface_hub's validator (HFValidationError): not cached
        return None
    return Path(found) if isinstance(found, str) else None


def _looks_like_hub_id(text: str) -> bool:
    parts = text.split("/")
    return len(parts) == 2 and all(parts) and not text.startswith((".", "/", "~")) and not text.endswith(".json")


def read_model_config(model: str | Path) -> tuple[dict[str, Any], str, str]:
    """(config dict, name, source) from a model directory, a config.json, a Hub ID in the local Hugging Face
    cache, or a catalog name.

    Raises:
        InputError: unreadable, not JSON, too large, not an object (names the file).
        UsageError: none of these; a Hub ID that is not cached says how to fetch only its config.json.
    """
    path = Path(model)
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise InputError(
                "directory has no config.json",
                path=path.parent,
                hint="point at a Hugging Face model directory or a config.json",
            )
    if path.is_file():
        return _read_json(path), path.parent.name or str(path), str(path)
    text = str(model)
    if _looks_like_hub_id(text):
        cached = _from_hf_cache(text)
        if cached is not None:
            return _read_json(cached), text.split("/")[-1], f"Hugging Face cache: {text} ({cached})"
    key = text.lower().split("/")[-1].removeprefix("meta-").removesuffix("-hf").removesuffix("-instruct")
    cat = CATALOG_DIR / f"{key}.json"
    if cat.is_file():
        raw = _read_json(cat)
        return raw, key, f"catalog:{key} ({raw.get('_source', '')})"
    if _looks_like_hub_id(text):
        raise UsageError(
            f"{text!r} is not in the local Hugging Face cache (looked up offline) nor in the catalog",
            hint=f'fetch only its config: hf download {text} config.json  (or python -c "from '
            f"huggingface_hub import hf_hub_download; hf_hub_download('{text}', 'config.json')\")",
        )
    raise UsageError(
        f"{text!r} is neither a file, a directory, a cached Hub ID nor a catalog name",
        hint=f"catalog: {', '.join(catalog_names())}",
    )
