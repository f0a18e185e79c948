"""Batches parsed by an index run that has not written its KB yet (`<kb>/.resume/<code>/<key>.pickle`): a run
interrupted mid-way and started again over the same tree takes them instead of parsing again. The parse node asks for
and hands over batches by key (`cra.dataflows.index.storage.ParseCheckpoint`); the files are this module's."""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from cra.dataflows.index.storage import ParseCheckpoint

RESUME_DIR = ".resume"  # in a KB directory: batches parsed by a run that has not written its KB yet


@dataclass(frozen=True)
class PickledBatches(ParseCheckpoint):
    """Parsed batches as pickles in one directory (one per code version and token counter, see `checkpoint_in`)."""

    directory: str

    def load(self, key: str):
        with suppress(Exception):  # absent, cut short or from another version: parsed again
            return pickle.loads((Path(self.directory) / f"{key}.pickle").read_bytes())
        return None

    def save(self, key: str, batch) -> None:
        """Write a batch's pickle atomically (temp file, then rename): an interruption leaves it whole or absent."""
        path = Path(self.directory) / f"{key}.pickle"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(batch, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def checkpoint_in(resume_dir: Path, name: str) -> PickledBatches:
    """The checkpoint named `name` (the index code and token counter it is for) in resume_dir; batches saved under
    other names (other code, the other counter) are of no use to this run and are removed."""
    for stale in Path(resume_dir).glob("*"):
        if stale.name != name:
            shutil.rmtree(stale, ignore_errors=True)
    return PickledBatches(str(Path(resume_dir) / name))


def resumable_batches(kb_dir: Path) -> int:
    """Parsed batches an interrupted run left for the next one (what `cra index` says when interrupted)."""
    return sum(1 for _ in (Path(kb_dir) / RESUME_DIR).glob("*/*.pickle"))


def drop_checkpoints(kb_dir: Path) -> None:
    """Remove every saved batch (the KB is written, or a rebuild starts afresh)."""
    shutil.rmtree(Path(kb_dir) / RESUME_DIR, ignore_errors=True)
