"""Task analysis: the task text -> a `TaskQuery` of hints, keywords, type and concepts.

Deterministic by default; `@config.when(llm_assist=True)` asks an LLM client (an input) only when the
heuristics find almost nothing (fewer than 3 keywords and no hints).
"""

from __future__ import annotations

import builtins
import json
import re
from collections import Counter

import pandas as pd
from hamilton.function_modifiers import config

from cra.dataflows.lexicon_layers import Lexicon
from cra.dataflows.retrieval.hints import path_matches
from cra.dataflows.retrieval.membership import in_set
from cra.dataflows.retrieval.models import TaskQuery
from cra.dataflows.text import STOP_WORDS, stem, terms

MAX_KEYWORDS = 40
IDENTIFIER_WEIGHT = 3  # a term seen inside an identifier / code counts this many prose occurrences
MIN_LLM_KEYWORDS = 3

_EXTENSIONS = (
    "py pyi pyx ipynb js jsx mjs cjs ts tsx vue svelte go java kt kts scala rs rb php c h cc cpp cxx hpp hh cs "
    "swift m mm sh bash zsh ps1 sql html htm css scss sass less md rst txt toml yaml yml json ini cfg conf xml "
    "gradle proto graphql lock env dockerfile"
).split()
_EXT_ALT = "|".join(sorted(_EXTENSIONS, key=len, reverse=True))
# a path, bare file name or glob ending in a known extension, not followed by more identifier or a call
_FILE_HINT = re.compile(
    rf"(?<![\w/.*-])((?:[\w.*-]+/)*[\w*-][\w.*-]*\.(?:{_EXT_ALT}))(?![\w(/-])(?!\.\w)", re.IGNORECASE
)
_URL = re.compile(r"\bhttps?://\S+")
_URL_REPO_PATH = re.compile(r"/(?:blob|tree|raw)/[^/\s]+/([^\s#?)\]>]+)")
_CODE_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_BACKTICK = re.compile(r"`([^`\n]+)`")
_PY_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([\w<>.]+))?')
_JS_FRAME = re.compile(
    r"\bat (?:([\w$.<>]+) )?\(?(/?(?:[\w.@-]+/)*[\w.@-]+\.(?:js|jsx|mjs|cjs|ts|tsx)):(\d+)(?::\d+)?\)?"
)
_EXCEPTION_LINE = re.compile(
    r"^\s*((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Fault)):\s?(.*)$", re.MULTILINE
)
_EXCEPTION_NAME = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning))\b")
_ERRNO = re.compile(r"\b(E[A-Z]{3,}[A-Z0-9]*)\b")
_QUOTED = re.compile(r"\"([^\"\n]{8,200})\"|'([^'\n]{8,200})'")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(\(\))?(?![\w])")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")
_IDENT = re.compile(r"(?<![\w.])([A-Za-z_]\w*)(?![\w])")
_TURBOFISH = re.compile(r"(?<=\w)::<[\w\s,:<>&']{1,80}?>(?=::)")
_PATH_SEPARATOR = re.compile(r"(?<=\w)::(?=[A-Za-z_])")
_JAVADOC_MEMBER = re.compile(r"(?<=[A-Za-z0-9_])#(?=[a-z_])")
_BUILTIN_NAMES = frozenset(dir(builtins)) | {"self", "cls", "super", "main", "setup"}

# the words that classify a task by type, plus close synonyms; ties resolve in this order
TASK_TYPE_WORDS: dict[str, tuple[str, ...]] = {
    "bug_fix": (
        "fix",
        "bug",
        "broken",
        "error",
        "crash",
        "fail",
        "failure",
        "wrong",
        "incorrect",
        "regression",
        "exception",
        "traceback",
        "issue",
        "unexpected",
    ),
    "refactor": (
        "refactor",
        "clean",
        "cleanup",
        "reorganize",
        "reorganise",
        "restructure",
        "rename",
        "simplify",
        "extract",
        "deduplicate",
        "split",
    ),
    "test": ("test", "tests", "spec", "coverage", "unittest", "pytest"),
    "feature": ("add", "implement", "create", "new", "support", "feature", "allow", "introduce", "enable"),
}
TASK_TYPES = ("bug_fix", "feature", "refactor", "test", "investigation")


def _code_blocks(text: str) -> list[str]:
    """Fenced code blocks of the text."""
    return _CODE_FENCE.findall(text)


def _prose(text: str) -> str:
    """The text without fenced code blocks, inline code, tracebacks and URLs: what a person wrote in words."""
    text = _CODE_FENCE.sub(" ", text)
    text = _BACKTICK.sub(" ", text)
    text = _URL.sub(" ", text)
    lines = text.splitlines()
    return "\n".join(ln for ln in lines if not _PY_FRAME.search(ln) and not ln.lstrip().startswith("Traceback ("))


def _file_hints(text: str) -> list[str]:
    """Paths, bare file names and globs named in the text (URLs reduced to their repository path)."""
    found = [m for url in _URL.findall(text) for m in _URL_REPO_PATH.findall(url)]
    found += _FILE_HINT.findall(_URL.sub(" ", _PY_FRAME.sub(" ", text)))
    cleaned = [h.strip("./") if not h.startswith("*") else h for h in found]
    return list(dict.fromkeys(h for h in cleaned if h and not h.lower().startswith(("e.g", "i.e"))))


def _trace_frames(text: str) -> list[tuple[str, str]]:
    """(path, function) of every Python / JavaScript stack-trace frame, in order, duplicates dropped."""
    frames = [(p, f or "") for p, _, f in _PY_FRAME.findall(text)]
    frames += [(p, f or "") for f, p, _ in _JS_FRAME.findall(text)]
    return list(dict.fromkeys((p.replace("\\", "/"), f) for p, f in frames))


def _in_repo_frames(frames: list[tuple[str, str]], kb_files: pd.DataFrame) -> list[tuple[str, str]]:
    """The frames whose path names an indexed file."""
    if kb_files.empty:
        return []
    return [(p, f) for p, f in frames if path_matches(kb_files["path"], p).any()]


def _looks_like_identifier(name: str) -> bool:
    """Whether a word reads as code rather than English: an underscore, an inner capital or a dot."""
    bare = name.strip("_")
    camel = len(bare) >= 4 and re.search(r"[a-z0-9][A-Z]", bare) is not None
    return bool(bare) and ("_" in bare or "." in bare or camel)


def _dotted_paths(text: str) -> str:
    """Rust/C++ paths (`Error::is_dns`, turbofish `DateTime::<Utc>::now` too) and Java doc references
    (`Parser#parse`) written with dots, the one separator qualified hints use."""
    text = _TURBOFISH.sub("", text)
    return _JAVADOC_MEMBER.sub(".", _PATH_SEPARATOR.sub(".", text))


def _symbol_hints(text: str, file_hints: list[str]) -> list[str]:
    """Identifier-looking names: backticked names, calls `f()`, dotted names, snake_case and CamelCase words."""
    file_like = {h.lower() for h in file_hints}
    text = _dotted_paths(text)
    found: list[str] = []
    for inner in _BACKTICK.findall(text):
        inner = inner.strip().rstrip("()").strip()
        if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", inner):
            found.append(inner)
    code = "\n".join(_code_blocks(text))
    found += [c for c in _CALL.findall(code)]
    scrubbed = _URL.sub(" ", _PY_FRAME.sub(" ", text))
    for name, call in _DOTTED.findall(scrubbed):
        if name.lower() in file_like or any(name.lower().endswith("." + e) for e in _EXTENSIONS):
            continue
        if all(len(p) >= 2 for p in name.split(".")):
            found.append(name)
    found += [c for c in _CALL.findall(re.sub(r"```.*?```", " ", scrubbed, flags=re.DOTALL)) if c]
    found += [w for w in _IDENT.findall(scrubbed) if _looks_like_identifier(w)]
    keep = [h for h in found if h.split(".")[-1] not in _BUILTIN_NAMES and h.lower() not in STOP_WORDS]
    return list(dict.fromkeys(h for h in keep if len(h) >= 2))


def _error_patterns(text: str) -> list[str]:
    """Exception lines (`ValueError: msg`), exception / errno names, and quoted messages."""
    found = [f"{name}: {msg}".strip().rstrip(":") for name, msg in _EXCEPTION_LINE.findall(text)]
    found += _EXCEPTION_NAME.findall(text) + _ERRNO.findall(text)
    found += [a or b for a, b in _QUOTED.findall(_CODE_FENCE.sub(" ", text)) if " " in (a or b)]
    return list(dict.fromkeys(found))


def _keywords(text: str, symbol_hints: list[str], known=lambda term: True) -> list[str]:
    """Distinct index terms of the task that `known` accepts, strongest first: names written in backticks or called
    count IDENTIFIER_WEIGHT times, the words of the prose and of fenced code once each (a reproduction's variables
    and strings are no more what the report is about than its words: on 502 real issues, file Acc@5 .827 -> .833)."""
    weights: Counter = Counter()
    for t in terms(_prose(text)):
        weights[t] += 1
    named, blocks = " ".join(_BACKTICK.findall(text) + symbol_hints), " ".join(_code_blocks(text))
    for t in terms(named):
        weights[t] += IDENTIFIER_WEIGHT
    for t in terms(blocks):
        weights[t] += 1
    for ext in _EXTENSIONS:
        weights.pop(ext, None)
    order = {t: i for i, t in enumerate(dict.fromkeys(terms(text) + terms(blocks + " " + named)))}
    ranked = sorted(weights, key=lambda t: (-weights[t], order.get(t, 0)))
    return [t for t in ranked if known(t)][:MAX_KEYWORDS]


def _task_type(text: str, has_trace: bool) -> str:
    """Seed 001's keyword classification of the prose; a traceback votes for bug_fix; default investigation."""
    words = Counter(stem(w) for w in re.findall(r"[a-z]+", _prose(text).lower()))
    votes = {kind: sum(words[stem(w)] for w in set(ws)) for kind, ws in TASK_TYPE_WORDS.items()}
    votes["bug_fix"] += 2 if has_trace else 0
    best = max(votes.values())
    if best == 0:
        return "investigation"
    return next(kind for kind in TASK_TYPE_WORDS if votes[kind] == best)


def _concepts(text: str, keywords: list[str], concepts: pd.DataFrame) -> list[str]:
    """KB concepts the task mentions: concept equals a task word, a keyword, or the stem of one.

    concepts: the KB's (concept, stem) vocabulary (`vocabulary.concept_vocabulary`).
    """
    if concepts.empty:
        return []
    words = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", text)}
    stems = set(keywords) | {stem(w) for w in words}
    hit = in_set(concepts["concept"], words | set(keywords)) | in_set(concepts["stem"], stems)
    return sorted(concepts.loc[hit, "concept"])


def file_hints(analysed_text: str) -> list[str]:
    """Paths, bare file names and globs the task names (URLs reduced to their repository path)."""
    return _file_hints(analysed_text)


def trace_frames(analysed_text: str, kb_files: pd.DataFrame) -> list[tuple[str, str]]:
    """(path, function) of the task's stack-trace frames whose path names an indexed file, in order."""
    return _in_repo_frames(_trace_frames(analysed_text), kb_files)


def symbol_hints(analysed_text: str, file_hints: list[str], trace_frames: list[tuple[str, str]]) -> list[str]:
    """Identifier-looking names of the task: trace-frame functions first, then backticked names, calls, dotted,
    snake_case and CamelCase words."""
    frame_symbols = [f for _, f in trace_frames if f and not f.startswith("<")]
    return list(dict.fromkeys(frame_symbols + _symbol_hints(analysed_text, file_hints)))


def error_patterns(analysed_text: str) -> list[str]:
    """Exception lines (`ValueError: msg`), exception / errno names, and quoted messages of the task."""
    return _error_patterns(analysed_text)


def task_keywords(analysed_text: str, symbol_hints: list[str], file_lexicon: Lexicon) -> list[str]:
    """The task's keywords (strongest first) that some indexed file contains: a long issue's reproduction strings
    and log noise (`bbb`, `nbbbbbb`) would otherwise take places a word of the report needs."""
    known = (lambda t: file_lexicon.document_frequency(t) > 0) if len(file_lexicon.doc_ids) else (lambda t: True)
    return _keywords(analysed_text, symbol_hints, known)


def task_type(task_text: str) -> str:
    """bug_fix, feature, refactor, test or investigation, by the words of TASK_TYPE_WORDS (a traceback votes bug_fix;
    so does the heading of a bug-report template)."""
    return _task_type(task_text, bool(_PY_FRAME.search(task_text) or _EXCEPTION_LINE.search(task_text)))


def task_concepts(analysed_text: str, task_keywords: list[str], kb_concept_vocabulary: pd.DataFrame) -> list[str]:
    """KB concepts the task mentions: a concept equal to a task word, a keyword, or the stem of one."""
    return _concepts(analysed_text, task_keywords, kb_concept_vocabulary)


def heuristic_task_query(
    task_text: str,
    task_type: str,
    task_keywords: list[str],
    file_hints: list[str],
    symbol_hints: list[str],
    error_patterns: list[str],
    task_concepts: list[str],
    trace_frames: list[tuple[str, str]],
) -> TaskQuery:
    """The task parsed by deterministic heuristics: what every variant starts from."""
    return TaskQuery(
        raw_description=task_text,
        task_type=task_type,
        keywords=tuple(task_keywords),
        file_hints=tuple(file_hints),
        symbol_hints=tuple(symbol_hints),
        error_patterns=tuple(error_patterns),
        concepts=tuple(task_concepts),
        trace_frames=tuple(trace_frames),
    )


@config.when_not(llm_assist=True)
def task_query__heuristic(heuristic_task_query: TaskQuery) -> TaskQuery:
    """The task query retrieval matches against the KB (deterministic, no LLM)."""
    return heuristic_task_query


@config.when_not(llm_assist=True)
def task_analysis_warnings__heuristic() -> list[str]:
    """Warnings from task analysis: none without LLM assist."""
    return []


def _needs_llm(query: TaskQuery) -> bool:
    """Seed 001: ask the LLM only when heuristics find < 3 keywords and no file/symbol hints."""
    return len(query.keywords) < MIN_LLM_KEYWORDS and not query.file_hints and not query.symbol_hints


LLM_PROMPT = """Extract retrieval hints from this software task. Answer with JSON only, with these keys:
"task_type" (one of bug_fix, feature, refactor, test, investigation), "keywords" (list of code-search words),
"file_hints" (file paths or names), "symbol_hints" (function/class names), "error_patterns" (error messages),
"concepts" (higher-level topics such as authentication, caching).

Task:
{task}
"""


@config.when(llm_assist=True)
def llm_task_reply(task_text: str, heuristic_task_query: TaskQuery, llm_client: object) -> dict:
    """The LLM's extraction as {"fields": dict, "error": str|None}; asked only when heuristics find too little."""
    if not _needs_llm(heuristic_task_query):
        return {"fields": {}, "error": None}
    if llm_client is None:
        reason = "LLM assist requested but no LLM server is available; used heuristic task analysis"
        return {"fields": {}, "error": reason}
    try:
        raw = llm_client(LLM_PROMPT.format(task=task_text))
        start, end = raw.find("{"), raw.rfind("}")
        fields = json.loads(raw[start : end + 1])
        if not isinstance(fields, dict):
            raise ValueError("reply is not a JSON object")
    except Exception as exc:  # any client/parse failure degrades to the heuristic query
        return {"fields": {}, "error": f"LLM assist failed ({type(exc).__name__}: {exc}); used heuristic task analysis"}
    return {"fields": fields, "error": None}


def _strings(value: object) -> list[str]:
    """A JSON value as a list of non-empty strings."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [str(v).strip() for v in value if isinstance(v, (str, int, float)) and str(v).strip()]


@config.when(llm_assist=True)
def task_query__llm(
    heuristic_task_query: TaskQuery,
    llm_task_reply: dict,
    kb_concept_vocabulary: pd.DataFrame,
) -> TaskQuery:
    """The heuristic query enriched with the LLM's fields (keywords re-tokenised, concepts grounded in the KB)."""
    fields = llm_task_reply["fields"]
    if not fields:
        return heuristic_task_query
    q = heuristic_task_query
    concepts = kb_concept_vocabulary
    keywords = list(dict.fromkeys(list(q.keywords) + terms(" ".join(_strings(fields.get("keywords"))))))
    concept_text = " ".join(_strings(fields.get("concepts")) + _strings(fields.get("keywords")))
    task_type = fields.get("task_type")
    return TaskQuery(
        raw_description=q.raw_description,
        task_type=task_type if task_type in TASK_TYPES and q.task_type == "investigation" else q.task_type,
        keywords=tuple(keywords[:MAX_KEYWORDS]),
        file_hints=tuple(dict.fromkeys(list(q.file_hints) + _strings(fields.get("file_hints")))),
        symbol_hints=tuple(dict.fromkeys(list(q.symbol_hints) + _strings(fields.get("symbol_hints")))),
        error_patterns=tuple(dict.fromkeys(list(q.error_patterns) + _strings(fields.get("error_patterns")))),
        concepts=tuple(sorted(set(q.concepts) | set(_concepts(concept_text, keywords, concepts)))),
        trace_frames=q.trace_frames,
    )


@config.when(llm_assist=True)
def task_analysis_warnings__llm(llm_task_reply: dict) -> list[str]:
    """Warnings from task analysis: why the LLM could not help, when it could not."""
    return [llm_task_reply["error"]] if llm_task_reply["error"] else []
