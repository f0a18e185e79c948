"""Runs the retrieval dataflow for one task against a loaded KB: one Hamilton driver per request."""

from __future__ import annotations

import json
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd
from hamilton import driver

from cra.dataflows.retrieval import (
    assembly,
    budget,
    combination,
    issue_templates,
    path_scope,
    pinned,
    precision,
    render,
    reranking,
    scope,
    signals,
    symbol_signals,
    task_analysis,
    word_tables,
)
from cra.dataflows.retrieval.models import ContextPackage, PinnedSection
from cra.dataflows.retrieval.signal_list import KNOBS, checked_weights
from cra.drivers.common.conventions import load_conventions
from cra.drivers.common.errors import CraError
from cra.drivers.common.shipped import shipped_path
from cra.drivers.common.tokens import count_tokens
from cra.drivers.kb.store import KnowledgeBase

# the retrieval DAG, stage by stage (word_tables: nodes a request gets as overrides from the loaded KB)
MODULES = (
    word_tables,
    issue_templates,
    task_analysis,
    signals,
    combination,
    path_scope,
    scope,
    symbol_signals,
    reranking,
    precision,
    pinned,
    budget,
    assembly,
    render,
)
DEFAULT_BUDGET = 32_768
DEFAULT_SCOPE_SIZE = 75
MIN_BUDGET = 256
AUTO_BUDGET_CAP = 8_192  # --budget auto: the package stops where the symbol scores fall off, never above this
# the original retrieval specification's behaviour where ours deviates, each one switch (`--seed-variants`; README "Deviations from the seeds")
SEED_VARIANTS = {
    "task_types": "seed's task-type weight adjustments (bug_fix: recency .15, centrality 0; ...)",
    "budget_split": "seed's section split 60/10/15/10/5 (ours 75/5/10/5/5)",
    "floor": "seed's floor: every primary of a seed file (ours: the two best-ranked symbols)",
    "eviction": "seed's eviction: lower tiers evicted whole, then primary bodies demoted (ours: demote first)",
    "primaries": "seed's gate 4: primaries only from seed files or symbols the task names (ours: top of the ranking)",
}


@dataclass(frozen=True)
class Retrieval:
    """What one request produced: the package, the ranked scope, the full signal matrix, and timing."""

    package: ContextPackage
    scope: pd.DataFrame
    signal_matrix: pd.DataFrame
    outputs: dict
    seconds: float


def retrieval_driver(
    llm_assist: bool = False, adapters: tuple = (), seed_variants: tuple[str, ...] = ()
) -> driver.Driver:
    """The retrieval DAG (every module of MODULES), configured for this request (LLM assist, the seed variants
    switched on); built once per configuration unless lifecycle adapters (e.g. `cra.drivers.bench.timing.NodeTimer`) are
    attached."""
    variants = checked_seed_variants(seed_variants)
    if not adapters:
        return _shared_driver(llm_assist, variants)
    return _builder(llm_assist, variants).with_adapters(*adapters).build()


@lru_cache(maxsize=8)
def _shared_driver(llm_assist: bool, seed_variants: tuple[str, ...] = ()) -> driver.Driver:
    return _builder(llm_assist, seed_variants).build()


def _builder(llm_assist: bool, seed_variants: tuple[str, ...] = ()) -> driver.Builder:
    variants = {f"seed_{name}": name in seed_variants for name in SEED_VARIANTS}
    return driver.Builder().with_modules(*MODULES).with_config({"llm_assist": llm_assist, **variants})


def checked_seed_variants(names) -> tuple[str, ...]:
    """The seed variants asked for, sorted and known (`all`: every one); CraError naming the valid ones otherwise."""
    names = [n.strip() for n in (names.split(",") if isinstance(names, str) else names or ()) if n and n.strip()]
    if "all" in names:
        return tuple(sorted(SEED_VARIANTS))
    unknown = sorted(set(names) - set(SEED_VARIANTS))
    if unknown:
        raise CraError(f"Unknown seed variant(s) {', '.join(unknown)}. Valid: {', '.join(SEED_VARIANTS)}, or all.")
    return tuple(sorted(set(names)))


def checked_path_scope(paths) -> tuple[str, ...]:
    """The path scope as the dataflow matches it (posix, relative, no trailing '/', each once); CraError naming a
    path that is empty, absolute or leaves the repository."""
    from cra.dataflows.path_globs import normalised_pattern

    if isinstance(paths, str):
        paths = [paths]
    try:
        return tuple(dict.fromkeys(normalised_pattern(p) for p in paths or ()))
    except ValueError as exc:
        raise CraError(f"Path scope: {exc}.") from None


def require_matches(counts: dict[str, int], kb: KnowledgeBase) -> None:
    """CraError when a path of the scope matches no indexed file (a typo, or a folder .cra.toml or .gitignore keeps
    out of the index): one message naming each and the fix."""
    empty = [p for p, n in counts.items() if n == 0]
    if not empty:
        return
    named = ", ".join(f"'{p}'" for p in empty)
    tops = sorted({p.split("/", 1)[0] for p in kb.files["path"].astype(str).head(50_000) if "/" in p})[:8]
    hint = f" Top-level folders indexed: {', '.join(tops)}." if tops else ""
    raise CraError(
        f"Path scope {named} matches no indexed file. Give folders or globs relative to the repository root "
        f"(e.g. src/app or 'src/**/api'), or index them (see .gitignore and .cra.toml).{hint}"
    )


def kb_inputs(kb: KnowledgeBase) -> dict:
    """The KB-derived inputs every retrieval node may ask for (its word tables come as overrides:
    `kb.task_free_overrides`)."""
    t = kb.tables
    return {
        "kb_warnings": list((kb.metadata.get("stats") or {}).get("warnings") or []),
        "kb_files": t["files"],
        "kb_symbols": t["symbols"],
        "kb_comments": t["comments"],
        "kb_edges": t["edges"],
        "kb_symbol_edges": t["symbol_edges"],
        "kb_cochange": t["cochange"],
        "kb_commits": t["commits"],
        "kb_commit_files": t["commit_files"],
        "kb_companions": t.get("companions"),
        "kb_contents": kb.contents,
        "file_lexicon": kb.file_lexicon,
        "symbol_lexicon": kb.symbol_lexicon,
        "commit_lexicon": kb.commit_lexicon,
        "language_conventions": load_conventions(),
    }


def request_overrides(kb: KnowledgeBase) -> dict:
    """`kb.task_free_overrides` plus the import edges indexed by source (`signals.kb_import_graph`), the comments'
    symbol ids as integers and each symbol's file by id: built once per loaded KB and kept on it, so that no request
    passes over a large repository's millions of edges, converts its million comments or indexes its symbols."""
    found = vars(kb).get("_request_overrides")
    if found is None:
        found = kb.task_free_overrides | {
            "kb_import_graph": signals.kb_import_graph(kb.tables["edges"]),
            "kb_comment_symbol_ids": precision.kb_comment_symbol_ids(kb.tables["comments"]),
            "kb_symbol_files": signals.kb_symbol_files(kb.tables["symbols"]),
        }
        vars(kb)["_request_overrides"] = found
    return found


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise CraError(f"Weights file {path} does not exist. Pass a TOML file such as data/weights.toml.") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CraError(f"Weights file {path} is not valid TOML ({exc}). Fix it, e.g. `lexical_match = 0.3`.") from None


def _numbers(table: dict, path: Path, known: tuple[str, ...] | None = None) -> dict[str, float]:
    """A table of weights as floats, checked by `signal_list.checked_weights` (names too, when `known`)."""
    try:
        return checked_weights(table, known)
    except ValueError as exc:
        raise CraError(f"Weights file {path}: {exc}.") from None


def load_weights(path: Path) -> dict[str, float]:
    """User overrides from TOML: `[weights]` and `[priors]` tables, or top-level `name = number` pairs."""
    data = _read_toml(path)
    tables = [data[t] for t in ("weights", "priors") if isinstance(data.get(t), dict)] or [data]
    return {k: v for table in tables for k, v in _numbers(table, path, KNOBS).items()}


@lru_cache(maxsize=1)
def default_weight_profile() -> dict:
    """The shipped profile (`data/weights.toml`: fitted weights, priors, task-type adjustments)."""
    path = shipped_path("weights.toml")
    data = _read_toml(path)
    profile = {"weights": _numbers(data.get("weights", {}), path), "priors": _numbers(data.get("priors", {}), path)}
    if "task_types" in data:
        profile["task_types"] = {t: _numbers(v, path) for t, v in data["task_types"].items()}
    return profile


@lru_cache(maxsize=1)
def default_file_ranker():
    """The shipped learned file ranker (`data/models/file_ranker.json`, `cra.drivers.research.learn_ranker`)."""
    return read_tree_model(shipped_path("models", "file_ranker.json"))


def read_tree_model(path: Path):
    """A learned ranker (`cra.dataflows.retrieval.learned.TreeModel`) from its JSON file."""
    from cra.dataflows.retrieval.learned import TreeModel

    return TreeModel(json.loads(Path(path).read_text()))


@lru_cache(maxsize=1)
def default_symbol_weights() -> dict:
    """The shipped symbol-signal weights (`data/symbol_weights.toml`, fitted by `cra.drivers.research.fit_symbol_weights`)."""
    path = shipped_path("symbol_weights.toml")
    return _numbers(_read_toml(path).get("weights", {}), path)


def retrieve(
    kb: KnowledgeBase,
    task_text: str,
    *,
    budget: int | str = DEFAULT_BUDGET,
    scope_size: int = DEFAULT_SCOPE_SIZE,
    weights: dict | None = None,
    llm_assist: bool = False,
    llm_client=None,
    prompt_template: str | None = None,
    outputs: tuple[str, ...] = (),
    adapters: tuple = (),
    pinned_sections: tuple[PinnedSection, ...] | Callable[[pd.DataFrame], tuple[PinnedSection, ...]] = (),
    seed_variants: tuple[str, ...] = (),
    path_scope: tuple[str, ...] | list[str] | None = None,
    reader=None,
) -> Retrieval:
    """Run the pipeline; `outputs` names extra nodes to return (e.g. "markdown_text", "symbol_tiers");
    `adapters` are Hamilton lifecycle hooks watching the run (e.g. per-node timing); `pinned_sections` go at the
    top of the package (guidance, memories), or a function of the ranked scope that makes them (the ranking is
    then computed once and reused). `budget="auto"` stops adding bodies where the symbol scores fall off (at most
    AUTO_BUDGET_CAP tokens) and says where and why in `provenance.auto_budget`. `seed_variants` switches on seed
    001's behaviour where ours deviates (SEED_VARIANTS). `path_scope`: subtrees or globs (relative to the
    repository root) the ranking keeps to (`cra.dataflows.retrieval.path_scope`); one naming no indexed file is a
    CraError. `reader`: a code-reading model (`cra.drivers.retrieval.reader_files.read_reader`) that re-orders
    the best files and symbols (`cra.dataflows.retrieval.reranking`); None (the default) keeps the first stage's."""
    budget_mode = "auto" if budget == "auto" else "fixed"
    budget = AUTO_BUDGET_CAP if budget == "auto" else budget
    if not task_text or not task_text.strip():
        raise CraError(
            "The task description is empty. Pass it as an argument, with --task-file F, or on stdin with `-`."
        )
    if budget < MIN_BUDGET:
        raise CraError(f"--budget {budget} is too small to hold a task and any code; use at least {MIN_BUDGET}.")
    if scope_size < 1:
        raise CraError(f"--scope-size must be at least 1 (got {scope_size}).")
    try:
        checked_weights(weights)
    except ValueError as exc:
        raise CraError(f"Weights: {exc}.") from None
    inputs = {
        **kb_inputs(kb),
        "task_text": task_text,
        "budget": int(budget),
        "budget_mode": budget_mode,
        "scope_size": int(scope_size),
        "weights_override": weights,
        "weight_profile": default_weight_profile(),
        "symbol_weight_profile": default_symbol_weights(),
        "file_ranker": default_file_ranker(),
        "count_tokens": count_tokens,
        "prompt_template": prompt_template or render.DEFAULT_PROMPT_TEMPLATE,
        "path_scope": checked_path_scope(path_scope),
        "reader": reader,
    }
    if llm_assist:
        inputs["llm_client"] = llm_client
    wanted = ["context_package", "scope", "signal_matrix", *outputs]
    started = time.perf_counter()
    dag, overrides = retrieval_driver(llm_assist, adapters, seed_variants), request_overrides(kb)
    if inputs["path_scope"]:
        scoped = dag.execute(["path_scope_counts", "in_path_scope"], inputs=inputs, overrides=overrides)
        require_matches(scoped["path_scope_counts"], kb)
        overrides = overrides | scoped
    if callable(pinned_sections):
        ranked = dag.execute(["task_query", "signal_matrix", "scope"], inputs=inputs, overrides=overrides)
        overrides, pinned_sections = overrides | ranked, pinned_sections(ranked["scope"])
    inputs["pinned_sections"] = tuple(pinned_sections)
    result = dag.execute(list(dict.fromkeys(wanted)), inputs=inputs, overrides=overrides)
    seconds = time.perf_counter() - started
    return Retrieval(result["context_package"], result["scope"], result["signal_matrix"], result, seconds)
