"""Reading a code-reader model directory (issue 57): `config.json`, `model.safetensors`, `tokenizer.json`, as
`cra.drivers.research.reader_model --export` writes them. One load per directory and process (weights are
dequantised to float32 once: about 90 MB for MiniLM-L6)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from cra.dataflows.retrieval.reader import Reader, dequantized
from cra.drivers.common.errors import CraError

FILES = ("config.json", "model.safetensors", "tokenizer.json")


def read_reader(directory: Path | str) -> Reader:
    """The model of a directory; CraError naming what is missing or unreadable and how to make one."""
    return _read(str(Path(directory).expanduser().resolve()))


@lru_cache(maxsize=2)
def _read(directory: str) -> Reader:
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    root = Path(directory)
    missing = [name for name in FILES if not (root / name).is_file()]
    if missing:
        raise CraError(
            f"{root} is not a reader model directory (missing {', '.join(missing)}); export one with "
            "`python -m cra.drivers.research.reader_model --export CHECKPOINT --out DIR`."
        )
    try:
        config = json.loads((root / "config.json").read_text())
        weights = dequantized(load_file(str(root / "model.safetensors")))
        tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
    except Exception as exc:  # noqa: BLE001 - json, safetensors and tokenizers each raise their own types
        raise CraError(
            f"The reader model in {root} cannot be read ({type(exc).__name__}: {exc}); export it again."
        ) from None
    return Reader(weights, config, tokenizer)
