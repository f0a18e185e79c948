"""Advisory file locks: one writer at a time per store or KB, across processes (fcntl.flock)."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cra.drivers.common.errors import CraError


@contextmanager
def exclusive_lock(
    path: Path, timeout: float | None = None, on_wait: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) for the block.

    timeout None waits as long as it takes; a number gives up after that many seconds with a CraError.
    on_wait is called once if the lock is held by someone else (e.g. to print "waiting for ...").
    The lock goes with the process: a killed holder never leaves a stale lock behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise CraError(
                            f"{path} is locked by another cra process (waited {timeout:g} s). "
                            "Wait for it to finish, then run again."
                        ) from None
                    time.sleep(0.05)
        yield
    finally:
        os.close(fd)
