"""Screen kinds of code reader on the pairs of `cra.drivers.research.reader_pairs` (issue 57), held out by repository.

    python -m cra.drivers.research.screen_reader --kind static|static-trained|biencoder|cross [--model DIR]
        [--train-cases 200] [--pairs DIR] [--out DIR]

Each kind scores every (task, passage) pair of the held-out repositories (`train_reader.HELDOUT`) and of a sample
of --train-cases training cases; scores are cached per case (`$CRA_CACHE/reader/screen/<kind>/`, resumable, held-out
first). Then, per kind of row (file, symbol), the first stage's 20 best are re-ordered four ways: by the first stage,
by the model alone, by reciprocal-rank fusion, and by the learned mix the request stage uses
(`cra.dataflows.retrieval.reader.combined`, a logistic fit on the training cases' rows); file Acc@1/5 (all gold
files in the k best) and function hit@1/5 are printed and written to OUT/screen-<kind>.parquet.

Kinds: `static`, the MiniLM table the findings store ships (`data/models/minilm-l6-static`: mean of token vectors,
cosine); `static-trained`, that table fine-tuned contrastively on the training cases (listwise over each case's gold
and hard negatives, torch); `biencoder`, all-MiniLM-L6-v2 itself (mean pooling, cosine, torch: the reader venv);
`cross`, an exported cross-encoder (`reader_model --export`) scored with numpy; `cross-ckpt`, a training checkpoint
scored with torch; `scores`, the scores `fit_reader` wrote (a GPU lease scores every row in seconds).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from cra.dataflows.retrieval.reader import combined
from cra.drivers.research.train_reader import HELDOUT, cache_dir, read_pairs

FUSION_K = 10


def cases_to_score(pairs: pd.DataFrame, n_train: int, seed: int = 0) -> list[str]:
    """Held-out cases first (all), then a fixed sample of training cases."""
    held = sorted(pairs.loc[pairs["repo"].isin(HELDOUT), "case_id"].unique())
    train = sorted(pairs.loc[~pairs["repo"].isin(HELDOUT), "case_id"].unique())
    return held + list(np.random.default_rng(seed).permutation(train)[:n_train])


def scorer(kind: str, model: str | None, pairs: pd.DataFrame):
    """A function (query, passages) -> scores for the kind."""
    if kind == "cross":
        from cra.drivers.retrieval.reader_files import read_reader

        reader = read_reader(model)
        return reader.scores
    if kind in ("static", "static-trained"):
        from cra.drivers.findings.embeddings import StaticModelProvider

        provider = StaticModelProvider()
        table = provider._table
        if kind == "static-trained":
            table = trained_static_table(table, provider._tokenizer, pairs)

        def static(query: str, passages: list[str]) -> np.ndarray:
            vectors = _mean_vectors(provider._tokenizer, table, [query, *passages])
            return vectors[1:] @ vectors[0]

        return static
    if kind == "biencoder":
        import torch
        from transformers import AutoModel, AutoTokenizer

        from cra.drivers.research.train_reader import source_model_dir

        tokenizer, encoder = (
            AutoTokenizer.from_pretrained(source_model_dir()),
            AutoModel.from_pretrained(source_model_dir()),
        )

        @torch.no_grad()
        def embed(texts: list[str], length: int) -> np.ndarray:
            x = tokenizer(texts, truncation=True, max_length=length, padding=True, return_tensors="pt")
            h, mask = encoder.eval()(**x).last_hidden_state, x["attention_mask"].unsqueeze(-1).float()
            return torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1), dim=1).numpy()

        return lambda query, passages: embed(passages, 192) @ embed([query], 128)[0]
    if kind == "cross-ckpt":
        return checkpoint_scorer(Path(model))
    if kind == "scores":
        return given_scores(Path(model), pairs)
    raise SystemExit(f"error: unknown kind {kind!r}: static, static-trained, biencoder, cross or cross-ckpt")


def given_scores(path: Path, pairs: pd.DataFrame):
    """Scores made elsewhere (`fit_reader`'s scores.parquet on a GPU): PATH, or PATH:COLUMN for one of its models."""
    file, _, column = str(path).partition(":")
    table = pd.read_parquet(file)
    column = column or [c for c in table.columns if c not in ("case_id", "kind", "key", "repo")][0]
    merged = pairs[["case_id", "kind", "key", "query", "passage"]].merge(
        table[["case_id", "kind", "key", column]], on=["case_id", "kind", "key"], how="left"
    )
    by_text = dict(zip(zip(merged["query"], merged["passage"]), merged[column].astype(float)))
    return lambda query, passages: np.array([by_text.get((query, p), np.nan) for p in passages])


def checkpoint_scorer(checkpoint: Path, batch: int = 32):
    """A training checkpoint of `train_reader` scored with torch (fp32, batched): the same logits as its export
    before quantisation, three times the pairs a second of the numpy reader, for screening many cases."""
    import torch
    from tokenizers import Tokenizer
    from transformers import BertForSequenceClassification

    from cra.dataflows.retrieval.reader import QUERY_TOKENS, pair_ids
    from cra.drivers.research.train_reader import source_model_dir

    source = source_model_dir()
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    model = BertForSequenceClassification.from_pretrained(str(source), num_labels=1)
    model.load_state_dict(state["model"])
    model.eval()

    @torch.no_grad()
    def score(query: str, passages: list[str]) -> np.ndarray:
        out = []
        for start in range(0, len(passages), batch):
            ids, types, mask = pair_ids(
                tokenizer, query, passages[start : start + batch], state["max_tokens"], QUERY_TOKENS
            )
            width = max(len(i) for i in ids)
            padded = [
                torch.tensor(np.stack([np.pad(r, (0, width - len(r))) for r in rows])) for rows in (ids, types, mask)
            ]
            out.append(
                model(input_ids=padded[0], token_type_ids=padded[1], attention_mask=padded[2]).logits[:, 0].numpy()
            )
        return np.concatenate(out)

    return score


def _mean_vectors(tokenizer, table: np.ndarray, texts: list[str]) -> np.ndarray:
    rows = []
    for encoding in tokenizer.encode_batch(texts, add_special_tokens=False):
        v = table[np.asarray(encoding.ids, dtype=np.int64)].sum(0) if encoding.ids else np.zeros(table.shape[1])
        rows.append(v / (np.linalg.norm(v) or 1.0))
    return np.asarray(rows, dtype=np.float32)


def trained_static_table(table: np.ndarray, tokenizer, pairs: pd.DataFrame, epochs: int = 6) -> np.ndarray:
    """The static table fine-tuned on the training repositories' cases: softmax cross-entropy of each gold against
    its case's hard negatives (the first stage's best that are not gold), an L2 pull towards the distilled table."""
    import torch

    scale = float(np.linalg.norm(table, axis=1).mean())
    start = torch.tensor(table / scale)
    weights = torch.nn.Parameter(start.clone())
    optimiser = torch.optim.Adam([weights], lr=3e-3)
    train = pairs[~pairs["repo"].isin(HELDOUT) & (pairs["n_gold_top"] > 0)]
    groups = [g for _, g in train.groupby(["case_id", "kind"]) if g["gold"].any() and (~g["gold"]).any()]

    def encode(texts: list[str]) -> torch.Tensor:
        ids = [torch.tensor(e.ids or [0]) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
        offsets = torch.tensor(np.cumsum([0] + [len(i) for i in ids[:-1]]))
        bags = torch.nn.functional.embedding_bag(torch.cat(ids), weights, offsets, mode="sum")
        return torch.nn.functional.normalize(bags, dim=1)

    rng = np.random.default_rng(0)
    for epoch in range(epochs):
        total = 0.0
        for b in range(0, len(groups), 32):
            loss = torch.zeros(())
            for i in rng.permutation(len(groups))[b : b + 32]:
                g = groups[i]
                keep = g[(g["rank"] > 0) | g["gold"]]
                v = encode([keep["query"].iat[0], *keep["passage"]])
                s = 20.0 * (v[1:] @ v[0])
                gold = torch.tensor(keep["gold"].to_numpy(bool))
                for k in torch.nonzero(gold).flatten():
                    loss = loss + torch.logsumexp(torch.cat([s[k : k + 1], s[~gold]]), 0) - s[k]
            loss = loss / 32 + 1e-4 * ((weights - start) ** 2).sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss)
        print(f"static-trained: epoch {epoch} loss {total / max(1, len(groups) / 32):.3f}", file=sys.stderr)
    return weights.detach().numpy() * scale


def scored(pairs: pd.DataFrame, cases: list[str], score, directory: Path) -> pd.Series:
    """The score of every row of the cases, cached per case (an .npy each, written atomically)."""
    directory.mkdir(parents=True, exist_ok=True)
    out = pd.Series(np.nan, index=pairs.index)
    for i, case in enumerate(cases):
        rows = pairs[pairs["case_id"] == case]
        path = directory / (case.replace("/", "+") + ".npy")
        if not path.exists():
            values = pd.Series(np.nan, index=rows.index)
            for _, g in rows.groupby("kind"):
                values.loc[g.index] = score(g["query"].iat[0], g["passage"].tolist())
            tmp = path.with_suffix(".tmp.npy")
            np.save(tmp, values.to_numpy(float))
            tmp.replace(path)
            if i % 10 == 0:
                print(f"scored {i + 1}/{len(cases)} cases", file=sys.stderr, flush=True)
        out.loc[rows.index] = np.load(path)
    return out


def mix_weights(rows: pd.DataFrame) -> np.ndarray:
    """Logistic regression (Newton, a little L2) of gold on `combined`'s features over the first stage's best."""
    xs, ys = [], []
    for _, g in rows.groupby("case_id"):
        top = g[g["rank"] > 0]
        xs.append(_features(top["rank"].to_numpy(float), top["score"].to_numpy(float)))
        ys.append(top["gold"].to_numpy(float))
    x, y, w = np.vstack(xs), np.concatenate(ys), np.zeros(5)
    for _ in range(100):
        p = 1 / (1 + np.exp(-x @ w))
        hessian = (x * (p * (1 - p))[:, None]).T @ x / len(y) + 1e-2 * np.eye(5)
        w -= np.linalg.solve(hessian, x.T @ (p - y) / len(y) + 1e-2 * w)
    return w


def left_out_mixes(rows: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """Each repository's cases measured with the mix fitted on the other repositories' (and the mix of all)."""
    parts = [measured(g, mix_weights(rows[rows["repo"] != repo])) for repo, g in rows.groupby("repo")]
    return pd.concat(parts, ignore_index=True), mix_weights(rows)


def _features(rank: np.ndarray, score: np.ndarray) -> np.ndarray:
    """`combined`'s features, as columns (its weights are these columns' coefficients)."""
    return np.column_stack([combined(rank, score, np.eye(5)[i]) for i in range(5)])


def measured(rows: pd.DataFrame, weights: np.ndarray) -> pd.DataFrame:
    """Per case: Acc@1/5 (files: all gold) or hit@1/5 (symbols: any gold) of four orders of the first stage's best."""
    out = []
    for (case, kind), g in rows.groupby(["case_id", "kind"]):
        top = g[g["rank"] > 0]
        rank, score, gold = top["rank"].to_numpy(float), top["score"].to_numpy(float), top["gold"].to_numpy(bool)
        model_rank = (-score).argsort(kind="stable").argsort(kind="stable") + 1
        keys = {
            "first": -rank,
            "model": score,
            "fused": 1 / (FUSION_K + rank) + 1 / (FUSION_K + model_rank),
            "mix": combined(rank, score, weights),
        }
        n_gold = int(g["n_gold"].iat[0])
        row = {
            "case_id": case,
            "kind": kind,
            "repo": g["repo"].iat[0],
            "language": g.get("language", pd.Series([""])).iat[0],
        }
        for name, key in keys.items():
            places = np.sort(np.argsort(-key, kind="stable").argsort(kind="stable")[gold] + 1)
            for k in (1, 5):
                hit = (
                    (len(places) >= n_gold and places[n_gold - 1] <= k)
                    if kind == "file"
                    else bool(len(places) and places[0] <= k)
                )
                row[f"{name}@{k}"] = float(hit)
        out.append(row)
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.screen_reader", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--kind", required=True, choices=("static", "static-trained", "biencoder", "cross", "cross-ckpt", "scores")
    )
    parser.add_argument(
        "--model",
        help="for --kind cross: an exported model directory; cross-ckpt: a train_reader checkpoint; scores: "
        "fit_reader's scores.parquet[:COLUMN]",
    )
    parser.add_argument("--pairs", default=str(cache_dir() / "pairs"))
    parser.add_argument(
        "--train-cases",
        type=int,
        default=200,
        help="training cases scored to fit the mix; 0: fit it on the other held-out repositories (leave one out)",
    )
    parser.add_argument("--out", default=str(cache_dir() / "screen"))
    args = parser.parse_args(argv)
    pairs = read_pairs(Path(args.pairs)).drop_duplicates(["case_id", "kind", "key"]).reset_index(drop=True)
    cases = cases_to_score(pairs, args.train_cases)
    name = args.kind if args.kind not in ("cross", "cross-ckpt", "scores") else f"{args.kind}-{Path(args.model).stem}"
    if args.kind == "scores":
        name = f"scores-{Path(args.model).parent.name}-{str(args.model).partition(':')[2] or 'first'}"
    pairs["score"] = scored(pairs, cases, scorer(args.kind, args.model, pairs), Path(args.out) / name)
    pairs = pairs[pairs["case_id"].isin(cases)]
    held = pairs["repo"].isin(HELDOUT)
    results = []
    for kind in ("file", "symbol"):
        if args.train_cases > 0:
            weights = mix_weights(pairs[~held & (pairs["kind"] == kind)])
            result = measured(pairs[held & (pairs["kind"] == kind)], weights)
        else:  # a model trained on the training cases scores them too well to fit a mix on: leave one repo out
            result, weights = left_out_mixes(pairs[held & (pairs["kind"] == kind)])
        print(f"{name} {kind}: {len(result)} held-out cases, mix {np.round(weights, 2).tolist()}")
        print(result.drop(columns=["case_id", "kind", "repo", "language"]).mean().round(3).to_string())
        results.append(result.assign(mix=[np.round(weights, 3).tolist()] * len(result)))
    table = pd.concat(results, ignore_index=True)
    target = Path(args.out) / f"screen-{name}.parquet"
    table.to_parquet(target.with_suffix(".tmp"))
    target.with_suffix(".tmp").replace(target)
    print(f"per case: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
