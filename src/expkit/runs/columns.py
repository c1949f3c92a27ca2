"""The config columns a listing of runs shows: every run's config flattened to dotted keys, and of those
only the keys whose values differ between the runs listed (what tells them apart).

Two Hugging Face runs each carry the whole ``TrainingArguments`` (~150 keys) in their config; a table of
them is readable only as the few keys that differ (``training_args.learning_rate``), never as one
``training_args`` column holding a dict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

__all__ = ["config_labels", "differing_keys", "flatten_config"]

_MAX_DEPTH = 32  # deeper nesting stays one value (a config is not a tree of unbounded depth)


def flatten_config(config: Mapping[str, Any], *, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Nested dicts as dotted keys; lists and scalars stay values.

    Example:
        >>> flatten_config({"lr": 0.1, "training_args": {"seed": 3, "adam": {"beta1": 0.9}}})
        {'lr': 0.1, 'training_args.seed': 3, 'training_args.adam.beta1': 0.9}
    """
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and depth < _MAX_DEPTH:
            out.update(flatten_config(value, prefix=f"{name}.", depth=depth + 1))
        else:
            out[name] = value
    return out


def _canonical(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return repr(value).encode()


def differing_keys(configs: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The flattened keys that take two or more values among the configs that have them, in the order first
    seen; none for fewer than two configs. A key that some configs lack but that is the same wherever it is
    set tells nothing apart (a sweep's runs beside Trainer runs would otherwise show every TrainingArguments
    key), so it is not listed.

    Example:
        >>> differing_keys([{"a": {"lr": 0.1, "bs": 8}}, {"a": {"lr": 0.2, "bs": 8}}])
        ('a.lr',)
    """
    if len(configs) < 2:
        return ()
    flat = [flatten_config(c) for c in configs]
    keys = dict.fromkeys(k for f in flat for k in f)
    return tuple(k for k in keys if len({_canonical(f[k]) for f in flat if k in f}) > 1)


def config_labels(configs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Run -> the label of its config by the keys that differ between the runs (``lr=0.1``), so runs of one
    config group together as seeds and runs of two configs never do; ``all`` when no key differs.

    Example:
        >>> config_labels({"a": {"lr": 0.1, "bs": 8}, "b": {"lr": 0.2, "bs": 8}, "c": {"lr": 0.1, "bs": 8}})
        {'a': 'lr=0.1', 'b': 'lr=0.2', 'c': 'lr=0.1'}
    """
    keys = differing_keys(list(configs.values()))
    out = {}
    for run, config in configs.items():
        flat = flatten_config(config)
        out[run] = ",".join(f"{k}={flat.get(k, '-')}" for k in keys) or "all"
    return out
