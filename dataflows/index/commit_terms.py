"""Term frequencies of commit messages, so the history signal can match a task against past fixes."""

from __future__ import annotations

import pandas as pd

from dataflows.index.schema import TABLES
from dataflows.text import term_counts


def kb_commit_terms(kb_commits: pd.DataFrame) -> pd.DataFrame:
    """(commit, term, tf) of every commit message in the indexed history (a few thousand short texts)."""
    rows = [(commit, term, tf) for commit, message in zip(kb_commits["commit"], kb_commits["message"].fillna(""))
            for term, tf in term_counts(message).items()]
    return pd.DataFrame(rows, columns=list(TABLES["commit_terms"])).astype({"tf": "int32"})
