"""The code-reading stage (issue 57): a cross-encoder reads the task beside the best files' and symbols' code and
its score re-orders them.

The first stage (the weighted sum re-ordered by the learned ranker, and the symbol signals' sum) is cheap and sees
every file; the reader is costly (a 6-layer transformer per pair) and sees only the RERANK_FILES best files and
the RERANK_SYMBOLS best symbols, each as the text it was trained on (`passages`). Its score is not trusted alone:
the new order sorts by a linear mix of the first stage's rank and the reader's score (z-scored among the
re-read, its gap to the best, its rank), fitted on the training repositories' pairs and shipped in the model's
`config.json` (`combine`). The score is a column of the signal matrix (`reader`) and of the symbol ranking.
Without a reader (the default) both frames pass through unchanged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.dataflows.index.mapped import file_texts
from cra.dataflows.retrieval.models import TaskQuery
from cra.dataflows.retrieval.passages import file_passage, symbol_passage, task_passage
from cra.dataflows.retrieval.reader import Reader, combined

RERANK_FILES = 10
RERANK_SYMBOLS = 10


def file_reader_scores(
    learned_matrix: pd.DataFrame,
    kb_symbols: pd.DataFrame,
    kb_contents: pd.DataFrame,
    task_query: TaskQuery,
    reader: Reader | None = None,
) -> pd.Series:
    """The reader's score of each of the RERANK_FILES best files (file_id -> score); empty without a reader."""
    if reader is None or learned_matrix.empty:
        return pd.Series(dtype=float)
    top, task = learned_matrix.head(RERANK_FILES), task_query.raw_description
    texts = file_texts(kb_contents, top.index.to_numpy())
    symbols = kb_symbols[kb_symbols["file_id"].isin(top.index)]
    spans = {
        fid: list(zip(group["start_line"].tolist(), group["end_line"].tolist()))
        for fid, group in symbols.groupby("file_id")
    }
    passages = [
        file_passage(path, texts.get(fid, ""), spans.get(fid, []), task) for fid, path in zip(top.index, top["path"])
    ]
    return pd.Series(reader.scores(task_passage(task), passages), index=top.index, dtype=float)


def signal_matrix(
    learned_matrix: pd.DataFrame, file_reader_scores: pd.Series, reader: Reader | None = None
) -> pd.DataFrame:
    """Every candidate file best first: the learned order with its RERANK_FILES best re-ordered by the reader
    (`reader` column: its score; totals handed out in the new order, as the learned ranker does)."""
    if reader is None or file_reader_scores.empty:
        return learned_matrix
    n = len(file_reader_scores)
    score = file_reader_scores.reindex(learned_matrix.index[:n]).to_numpy(float)
    order = np.argsort(-combined(np.arange(1, n + 1), score, reader.combine["file"]), kind="stable")
    out = learned_matrix.iloc[np.r_[order, np.arange(n, len(learned_matrix))]].copy()
    out["total"] = learned_matrix["total"].to_numpy(float)  # the same values, in the new order
    out["reader"] = np.r_[score[order], np.full(len(out) - n, np.nan)]
    return out


def symbol_reader_scores(
    summed_symbol_ranking: pd.DataFrame, kb_contents: pd.DataFrame, task_query: TaskQuery, reader: Reader | None = None
) -> pd.Series:
    """The reader's score of each of the RERANK_SYMBOLS best symbols (symbol_id -> score); empty without one."""
    if reader is None or summed_symbol_ranking.empty:
        return pd.Series(dtype=float)
    top, task = summed_symbol_ranking.head(RERANK_SYMBOLS), task_query.raw_description
    texts = file_texts(kb_contents, top["file_id"].unique())
    passages = [
        symbol_passage(path, name, texts.get(fid, ""), (int(a), int(b)), task)
        for fid, path, name, a, b in zip(
            top["file_id"], top["path"], top["qualified_name"], top["start_line"], top["end_line"]
        )
    ]
    return pd.Series(reader.scores(task_passage(task), passages), index=top["symbol_id"].to_numpy(), dtype=float)


def symbol_ranking(
    summed_symbol_ranking: pd.DataFrame, symbol_reader_scores: pd.Series, reader: Reader | None = None
) -> pd.DataFrame:
    """The symbol ranking with its RERANK_SYMBOLS best re-ordered by the reader (`reader` column: its score; the
    scores handed out in the new order, so where they fall off stays where it was)."""
    if reader is None or symbol_reader_scores.empty:
        return summed_symbol_ranking
    n = len(symbol_reader_scores)
    score = symbol_reader_scores.to_numpy(float)
    order = np.argsort(-combined(np.arange(1, n + 1), score, reader.combine["symbol"]), kind="stable")
    out = summed_symbol_ranking.iloc[np.r_[order, np.arange(n, len(summed_symbol_ranking))]].copy()
    out["score"] = summed_symbol_ranking["score"].to_numpy(float)
    out["reader"] = np.r_[score[order], np.full(len(out) - n, np.nan)]
    return out.assign(rank=np.arange(1, len(out) + 1)).reset_index(drop=True)
