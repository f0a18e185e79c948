"""Git history as frames: commits, the files each touched, per-file recency/churn, co-change counts.

Input is the raw text of `cra.drivers.index.git_history.git_log` (records separated by RS, fields by US).
"""

from __future__ import annotations

import pandas as pd

from cra.dataflows.index.frames import conform, in_set

RECORD_SEP = "\x1e"
FIELD_SEP = "\x1f"


def history_available(git_log: str | None) -> bool:
    """Whether the repository's history could be read (False outside git: history signals stay neutral)."""
    return git_log is not None


def _parse_records(git_log: str) -> tuple[list[tuple], list[tuple[str, str]]]:
    """(commit, time, author, message, n_files) rows and (commit, path) rows of the log text."""
    commits, files = [], []
    for record in git_log.split(RECORD_SEP):
        fields = record.split(FIELD_SEP)
        if len(fields) < 5:
            continue
        commit, time, author, names = fields[0].strip(), fields[1], fields[2], fields[-1]
        message = FIELD_SEP.join(fields[3:-1])
        paths = sorted({line.strip() for line in names.splitlines() if line.strip()})
        commits.append((commit, int(time), author, message.strip(), len(paths)))
        files.extend((commit, p) for p in paths)
    return commits, files


def kb_commits(git_log: str | None) -> pd.DataFrame:
    """One row per commit (newest first): hash, unix time, author, full message, number of files touched."""
    rows, _ = _parse_records(git_log or "")
    return conform(pd.DataFrame(rows, columns=["commit", "time", "author", "message", "n_files"]), "commits")


def kb_commit_files(git_log: str | None) -> pd.DataFrame:
    """(commit, path) for every file a commit touched, paths relative to the indexed root."""
    _, rows = _parse_records(git_log or "")
    return conform(pd.DataFrame(rows, columns=["commit", "path"]), "commit_files")


def file_history(kb_commits: pd.DataFrame, kb_commit_files: pd.DataFrame) -> pd.DataFrame:
    """Per path: last_commit_time (newest commit touching it) and commit_count within the indexed history."""
    if kb_commit_files.empty:  # no history (outside git, --history 0): the frame the grouping gives, without it
        return pd.DataFrame(
            {"last_commit_time": pd.Series(dtype="int64"), "commit_count": pd.Series(dtype="int64")},
            index=pd.Index([], dtype=kb_commit_files["path"].dtype, name="path"),
        )
    touched = kb_commit_files.merge(kb_commits[["commit", "time"]], on="commit")
    return touched.groupby("path").agg(last_commit_time=("time", "max"), commit_count=("commit", "nunique"))


def kb_cochange(
    kb_commits: pd.DataFrame, kb_commit_files: pd.DataFrame, indexed_files: pd.DataFrame, max_commit_files: int = 50
) -> pd.DataFrame:
    """How many commits touched both files (file_a < file_b), ignoring sweeping commits over max_commit_files."""
    if kb_commit_files.empty:  # (three merges and a grouping of nothing took 7 ms of every re-index outside git)
        return conform(pd.DataFrame(columns=["file_a", "file_b", "count"]), "cochange")
    small = kb_commits.loc[kb_commits["n_files"] <= max_commit_files, "commit"]
    touched = kb_commit_files[in_set(kb_commit_files["commit"], small)]
    touched = touched.merge(indexed_files[["path", "file_id"]], on="path")[["commit", "file_id"]].drop_duplicates()
    pairs = touched.merge(touched, on="commit", suffixes=("_a", "_b"))
    pairs = pairs[pairs["file_id_a"] < pairs["file_id_b"]]
    counts = pairs.groupby(["file_id_a", "file_id_b"]).size().reset_index(name="count")
    counts = counts.rename(columns={"file_id_a": "file_a", "file_id_b": "file_b"})
    return conform(counts.sort_values(["file_a", "file_b"]), "cochange")
