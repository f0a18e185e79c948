"""Stopping a run from outside, and worker processes that never outlive theirs.

SIGTERM (what `timeout`, CI cancellations and job schedulers send) stops a run as Ctrl-C does: `Interrupted`, a
KeyboardInterrupt that remembers its signal, so the command says the same thing and exits 128 + the signal's number.
A worker process watches its parent and ends as soon as the parent has gone, however it went (`die_with_parent`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM: the run stops where it is safe to; `exit_code` is the shell's for that signal (130, 143)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def exit_code_of(exc: KeyboardInterrupt) -> int:
    """130 for Ctrl-C (a plain KeyboardInterrupt), 128 + the signal for an `Interrupted`."""
    return exc.exit_code if isinstance(exc, Interrupted) else 128 + signal.SIGINT


def _raise_interrupted(signum, frame) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def terminate_as_interrupt():
    """While the block runs (in the main thread), SIGTERM raises `Interrupted` as Ctrl-C raises KeyboardInterrupt:
    a run's own cleanup (`finally`, kept resume batches, the lock released) happens for both."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def stops_deferred(received: list[int]):
    """While the block runs (in the main thread), Ctrl-C and SIGTERM only append their signal to `received`: the
    caller raises `Interrupted` where that is safe (not inside a lock of a process pool's, see `cra.drivers.index.dag`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received.clear()
    previous = {s: signal.signal(s, lambda signum, frame: received.append(signum)) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        received.clear()


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent_pid: int | None = None) -> None:
    """In a new worker process: end it as soon as the process that started it has gone (killed with SIGKILL, or
    SIGTERM, or a crash), instead of it living on, re-parented to init, holding hundreds of MB. A thread waits on
    the parent's sentinel (a pipe only the parent holds; multiprocessing passes it to every child, fork server or
    spawn); on Linux the kernel also kills the worker when its direct parent (the fork server) dies. A child forked
    by hand passes its parent's pid: if that parent is already gone, the child ends at once."""
    import multiprocessing
    from multiprocessing.connection import wait

    with contextlib.suppress(OSError, AttributeError):  # (Linux only; elsewhere the thread below does it alone)
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent_pid is not None and os.getppid() != parent_pid:  # it died before the kernel was told to watch it
        os._exit(1)
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        wait([parent.sentinel])  # readable (end of file) once the parent's end is closed: the parent has exited
        os._exit(1)

    threading.Thread(target=watch, name="cra-parent-watch", daemon=True).start()
