"""Token budget (seed 001 step 5): cut the package to the budget, least relevant first, never over it.

Plan: the task gets up to 512 tokens (at most half the budget); the rest is shared 60% primary, 10% tests, 15%
supporting, 10% type context, 5% rationale, and a section needing less than its share passes the surplus on.
Outlines (signatures of the top files' other definitions) have no share: they get what the others leave.
When the package is too big, sections are cut bottom-up (outline, rationale, type context, supporting, tests, primary)
down to their share, within a section lowest file score first, bodies demoted to signatures before anything is
evicted. The floor (task + primaries of seed files) goes last. Freed room is refilled best-first, and the real
markdown is measured with `count_tokens` until it fits: `token_count <= budget` holds by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from dataflows.retrieval.models import FileContext, TaskQuery
from dataflows.retrieval.markdown import assertion_bullet, edges_between, ordered_files, package_markdown, symbol_text

TASK_ALLOCATION = 512
SECTION_SHARES = {"primary": 0.60, "tests": 0.10, "supporting": 0.15, "type_context": 0.10, "rationale": 0.05,
                  "outline": 0.0}
EVICTION_ORDER = ("outline", "rationale", "type_context", "supporting", "tests", "primary")
REFILL_ROUNDS = 3
REFILL_MIN_SLACK = 0.005  # a refill round re-renders the package: not worth it for under 0.5% of the budget
FULL, DEMOTED, EVICTED = 0, 1, 2
_STATE_NAMES = np.array(["full", "demoted", "evicted"])
_TRUNCATION_MARK = " […]"


@dataclass(frozen=True)
class BudgetPlan:
    """What survived the budget (files as they will be rendered) and the report explaining the cuts."""

    files: list[FileContext]
    task_text: str
    report: dict


def budget_items(file_contexts: list[FileContext], count_tokens: Callable) -> pd.DataFrame:
    """One row per piece the budget can cut (symbol, test assertion, rationale comment) with its token costs."""
    rows = []
    for fi, f in enumerate(file_contexts):
        is_test = f.test_assertions is not None
        base = {"file": fi, "file_id": f.file_id, "path": f.path, "score": f.score, "rank": f.relevance_rank}
        for pos, s in enumerate(f.symbols):
            demotable = s.body is not None
            signature = count_tokens(symbol_text(replace(s, body=None), f.language)) if demotable else s.tokens
            rows.append(
                base
                | {
                    "kind": "symbol",
                    "pos": pos,
                    "symbol": s.qualified_name,
                    "section": "tests" if is_test and s.relevance == "primary" else s.relevance,
                    "line": s.start_line,
                    "floor": f.added_by == "seed" and s.relevance == "primary",
                    "full": s.tokens + 1,  # +1: the blank line between symbols
                    "demoted": signature + 1,
                    "demotable": demotable,
                }
            )
        for pos, a in enumerate(f.test_assertions or ()):
            cost = count_tokens(assertion_bullet(a)) + 1
            rows.append(base | _piece("assertion", pos, a.partition(": ")[0], "tests", cost))
        for pos, c in enumerate(f.rationale_comments):
            rows.append(base | _piece("rationale", pos, None, "rationale", count_tokens(f"- {c}") + 1))
    columns = ["file", "file_id", "path", "score", "rank", "kind", "pos", "symbol", "section", "line", "floor"]
    return pd.DataFrame(rows, columns=[*columns, "full", "demoted", "demotable"])


def budget_plan(
    file_contexts: list[FileContext],
    budget_items: pd.DataFrame,
    task_query: TaskQuery,
    budget: int,
    count_tokens: Callable,
    kb_edges: pd.DataFrame,
) -> BudgetPlan:
    """Allocate, cut bottom-up, refill best-first and verify on the real rendering until the package fits."""
    budget = int(budget)
    items = {c: budget_items[c].to_numpy() for c in budget_items.columns}  # tens to hundreds of rows, as arrays
    overhead = _file_overhead(file_contexts, kb_edges, count_tokens)
    plan = _Plan(items, overhead, budget)
    # the task gets its allocation (512 tokens, at most half the budget), so the floor keeps room
    task = _truncate(task_query.raw_description, min(TASK_ALLOCATION, budget // 2), count_tokens)

    measured: dict[tuple[bytes, str], int] = {}  # (cut state, task text) -> tokens: an unchanged package is not re-rendered

    def measure() -> int:
        key = (plan.state.tobytes(), task)
        if key not in measured:
            files = ordered_files(_apply(file_contexts, items, plan.state))
            measured[key] = count_tokens(package_markdown(task, files, edges_between(files, kb_edges)))
        return measured[key]

    before = measure()
    plan.correction = before - plan.raw_estimate()
    section = items["section"].astype(object)
    tokens = plan.tokens()
    demand = np.array([int(tokens[section == s].sum()) for s in SECTION_SHARES], dtype=float)
    available = max(0, budget - plan.correction - int(overhead.sum()))
    allocation = _flowed_allocation(demand, available)
    if before > budget:
        for name in EVICTION_ORDER:
            section_over = plan.tokens()[section == name].sum() - allocation[name]
            plan.cut(_cut_sequence(items, plan.state, (name,), floor=False), min(section_over, plan.over()))
        plan.cut(_global_sequence(items, plan.state), plan.over())

    truncated = task != task_query.raw_description
    rounds = 0
    while True:
        real = measure()
        plan.correction = real - plan.raw_estimate()
        if real > budget:
            margin = int(REFILL_MIN_SLACK * budget) // 2  # estimates run a little low: one cut, not several
            if not plan.cut(_global_sequence(items, plan.state), real - budget + margin, lock=True):
                if not task:
                    break  # nothing left but section headers: a budget below a handful of tokens
                task = _truncate(task, count_tokens(task) - (real - budget) - 1, count_tokens)
                truncated = True
            continue
        if rounds >= REFILL_ROUNDS or budget - real < REFILL_MIN_SLACK * budget or not plan.refill(budget - real):
            break
        rounds += 1

    report = _report(items, plan, budget, before, real, allocation, available, task, truncated, count_tokens)
    return BudgetPlan(_apply(file_contexts, items, plan.state), task, report)


def budgeted_files(budget_plan: BudgetPlan) -> list[FileContext]:
    """The file contexts after eviction and body -> signature demotion, as the package will contain them."""
    return budget_plan.files


def budgeted_task_text(budget_plan: BudgetPlan) -> str:
    """The task text as the package carries it: whole, or cut (marked) when it alone would break the budget."""
    return budget_plan.task_text


def budget_report(budget_plan: BudgetPlan) -> dict:
    """Tokens before/after, section allocation, what was evicted and demoted (in cut order), floor warnings."""
    return budget_plan.report


class _Plan:
    """Mutable cut state of the budget items: full / demoted / evicted, the order of cuts, items locked out."""

    def __init__(self, items: dict[str, np.ndarray], overhead: np.ndarray, budget: int):
        self.items, self.overhead, self.budget = items, overhead, budget
        n = len(items["file"])
        self.state = np.full(n, FULL)
        self.cut_at = np.full(n, -1)
        self.locked = np.zeros(n, dtype=bool)
        self.correction = 0
        self.steps = 0
        self.files = items["file"].astype(np.int64)

    def tokens(self) -> np.ndarray:
        full, demoted = self.items["full"], self.items["demoted"]
        return np.select([self.state == FULL, self.state == DEMOTED], [full, demoted], 0).astype(np.int64)

    def raw_estimate(self) -> int:
        live = np.unique(self.files[self.state != EVICTED])
        return int(self.tokens().sum() + self.overhead[live].sum())

    def over(self) -> int:
        return self.raw_estimate() + self.correction - self.budget

    def cut(self, actions: tuple[np.ndarray, np.ndarray, np.ndarray], need: float, lock: bool = False) -> bool:
        """Apply cut actions (item, to, saving) in order until they save `need` tokens (emptied files save their
        overhead too)."""
        if need <= 0 or not len(actions[0]):
            return False
        files = self.files
        live = np.bincount(files[self.state != EVICTED], minlength=len(self.overhead))
        saved = 0
        for item, to, saving in zip(*(a.tolist() for a in actions)):
            self.state[item], self.cut_at[item], self.locked[item] = to, self.steps, self.locked[item] or lock
            self.steps += 1
            saved += saving
            if to == EVICTED:
                live[files[item]] -= 1
                saved += int(self.overhead[files[item]]) if live[files[item]] == 0 else 0
            if saved >= need:
                break
        return True

    def refill(self, slack: int) -> bool:
        """Bring back cut pieces best-first (section priority, then score) while they fit in `slack`."""
        items = self.items
        priority = {s: i for i, s in enumerate(reversed(EVICTION_ORDER))}
        p = np.array([priority.get(s, len(priority)) for s in items["section"].tolist()], dtype=np.int64)
        open_ = np.flatnonzero((self.state != FULL) & ~self.locked)
        order = open_[np.lexsort((items["line"][open_], items["rank"][open_], -items["score"][open_], p[open_]))]
        live = set(self.files[self.state != EVICTED].tolist())
        changed = False
        full, demoted, demotable = items["full"].tolist(), items["demoted"].tolist(), items["demotable"].tolist()
        for i in order.tolist():
            file = int(self.files[i])
            current = (0, demoted[i], full[i])[[EVICTED, DEMOTED, FULL].index(self.state[i])]
            extra = 0 if file in live else int(self.overhead[file])
            options = [(FULL, full[i])] + ([(DEMOTED, demoted[i])] if demotable[i] and self.state[i] == EVICTED else [])
            for to, cost in options:
                if cost - current + extra <= slack:
                    slack -= cost - current + extra
                    self.state[i], self.cut_at[i] = to, (-1 if to == FULL else self.cut_at[i])
                    live.add(file)
                    changed = True
                    break
        return changed


def _file_overhead(files: list[FileContext], kb_edges: pd.DataFrame, count_tokens) -> np.ndarray:
    """Tokens a file costs beyond its items: heading, fence, and its edges (charged to the lower-ranked end)."""
    heading = [count_tokens(f"### {f.path} (rank #{f.relevance_rank})\n```{f.language}\n\n```") + 2 for f in files]
    overhead = np.array(heading, dtype=np.int64)
    edges = edges_between(ordered_files(files), kb_edges)
    position = {f.path: i for i, f in enumerate(files)}
    for src, dst in edges:
        later = max(position[src], position[dst], key=lambda i: (files[i].relevance_rank, i))
        overhead[later] += count_tokens(f"{src} → {dst}") + count_tokens(f", `{dst}`") + 1
    return overhead


def _piece(kind: str, pos: int, symbol: str | None, section: str, cost: int) -> dict:
    """A non-symbol budget item: it is kept or evicted whole."""
    return {"kind": kind, "pos": pos, "symbol": symbol, "section": section, "line": 0, "floor": False,
            "full": cost, "demoted": cost, "demotable": False}  # fmt: skip


def _flowed_allocation(demand: np.ndarray, available: float) -> dict[str, int]:
    """Section shares of the available tokens (demand: per section, in SECTION_SHARES order); what a section does
    not need flows to the others by share."""
    shares = np.array(list(SECTION_SHARES.values()), dtype=float)
    alloc = shares * available
    for _ in range(len(shares)):
        capped = demand <= alloc
        surplus = float((alloc - demand)[capped].sum())
        alloc = np.where(capped, demand, alloc)
        if surplus <= 0 or capped.all():
            break
        weights = shares[~capped] if shares[~capped].sum() > 0 else np.ones(int((~capped).sum()))  # outline: the rest
        alloc[~capped] += surplus * weights / weights.sum()
    return dict(zip(SECTION_SHARES, np.round(alloc).astype(np.int64).tolist()))


def _cut_sequence(
    items: dict[str, np.ndarray], state: np.ndarray, sections: tuple[str, ...], floor: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut actions (item, to, saving) for these sections: per section, demote bodies then evict, lowest file score
    first."""
    rank_of = {s: i for i, s in enumerate(sections)}
    section = np.array([rank_of.get(s, np.nan) for s in items["section"].tolist()], dtype=float)
    live = ~np.isnan(section) & (items["floor"].astype(bool) == floor) & (state != EVICTED)
    body = live & items["demotable"].astype(bool) & (state == FULL)
    idx = np.concatenate([np.flatnonzero(body), np.flatnonzero(live)])
    phase = np.concatenate([np.zeros(body.sum()), np.ones(live.sum())])
    full, demoted = items["full"].astype(np.int64), items["demoted"].astype(np.int64)
    saving = np.where(phase == 0, full[idx] - demoted[idx], demoted[idx])  # an evicted body was demoted first
    keys = (-items["line"][idx], -items["rank"][idx], items["score"][idx], phase, section[idx])
    order = np.lexsort(keys)
    return idx[order], np.where(phase[order] == 0, DEMOTED, EVICTED), saving[order]


def _global_sequence(items: dict[str, np.ndarray], state: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every remaining cut, bottom-up by section, the floor (seed primaries) last of all."""
    rest = _cut_sequence(items, state, EVICTION_ORDER, floor=False)
    floor = _cut_sequence(items, state, ("primary", "tests"), floor=True)
    return tuple(np.concatenate([a, b]) for a, b in zip(rest, floor))


def _apply(files: list[FileContext], items: dict[str, np.ndarray], state: np.ndarray) -> list[FileContext]:
    """The file contexts with every item in its budget state (demoted: body dropped, evicted: gone)."""
    kept: dict[tuple[int, str], dict[int, tuple[int, int]]] = {}
    columns = [items[c].tolist() for c in ("file", "kind", "pos")] + [state.tolist(), items["demoted"].tolist()]
    for fi, kind, pos, st, demoted in zip(*columns):
        if st != EVICTED:
            kept.setdefault((fi, kind), {})[pos] = (st, demoted)
    out = []
    for fi, f in enumerate(files):
        sym = kept.get((fi, "symbol"), {})
        symbols = tuple(
            s if sym[p][0] == FULL else replace(s, body=None, tokens=int(sym[p][1]) - 1)
            for p, s in enumerate(f.symbols)
            if p in sym
        )
        live = kept.get((fi, "assertion"), {})
        assertions = None if f.test_assertions is None else tuple(a for p, a in enumerate(f.test_assertions) if p in live)
        why = kept.get((fi, "rationale"), {})
        rationale = tuple(c for p, c in enumerate(f.rationale_comments) if p in why) if symbols else ()
        if symbols or assertions:
            out.append(replace(f, symbols=symbols, test_assertions=assertions, rationale_comments=rationale))
    return out


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


def _report(items, plan, budget, before, after, allocation, available, task, truncated, count_tokens) -> dict:
    """The budget report: totals, allocation, evictions and demotions in the order they were made, warnings."""
    state, tokens = plan.state, plan.tokens()
    cut = np.flatnonzero(state != FULL)
    cut = cut[np.argsort(plan.cut_at[cut], kind="stable")].tolist()
    path, kind, section, symbol = (items[c].tolist() for c in ("path", "kind", "section", "symbol"))
    score, rank, full, demoted = (items[c].tolist() for c in ("score", "rank", "full", "demoted"))

    def entry(i, extra):
        name = symbol[i] if isinstance(symbol[i], str) else None
        base = {"path": path[i], "symbol": name, "kind": kind[i], "section": section[i]}
        return base | {"score": float(score[i]), "rank": int(rank[i])} | extra

    evicted = [entry(i, {"tokens": int(full[i]) - 1}) for i in cut if state[i] == EVICTED]
    demoted_ = [entry(i, {"tokens_before": int(full[i]) - 1, "tokens_after": int(demoted[i]) - 1})
                for i in cut if state[i] == DEMOTED]  # fmt: skip
    warnings = []
    if truncated:
        warnings.append(f"task text truncated to {count_tokens(task)} tokens to fit the budget of {budget}")
    floor = np.flatnonzero(items["floor"].astype(bool) & (state != FULL)).tolist()
    if floor:
        what = "; ".join(f"{path[i]}::{symbol[i]} ({'body demoted' if state[i] == DEMOTED else 'dropped'})"
                         for i in floor)  # fmt: skip
        warnings.append(f"budget {budget} cannot hold the floor (task + seed primaries): {what}")
    task_tokens = count_tokens(task)
    sections = items["section"].astype(object)
    return {
        "budget": budget,
        "before": int(before),
        "after": int(after),
        "allocation": {"task_cap": min(TASK_ALLOCATION, budget // 2), "task": task_tokens}
        | {"rendering_overhead": int(budget - task_tokens - available)}
        | {s: int(round(share * available)) for s, share in SECTION_SHARES.items()},
        "allocation_after_flow": {"task": task_tokens} | {s: int(v) for s, v in allocation.items()},
        "used": {s: int(tokens[sections == s].sum()) for s in SECTION_SHARES},
        "evicted": evicted,
        "demoted": demoted_,
        "task_truncated": bool(truncated),
        "warnings": warnings,
    }
