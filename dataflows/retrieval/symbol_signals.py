"""The symbol signal matrix: which function bodies of the scope the task is about, signal by signal.

The file matrix decides which files; this one ranks the definitions inside them, one row per candidate symbol
(functions, methods, classes, interfaces, type aliases and enums of the scope's source files) and one 0-1 column per
signal:

lexical    BM25 of the task's query terms over the symbol's chunk (name, signature, docstring, body, comments)
title      BM25 of the task's first line over the chunk: an issue's title names the broken behaviour, its body is
           mostly reproduction code and logs (the file signal `title_match`, one level down)
name       the task's words cover the symbol's name (all its words, or half of them with two strong words)
mention    the task names it: exact, qualified or dotted (`Model.save`), or its bare name
trace      a stack-trace frame is in it: Python frames, and `file.ext:line` of Go, Java, JS/TS, Rust traces (the file
           found by path suffix, installed-package paths included)
message    an error or log message the task quotes is written in its body
calls      call-graph nearness to a symbol the task mentions, traces or quotes (1 hop .5, 2 hops .33)
hierarchy  an ancestor class of a class the task is about, or the same-named method in one (fixes land in bases)
tests      called by a test the task names
file       its file's score relative to the top file
file_top   1 / its file's rank: the top file's definitions first
lexical_in_file  its lexical score over the best of its own file's: which definition of a file the task is about
size       log of its body's tokens over log 4096, capped at 1: fixes land in bigger functions more often (a prior)
callable   1 for a function or method: a class's methods are ranked themselves, and a fix lands in one more often

`symbol_ranking` adds the weighted sum and the rank; the weights are fitted by `drivers/research/fit_symbol_weights.py`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from cra.dataflows.distinct import distinct
from cra.dataflows.index.mapped import file_texts
from cra.dataflows.lexicon_layers import Lexicon
from cra.dataflows.retrieval import vocabulary
from cra.dataflows.retrieval.hints import path_matches
from cra.dataflows.retrieval.models import ScopedSymbols, TaskQuery
from cra.dataflows.retrieval.symbol_table import SymbolTable

# what a fix changes: interfaces, type aliases and enums too (13 of 342 development cases changed one; 7 in TS)
CANDIDATE_KINDS = ("function", "method", "class", "interface", "type_alias", "enum")
SYMBOL_SIGNALS = (
    "lexical",
    "title",
    "name",
    "mention",
    "trace",
    "message",
    "calls",
    "hierarchy",
    "tests",
    "file",
    "file_top",
    "lexical_in_file",
    "size",
    "callable",
)
# hand-set weights; data/symbol_weights.toml (fitted, leave-one-repository-out) replaces them when present
DEFAULT_SYMBOL_WEIGHTS = {
    "lexical": 0.30,
    "title": 0.0,
    "name": 0.15,
    "mention": 0.20,
    "trace": 0.20,
    "message": 0.20,
    "calls": 0.05,
    "hierarchy": 0.05,
    "tests": 0.10,
    "file": 0.25,
    "file_top": 0.0,
    "lexical_in_file": 0.0,
    "size": 0.0,
    "callable": 0.0,
}
# a class, interface or enum ranks just below its best member (its constructor aside: it shares the class's name)
# when that member scores at least MEMBER_SHARE of it: its size and the union of its members' words lift it over the
# method the task is about ("Return response body in FeignException from errorReading" put the class first); on the
# symbol rows of 499 development cases of ten languages, function hit@1 .438 -> .471, hit@5 .745 -> .743
MEMBER_SHARE = 0.9
CONTAINER_KINDS = ("class", "interface", "enum")
SIZE_SCALE = np.log(4096)
CALL_HOPS = 2
STRONG_WEIGHT = 2.0  # matched name-term weight that lets half a name's words count as a match
MIN_MESSAGE_CHARS = 12
MAX_FRAMES = 64  # distinct frames looked up: a trace pasted many times, or megabytes of text, stays linear
_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([\w<>.]+))?')
_LOCATION = re.compile(
    r"(?<![\w./\\@-])([\w./\\@-]+\.(?:go|rs|java|kt|scala|js|jsx|mjs|cjs|ts|tsx|rb|php|cs|c|cc|cpp|h|hpp|swift)):(\d+)"
)
_INSTALLED = re.compile(r"^.*?/(?:site|dist)-packages/")
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_INLINE_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning): ([^\n]{8,300})")
_MESSAGE_SPLIT = re.compile(r"""[{}%'"`]|\s[<>]\s|\b0x[0-9a-f]+\b|\d+(?:\.\d+)?""")


def symbol_candidates(scoped_symbols: ScopedSymbols, kb_symbol_table: SymbolTable) -> np.ndarray:
    """Positions among the scoped symbols that can be ranked: the definitions of CANDIDATE_KINDS in source files, but
    not the tests kept inside them (Rust's `#[cfg(test)] mod tests`): they repeat their module's words, so they
    outranked the code a fix changes and filled the package with test bodies."""
    s = scoped_symbols
    return np.flatnonzero(~s.is_test & ~kb_symbol_table.is_test_code[s.rows] & np.isin(s.kind, CANDIDATE_KINDS))


def symbol_task_frames(task_text: str, kb_files: pd.DataFrame) -> pd.DataFrame:
    """(file_id, line, function, depth) of each stack-trace frame found in the KB, depth 1 the innermost: Python
    frames (innermost last), then `path.ext:line` frames of Go panics, Java, JS/TS, Rust and other traces (innermost
    first); a path as written, or its part after site-/dist-packages, matched as a path suffix."""
    python = [(p, int(n), f or "") for p, n, f in _FRAME.findall(task_text)][::-1]
    other = [(p, int(n), "") for p, n in _LOCATION.findall(_FRAME.sub(" ", task_text))]
    frames = list(dict.fromkeys([*python, *other]))[:MAX_FRAMES]
    paths = kb_files["path"].astype(str)
    rows = []
    for depth, (path, line, function) in enumerate(frames, start=1):
        path = _INSTALLED.sub("", path.replace("\\", "/")).lstrip("./")
        for file_id in kb_files.loc[path_matches(paths, path).to_numpy(dtype=bool), "file_id"].tolist()[:3]:
            rows.append((int(file_id), line, function, depth))
    return pd.DataFrame(rows, columns=["file_id", "line", "function", "depth"])


def task_messages(task_query: TaskQuery) -> list[str]:
    """Literal fragments of the messages the task quotes (exception text, also mid-sentence, quoted strings) worth
    finding in code: placeholders and numbers split them, fragments under MIN_MESSAGE_CHARS are dropped."""
    out = []
    for pattern in [*task_query.error_patterns, *_INLINE_EXCEPTION.findall(task_query.raw_description)]:
        message = pattern.split(": ", 1)[1] if re.match(r"^[\w.]+: ", pattern) else pattern
        out += [f.strip(" .,:;()[]") for f in _MESSAGE_SPLIT.split(message)]
    return list(dict.fromkeys(f for f in out if len(f) >= MIN_MESSAGE_CHARS and " " in f))


def symbol_signal_matrix(
    symbol_candidates: np.ndarray,
    scoped_symbols: ScopedSymbols,
    kb_symbol_table: SymbolTable,
    kb_symbols: pd.DataFrame,
    kb_contents: pd.DataFrame,
    scope: pd.DataFrame,
    task_query: TaskQuery,
    lexical_query_terms: list[str],
    title_query_terms: list[str],
    symbol_lexicon: Lexicon,
    precision_terms: pd.Series,
    symbol_task_frames: pd.DataFrame,
    task_messages: list[str],
) -> pd.DataFrame:
    """One row per candidate symbol: symbol_id, file_id, path, qualified_name, kind, lines, body tokens, file rank,
    and every signal of SYMBOL_SIGNALS in [0, 1]."""
    s, table, c = scoped_symbols, kb_symbol_table, symbol_candidates
    kb_rows = s.rows[c]
    at = table.rows.get_indexer(s.symbol_id[c])
    start, end = table.start_line[kb_rows], kb_symbols["end_line"].to_numpy()[at]
    weight_of = {str(w): float(v) for w, v in precision_terms.items()}
    mention = _mention(s, table, task_query)
    trace = _trace(s, table, kb_rows, symbol_task_frames, start, end, c)
    message = _message(s, c, kb_contents, task_messages, start, end)
    anchors = np.zeros(len(s.rows), dtype=bool)
    anchors[c] = (mention[c] > 0) | (trace > 0) | (message > 0)
    signals = {
        "lexical": _lexical(s, c, lexical_query_terms, symbol_lexicon),
        "title": _lexical(s, c, title_query_terms, symbol_lexicon),
        "name": _name(table, kb_rows, weight_of),
        "mention": mention[c],
        "trace": trace,
        "message": message,
        "calls": _nearness(s, anchors)[c],
        "hierarchy": _hierarchy(s, table, anchors | (mention > 0), task_query)[c],
        "tests": _tested(s, table, task_query, kb_symbols, kb_contents, c),
        "file": _file(scope, s, c),
    }
    columns = {
        "symbol_id": s.symbol_id[c],
        "file_id": s.file_id[c],
        "path": scope["path"].to_numpy(dtype=object)[s.at[c]],
        "qualified_name": s.qualified_name[c],
        "kind": s.kind[c],
        "start_line": start,
        "end_line": end,
        "body_tokens": kb_symbols["body_tokens"].to_numpy()[at],
        "file_rank": s.rank[c],
    }
    codes, files = pd.factorize(columns["file_id"])
    best = np.zeros(len(files))  # per file: its best lexical value (signals are >= 0)
    np.maximum.at(best, codes, np.asarray(signals["lexical"], dtype=float))
    lexical = best[codes]
    signals |= {
        "file_top": 1.0 / np.maximum(np.asarray(columns["file_rank"], dtype=float), 1.0),
        "lexical_in_file": np.divide(signals["lexical"], lexical, out=np.zeros(len(c)), where=lexical > 0),
        "size": np.log1p(np.nan_to_num(np.asarray(columns["body_tokens"], dtype=float))) / SIZE_SCALE,
        "callable": np.isin(np.asarray(columns["kind"], dtype=object), ("function", "method")).astype(float),
    }
    constructor = _constructors(columns["qualified_name"])  # named as its class: the task names the class
    signals["name"] = np.where(constructor, 0.0, signals["name"])
    signals["mention"] = np.where(constructor & (signals["mention"] < 1.0), 0.0, signals["mention"])
    columns |= {name: np.clip(np.asarray(signals[name], dtype=float), 0.0, 1.0) for name in SYMBOL_SIGNALS}
    return pd.DataFrame(columns)  # built at once: a column inserted at a time costs a frame copy each


def summed_symbol_ranking(symbol_signal_matrix: pd.DataFrame, symbol_weights: Mapping[str, float]) -> pd.DataFrame:
    """The symbol matrix with `score` (weighted sum of its signals; a class just below its best member, see
    MEMBER_SHARE) and `rank` (1 = best), best first; ties go to the better-ranked file, then the earlier line."""
    m = symbol_signal_matrix
    score = np.zeros(len(m))
    for name in SYMBOL_SIGNALS:
        score += float(symbol_weights.get(name, 0.0)) * m[name].to_numpy(dtype=float)
    ranked = m.assign(score=_below_best_member(m, score))
    ranked = ranked.sort_values(["score", "file_rank", "start_line"], ascending=[False, True, True], kind="stable")
    return ranked.assign(rank=np.arange(1, len(ranked) + 1)).reset_index(drop=True)


def _below_best_member(m: pd.DataFrame, score: np.ndarray) -> np.ndarray:
    """The scores with each class, interface or enum just below its best-scoring member (same file, qualified name
    under it, constructors aside) when that member scores at least MEMBER_SHARE of it (see MEMBER_SHARE). Rows
    sorted by file, then name put a container's members in one run after it: one bisection each, no scan (names
    as codes in sorted order, so the sort and the bisections compare integers, not per-row strings)."""
    containers = np.flatnonzero(np.isin(m["kind"].to_numpy(dtype=object), CONTAINER_KINDS))
    if not len(containers):
        return score
    names = m["qualified_name"].astype(str).to_numpy(dtype=object)
    codes, uniques = pd.factorize(names, sort=True)  # code order = string order
    uniques = np.asarray(uniques, dtype=object)
    files = pd.factorize(m["file_id"].to_numpy())[0].astype(np.int64)
    width = len(uniques) + 1
    keys = files * width + codes
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    member_score = np.where(_constructors(uniques)[codes], -np.inf, score)[order]
    below = names[containers]  # a member's name lies in [name + ".", name + "/"): "/" follows "."
    base = files[containers] * width
    lo = np.searchsorted(sorted_keys, base + np.searchsorted(uniques, below + ".", side="left"), side="left")
    hi = np.searchsorted(sorted_keys, base + np.searchsorted(uniques, below + "/", side="left"), side="left")
    best = _range_max(member_score, lo, hi)
    own = score[containers]
    lowered = (MEMBER_SHARE * own <= best) & (best < own)
    out = score.copy()
    out[containers[lowered]] = np.nextafter(best[lowered], -np.inf)
    return out


def _range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(values[lo[i]:hi[i]]) for every i (-inf for an empty range) from a sparse table of maxima over runs of
    2^k values: two lookups per range, no loop over the ranges."""
    levels = [values]
    while 2 ** len(levels) <= len(values):
        width, last = 2 ** (len(levels) - 1), levels[-1]
        levels.append(np.maximum(last[:-width], last[width:]))
    size = hi - lo
    out = np.full(len(lo), -np.inf)
    full = size > 0
    k = np.zeros(len(lo), dtype=np.int64)
    k[full] = np.floor(np.log2(size[full])).astype(np.int64)
    for level in distinct(k[full]):
        at = np.flatnonzero(full & (k == level))
        table, width = levels[level], 2**level
        out[at] = np.maximum(table[lo[at]], table[hi[at] - width])
    return out


def _constructors(qualified_names) -> np.ndarray:
    """Per qualified name: whether it is a constructor named as its class (`Foo.Foo`: Java, C#, C++)."""
    tails = (str(n).rsplit(".", 2)[-2:] for n in qualified_names)
    return np.fromiter((len(t) == 2 and t[0] == t[1] for t in tails), dtype=bool, count=len(qualified_names))


def symbol_weights(symbol_weight_profile: dict | None) -> dict[str, float]:
    """The weights of the symbol signals: the fitted profile when there is one, else the hand-set defaults."""
    return dict(symbol_weight_profile or DEFAULT_SYMBOL_WEIGHTS)


# --- the signals ---------------------------------------------------------------------------------------------------


def _lexical(s: ScopedSymbols, c: np.ndarray, query_terms: list[str], lexicon: Lexicon) -> np.ndarray:
    """BM25 of the query terms over each candidate's chunk, divided by the best candidate's."""
    if not len(c) or not query_terms or len(lexicon.doc_ids) == 0:
        return np.zeros(len(c))
    scores = lexicon.scores_at(query_terms, s.symbol_id[c])
    best = scores.max() if len(scores) else 0.0
    return scores / best if best > 0 else scores


def _name(table: SymbolTable, kb_rows: np.ndarray, weight_of: dict[str, float]) -> np.ndarray:
    """How well the task's words cover each name: the covered share, counted only for a strong enough match."""
    vocab = table.term_vocabulary
    term_weight = np.zeros(len(vocab))
    if len(vocab) and weight_of:
        words = np.array(list(weight_of), dtype=object)
        at = np.searchsorted(vocab, words)
        ok = at < len(vocab)
        ok[ok] = vocab[at[ok]] == words[ok]
        term_weight[at[ok]] = np.array(list(weight_of.values()))[ok]
    code = table.name_code[kb_rows]
    named = code >= 0
    code = np.where(named, code, 0)
    matched, weight = table.name_matches(code, term_weight)  # only the candidates' names' (name, term) rows
    total = np.where(named, table.name_term_total[code], 0)
    coverage = np.divide(matched, total, out=np.zeros(len(code)), where=total > 0)
    strong = (coverage >= 1.0) | ((coverage >= 0.5) & (weight >= STRONG_WEIGHT))
    return np.where(named & strong & (weight >= 1.0), coverage, 0.0)


def _mention(s: ScopedSymbols, table: SymbolTable, task_query: TaskQuery) -> np.ndarray:
    """Per scoped symbol: 1 when the task names it qualified (or its dotted tail), 0.6 when only by bare name."""
    out = np.zeros(len(s.rows))
    qualified = pd.Series(table.qualified_norm[s.rows], dtype=object)
    names = table.name_norm[s.rows]
    for key in {vocabulary.norm(h) for h in task_query.symbol_hints}:
        if not key:
            continue
        if "." in key:
            hit = (qualified == key) | qualified.str.endswith("." + key, na=False)
            out = np.maximum(out, hit.to_numpy(dtype=bool).astype(float))
        else:
            out = np.maximum(out, np.where(names == key, 0.6, 0.0))
            out = np.maximum(out, np.where(qualified.to_numpy(dtype=object) == key, 1.0, 0.0))
    return out


def _trace(
    s: ScopedSymbols,
    table: SymbolTable,
    kb_rows: np.ndarray,
    frames: pd.DataFrame,
    start: np.ndarray,
    end: np.ndarray,
    c: np.ndarray,
) -> np.ndarray:
    """1 for the symbol holding the innermost frame's line, less for outer frames (1 / depth), the innermost
    holder only; a frame whose function name matches but whose line is outside still counts half."""
    out = np.zeros(len(c))
    file_id, name = s.file_id[c], s.name[c]
    for frame_file, line, function, depth in frames.itertuples(index=False):
        in_file = file_id == frame_file
        holds = in_file & (start <= line) & (line <= end)
        if holds.any():
            span = np.where(holds, end - start, np.inf)
            out[np.argmin(span)] = max(out[np.argmin(span)], 1.0 / depth)
        named = in_file & (name == function.split(".")[-1])
        out[named] = np.maximum(out[named], 0.5 / depth)
    return out


def _message(
    s: ScopedSymbols, c: np.ndarray, kb_contents: pd.DataFrame, messages: list[str], start: np.ndarray, end: np.ndarray
) -> np.ndarray:
    """1 for the innermost candidate whose lines contain a message fragment the task quotes."""
    out = np.zeros(len(c))
    if not messages or not len(c):
        return out
    files = distinct(s.file_id[c])
    lowered = [m.lower() for m in messages]
    for file_id, text in file_texts(kb_contents, files).items():
        low = text.lower()
        lines = [low.count("\n", 0, at) + 1 for m in lowered for at in _find_all(low, m)]
        in_file = np.flatnonzero(s.file_id[c] == file_id)
        for line in lines:
            holds = in_file[(start[in_file] <= line) & (line <= end[in_file])]
            if len(holds):
                out[holds[np.argmin(end[holds] - start[holds])]] = 1.0
    return out


def _find_all(text: str, needle: str) -> list[int]:
    found, at = [], text.find(needle)
    while at >= 0 and len(found) < 20:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def _nearness(s: ScopedSymbols, anchors: np.ndarray) -> np.ndarray:
    """Per scoped symbol: 1 / (1 + hops) to the nearest anchor over symbol edges either way, up to CALL_HOPS."""
    out = np.zeros(len(s.rows))
    if not anchors.any() or not len(s.edge_src):
        return out
    reached = anchors.copy()
    frontier = anchors.copy()
    for hop in range(1, CALL_HOPS + 1):
        nxt = np.zeros(len(s.rows), dtype=bool)
        nxt[s.edge_dst[frontier[s.edge_src]]] = True
        nxt[s.edge_src[frontier[s.edge_dst]]] = True
        nxt &= ~reached
        out[nxt] = 1.0 / (1 + hop)
        reached |= nxt
        frontier = nxt
    return out


def _hierarchy(s: ScopedSymbols, table: SymbolTable, anchors: np.ndarray, task_query: TaskQuery) -> np.ndarray:
    """Per scoped symbol: 1 for an ancestor class (base edges, transitively) of a class the task is about (named,
    holding an anchor, or the head of a dotted name such as `Order.save`), and for the method of an anchor's name
    (or a dotted name's tail) in an ancestor or a subclass."""
    out = np.zeros(len(s.rows))
    base = np.isin(table.edge_kind[s.edge_at], ("base",)) if len(table.edge_src) else np.array([], bool)
    src, dst = s.edge_src[base], s.edge_dst[base]
    if not len(src):
        return out
    parent = np.where(table.parent[s.rows] >= 0, s.local[np.maximum(table.parent[s.rows], 0)], -1)
    about = anchors & (s.kind == "class")
    held = anchors & (parent >= 0)
    about[parent[held]] = True
    dotted = [h.rsplit(".", 1) for h in task_query.symbol_hints if "." in h]
    about |= (s.kind == "class") & np.isin(s.name, [head.rsplit(".", 1)[-1] for head, _ in dotted])
    classes = about.copy()
    for _ in range(8):  # ancestors
        up = np.zeros(len(s.rows), dtype=bool)
        up[dst[classes[src]]] = True
        up &= ~classes
        if not up.any():
            break
        out[up] = 1.0
        classes |= up
    down = np.zeros(len(s.rows), dtype=bool)
    down[src[about[dst]]] = True  # direct subclasses
    family = classes | down
    methods = anchors & (parent >= 0) & np.isin(s.kind, ("method", "function"))
    wanted = set(s.name[methods].tolist()) | {tail for _, tail in dotted}
    same = (parent >= 0) & np.isin(s.name, list(wanted)) & ~anchors
    same[same] = family[parent[same]]
    out[same] = 1.0
    return out


def _tested(
    s: ScopedSymbols,
    table: SymbolTable,
    task_query: TaskQuery,
    kb_symbols: pd.DataFrame,
    kb_contents: pd.DataFrame,
    c: np.ndarray,
) -> np.ndarray:
    """Per candidate: 1 when a test the task names (a test function of the scope) calls it by name in its body."""
    out = np.zeros(len(c))
    names = {vocabulary.norm(h).split(".")[-1] for h in task_query.symbol_hints}
    tests = np.flatnonzero(table.is_test_fn[s.rows] & np.isin(table.name_norm[s.rows], list(names)))
    if not len(tests):
        return out
    at = table.rows.get_indexer(s.symbol_id[tests])
    texts = file_texts(kb_contents, s.file_id[tests])
    called: set[str] = set()
    ends = kb_symbols["end_line"].to_numpy()[at]
    for file_id, start, end in zip(s.file_id[tests], table.start_line[s.rows[tests]], ends):
        lines = str(texts.get(file_id, "")).splitlines()[int(start) - 1 : int(end)]
        called |= set(_CALLED.findall("\n".join(lines)))
    out[np.isin(s.name[c], list(called))] = 1.0
    return out


def _file(scope: pd.DataFrame, s: ScopedSymbols, c: np.ndarray) -> np.ndarray:
    """The candidate's file score over the top file's."""
    total = scope["total_score"].to_numpy(dtype=float)
    best = total.max() if len(total) else 0.0
    return total[s.at[c]] / best if best > 0 else np.zeros(len(c))
