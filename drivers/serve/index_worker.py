"""The background re-index of `cra serve --watch` in a warm child process: the same `index_repository` as `cra index`.

Why a process and not a thread of the server: a re-index is Python work (the dataflow, pandas), and in a thread it
shares the interpreter lock with the requests that keep answering meanwhile, so each slows the other (Django, a
client asking 4 times a second: an edit visible after a median 2.4-2.7 s from a thread, 1.75-2.0 s from this
process; see docs/research-log.md). In its own process it runs beside them; it also keeps the re-index's peak
memory out of the server's heap, and a crash of a parser ends the worker, not the server (the next run starts a new
one). It loads the tokenizer once, instead of in a helper forked by every run.

Protocol: one JSON line per job on the child's stdin (`repo`, `kb_dir`, `history`, `changed`: the paths the watcher
saw change since the last job, or null when it cannot tell), one JSON line per answer on the stdout it was given
(`stats`, or `error`); anything else the child prints goes to stderr. The child keeps the walk of its last run per
repository and follows the changed paths instead of walking again (`cra.drivers.serve.tree_walk`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import traceback
from pathlib import Path

from cra.drivers.common.errors import CraError


class IndexWorker:
    """A child process that runs `index_repository` jobs one at a time; started on first use, restarted after it
    died. Thread-safe: callers queue on a lock."""

    def __init__(self):
        self._lock = threading.Lock()
        self._child: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the child now (it imports the index machinery while nothing is asked of it yet)."""
        with self._lock:
            self._started()

    def _started(self) -> subprocess.Popen:
        if self._child is None or self._child.poll() is not None:
            self._child = subprocess.Popen(
                [sys.executable, "-m", "cra.drivers.serve.index_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
        return self._child

    def index(self, repo: Path, kb_dir: Path, history: int, changed: list[str] | None = None) -> dict:
        """The statistics of an incremental re-index of repo into kb_dir; a CraError saying why it failed. changed:
        every path (relative) that changed since the last job on this repository; None: unknown (the tree is walked)."""
        job = {"repo": str(repo), "kb_dir": str(kb_dir), "history": history, "changed": changed}
        with self._lock:
            child = self._started()
            try:
                child.stdin.write(json.dumps(job) + "\n")
                child.stdin.flush()
                line = child.stdout.readline()
            except OSError:
                line = ""
            if not line:
                code = child.wait()
                raise CraError(f"the index worker process ended (exit code {code}); a new one runs the next re-index")
        answer = json.loads(line)
        if "error" in answer:
            raise CraError(answer["error"])
        return answer["stats"]

    def close(self) -> None:
        with self._lock:
            if self._child is not None and self._child.poll() is None:
                self._child.stdin.close()
                try:
                    self._child.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._child.kill()


def main() -> None:
    """The child: answer index jobs from stdin until it closes."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # (stray prints must not break the protocol)
    from cra.drivers.common import tokens
    from cra.drivers.index import dag  # noqa: F401  (loaded now: the first job does not wait for the imports)
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.serve.tree_walk import change_hint, git_index_stat, remembered

    tokens.encoding()  # loaded once here, not in a helper process forked by every run (`tokens.preload`)

    memories = {}  # (repo, kb_dir) -> the walk of the last run that succeeded there (`tree_walk.WalkMemory`)
    for line in sys.stdin:
        job = json.loads(line)
        key = (job["repo"], job["kb_dir"])
        root, kb_dir = Path(job["repo"]), Path(job["kb_dir"])
        try:
            memory = memories.pop(key, None)  # (kept again only when this run succeeds)
            git_index = git_index_stat(root)
            hint = change_hint(root, kb_dir, memory, job.get("changed"), git_index)
            stats = index_repository(root, kb_dir, history=job["history"], hint=hint)
            memories[key] = remembered(root, kb_dir, hint, git_index, memory)
            answer = {"stats": {**stats, "walked": hint.changed is None}}
        except CraError as exc:
            answer = {"error": str(exc)}
        except Exception as exc:  # a bug: its traceback on stderr, the server reports it and goes on
            traceback.print_exc()
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        try:
            answers.write(json.dumps(answer, default=str) + "\n")
        except BrokenPipeError:  # the server is gone: so is the reason to answer
            return


if __name__ == "__main__":
    main()
