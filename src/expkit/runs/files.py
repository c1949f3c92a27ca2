"""Reading the files of a run store: regular files only. A ``run.json`` (or any store file) replaced by a
FIFO with no writer would block ``open`` for ever, a device would never end; both are refused at once."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["NotRegularFileError", "is_regular_file", "read_regular_bytes"]


class NotRegularFileError(OSError):
    """The path names a FIFO, a device, a socket or a directory, not a regular file."""


def _kind(mode: int) -> str:
    """``a FIFO``, ``a directory`` ... for the message."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_regular_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of ``path`` when it is a regular file.

    The file is opened without blocking (``O_NONBLOCK``: a FIFO with no writer opens at once) and checked
    with ``fstat`` on the open descriptor, so a file swapped between a check and the open cannot slip by.

    Raises:
        NotRegularFileError: ``path`` is a FIFO, device, socket or directory (``strerror`` names which).
        OSError: as ``open`` (missing, no permission).

    Example:
        >>> read_regular_bytes("/dev/null")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        NotRegularFileError: [Errno 22] not a regular file (a character device): '/dev/null'
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(errno.EINVAL, f"not a regular file ({_kind(mode)})", str(path))
        os.set_blocking(fd, True)
        with open(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


def is_regular_file(path: Path) -> bool:
    """Whether ``path`` is a regular file (a symlink to one counts), without opening it."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False
