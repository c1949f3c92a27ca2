"""The data record of a run: a fingerprint per input (path, size, mtime and a content hash: every
byte up to FULL_HASH_MAX_BYTES, above it sampled blocks plus size and mtime), or a Hugging Face dataset
name and revision. ``hash_scheme`` says which kind was used; ``runs repro`` recomputes the same kind.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FULL_HASH_MAX_BYTES", "SCHEMES", "DataFingerprint", "fingerprint_data", "fingerprint_input"]

# Every byte is hashed up to 1 GiB per input. blake2b ran at 250-330 MiB/s on this project's shared
# 2-core VM (`benchmarks/bench_runs.py --only hash`: 252 MiB/s over a 64 MiB file in the page cache,
# 326 MiB/s in memory), so the largest fully hashed input costs ~3-4 s at start(): small beside any
# training run worth recording (a minute of CPU training reads its data many times over),
# and it catches every edit, including a same-size label flip that sampled blocks miss. Above 1 GiB
# (sharded corpora of 100 GB would take minutes) 64 blocks of 64 KiB spread over the file are hashed
# together with the size and the mtime (``hash_scheme="sampled+mtime"``): any edit that goes through
# the filesystem changes the mtime, so it is seen, but a touch without a change also reads as changed.
FULL_HASH_MAX_BYTES = 1024**3
_BLOCK_BYTES = 64 * 1024
_BLOCKS = 64
# Records written before the threshold rose: files up to 4 MiB whole, 16 sampled blocks, no mtime.
_LEGACY_WHOLE_BELOW_BYTES = 4 * 1024 * 1024
_LEGACY_BLOCKS = 16
SCHEMES = ("full", "sampled+mtime", "sampled")
_DIR_FILE_CAP = 10_000
HF_PREFIX = "hf://"


@dataclass(frozen=True)
class DataFingerprint:
    """One input. ``kind`` is ``file``, ``dir`` or ``hf``.

    ``hash`` is ``blake2b`` over every byte (``hash_scheme="full"``), over sampled blocks with the size
    and mtime (``"sampled+mtime"``, inputs over FULL_HASH_MAX_BYTES), over sampled blocks and size only
    (``"sampled"``, records of older versions), or None for a Hub dataset (identified by ``revision``).
    """

    source: str
    kind: str
    path: str | None
    size_bytes: int | None
    mtime_ns: int | None
    hash: str | None
    hash_scheme: str | None
    files: int | None = None
    hf_name: str | None = None
    revision: str | None = None
    reason: str | None = None


def _hash_file(path: Path, st: os.stat_result, scheme: str) -> str:
    """blake2b of one file under ``scheme`` (see SCHEMES)."""
    size = st.st_size
    h = hashlib.blake2b(digest_size=16)
    h.update(size.to_bytes(8, "little"))
    with open(path, "rb") as f:
        if scheme == "full" or (scheme == "sampled" and size <= _LEGACY_WHOLE_BELOW_BYTES):
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
            return h.hexdigest()
        if scheme == "sampled+mtime":
            h.update(st.st_mtime_ns.to_bytes(8, "little", signed=True))
        blocks = _BLOCKS if scheme == "sampled+mtime" else _LEGACY_BLOCKS
        step = max(0, size - _BLOCK_BYTES) / (blocks - 1)
        for i in range(blocks):
            f.seek(int(i * step))
            h.update(f.read(_BLOCK_BYTES))
    return h.hexdigest()


def _scheme_for(total_bytes: int, full_hash: bool, scheme: str | None) -> str:
    if scheme is not None:
        if scheme not in SCHEMES:
            raise ValueError(f"hash scheme {scheme!r} is not one of {SCHEMES}")
        return scheme
    return "full" if full_hash or total_bytes <= FULL_HASH_MAX_BYTES else "sampled+mtime"


def _unhashed_file(text: str, path: Path, reason: str) -> DataFingerprint:
    """A file input that is recorded but not hashed, and why."""
    return DataFingerprint(
        source=text,
        kind="file",
        path=str(path),
        size_bytes=None,
        mtime_ns=None,
        hash=None,
        hash_scheme=None,
        reason=reason,
    )


def fingerprint_input(
    source: str | os.PathLike[str],
    *,
    full_hash: bool = False,
    scheme: str | None = None,
    base_dir: Path | None = None,
) -> DataFingerprint:
    """Fingerprint one input.

    Args:
        source: a file, a directory (its files are hashed in sorted order), or ``hf://NAME@REVISION``
            for a Hugging Face dataset (nothing is downloaded; no ``@REVISION`` is recorded as unpinned).
        full_hash: hash every byte even above FULL_HASH_MAX_BYTES.
        scheme: force a hash scheme (``runs repro`` recomputes the recorded one).
        base_dir: the directory a relative ``source`` is read from (default: this process's).

    Returns:
        A DataFingerprint; a path that does not exist gives None fields and ``reason``.

    Example:
        >>> fingerprint_input("train.jsonl").hash_scheme  # doctest: +SKIP
        'full'
    """
    text = os.fspath(source)
    if text.startswith(HF_PREFIX):
        name, _, rev = text[len(HF_PREFIX) :].partition("@")
        return DataFingerprint(
            source=text,
            kind="hf",
            path=None,
            size_bytes=None,
            mtime_ns=None,
            hash=None,
            hash_scheme=None,
            hf_name=name,
            revision=rev or None,
            reason=None if rev else "no revision given: the Hub version is not pinned",
        )
    path = (base_dir / text if base_dir is not None else Path(text)).resolve()
    if not path.exists():
        return _unhashed_file(text, path, "the path does not exist")
    if path.is_dir():
        files: list[tuple[Path, os.stat_result]] = []
        for root, dirs, names in os.walk(path):
            dirs.sort()
            for name in sorted(names):
                if len(files) >= _DIR_FILE_CAP:
                    break
                fp = Path(root) / name
                fst = fp.stat()
                if stat.S_ISREG(fst.st_mode):  # a FIFO or device in the folder would never end: left out
                    files.append((fp, fst))
        total = sum(st.st_size for _, st in files)
        chosen = _scheme_for(total, full_hash, scheme)
        h = hashlib.blake2b(digest_size=16)
        for fp, st in files:
            digest = _hash_file(fp, st, chosen)
            h.update(str(fp.relative_to(path)).encode() + b"\0" + digest.encode())
        newest = max((st.st_mtime_ns for _, st in files), default=0)
        reason = f"only the first {_DIR_FILE_CAP} files are hashed" if len(files) >= _DIR_FILE_CAP else None
        return DataFingerprint(
            source=text,
            kind="dir",
            path=str(path),
            size_bytes=total,
            mtime_ns=newest,
            hash=h.hexdigest(),
            hash_scheme=chosen,
            files=len(files),
            reason=reason,
        )
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):  # /dev/zero, a FIFO: reading it never ends (or blocks), so it is not hashed
        return _unhashed_file(text, path, "not a regular file (a device or FIFO): its content is not hashed")
    chosen = _scheme_for(st.st_size, full_hash, scheme)
    return DataFingerprint(
        source=text,
        kind="file",
        path=str(path),
        size_bytes=st.st_size,
        mtime_ns=st.st_mtime_ns,
        hash=_hash_file(path, st, chosen),
        hash_scheme=chosen,
    )


def fingerprint_data(
    sources: list[str | os.PathLike[str]] | tuple[str | os.PathLike[str], ...] = (),
    *,
    full_hash: bool = False,
    base_dir: Path | None = None,
) -> tuple[DataFingerprint, ...]:
    """Fingerprint every input in order (see ``fingerprint_input``); relative paths are read from ``base_dir``."""
    return tuple(fingerprint_input(s, full_hash=full_hash, base_dir=base_dir) for s in sources)
