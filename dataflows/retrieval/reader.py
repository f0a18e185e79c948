"""The code-reading reranker's model at request time (issue 57): a 6-layer BERT cross-encoder (all-MiniLM-L6-v2
fine-tuned by `cra.drivers.research.train_reader`) evaluated with numpy and `tokenizers` alone: no torch, no download.

A pair is read as `[CLS] task [SEP] passage [SEP]`, the task cut to QUERY_TOKENS tokens and the whole to MAX_TOKENS:
`pair_ids` builds them the same way for training and for requests. Weights come as `cra.drivers.retrieval.reader_files`
reads them (int8 matrices with a scale per row, or float16), dequantised to float32 once.
"""

from __future__ import annotations

import math

import numpy as np

QUERY_TOKENS = 64
MAX_TOKENS = 192


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


class Reader:
    """The cross-encoder's forward pass in numpy (float32): a score per (task, passage), higher = more relevant;
    `combine`: the coefficients that mix its score with the first stage's rank (`reranking.combined`)."""

    def __init__(self, weights: dict[str, np.ndarray], config: dict, tokenizer):
        self.w, self.config, self.tokenizer = weights, config, tokenizer
        self.layers, self.heads = int(config["layers"]), int(config["heads"])
        self.combine = config.get("combine", {})

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


def combined(first_rank: np.ndarray, score: np.ndarray, weights) -> np.ndarray:
    """The mixed key (higher first) of rows with the first stage's rank (1 = best) and the reader's score:
    weights over (-log rank, z-scored score, score - best score, -log score rank, 1)."""
    z = (score - score.mean()) / (score.std() + 1e-6)
    score_rank = (-score).argsort(kind="stable").argsort(kind="stable") + 1
    features = np.column_stack([-np.log(first_rank), z, score - score.max(), -np.log(score_rank), np.ones(len(score))])
    return features @ np.asarray(weights, dtype=float)
