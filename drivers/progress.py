"""Progress on stderr for long work (indexing, evaluation): one self-overwriting line, throttled, with a rate and an ETA."""

from __future__ import annotations

import sys
import time


class Progress:
    """Callable as on_progress(done, total); prints at most ~10 times a second, only when enabled."""

    def __init__(self, label: str, enabled: bool = True, stream=sys.stderr, unit: str = ""):
        self.label, self.enabled, self.stream, self.unit = label, enabled, stream, unit
        self._started = time.monotonic()
        self._last = 0.0
        self._shown = False

    def line(self, done: int, total: int, now: float) -> str:
        """`label: done/total unit (rate/s, ~ETA left)`: the rate and ETA once there is something to measure."""
        text = f"{self.label}: {done}/{total}" + (f" {self.unit}" if self.unit else "")
        elapsed = now - self._started
        if done > 0 and elapsed > 0.5:
            rate = done / elapsed
            text += f" ({rate:,.0f}/s" + (f", ~{(total - done) / rate:,.0f} s left)" if done < total else ")")
        return text

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or total <= 0 or (now - self._last < 0.1 and done < total):
            return
        self._last = now
        self._shown = True
        self.stream.write("\r" + self.line(done, total, now).ljust(60))
        self.stream.flush()

    def close(self) -> None:
        """End the progress line (once), so what is printed next starts on a line of its own."""
        if self._shown:
            self._shown = False
            self.stream.write("\n")
            self.stream.flush()
