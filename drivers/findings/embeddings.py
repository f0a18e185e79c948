"""Embedding providers for review findings: `generate(text, input_type="query"|"document")` -> unit vector or None.

The default, `StaticModelProvider`, is a static token-vector table distilled once from all-MiniLM-L6-v2 with model2vec
(`python -m cra.drivers.research.distil_embeddings`; shipped in `data/models/minilm-l6-static`, 30,522 x 256 int8, 7.6 MB).
Encoding is a WordPiece tokenizer call (`tokenizers`) and a mean of table rows (numpy): no torch, no download,
offline on the CPU. `VoyageProvider` (hosted, optional) is used only when VOYAGE_API_KEY is set and asked for.

`default_provider()` returns None with a warning when no provider can load: recall then answers with BM25 alone
(`cra.drivers.findings.review`), storing new findings is refused.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from cra.drivers.common.shipped import shipped_path

InputType = Literal["query", "document"]
MAX_TOKENS = 512


def static_model_dir() -> Path:
    """The shipped static model (`data/models/minilm-l6-static`)."""
    return shipped_path("models", "minilm-l6-static")


class EmbeddingProvider(Protocol):
    """What the findings driver needs: a model name (vectors of different models never mix) and `generate`."""

    model: str
    dimension: int
    distance_threshold: float  # cosine distance up to which a finding counts as similar for this model

    def generate(self, text: str, input_type: InputType = "query") -> np.ndarray | None:
        """A unit vector (float32) for the text, None when the text is empty."""

    def generate_many(self, texts: list[str], input_type: InputType = "document") -> np.ndarray:
        """One unit vector per text, as rows."""


@dataclass
class StaticModelProvider:
    """A model2vec-format static model: mean of the text's token vectors, L2-normalised (query = document)."""

    directory: Path = field(default_factory=lambda: static_model_dir())
    distance_threshold: float = 0.4  # measured: 99% of right findings that reach a top 5 are within 0.40
    model: str = field(init=False)
    dimension: int = field(init=False)

    def __post_init__(self) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((self.directory / "config.json").read_text())
        table = load_file(str(self.directory / "model.safetensors"))["embeddings"]
        self._table = table.astype(np.float32)
        self._tokenizer = Tokenizer.from_file(str(self.directory / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self.model = f"static:{self.directory.name}:{config['dims']}"
        self.dimension = int(self._table.shape[1])

    def generate(self, text: str, input_type: InputType = "query") -> np.ndarray | None:
        if not (text or "").strip():
            return None
        return self.generate_many([text], input_type)[0]

    def generate_many(self, texts: list[str], input_type: InputType = "document") -> np.ndarray:
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        lengths = np.array([len(i) for i in ids])
        rows = np.zeros((len(ids), self.dimension), dtype=np.float32)
        if lengths.sum():
            owner = np.repeat(np.arange(len(ids)), lengths)
            np.add.at(rows, owner, self._table[np.concatenate(ids)])
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms > 0, norms, 1.0)


@dataclass
class VoyageProvider:
    """Voyage AI's hosted code model (optional; needs the `voyageai` package and VOYAGE_API_KEY; network)."""

    api_key: str
    model: str = "voyage-code-3"
    dimension: int = 1024
    distance_threshold: float = 0.3  # the default threshold for this model

    def generate(self, text: str, input_type: InputType = "query") -> np.ndarray | None:
        if not (text or "").strip():
            return None
        return self.generate_many([text], input_type)[0]

    def generate_many(self, texts: list[str], input_type: InputType = "document") -> np.ndarray:
        import voyageai

        result = voyageai.Client(api_key=self.api_key).embed(list(texts), model=self.model, input_type=input_type)
        vectors = np.asarray(result.embeddings, dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@lru_cache(maxsize=4)
def _static(directory: str) -> StaticModelProvider:
    return StaticModelProvider(Path(directory))


def default_provider(name: str = "static", directory: Path | None = None) -> tuple[EmbeddingProvider | None, list[str]]:
    """(provider, warnings): the named provider (static | voyage), or None and why when it cannot be used."""
    directory = static_model_dir() if directory is None and name != "voyage" else directory
    try:
        if name == "voyage":
            key = os.environ.get("VOYAGE_API_KEY")
            if not key:
                return None, ["the voyage provider needs VOYAGE_API_KEY"]
            return VoyageProvider(key), []
        return _static(str(directory)), []
    except Exception as exc:  # noqa: BLE001 - any load failure means no provider: fail open
        return None, [f"no embedding provider ({type(exc).__name__}: {exc})"]
