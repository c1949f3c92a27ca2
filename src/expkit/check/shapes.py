"""Shape guards: ``expect_shape(x, "B T D", dims)`` binds named dimensions on first sight and checks
them on every later call, so a broadcast that numpy allows silently (``(3,) + (3, 1) -> (3, 3)``)
fails loudly at the line that asserted the shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from expkit.errors import CheckFailed

__all__ = ["Dims", "ShapeError", "expect_shape"]

T = TypeVar("T")


class ShapeError(CheckFailed):
    """A tensor's shape is not the one asserted, or two shapes that must match differ."""


class Dims:
    """Named dimension sizes bound so far (``{"B": 4, "T": 128}``); pass the same Dims to every
    ``expect_shape`` call of one forward pass.

    Example:
        >>> import numpy as np
        >>> dims = Dims(D=64); _ = expect_shape(np.zeros((4, 16, 64)), "B T D", dims); dims["T"]
        16
    """

    def __init__(self, **sizes: int) -> None:
        self._sizes: dict[str, int] = {}
        self._where: dict[str, str] = {}
        for name, size in sizes.items():
            self._sizes[name] = int(size)
            self._where[name] = "given"

    def __getitem__(self, name: str) -> int:
        return self._sizes[name]

    def __contains__(self, name: object) -> bool:
        return name in self._sizes

    def as_dict(self) -> Mapping[str, int]:
        return dict(self._sizes)

    def bind(self, name: str, size: int, where: str) -> None:
        self._sizes[name] = size
        self._where[name] = where

    def where(self, name: str) -> str:
        return self._where.get(name, "?")

    def __repr__(self) -> str:
        return f"Dims({', '.join(f'{k}={v}' for k, v in self._sizes.items())})"


def _shape_of(x: Any) -> tuple[int, ...]:
    shape = getattr(x, "shape", None)
    if shape is None:
        raise ShapeError(f"a {type(x).__name__} has no shape", hint="pass a numpy array or a torch tensor")
    return tuple(int(s) for s in shape)


def expect_shape(x: T, spec: str, dims: Dims | None = None, *, name: str = "tensor") -> T:
    """Assert that ``x`` has the shape ``spec`` and return ``x`` unchanged (so it can wrap an expression).

    ``spec`` is space-separated: a name (``B``, ``T``, ``n_heads``) binds on first use and must match
    afterwards; a number must match exactly; ``_`` matches any size; a leading ``...`` matches any
    number of leading dimensions.

    Args:
        x: numpy array or torch tensor (anything with ``.shape``).
        spec: e.g. ``"B T D"``, ``"... T 3"``, ``"N"``.
        dims: the bindings shared across calls (a fresh one when None: names only bind within x).
        name: what to call ``x`` in the error.

    Raises:
        ShapeError: wrong rank, or the dimension that disagrees, with its bound value and where it
            was bound.

    Example:
        >>> import numpy as np
        >>> expect_shape(np.zeros(3) + np.zeros((3, 1)), "N")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        expkit.check.shapes.ShapeError: tensor has shape (3, 3) but spec 'N' expects 1 dimension(s)...
    """
    dims = Dims() if dims is None else dims
    shape = _shape_of(x)
    tokens = spec.split()
    if not tokens:
        raise ShapeError(f"empty shape spec for {name}", hint="write e.g. 'B T D'")
    if "..." in tokens[1:]:
        raise ShapeError(f"spec {spec!r}: '...' may only lead the spec")
    if tokens[0] == "...":
        tokens = tokens[1:]
        if len(shape) < len(tokens):
            raise ShapeError(f"{name} has shape {shape} but spec {spec!r} needs at least {len(tokens)} dimension(s)")
        shape_tail = shape[len(shape) - len(tokens) :]
    else:
        if len(shape) != len(tokens):
            raise ShapeError(
                f"{name} has shape {shape} but spec {spec!r} expects {len(tokens)} dimension(s), got {len(shape)}",
                hint="a silent broadcast, e.g. (3,) + (3, 1) -> (3, 3), adds dimensions; reshape the operand",
            )
        shape_tail = shape
    offset = len(shape) - len(shape_tail)
    for axis, (tok, size) in enumerate(zip(tokens, shape_tail, strict=True), start=offset):
        if tok == "_":
            continue
        if tok.lstrip("-").isdigit():
            if size != int(tok):
                raise ShapeError(f"{name} has shape {shape}: axis {axis} is {size}, spec {spec!r} requires {tok}")
            continue
        if tok in dims:
            if dims[tok] != size:
                raise ShapeError(
                    f"dimension {tok}: {name} has {size} at axis {axis} (shape {shape}) but {tok} = {dims[tok]} "
                    f"was bound by {dims.where(tok)}"
                )
        else:
            dims.bind(tok, size, f"{name} {shape} (spec {spec!r})")
    return x
