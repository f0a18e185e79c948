"""Token budget: cut the package to the budget, least relevant first, never over it.

Plan: the task gets up to 512 tokens (at most half the budget), the files holding primary code their headings; the
rest is shared 75% primary, 5% tests, 10% supporting, 5% type context, 5% rationale (a file shown only for the lower
sections pays its heading out of them; the first plan's 60/10/15/10/5 left gold bodies out at 8k: primaries are now the
symbol ranking's best, so they earn the room), and a section needing less than its share passes the surplus on.
Outlines (signatures of the top files' other definitions) have no share: they get what the others leave.
When the package is too big, sections are cut bottom-up (outline, rationale, type context, supporting, tests, primary)
down to their share, within a section lowest priority first (a ranked primary's symbol score, else its file's score),
bodies demoted to signatures before anything is evicted. The floor (task + the FLOOR_RANK best-ranked symbols) goes
last. Freed room is refilled best-first, and the real
markdown is measured with `count_tokens` until it fits: `token_count <= budget` holds by construction.
Last (fixed budgets), a class around shown bodies is widened to its whole source, its own lines (fields, a place for
a new method) included: with the room left, or, around one of the WIDEN_RANK best symbols, with room cut from less
relevant pieces in the same order (never a file's last piece); measured again.
Nodes: budget_items, budget_item_columns, file_overhead, allotted_task_text, unbudgeted_tokens -> section_room ->
section_allocation -> budget_cuts (the one cut/measure/refill loop, a frozen BudgetCuts) -> evicted_items,
demoted_items -> budget_plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache, lru_cache

import numpy as np
import pandas as pd
from hamilton.function_modifiers import config

from cra.dataflows.distinct import distinct
from cra.dataflows.retrieval.import_graph import ImportGraph
from cra.dataflows.retrieval.markdown import (
    assertion_bullet,
    edges_between,
    ordered_files,
    package_markdown,
    shown_path,
    shown_text,
)
from cra.dataflows.retrieval.models import BudgetCuts, BudgetPlan, FileContext, SymbolContext, TaskQuery
from cra.dataflows.retrieval.precision import FLOOR_RANK
from cra.dataflows.retrieval.vocabulary import member_mask

TASK_ALLOCATION = 512
SECTION_SHARES = {
    "primary": 0.75,
    "tests": 0.05,
    "supporting": 0.10,
    "type_context": 0.05,
    "rationale": 0.05,
    "outline": 0.0,
}
# seed 001's split (`--seed-variants budget_split`): primary 60%, tests 10%, supporting 15%, type context 10%, rationale 5%
SEED_SECTION_SHARES = {
    "primary": 0.60,
    "tests": 0.10,
    "supporting": 0.15,
    "type_context": 0.10,
    "rationale": 0.05,
    "outline": 0.0,
}
EVICTION_ORDER = ("outline", "rationale", "type_context", "supporting", "tests", "primary")
REFILL_ROUNDS = 3
REFILL_MIN_SLACK = 0.005  # a refill round re-renders the package: not worth it for under 0.5% of the budget
FULL, DEMOTED, EVICTED = 0, 1, 2
_TRUNCATION_MARK = " […]"
WIDEN_RANK = 5  # a class holding one of the symbol ranking's five best may take less relevant pieces' room to be whole


@config.when(seed_budget_split=True)
def section_shares__seed() -> dict[str, float]:
    """Seed 001's section split, 60/10/15/10/5 (primary/tests/supporting/type context/rationale)."""
    return SEED_SECTION_SHARES


@config.when(seed_floor=True)
def floor_rule__seed() -> str:
    """Seed 001's floor: every primary of a seed file (besides the task), whatever its rank."""
    return "seed_files"


@config.when(seed_eviction=True)
def eviction_rule__seed() -> str:
    """Seed 001's eviction: whole tiers bottom-up first (no demotion there), then primary bodies demoted, then evicted."""
    return "tiers_first"


def budget_items(
    file_contexts: list[FileContext], count_tokens: Callable, floor_rule: str = "best_ranked"
) -> pd.DataFrame:
    """One row per piece the budget can cut (symbol, test assertion, rationale comment) with its token costs; the
    floor is the FLOOR_RANK best-ranked primaries, or (`floor_rule` 'seed_files', seed 001) the seed files' primaries."""
    rows = []
    for fi, f in enumerate(file_contexts):
        base = (fi, f.file_id, f.path, f.score, f.relevance_rank)
        for pos, s in enumerate(f.symbols):
            demotable = s.body is not None
            signature = count_tokens(shown_text(None, s.docstring, s.signature, f.language)) if demotable else s.tokens
            if floor_rule == "seed_files":
                floor = s.relevance == "primary" and f.added_by == "seed"
            else:
                floor = s.relevance == "primary" and s.rank is not None and s.rank <= FLOOR_RANK
            priority = f.score if s.score is None else s.score
            rows.append(
                (
                    *base,
                    "symbol",
                    pos,
                    s.qualified_name,
                    _section(f, s),
                    s.start_line,
                    floor,
                    priority,
                    s.tokens + 1,
                    signature + 1,
                    demotable,
                )
            )  # +1: the blank line between symbols
        for pos, a in enumerate(f.test_assertions or ()):
            cost = count_tokens(assertion_bullet(a)) + 1
            rows.append((*base, *_piece("assertion", pos, a.partition(": ")[0], "tests", cost, f.score)))
        for pos, c in enumerate(f.rationale_comments):
            rows.append((*base, *_piece("rationale", pos, None, "rationale", count_tokens(f"- {c}") + 1, f.score)))
    columns = [
        "file",
        "file_id",
        "path",
        "score",
        "rank",
        "kind",
        "pos",
        "symbol",
        "section",
        "line",
        "floor",
        "priority",
    ]
    return pd.DataFrame(rows, columns=[*columns, "full", "demoted", "demotable"])


def _section(file: FileContext, symbol: SymbolContext) -> str:
    """The budget section of a symbol: its tier, but a test file's primaries are the tests section."""
    return "tests" if file.test_assertions is not None and symbol.relevance == "primary" else symbol.relevance


def budget_item_columns(budget_items: pd.DataFrame) -> dict[str, np.ndarray]:
    """The budget items as one numpy array per column, converted once: the cut loop reads them item by item."""
    return {c: budget_items[c].to_numpy() for c in budget_items.columns}


def context_edges(
    file_contexts: list[FileContext], kb_edges: pd.DataFrame, kb_import_graph: ImportGraph
) -> pd.DataFrame:
    """The import edges between files the package may show: the budget renders the package several times, and
    a large repository has millions of edges (found through the graph's index, not a pass over them)."""
    ids = np.array([f.file_id for f in file_contexts], dtype=np.int64)
    rows = kb_import_graph.rows_from(ids)
    rows = rows[member_mask(kb_import_graph.dst[rows], ids)]  # (the other end looked up on those only)
    return kb_edges.take(rows)


def file_overhead(file_contexts: list[FileContext], context_edges: pd.DataFrame, count_tokens: Callable) -> np.ndarray:
    """Tokens each file costs beyond its items: heading, fence, and its edges, each charged to the end that goes
    first (the one whose best piece is in a lower section, else the lower-ranked): the edge goes with it."""
    files = file_contexts
    heading = [
        count_tokens(f"### {shown_path(f.path)} (rank #{f.relevance_rank})\n```{f.language}\n\n```") + 2 for f in files
    ]
    overhead = np.array(heading, dtype=np.int64)
    edges = edges_between(ordered_files(files), context_edges)
    position = {f.path: i for i, f in enumerate(files)}
    order = {s: i for i, s in enumerate(EVICTION_ORDER)}  # primary last: cut last
    best = [max((order.get(_section(f, s), 0) for s in f.symbols), default=0) for f in files]
    for src, dst in edges:
        later = max(position[src], position[dst], key=lambda i: (-best[i], files[i].relevance_rank, i))
        overhead[later] += count_tokens(f"{src} → {dst}") + count_tokens(f", `{dst}`") + 1
    return overhead


def allotted_task_text(task_query: TaskQuery, code_budget: int, count_tokens: Callable) -> str:
    """The task text within its allocation (TASK_ALLOCATION tokens, at most half the budget, so the floor keeps
    room), marked when cut."""
    return _truncate(task_query.raw_description, min(TASK_ALLOCATION, int(code_budget) // 2), count_tokens)


def unbudgeted_tokens(
    file_contexts: list[FileContext],
    budget_item_columns: dict[str, np.ndarray],
    allotted_task_text: str,
    context_edges: pd.DataFrame,
    count_tokens: Callable,
) -> int:
    """Tokens of the package's real markdown before any cut (what the budget report calls `before`)."""
    items = budget_item_columns
    return _package_tokens(
        file_contexts, items, _Cuts.none(len(items["file"])).state, allotted_task_text, context_edges, count_tokens
    )


def section_room(
    budget_item_columns: dict[str, np.ndarray], file_overhead: np.ndarray, unbudgeted_tokens: int, code_budget: int
) -> int:
    """Tokens the sections share: the budget left for code (`code_budget`) less the task text, what the per-item
    estimates miss of the real rendering, and the headings, fences and edges of the files holding primary code.
    A file shown only for the lower sections (a type's signature, a callee) pays its own overhead out of them when
    the cuts reach it: with cross-file edges a package starts with dozens of such files, and charging them all up
    front took the room of primary bodies."""
    items = budget_item_columns
    correction = unbudgeted_tokens - _estimate(items, file_overhead, _Cuts.none(len(items["file"])).state)
    primary_files = distinct(items["file"].astype(np.int64)[items["section"].astype(object) == "primary"])
    return max(0, int(code_budget) - correction - int(file_overhead[primary_files].sum()))


def section_allocation(
    budget_item_columns: dict[str, np.ndarray], section_room: int, section_shares: dict[str, float] | None = None
) -> dict[str, int]:
    """Tokens per section: SECTION_SHARES (or `section_shares`) of the room, and what a section does not need flows
    to the others by share (outlines get what is left)."""
    shares = section_shares or SECTION_SHARES
    section, full = budget_item_columns["section"].astype(object), budget_item_columns["full"].astype(np.int64)
    demand = np.array([int(full[section == s].sum()) for s in shares], dtype=float)
    return _flowed_allocation(demand, section_room, shares)


def budget_cuts(
    file_contexts: list[FileContext],
    budget_item_columns: dict[str, np.ndarray],
    file_overhead: np.ndarray,
    section_allocation: dict[str, int],
    allotted_task_text: str,
    unbudgeted_tokens: int,
    task_query: TaskQuery,
    code_budget: int,
    count_tokens: Callable,
    context_edges: pd.DataFrame,
    budget_mode: str = "fixed",
    eviction_rule: str = "demote_first",
) -> BudgetCuts:
    """Each item's state (full, body demoted, evicted) and cut order: cut bottom-up to the section allocation, then
    measure the real markdown and cut or refill best-first until it fits (demotion and eviction are one loop)."""
    code_budget, overhead = int(code_budget), file_overhead
    items = {**budget_item_columns, "_tiers_first": eviction_rule == "tiers_first"}
    task = allotted_task_text
    cuts = _Cuts.none(len(items["file"]))
    measured = {(cuts.state.tobytes(), task): unbudgeted_tokens}  # (state, task) -> tokens: none is rendered twice

    def measure(state: np.ndarray, text: str) -> int:
        key = (state.tobytes(), text)
        if key not in measured:
            measured[key] = _package_tokens(file_contexts, items, state, text, context_edges, count_tokens)
        return measured[key]

    if unbudgeted_tokens > code_budget:
        correction = unbudgeted_tokens - _estimate(items, overhead, cuts.state)
        section = items["section"].astype(object)
        for name in (*EVICTION_ORDER, None):  # each section down to its allocation, then whatever is still over
            over = _estimate(items, overhead, cuts.state) + correction - code_budget
            if name is None:
                sequence, need = _global_sequence(items, cuts.state), over
            else:
                sequence = _cut_sequence(items, cuts.state, (name,), floor=False)
                need = min(_tokens(items, cuts.state)[section == name].sum() - section_allocation[name], over)
            cuts = _cut(items, overhead, cuts, sequence, need) or cuts

    truncated = task != task_query.raw_description
    rounds = 0
    while True:
        real = measure(cuts.state, task)
        if real > code_budget:
            margin = int(REFILL_MIN_SLACK * code_budget) // 2  # estimates run a little low: one cut, not several
            cut = _cut(
                items, overhead, cuts, _global_sequence(items, cuts.state), real - code_budget + margin, lock=True
            )
            if cut is None:
                if not task:
                    break  # nothing left but section headers: a budget below a handful of tokens
                task = _truncate(task, count_tokens(task) - (real - code_budget) - 1, count_tokens)
                truncated = True
            cuts = cut or cuts
            continue
        if rounds >= REFILL_ROUNDS or code_budget - real < REFILL_MIN_SLACK * code_budget:
            break
        refilled = _refill(items, overhead, cuts, code_budget - real)
        if refilled is None:
            break
        cuts, rounds = refilled, rounds + 1
    widened: tuple[int, ...] = ()
    if budget_mode != "auto" and real <= code_budget:
        cuts, widened, real = _widened(file_contexts, items, cuts, code_budget, real, task, context_edges, count_tokens)
    return BudgetCuts(cuts.state, cuts.cut_at, task, truncated, real, widened)


def evicted_items(budget_items: pd.DataFrame, budget_cuts: BudgetCuts) -> pd.DataFrame:
    """The budget items the cuts dropped, in the order they were cut."""
    return _cut_items(budget_items, budget_cuts, EVICTED)


def demoted_items(budget_items: pd.DataFrame, budget_cuts: BudgetCuts) -> pd.DataFrame:
    """The budget items whose body the cuts replaced by their signature, in the order they were cut."""
    return _cut_items(budget_items, budget_cuts, DEMOTED)


def budget_plan(
    file_contexts: list[FileContext],
    budget_item_columns: dict[str, np.ndarray],
    budget_cuts: BudgetCuts,
    evicted_items: pd.DataFrame,
    demoted_items: pd.DataFrame,
    section_allocation: dict[str, int],
    section_room: int,
    unbudgeted_tokens: int,
    code_budget: int,
    count_tokens: Callable,
    section_shares: dict[str, float] | None = None,
) -> BudgetPlan:
    """The files as the cuts leave them (classes shown whole where the cuts widened them), the task text that fits,
    and the report explaining the cuts."""
    code_budget, items, cuts = int(code_budget), budget_item_columns, budget_cuts
    files = _rendered(file_contexts, items, cuts.state, cuts.widened, count_tokens)
    shown = {m.symbol_id: (f.path, m) for f in files for s in f.symbols for m in (s, *s.members)}
    widened = [
        {
            "path": shown[sid][0],
            "symbol": shown[sid][1].qualified_name,
            "members": [m.qualified_name for m in shown[sid][1].members],
        }
        for sid in cuts.widened
    ]
    warnings = []
    if cuts.task_truncated:
        warnings.append(
            f"task text truncated to {count_tokens(cuts.task_text)} tokens to fit the budget of {code_budget}"
        )
    floor = np.flatnonzero(items["floor"].astype(bool) & (cuts.state != FULL)).tolist()
    if floor:
        path, symbol = items["path"].tolist(), items["symbol"].tolist()
        what = "; ".join(
            f"{path[i]}::{symbol[i]} ({'body demoted' if cuts.state[i] == DEMOTED else 'dropped'})" for i in floor
        )
        warnings.append(f"budget {code_budget} cannot hold the floor (task + best-ranked symbols): {what}")
    task_tokens = count_tokens(cuts.task_text)
    sections, tokens = items["section"].astype(object), _tokens(items, cuts.state)
    report = {
        "budget": code_budget,
        "before": int(unbudgeted_tokens),
        "after": int(cuts.tokens),
        "allocation": {"task_cap": min(TASK_ALLOCATION, code_budget // 2), "task": task_tokens}
        | {"rendering_overhead": int(code_budget - task_tokens - section_room)}
        | {s: int(round(share * section_room)) for s, share in (section_shares or SECTION_SHARES).items()},
        "allocation_after_flow": {"task": task_tokens} | {s: int(v) for s, v in section_allocation.items()},
        "used": {s: int(tokens[sections == s].sum()) for s in SECTION_SHARES},
        "evicted": [e | {"tokens": int(full) - 1} for e, full in zip(_entries(evicted_items), evicted_items["full"])],
        "demoted": [
            e | {"tokens_before": int(full) - 1, "tokens_after": int(after) - 1}
            for e, full, after in zip(_entries(demoted_items), demoted_items["full"], demoted_items["demoted"])
        ],
        "widened": widened,
        "task_truncated": bool(cuts.task_truncated),
        "warnings": warnings,
    }
    return BudgetPlan(files, cuts.task_text, report)


def budgeted_files(budget_plan: BudgetPlan) -> list[FileContext]:
    """The file contexts after eviction and body -> signature demotion, as the package will contain them."""
    return budget_plan.files


def budgeted_task_text(budget_plan: BudgetPlan) -> str:
    """The task text as the package carries it: whole, or cut (marked) when it alone would break the budget."""
    return budget_plan.task_text


def budget_report(budget_plan: BudgetPlan) -> dict:
    """Tokens before/after, section allocation, what was evicted and demoted (in cut order), floor warnings."""
    return budget_plan.report


@dataclass(frozen=True)
class _Cuts:
    """The cut state while budget_cuts runs: per item full / demoted / evicted, the step that cut it, whether a
    refill may bring it back; every step returns a new one."""

    state: np.ndarray
    cut_at: np.ndarray
    locked: np.ndarray
    steps: int

    @classmethod
    def none(cls, n: int) -> _Cuts:
        return cls(np.full(n, FULL), np.full(n, -1), np.zeros(n, dtype=bool), 0)


def _tokens(items: dict[str, np.ndarray], state: np.ndarray) -> np.ndarray:
    """Per item: what it costs in this state (full, demoted to its signature, or 0 when evicted)."""
    return np.select([state == FULL, state == DEMOTED], [items["full"], items["demoted"]], 0).astype(np.int64)


def _estimate(items: dict[str, np.ndarray], overhead: np.ndarray, state: np.ndarray) -> int:
    """The package size the items and the overhead of their files add up to (the real rendering differs a little)."""
    live = distinct(items["file"].astype(np.int64)[state != EVICTED])
    return int(_tokens(items, state).sum() + overhead[live].sum())


def _cut(
    items: dict[str, np.ndarray],
    overhead: np.ndarray,
    cuts: _Cuts,
    actions: tuple[np.ndarray, ...],
    need: float,
    lock: bool = False,
) -> _Cuts | None:
    """The cuts after applying actions (item, to, saving) in order until they save `need` tokens (emptied files save
    their overhead too); None when there is nothing to save or to cut."""
    if need <= 0 or not len(actions[0]):
        return None
    state, cut_at, locked, steps = cuts.state.copy(), cuts.cut_at.copy(), cuts.locked.copy(), cuts.steps
    files = items["file"].astype(np.int64)
    live = np.bincount(files[state != EVICTED], minlength=len(overhead))
    saved = 0
    for item, to, saving in zip(*(a.tolist() for a in actions)):
        state[item], cut_at[item], locked[item] = to, steps, locked[item] or lock
        steps += 1
        saved += saving
        if to == EVICTED:
            live[files[item]] -= 1
            saved += int(overhead[files[item]]) if live[files[item]] == 0 else 0
        if saved >= need:
            break
    return _Cuts(state, cut_at, locked, steps)


def _refill(items: dict[str, np.ndarray], overhead: np.ndarray, cuts: _Cuts, slack: int) -> _Cuts | None:
    """The cuts with pieces brought back best-first (section priority, then score) while they fit in `slack`; None
    when none fits."""
    priority = {s: i for i, s in enumerate(reversed(EVICTION_ORDER))}
    p = np.array([priority.get(s, len(priority)) for s in items["section"].tolist()], dtype=np.int64)
    state, cut_at = cuts.state.copy(), cuts.cut_at.copy()
    files = items["file"].astype(np.int64)
    open_ = np.flatnonzero((state != FULL) & ~cuts.locked)
    order = open_[np.lexsort((items["line"][open_], items["rank"][open_], -items["priority"][open_], p[open_]))]
    live = set(files[state != EVICTED].tolist())
    changed = False
    full, demoted, demotable = items["full"].tolist(), items["demoted"].tolist(), items["demotable"].tolist()
    for i in order.tolist():
        file = int(files[i])
        current = (0, demoted[i], full[i])[[EVICTED, DEMOTED, FULL].index(state[i])]
        extra = 0 if file in live else int(overhead[file])
        options = [(FULL, full[i])] + ([(DEMOTED, demoted[i])] if demotable[i] and state[i] == EVICTED else [])
        for to, cost in options:
            if cost - current + extra <= slack:
                slack -= cost - current + extra
                state[i], cut_at[i] = to, (-1 if to == FULL else cut_at[i])
                live.add(file)
                changed = True
                break
    return _Cuts(state, cut_at, cuts.locked, cuts.steps) if changed else None


def _package_tokens(
    files: list[FileContext],
    items: dict[str, np.ndarray],
    state: np.ndarray,
    task: str,
    edges: pd.DataFrame,
    count_tokens: Callable,
) -> int:
    """Tokens of the package's real markdown with the items in this state."""
    kept = ordered_files(_apply(files, items, state))
    return count_tokens(package_markdown(task, kept, edges_between(kept, edges)))


def _cut_items(budget_items: pd.DataFrame, budget_cuts: BudgetCuts, state: int) -> pd.DataFrame:
    """The budget items the cuts left in this state, in the order they were cut."""
    at = np.flatnonzero(budget_cuts.state == state)
    return budget_items.take(at[np.argsort(budget_cuts.cut_at[at], kind="stable")])


def _entries(cut_items: pd.DataFrame) -> list[dict]:
    """Report entries of cut items: where they were and how relevant (the token columns are added by the caller)."""
    columns = (cut_items[c].tolist() for c in ("path", "symbol", "kind", "section", "score", "rank"))
    return [
        {
            "path": path,
            "symbol": symbol if isinstance(symbol, str) else None,
            "kind": kind,
            "section": section,
            "score": float(score),
            "rank": int(rank),
        }
        for path, symbol, kind, section, score, rank in zip(*columns)
    ]


def _piece(kind: str, pos: int, symbol: str | None, section: str, cost: int, score: float) -> tuple:
    """A non-symbol budget item (kind .. demotable): it is kept or evicted whole."""
    return kind, pos, symbol, section, 0, False, score, cost, cost, False


def _flowed_allocation(
    demand: np.ndarray, available: float, section_shares: dict[str, float] = SECTION_SHARES
) -> dict[str, int]:
    """Section shares of the available tokens (demand: per section, in section_shares order); what a section does
    not need flows to the others by share."""
    shares = np.array(list(section_shares.values()), dtype=float)
    alloc = shares * available
    for _ in range(len(shares)):
        capped = demand <= alloc
        surplus = float((alloc - demand)[capped].sum())
        alloc = np.where(capped, demand, alloc)
        if surplus <= 0 or capped.all():
            break
        weights = shares[~capped] if shares[~capped].sum() > 0 else np.ones(int((~capped).sum()))  # outline: the rest
        alloc[~capped] += surplus * weights / weights.sum()
    return dict(zip(section_shares, np.round(alloc).astype(np.int64).tolist()))


def _cut_sequence(
    items: dict[str, np.ndarray], state: np.ndarray, sections: tuple[str, ...], floor: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut actions (item, to, saving) for these sections, lowest priority first: per section, demote bodies then
    evict; in the primary section item by item (a low-ranked primary goes whole, signature too, before a better one
    loses its body: a refill brings signatures back where room is left)."""
    rank_of = {s: i for i, s in enumerate(sections)}
    section = np.array([rank_of.get(s, np.nan) for s in items["section"].tolist()], dtype=float)
    live = ~np.isnan(section) & (items["floor"].astype(bool) == floor) & (state != EVICTED)
    body = live & items["demotable"].astype(bool) & (state == FULL)
    if items.get("_tiers_first"):  # seed 001: lower tiers are evicted whole; only primaries are demoted first
        body &= items["section"].astype(object) == "primary"
    idx = np.concatenate([np.flatnonzero(body), np.flatnonzero(live)])
    phase = np.concatenate([np.zeros(body.sum()), np.ones(live.sum())])
    full, demoted = items["full"].astype(np.int64), items["demoted"].astype(np.int64)
    saving = np.where(phase == 0, full[idx] - demoted[idx], demoted[idx])  # an evicted body was demoted first
    by_item = (items["section"][idx] == "primary") & (not items.get("_tiers_first"))
    keys = (
        -items["line"][idx],
        -items["rank"][idx],
        np.where(by_item, phase, 0),
        items["priority"][idx],
        np.where(by_item, 0, phase),
        section[idx],
    )
    order = np.lexsort(keys)
    return idx[order], np.where(phase[order] == 0, DEMOTED, EVICTED), saving[order]


def _global_sequence(items: dict[str, np.ndarray], state: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every remaining cut, bottom-up by section, the floor (seed primaries) last of all."""
    rest = _cut_sequence(items, state, EVICTION_ORDER, floor=False)
    floor = _cut_sequence(items, state, ("primary", "tests"), floor=True)
    return tuple(np.concatenate([a, b]) for a, b in zip(rest, floor))


def _apply(files: list[FileContext], items: dict[str, np.ndarray], state: np.ndarray) -> list[FileContext]:
    """The file contexts with every item in its budget state (demoted: body dropped, evicted: gone). Items come
    file by file (`budget_items`): a file whose items are all full is kept as it is, without a look at each."""
    file_of = items["file"].astype(np.int64)
    starts = np.searchsorted(file_of, np.arange(len(files) + 1))
    out = []
    for fi, f in enumerate(files):
        lo, hi = int(starts[fi]), int(starts[fi + 1])
        here = state[lo:hi]
        if hi > lo and f.symbols and not here.any():  # every piece full (FULL is 0)
            out.append(f)
            continue
        sym, live, why = {}, set(), set()
        for kind, pos, st, demoted in zip(
            items["kind"][lo:hi].tolist(), items["pos"][lo:hi].tolist(), here.tolist(), items["demoted"][lo:hi].tolist()
        ):
            if st != EVICTED:
                if kind == "symbol":
                    sym[pos] = demoted if st == DEMOTED else None
                else:
                    (live if kind == "assertion" else why).add(pos)
        symbols = tuple(s if sym[p] is None else _demoted(s, sym[p] - 1) for p, s in enumerate(f.symbols) if p in sym)
        assertions = (
            None if f.test_assertions is None else tuple(a for p, a in enumerate(f.test_assertions) if p in live)
        )
        rationale = tuple(c for p, c in enumerate(f.rationale_comments) if p in why) if symbols else ()
        if symbols or assertions:
            out.append(replace(f, symbols=symbols, test_assertions=assertions, rationale_comments=rationale))
    return out


@lru_cache(maxsize=4096)
def _demoted(symbol: SymbolContext, tokens: int) -> SymbolContext:
    """The symbol shown by its signature (remembered: every round of the cuts shows the same demotions)."""
    return replace(symbol, body=None, tokens=tokens)


def _widened(
    file_contexts: list[FileContext],
    items: dict[str, np.ndarray],
    cuts: _Cuts,
    code_budget: int,
    real: int,
    task: str,
    edges: pd.DataFrame,
    count_tokens: Callable,
) -> tuple[_Cuts, tuple[int, ...], int]:
    """The cuts with classes that hold a shown body widened to their whole source (which replaces the members shown
    inside it), best file and cheapest first: paid by the room left, or for a class holding one of the WIDEN_RANK
    best-ranked symbols by further cuts in the budget's own order, down to its best member's priority. Also the
    widened symbol_ids and the real package size (measured: an estimate that ran low undoes the last widening).

    A fix often touches a class's own lines (a field, a new method) besides its methods; the members already shown
    usually cover most of it, so the rest costs little."""
    count_tokens = cache(count_tokens)  # a class's source is counted once however many rounds look at it
    widened: tuple[int, ...] = ()
    slack, earlier = code_budget - real, []  # earlier: (cuts, widened, slack) before each widening
    files, where, offered = [], {}, []  # the rendered files, each symbol's file, each file's widening options

    def options_of(f: FileContext) -> list[tuple]:
        return [
            ((f.relevance_rank, extra, f.symbols[p].symbol_id), top, f.symbols[p])
            for p, extra, top in _widenings(f, count_tokens)
        ]

    rendered_cuts = None
    while True:
        if cuts is not rendered_cuts:  # first round, or further cuts paid for the last widening: render anew
            files = _rendered(file_contexts, items, cuts.state, widened, count_tokens)
            where = {s.symbol_id: i for i, f in enumerate(files) for s in f.symbols}
            offered, rendered_cuts = [options_of(f) for f in files], cuts
        elif widened:  # paid from the room left: only the widened class's file changed
            i = where[widened[-1]]
            files[i] = _widen(files[i], widened[-1], count_tokens)
            offered[i] = options_of(files[i])
        options = sorted(o for file_options in offered for o in file_options)
        choice = next(((sid, cuts, slack - extra) for (_, extra, sid), _, _ in options if extra <= slack), None)
        for (_, extra, sid), top, holder in options if choice is None else ():
            funded = _funding(items, cuts, holder, extra - slack, widened, file_contexts) if top else None
            if funded is not None:
                choice = (sid, funded[0], slack + funded[1] - extra)
                break
        if choice is None:
            break
        earlier.append((cuts, widened, slack))
        sid, cuts, slack = choice
        widened += (sid,)
    while widened:
        kept = ordered_files(_rendered(file_contexts, items, cuts.state, widened, count_tokens))
        measured = count_tokens(package_markdown(task, kept, edges_between(kept, edges)))
        if measured <= code_budget:
            return cuts, widened, measured
        cuts, widened, slack = earlier.pop()  # the estimate ran low: undo the last widening
    return cuts, widened, real


def _rendered(
    file_contexts: list[FileContext],
    items: dict[str, np.ndarray],
    state: np.ndarray,
    widened: tuple[int, ...],
    count_tokens: Callable,
) -> list[FileContext]:
    """The file contexts with every item in its budget state, then the widened classes shown whole."""
    files = _apply(file_contexts, items, state)
    holder = {s.symbol_id: i for i, f in enumerate(files) for s in f.symbols} if widened else {}
    for symbol_id in widened:
        if symbol_id in holder:
            files[holder[symbol_id]] = _widen(files[holder[symbol_id]], symbol_id, count_tokens)
    return files


def _funding(
    items: dict[str, np.ndarray],
    cuts: _Cuts,
    holder: SymbolContext,
    need: int,
    widened: tuple[int, ...],
    file_contexts: list[FileContext],
) -> tuple[_Cuts, int] | None:
    """The cuts that free `need` tokens for showing `holder` whole, taken in the budget's own order (outlines first,
    primaries by priority) but never the floor, a piece inside it or inside a class already widened, or a primary
    as relevant as its best member; and the tokens they free. None when that is not enough."""
    symbol_of = {s.symbol_id: s for f in file_contexts for s in f.symbols}
    inside = _pieces_inside(items, holder)
    protected = np.logical_or.reduce([inside, *(_pieces_inside(items, symbol_of[sid]) for sid in widened)])
    shown = inside & (cuts.state == FULL) & items["demotable"].astype(bool)
    if not shown.any():
        return None
    best = float(items["priority"][shown].max())
    if _top(holder) and holder.score is not None:  # a class ranked among the best itself: as relevant as it is
        best = max(best, float(holder.score))
    state, cut_at, steps, freed = cuts.state.copy(), cuts.cut_at.copy(), cuts.steps, 0
    files = items["file"].astype(np.int64)
    live = np.bincount(files[state != EVICTED], minlength=int(files.max()) + 1)
    for i, to, saving in zip(*(a.tolist() for a in _global_sequence(items, cuts.state))):
        if items["floor"][i] or (items["section"][i] == "primary" and items["priority"][i] >= best) or freed >= need:
            break
        if not protected[i] and (to != EVICTED or live[files[i]] > 1):  # a file keeps its last piece: it stays named
            state[i], cut_at[i], steps, freed = to, steps, steps + 1, freed + saving
            live[files[i]] -= to == EVICTED
    if freed < need:
        return None
    return _Cuts(state, cut_at, cuts.locked | (state != cuts.state), steps), freed


def _pieces_inside(items: dict[str, np.ndarray], holder: SymbolContext) -> np.ndarray:
    """Per budget item: whether it is a symbol within the holder's lines (the holder itself included)."""
    return (
        (items["file_id"] == holder.file_id)
        & (items["kind"] == "symbol")
        & (items["line"] >= holder.start_line)
        & (items["line"] <= holder.end_line)
    )


def _inside(f: FileContext, p: int) -> list[int]:
    """Positions of the file's other symbols within the lines of symbol p."""
    outer = f.symbols[p]
    return [
        q
        for q, s in enumerate(f.symbols)
        if q != p and s.file_id == outer.file_id and outer.start_line <= s.start_line and s.end_line <= outer.end_line
    ]


def _widenings(f: FileContext, count_tokens: Callable) -> list[tuple[int, int, bool]]:
    """(position, extra tokens, top) of each class of the file that could be shown whole: a holder shown by signature
    with a body shown inside it; top when it or a body it holds is among the WIDEN_RANK best-ranked symbols (an enum
    the task names is its constants, which no member shows)."""
    out = []
    for p, s in enumerate(f.symbols):
        shown = [f.symbols[q] for q in (_inside(f, p) if s.whole_body is not None and s.body is None else [])]
        if any(o.body is not None for o in shown):
            cost = count_tokens(s.whole_body.rstrip()) - s.tokens - sum(o.tokens + 1 for o in shown)
            top = any(o.body is not None and _top(o) for o in shown) or _top(s)
            out.append((p, max(cost, 0), top))
    return out


def _top(s: SymbolContext) -> bool:
    return s.rank is not None and s.rank <= WIDEN_RANK


def _widen(f: FileContext, symbol_id: int, count_tokens: Callable) -> FileContext:
    """The file with symbol `symbol_id` (if it is there) shown whole, as a primary, and the symbols inside it dropped
    (their lines are in it; they are kept as its members)."""
    p = next((q for q, s in enumerate(f.symbols) if s.symbol_id == symbol_id), None)
    if p is None:
        return f
    s, inside = f.symbols[p], set(_inside(f, p))
    members = tuple(m for q, o in enumerate(f.symbols) if q in inside for m in (replace(o, members=()), *o.members))
    whole = replace(
        s,
        body=s.whole_body,
        relevance="primary",
        tokens=int(count_tokens(s.whole_body.rstrip())),
        reason=f"{s.reason}; shown whole: the budget had room for the rest of its lines",
        members=members,
    )
    return replace(f, symbols=tuple(whole if q == p else o for q, o in enumerate(f.symbols) if q not in inside))


def _truncate(text: str, limit: int, count_tokens: Callable) -> str:
    """The longest prefix of `text` (marked as cut) within `limit` tokens; the text itself when it fits."""
    if count_tokens(text) <= limit:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(text[:mid].rstrip() + _TRUNCATION_MARK) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + _TRUNCATION_MARK if lo else ""
