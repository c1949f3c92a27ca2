"""The data record of a run: a fingerprint per input (path, size, mtime and a content hash over
sampled blocks, or a full hash on request), or a Hugging Face dataset name and revision.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DataFingerprint", "fingerprint_data", "fingerprint_input"]

# Files up to 4 MiB are hashed whole; larger ones by 16 blocks of 64 KiB spread over the file plus its
# size, so a 100 GB shard costs 1 MiB of reads (the scheme of `xxhsum`-style sampled hashes).
_WHOLE_BELOW_BYTES = 4 * 1024 * 1024
_BLOCK_BYTES = 64 * 1024
_BLOCKS = 16
_DIR_FILE_CAP = 10_000
HF_PREFIX = "hf://"


@dataclass(frozen=True)
class DataFingerprint:
    """One input. ``kind`` is ``file``, ``dir`` or ``hf``.

    ``hash`` is ``blake2b`` over sampled blocks (``hash_scheme="sampled"``), over every byte
    (``"full"``, also used for small files), or None for a Hub dataset (identified by ``revision``).
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


def _hash_file(path: Path, size: int, full: bool) -> tuple[str, str]:
    h = hashlib.blake2b(digest_size=16)
    h.update(size.to_bytes(8, "little"))
    with open(path, "rb") as f:
        if full or size <= _WHOLE_BELOW_BYTES:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
            return h.hexdigest(), "full"
        step = (size - _BLOCK_BYTES) / (_BLOCKS - 1)
        for i in range(_BLOCKS):
            f.seek(int(i * step))
            h.update(f.read(_BLOCK_BYTES))
    return h.hexdigest(), "sampled"


def fingerprint_input(source: str | os.PathLike[str], *, full_hash: bool = False) -> DataFingerprint:
    """Fingerprint one input.

    Args:
        source: a file, a directory (its files are hashed in sorted order), or ``hf://NAME@REVISION``
            for a Hugging Face dataset (nothing is downloaded; no ``@REVISION`` is recorded as unpinned).
        full_hash: hash every byte instead of sampled blocks.

    Returns:
        A DataFingerprint; a path that does not exist gives None fields and ``reason``.

    Example:
        >>> fingerprint_input("train.jsonl").hash_scheme  # doctest: +SKIP
        'full'
    """
    text = os.fspath(source)
    if text.startswith(HF_PREFIX):
        name, _, rev = text[len(HF_PREFIX):].partition("@")
        return DataFingerprint(source=text, kind="hf", path=None, size_bytes=None, mtime_ns=None, hash=None,
                               hash_scheme=None, hf_name=name, revision=rev or None,
                               reason=None if rev else "no revision given: the Hub version is not pinned")
    path = Path(text).resolve()
    if not path.exists():
        return DataFingerprint(source=text, kind="file", path=str(path), size_bytes=None, mtime_ns=None,
                               hash=None, hash_scheme=None, reason="the path does not exist")
    if path.is_dir():
        h = hashlib.blake2b(digest_size=16)
        total, count, newest, schemes = 0, 0, 0, set()
        for root, dirs, names in os.walk(path):
            dirs.sort()
            for name in sorted(names):
                if count >= _DIR_FILE_CAP:
                    break
                fp = Path(root) / name
                st = fp.stat()
                digest, scheme = _hash_file(fp, st.st_size, full_hash)
                h.update(str(fp.relative_to(path)).encode() + b"\0" + digest.encode())
                total += st.st_size
                count += 1
                newest = max(newest, st.st_mtime_ns)
                schemes.add(scheme)
        reason = f"only the first {_DIR_FILE_CAP} files are hashed" if count >= _DIR_FILE_CAP else None
        scheme = "full" if schemes <= {"full"} else "sampled"
        return DataFingerprint(source=text, kind="dir", path=str(path), size_bytes=total, mtime_ns=newest,
                               hash=h.hexdigest(), hash_scheme=scheme, files=count, reason=reason)
    st = path.stat()
    digest, scheme = _hash_file(path, st.st_size, full_hash)
    return DataFingerprint(source=text, kind="file", path=str(path), size_bytes=st.st_size,
                           mtime_ns=st.st_mtime_ns, hash=digest, hash_scheme=scheme)


def fingerprint_data(sources: list[str | os.PathLike[str]] | tuple[str | os.PathLike[str], ...] = (), *,
                     full_hash: bool = False) -> tuple[DataFingerprint, ...]:
    """Fingerprint every input in order (see ``fingerprint_input``)."""
    return tuple(fingerprint_input(s, full_hash=full_hash) for s in sources)
