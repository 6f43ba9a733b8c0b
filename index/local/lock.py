"""The single-writer lock of a local index: an exclusive ``flock`` on ``PATH/lock``, which
holds the pid of the process holding it (named in the error a second opener gets)."""
from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

__all__ = ["IndexLocked", "LOCK_NAME", "acquire", "release", "in_use", "hold", "cannot_make"]

LOCK_NAME = "lock"
#: index folder -> the lock :func:`hold` took for this process, until :func:`acquire` hands it to the opener
_held: dict[str, int] = {}


class IndexLocked(RuntimeError):
    """Another process (or another open LocalIndex) is using this local index."""


def acquire(path: Path) -> int:
    """Lock the index directory ``path``; return the lock file's descriptor (see :func:`release`). A lock
    :func:`hold` took in this process is handed over, not taken again."""
    held = _held.pop(str(Path(path).resolve()), None)
    if held is not None:
        return held
    lock_path = path / LOCK_NAME
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        try:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
        finally:
            os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        who = (f"this process (pid {holder}), through another open LocalIndex"
               if holder == str(os.getpid()) else f"another process (pid {holder})")
        raise IndexLocked(
            f"the local dedup index {str(path)!r} is in use by {who}; lock file "
            f"{lock_path}. A local index has a single writer: "
            "run one crawl at a time on it, or let concurrent crawls share an Elasticsearch "
            "index instead (DEDUP_INDEX=http://host:9200/name)."
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def release(fd: int) -> None:
    """Clear the pid and unlock (closing ``fd``)."""
    try:
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def in_use(path: Path) -> str | None:
    """Why the local index at ``path`` cannot be opened for writing now (another process holds it), or
    None; creates nothing. For a check before a crawl starts (the lock itself is taken when it opens)."""
    if not (Path(path) / LOCK_NAME).exists():
        return None
    try:
        release(acquire(Path(path)))
    except IndexLocked as exc:
        return str(exc)
    return None


def hold(path: Path) -> str | None:
    """Take the lock of the local index at ``path`` now, for this process's next :func:`acquire` of it (a crawl's
    pipelines opening the index), making its folder if need be; why not (another process holds it), or None.
    The check before a crawl starts: with :func:`in_use`, two crawls started at once both passed it and the
    second failed in the pipelines with tracebacks; holding the lock from the check, the second is refused."""
    key = str(Path(path).resolve())
    if key in _held:
        return None
    Path(path).mkdir(parents=True, exist_ok=True)
    try:
        _held[key] = acquire(Path(path))
    except IndexLocked as exc:
        return str(exc)
    return None


def cannot_make(path: Path) -> str | None:
    """Why no local index can be opened for writing at ``path`` (a file where a folder is needed, a folder
    this process may not write), or None; creates nothing. For the same check before a crawl starts: opening
    the index later would fail in the pipelines, with a traceback, after the spider opened."""
    path = Path(path)
    probe = path
    while not probe.exists() and probe.parent != probe:  # the deepest part of the path that exists
        probe = probe.parent
    if not probe.is_dir():
        return f"the local dedup index {str(path)!r} cannot be made: {str(probe)!r} is a file, not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        what = "cannot be written" if probe == path else "cannot be made"
        return f"the local dedup index {str(path)!r} {what}: this user may not write in {str(probe)!r}"
    return None
