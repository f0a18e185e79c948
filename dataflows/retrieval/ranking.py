"""How signal values become a file's score, total and place in the ranking: the arithmetic of `combination`'s
nodes, shared with `cra.drivers.research.tune` so that weights are fitted on exactly the scores the pipeline computes.
Helpers over arrays, not Hamilton nodes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# languages whose files are prose, configuration or data rather than code
NON_SOURCE_LANGUAGES = frozenset(
    {"markdown", "rst", "text", "asciidoc", "toml", "yaml", "json", "ini", "properties", "dotenv", "xml", "sql"}
)
# directories of code that ships beside the project rather than being it: a fix rarely edits them (none of the
# 172 gold files of the development cases is under one), yet their words match issues (bundled copies, examples);
# with a leading `_` or `.` too, which hides a directory from Go's toolchain (`_examples/`) and Jekyll sites (`_docs/`);
# `jmh/` is the JMH benchmarks' Gradle source set (`src/jmh/java`)
PERIPHERAL_DIRS = (
    r"(?:^|/)[_.]?(?:examples?|samples?|demos?|benchmarks?|bench|jmh|docs?|vendor|vendored|third_party|thirdparty|3rdparty|"
    r"external|bundled|node_modules)/"
)


def non_source(kb_files: pd.DataFrame) -> np.ndarray:
    """Per file: prose/config/data, or any file under a peripheral directory (examples, docs, vendored code)."""
    peripheral = kb_files["path"].astype(str).str.contains(PERIPHERAL_DIRS, case=False, regex=True).to_numpy(dtype=bool)
    return kb_files["language"].isin(NON_SOURCE_LANGUAGES).to_numpy() | peripheral


def roles(kb_files: pd.DataFrame) -> pd.DataFrame:
    """Per file (index file_id, in KB order): `is_test`, `non_source`, and `path_rank` (its place in path order:
    ties of a ranking are broken by path, and sorting a large repository's paths on every request costs tens of
    milliseconds)."""
    path_rank = np.empty(len(kb_files), dtype=np.int64)
    path_rank[np.argsort(kb_files["path"].to_numpy(dtype=object), kind="stable")] = np.arange(len(kb_files))
    return pd.DataFrame(
        {
            "is_test": kb_files["is_test"].fillna(False).astype(bool).to_numpy(),
            "non_source": non_source(kb_files),
            "path_rank": path_rank,
        },
        index=pd.Index(kb_files["file_id"], name="file_id"),
    )


def role_prior(is_test: np.ndarray, non_source: np.ndarray, test_prior: float, non_source_prior: float) -> np.ndarray:
    """Per file: 1 for source code, the test prior for tests, the non-source prior for prose/data/peripheral code."""
    return np.where(is_test, test_prior, np.where(non_source, non_source_prior, 1.0))


def effective_weights(configured: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Weights with signals that are zero for every file set to 0, renormalised to sum 1 (all dead: as configured)."""
    weights = np.where(live, configured, 0.0)
    if weights.sum() <= 0:  # no signal has data: keep the configured proportions
        weights = configured
    return weights / weights.sum()


def file_scores(
    values: np.ndarray, weights: np.ndarray, prior: np.ndarray, seed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(score, total) per file: weighted sum (clipped to 1) times prior; a seed's total is 1.0 times its prior."""
    score = np.clip((values * weights).sum(axis=1), 0.0, 1.0) * prior
    return score, np.where(seed, prior, score)


def ranks_of(which: np.ndarray, total: np.ndarray, score: np.ndarray, path_order: np.ndarray) -> np.ndarray:
    """1-based ranks of the files at positions `which` in the ranking `reranking.signal_matrix` sorts: total
    descending, then score descending, then path (path_order: each file's place in path order)."""
    t, s, p = total[which, None], score[which, None], path_order[which, None]
    before = (total > t) | ((total == t) & ((score > s) | ((score == s) & (path_order < p))))
    return 1 + before.sum(axis=1)
