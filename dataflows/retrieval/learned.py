"""The learned file ranker: features of the weighted sum's best files, and a boosted-tree model over them.

The weighted sum ranks every file; the model re-orders its CANDIDATES best, where the fixes' files almost always
are, with what a sum cannot express: interactions between signals, each file's rank among the candidates, its size
and history, its language and the task's type. Training (`cra.drivers.research.learn_ranker`, LightGBM lambdarank) and
requests build features with the same function, `candidate_features`. The model ships as JSON arrays, evaluated
here with numpy: a request needs no LightGBM.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from cra.dataflows.retrieval.signal_list import SIGNALS
from cra.dataflows.retrieval.symbol_table import rows_of_ids
from cra.dataflows.retrieval.task_analysis import TASK_TYPES

CANDIDATES = 100  # files the model re-orders: the weighted sum's best
TOP = 3  # the sum's best files, which `stem_like_top` and `dir_of_top` relate each candidate to
_NAME_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
FAMILIES = ("python", "go", "rust", "javascript", "java")
_FAMILY_OF = {"typescript": "javascript", "tsx": "javascript", "jsx": "javascript"}
FEATURES: tuple[str, ...] = (
    *SIGNALS,
    *(f"{s}_rank" for s in SIGNALS),
    "total",
    "total_share",
    "total_rank",
    "seed",
    "is_test",
    "non_source",
    "log_tokens",
    "log_lines",
    "log_commits",
    "log_age_days",
    "log_repo_files",
    "stem_like_top",
    "dir_of_top",
    *(f"lang_{f}" for f in FAMILIES),
    "lang_other",
    *(f"task_{t}" for t in TASK_TYPES),
)


def candidate_features(candidates: pd.DataFrame, n_repo_files: int, task_type: str) -> pd.DataFrame:
    """One row per candidate file, in FEATURES order.

    `candidates`: one task's best files by the weighted sum, best first, with every signal, `total`, `seed`,
    `is_test`, `non_source`, `language`, `tokens`, `n_lines`, `commit_count` and `age_days` (NaN: no history).
    """
    n = len(candidates)
    out = {s: candidates[s].to_numpy(float) for s in SIGNALS}
    for s in SIGNALS:  # 0 for the best value among the candidates .. 1 for the worst; ties share the better place
        values = out[s]
        out[f"{s}_rank"] = (np.searchsorted(np.sort(-values), -values, side="left") / max(n - 1, 1)) if n else values
    total = candidates["total"].to_numpy(float)
    out["total"] = total
    out["total_share"] = total / total.max() if n and total.max() > 0 else np.zeros(n)
    out["total_rank"] = np.arange(n) / max(n - 1, 1)
    for flag in ("seed", "is_test", "non_source"):
        out[flag] = candidates[flag].to_numpy(bool).astype(float)
    for name, column in (
        ("log_tokens", "tokens"),
        ("log_lines", "n_lines"),
        ("log_commits", "commit_count"),
        ("log_age_days", "age_days"),
    ):
        values = pd.to_numeric(candidates[column], errors="coerce").astype("float64").to_numpy()
        out[name] = np.where(np.isnan(values), -1.0, np.log1p(np.clip(values, 0.0, None)))
    out["log_repo_files"] = np.full(n, np.log1p(n_repo_files))
    out["stem_like_top"], out["dir_of_top"] = _like_top(candidates["path"].astype(str).tolist())
    family = candidates["language"].astype(str).map(lambda lang: _FAMILY_OF.get(lang, lang)).to_numpy()
    for f in FAMILIES:
        out[f"lang_{f}"] = (family == f).astype(float)
    out["lang_other"] = (~np.isin(family, FAMILIES)).astype(float)
    for t in TASK_TYPES:
        out[f"task_{t}"] = np.full(n, float(task_type == t))
    return pd.DataFrame(out, index=candidates.index)[list(FEATURES)]


def _like_top(paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per path: the largest share of file-name words it has in common with one of the TOP first other paths
    (Jaccard: `compile_error_kind.rs` and `compile_error.rs` .67), and whether it shares a directory with one."""
    dirs = [p.rpartition("/")[0] for p in paths]
    words = [{w.lower() for w in _NAME_PARTS.findall(p.rpartition("/")[2].split(".")[0])} for p in paths]
    stem, same_dir = np.zeros(len(paths)), np.zeros(len(paths))
    for i in range(len(paths)):
        for j in range(min(TOP, len(paths))):
            if i != j:
                union = words[i] | words[j]
                stem[i] = max(stem[i], len(words[i] & words[j]) / len(union) if union else 0.0)
                same_dir[i] = max(same_dir[i], float(dirs[i] == dirs[j]))
    return stem, same_dir


class TreeModel:
    """A LightGBM model as arrays, evaluated with numpy (all trees at once: a request adds milliseconds).

    Every split is numeric, `x <= threshold` going left (features carry no NaN: `candidate_features` fills them).
    Per tree: split feature, threshold and children per node (>= 0 a node, < 0 the leaf ~child), leaf values."""

    def __init__(self, spec: dict):
        self.features = tuple(spec["features"])
        trees = [
            t
            if t["feature"]
            else {"feature": [0], "threshold": [np.inf], "left": [-1], "right": [-1], "leaf": t["leaf"]}
            for t in spec["trees"]
        ]
        nodes, leaves = max(len(t["feature"]) for t in trees), max(len(t["leaf"]) for t in trees)

        def padded(key: str, width: int, fill, dtype) -> np.ndarray:
            return np.array([list(t[key]) + [fill] * (width - len(t[key])) for t in trees], dtype=dtype)

        self.feature = padded("feature", nodes, 0, np.int64)
        self.threshold = padded("threshold", nodes, np.inf, float)
        self.left, self.right = padded("left", nodes, -1, np.int64), padded("right", nodes, -1, np.int64)
        self.leaf = padded("leaf", leaves, 0.0, float)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The model's score per row of `x` (columns in `self.features` order)."""
        x = np.asarray(x, dtype=float)
        trees = np.arange(len(self.feature))[:, None]
        rows = np.arange(len(x))[None, :]
        node = np.zeros((len(self.feature), len(x)), dtype=np.int64)
        live = node >= 0
        while live.any():
            at = np.where(live, node, 0)
            left = x[rows, self.feature[trees, at]] <= self.threshold[trees, at]
            node = np.where(live, np.where(left, self.left[trees, at], self.right[trees, at]), node)
            live = node >= 0
        return self.leaf[trees, ~node].sum(axis=0)


def lightgbm_spec(dump: dict, features: tuple[str, ...]) -> dict:
    """A LightGBM `dump_model()` as TreeModel arrays; refuses what TreeModel does not evaluate (categorical or
    missing-value splits)."""
    trees = []
    for info in dump["tree_info"]:
        feature, threshold, left, right, leaf = [], [], [], [], []

        def visit(node: dict) -> int:
            if "leaf_value" in node:
                leaf.append(node["leaf_value"])
                return ~(len(leaf) - 1)
            if node.get("decision_type", "<=") != "<=" or node.get("missing_type", "None") not in ("None", None):
                raise ValueError(f"unsupported split: {node.get('decision_type')} / missing {node.get('missing_type')}")
            at = len(feature)
            feature.append(node["split_feature"])
            threshold.append(node["threshold"])
            left.append(0)
            right.append(0)
            left[at] = visit(node["left_child"])
            right[at] = visit(node["right_child"])
            return at

        visit(info["tree_structure"])
        trees.append({"feature": feature, "threshold": threshold, "left": left, "right": right, "leaf": leaf})
    return {"features": list(features), "trees": trees}


def learned_order(
    matrix: pd.DataFrame, kb_files: pd.DataFrame, task_type: str, model: TreeModel, roles: pd.DataFrame
) -> pd.DataFrame:
    """`matrix` (best first by the weighted sum) with its CANDIDATES best re-ordered by `model`.

    The candidates keep the sum's totals, handed out in the model's order (so the files after them, tiers and
    thresholds see the same values), and get a `learned` column (the model's score) and `sum_rank` (their place
    in the sum's order). `roles`: `combination.file_roles` of kb_files."""
    top = matrix.head(CANDIDATES)
    if top.empty:
        return matrix.assign(learned=np.nan, sum_rank=np.nan)
    at = rows_of_ids(kb_files["file_id"], top.index)  # the candidates' rows only, not a copy of every file
    files = {c: kb_files[c].take(at).to_numpy() for c in ("language", "tokens", "n_lines", "commit_count")}
    times = pd.to_numeric(kb_files["last_commit_time"], errors="coerce").astype("float64")
    candidates = top.assign(
        language=files["language"],
        tokens=files["tokens"],
        n_lines=files["n_lines"],
        commit_count=files["commit_count"],
        age_days=((times.max() - times.take(at)) / 86400.0).to_numpy(),
        is_test=roles["is_test"].to_numpy()[at],
        non_source=roles["non_source"].to_numpy()[at],
    )
    features = candidate_features(candidates, len(kb_files), task_type)
    score = model.predict(features[list(model.features)].to_numpy(float))  # the model's own columns, in its order
    order = np.argsort(-score, kind="stable")
    totals = np.sort(top["total"].to_numpy(float))[::-1]
    totals = np.where(totals > 0, np.maximum(totals - np.arange(len(totals)) * 1e-9, 1e-12), 0.0)  # strictly ordered
    rest = len(matrix) - len(top)
    out = matrix.take(np.r_[order, np.arange(len(top), len(matrix))])  # one copy of the matrix, not four (nor five)
    out["total"] = np.r_[totals, matrix["total"].to_numpy(float)[len(top) :]]
    out["sum_rank"] = np.r_[(order + 1).astype(float), np.full(rest, np.nan)]
    out["learned"] = np.r_[score[order], np.full(rest, np.nan)]
    return out
