"""Text in, ASCII code points out: the char LM's corpus, its deterministic train/val split and fingerprint.

The default corpus is one every Python installation has: the standard library's top-level ``*.py``
files (168 files, 4.7 MB on CPython 3.11). Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from expkit.errors import InputError, UsageError

__all__ = ["Corpus", "default_corpus_files", "encode_ascii", "load_corpus"]

NonAscii = Literal["drop", "replace"]
_REPLACEMENT = ord("?")


@dataclass(frozen=True)
class Corpus:
    """A corpus as ASCII code points (uint8 tensors, values 0..127) split into train and val.

    ``fingerprint`` is the sha256 of the split (file names, then the train and val bytes); it goes
    into the run record. ``n_non_ascii`` characters were dropped or replaced by ``?`` per ``non_ascii``.
    """

    source: str
    files: tuple[str, ...]
    train: torch.Tensor = field(repr=False)
    val: torch.Tensor = field(repr=False)
    n_non_ascii: int
    non_ascii: NonAscii
    split: str
    fingerprint: str
    skipped_files: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()  # the files read, absolute (for the run record's data fingerprint)

    @property
    def n_train_chars(self) -> int:
        return int(self.train.numel())

    @property
    def n_val_chars(self) -> int:
        return int(self.val.numel())


def encode_ascii(text: str, *, non_ascii: NonAscii = "drop") -> tuple[bytes, int]:
    """ASCII bytes of ``text`` and how many characters were not ASCII.

    Example:
        >>> encode_ascii("naïve café")
        (b'nave caf', 2)
    """
    if non_ascii not in ("drop", "replace"):
        raise UsageError(f"non_ascii={non_ascii!r} is not one of 'drop', 'replace'")
    raw = text.encode("ascii", errors="ignore" if non_ascii == "drop" else "replace")
    n_bad = sum(1 for ch in text if ord(ch) > 127)
    return raw, n_bad


def default_corpus_files() -> list[Path]:
    """The standard library's top-level ``*.py`` files, sorted by name (a fixed, deterministic selection)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return sorted(stdlib.glob("*.py"), key=lambda p: p.name)


def _is_val_file(name: str, val_fraction: float) -> bool:
    # a file's side of the split depends on its name alone: stable when files are added or removed
    h = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")
    return (h % 10_000) < val_fraction * 10_000


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def load_corpus(
    path: str | Path | None = None,
    *,
    val_fraction: float = 0.1,
    non_ascii: NonAscii = "drop",
) -> Corpus:
    """Read a text file, a directory of text files, or (``path=None``) the stdlib's own sources.

    Several files are split by file (a hash of the name picks ~``val_fraction`` of them for val), so no
    file straddles the split; a single file gives its last ``val_fraction`` to val.

    Args:
        path: a UTF-8 text file or a directory (every file below it that decodes as UTF-8, sorted);
            None for the default corpus.
        val_fraction: share of the corpus held out, in (0, 0.5].
        non_ascii: ``drop`` or ``replace`` (by ``?``) characters above code point 127; counted either way.

    Returns:
        A Corpus.

    Raises:
        InputError: the path does not exist, or no ASCII text remains (empty corpus), or a split is empty.
        UsageError: ``val_fraction`` out of range.

    Example:
        >>> c = load_corpus()
        >>> c.source, len(c.files), c.n_non_ascii > 0
        ('python-stdlib-3.11', 168, True)
    """
    if not 0.0 < val_fraction <= 0.5:
        raise UsageError(f"val_fraction={val_fraction} must be in (0, 0.5]")
    skipped: list[str] = []
    if path is None:
        import sys

        files = default_corpus_files()
        source = f"python-stdlib-{sys.version_info.major}.{sys.version_info.minor}"
        root = files[0].parent if files else Path(".")
    else:
        root = Path(path)
        if not root.exists():
            raise InputError(
                "corpus path does not exist", path=root, hint="give a UTF-8 text file or a directory of text files"
            )
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        source = str(root)
    texts: list[tuple[str, str]] = []
    read: list[str] = []
    for f in files:
        text = _read_text(f)
        if text is None:
            skipped.append(str(f))
            continue
        name = f.name if f == root else str(f.relative_to(root))
        texts.append((name, text))
        read.append(str(f.resolve()))
    n_bad = 0
    train_parts: list[bytes] = []
    val_parts: list[bytes] = []
    if len(texts) == 1:
        raw, n_bad = encode_ascii(texts[0][1], non_ascii=non_ascii)
        cut = len(raw) - int(len(raw) * val_fraction)
        train_parts, val_parts = [raw[:cut]], [raw[cut:]]
        split = f"last {val_fraction:.0%} of the file"
    else:
        for name, text in texts:
            raw, bad = encode_ascii(text, non_ascii=non_ascii)
            n_bad += bad
            (val_parts if _is_val_file(name, val_fraction) else train_parts).append(raw)
        split = f"by file name hash, ~{val_fraction:.0%} of files to val"
    train_b, val_b = b"".join(train_parts), b"".join(val_parts)
    if not train_b and not val_b:
        raise InputError(
            f"the corpus has no ASCII text ({len(texts)} readable files, {n_bad} non-ASCII "
            f"characters {'dropped' if non_ascii == 'drop' else 'replaced'})",
            path=source,
            hint="give a non-empty UTF-8 text file or directory",
        )
    if not train_b or not val_b:
        which = "train" if not train_b else "val"
        raise InputError(
            f"the {which} split is empty ({len(texts)} files)",
            path=source,
            hint="give more text or more files, or change val_fraction",
        )
    digest = hashlib.sha256()
    for name, _ in texts:
        digest.update(name.encode() + b"\0")
    digest.update(train_b + b"\0" + val_b)
    as_tensor = lambda b: torch.frombuffer(bytearray(b), dtype=torch.uint8)  # noqa: E731
    return Corpus(
        source=source,
        files=tuple(n for n, _ in texts),
        train=as_tensor(train_b),
        val=as_tensor(val_b),
        n_non_ascii=n_bad,
        non_ascii=non_ascii,
        split=split,
        fingerprint=digest.hexdigest(),
        skipped_files=tuple(skipped),
        paths=tuple(read),
    )
