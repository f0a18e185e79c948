"""Progress on stderr for long work (indexing, evaluation, the research loops over cases): shown by default when
stderr is a terminal (one self-overwriting line, throttled, with a rate and an ETA), silent otherwise.

CRA_PROGRESS=1 shows it anyway (one line per update where stderr is a file or a pipe: a log stays readable),
CRA_PROGRESS=0 never; a command's -v/--verbose asks for it as CRA_PROGRESS=1 does."""

from __future__ import annotations

import os
import sys
import time


def progress_shown(asked: bool = False, stream=None) -> bool:
    """Whether to show progress on stream (default stderr): asked (-v), else CRA_PROGRESS=1/0, else whether it is a
    terminal."""
    setting = os.environ.get("CRA_PROGRESS", "").strip().lower()
    if asked or setting in ("1", "yes", "true", "on"):
        return True
    if setting in ("0", "no", "false", "off"):
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # (a closed or stand-in stream)
        return False


class Progress:
    """Callable as on_progress(done, total); prints at most ~10 times a second (on a terminal; once per update
    elsewhere), only when enabled (default: `progress_shown()`)."""

    def __init__(self, label: str, enabled: bool | None = None, stream=None, unit: str = "", stage_label: str = ""):
        self.stage_label = stage_label or label
        self.stream = sys.stderr if stream is None else stream
        self.enabled = progress_shown(stream=self.stream) if enabled is None else enabled
        self.label, self.unit = label, unit
        self._started = time.monotonic()
        self._last = 0.0
        self._shown = False
        try:
            self._terminal = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self._terminal = False

    def line(self, done: int, total: int, now: float) -> str:
        """`label: done/total unit (rate/s, ~ETA left)`: the rate and ETA once there is something to measure."""
        text = f"{self.label}: {done}/{total}" + (f" {self.unit}" if self.unit else "")
        elapsed = now - self._started
        if done > 0 and elapsed > 0.5:
            rate = done / elapsed
            shown = f"{rate:,.0f}/s" if rate >= 1 else f"{rate * 60:,.1f}/min"
            text += f" ({shown}" + (f", ~{duration_text((total - done) / rate)} left)" if done < total else ")")
        return text

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or total <= 0 or (self._terminal and now - self._last < 0.1 and done < total):
            return
        self._last = now
        if self._terminal:
            self._shown = True
            self.stream.write("\r" + self.line(done, total, now).ljust(60))
        else:  # a log: one line per update
            self.stream.write(self.line(done, total, now) + "\n")
        self.stream.flush()

    def __call__(self, done: int, total: int) -> None:
        self.update(done, total)

    def stage(self, text: str) -> None:
        """On a terminal, what the work is doing between counted parts (`indexing: import bindings (12 s)`)."""
        now = time.monotonic()
        if not self.enabled or not self._terminal:  # (not throttled: a few dozen stages a run, each worth seeing)
            return
        self._last, self._shown = now, True
        self.stream.write("\r" + f"{self.stage_label}: {text} ({duration_text(now - self._started)})".ljust(60)[:200])
        self.stream.flush()

    def note(self, text: str) -> None:
        """Print a line of its own (a skipped case, a warning) without mixing it into the progress line, which is
        drawn again at the next update."""
        if self._shown:
            self.stream.write("\r" + " " * 60 + "\r")
            self._shown, self._last = False, 0.0
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the progress line (once), so what is printed next starts on a line of its own."""
        if self._shown:
            self._shown = False
            self.stream.write("\n")
            self.stream.flush()


def duration_text(seconds: float) -> str:
    """A duration as a person reads it: `42 s`, `7 min`, `2.5 h`."""
    if seconds < 100:
        return f"{seconds:,.0f} s"
    if seconds < 6000:
        return f"{seconds / 60:,.0f} min"
    return f"{seconds / 3600:,.1f} h"
