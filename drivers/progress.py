"""Progress on stderr for long work (indexing, evaluation): one self-overwriting line, throttled."""

from __future__ import annotations

import sys
import time


class Progress:
    """Callable as on_progress(done, total); prints at most ~10 times a second, only when enabled."""

    def __init__(self, label: str, enabled: bool = True, stream=sys.stderr):
        self.label, self.enabled, self.stream = label, enabled, stream
        self._last = 0.0
        self._shown = False

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or total <= 0 or (now - self._last < 0.1 and done < total):
            return
        self._last = now
        self._shown = True
        self.stream.write(f"\r{self.label}: {done}/{total}")
        self.stream.flush()

    def close(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
