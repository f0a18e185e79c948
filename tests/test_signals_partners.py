"""partner_affinity: the files a fix edits besides the best match, found through co-change and imports
with the first pass's best files (anchors)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cra.dataflows.retrieval import signals
from cra.dataflows.retrieval.signal_list import FIRST_PASS_SIGNALS, SECOND_PASS_SIGNALS, SIGNALS
from cra.drivers.cli.main import main
from tests.fixture_repo import commit_git
from tests.retrieval_dag import run_node
from tests.test_signals import kb_edges, kb_files, seeds, values


def anchors(**shares: float) -> pd.Series:
    """An anchor_files Series: file_id -> share of the best first-pass total."""
    return pd.Series({int(k[1:]): v for k, v in shares.items()}, name="share").rename_axis("file_id")


def cochange(*rows: tuple[int, int, int]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["file_a", "file_b", "count"])


def test_a_file_changing_with_an_anchor_scores_the_share_of_the_anchors_commits():
    files = kb_files("best.rs", "error.rs", "rarely.rs", "other.rs", commit_count=[10, 40, 3, 5])
    ties = cochange((0, 1, 6), (0, 2, 2), (0, 3, 1))  # error.rs changed in 6 of best.rs's 10 commits, rarely.rs in 2
    got = signals.partner_affinity(files, ties, signals.kb_import_graph(kb_edges()), anchors(f0=1.0))
    assert values(got) == [0.0, 0.6, 0.2, 0.0]  # other.rs: one shared commit (MIN_TIE_COMMITS = 2) ties nothing


def test_an_import_either_way_is_a_tie_and_the_strongest_tie_times_the_anchor_share_counts():
    files = kb_files(
        "best.py", "second.py", "imports_best.py", "imported_by_second.py", "both.py", commit_count=[4, 4, 1, 1, 1]
    )
    edges = kb_edges((2, 0), (1, 3), (4, 0))
    ties = cochange((1, 4, 4))  # both.py: every commit of the second anchor, and an import of the best
    got = signals.partner_affinity(files, ties, signals.kb_import_graph(edges), anchors(f0=1.0, f1=0.5))
    assert values(got) == [0.0, 0.0, signals.IMPORT_TIE, signals.IMPORT_TIE * 0.5, 0.5]


def test_no_anchor_or_no_history_and_imports_means_no_partner():
    files = kb_files("a.py", "b.py")
    assert values(
        signals.partner_affinity(files, cochange((0, 1, 3)), signals.kb_import_graph(kb_edges((1, 0))), anchors())
    ) == [0.0, 0.0]
    assert values(
        signals.partner_affinity(files, cochange(), signals.kb_import_graph(kb_edges()), anchors(f0=1.0))
    ) == [0.0, 0.0]


def test_anchors_are_the_best_files_of_the_first_pass_with_seeds_first():
    files = kb_files("a.py", "b.py", "c.py", "d.py", "e.py")
    frame = pd.DataFrame(0.0, index=pd.Index(range(5), name="file_id"), columns=list(FIRST_PASS_SIGNALS))
    frame["lexical_match"] = [0.2, 0.9, 0.0, 0.6, 0.45]
    weights = pd.Series(1.0, index=list(SIGNALS))
    prior = pd.Series(1.0, index=frame.index)
    got = run_node(
        "anchor_files",
        first_pass_frame=frame,
        configured_signal_weights=weights,
        file_prior=prior,
        seed_files=seeds(2),
        kb_files=files,
    )
    assert list(got.index) == [2, 1, 3]  # the seed (total 1), then the two best scores; ANCHORS = 3
    assert got.tolist() == pytest.approx([1.0, 0.9, 0.6])


def test_the_signal_frame_holds_the_second_pass_signals_after_the_first_pass():
    files = kb_files("a.py")
    zero = pd.Series(0.0, index=pd.Index([0], name="file_id"))
    frame = run_node("signal_frame", kb_files=files, **{name: zero for name in SIGNALS})
    assert tuple(frame.columns) == SIGNALS and set(SECOND_PASS_SIGNALS) == {"partner_affinity"}


def test_a_partner_that_shares_no_word_with_the_task_joins_the_ranking_through_cli(tmp_path, capsys):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    sources = {
        "src/tokenizer.rs": "pub fn tokenize_quoted_string(input: &str) -> Vec<String> { vec![] }\n",
        "src/failure.rs": "pub enum Failure { Io, Syntax }\n",
        "src/render.rs": "pub fn render_page() {}\n",
        "src/quoted_docs.rs": "// quoted string notes\npub fn notes() {}\n",
    }
    commit_git(repo, "init", "-q", "-b", "main", when=0)
    batches = (("src/tokenizer.rs", "src/failure.rs"), ("src/render.rs",), ("src/quoted_docs.rs",))
    for when, batch in enumerate(batches):  # no co-change but the tokenizer's and its error type's
        for rel in batch:
            (repo / rel).write_text(sources[rel])
        commit_git(repo, "add", *batch, when=when)
        commit_git(repo, "commit", "-q", "-m", f"add {batch[0]}", when=when)
    for i in range(4, 7):  # the tokenizer and its error type change together; render.rs on its own
        for rel in ("src/tokenizer.rs", "src/failure.rs") if i != 5 else ("src/render.rs",):
            with open(repo / rel, "a") as handle:
                handle.write(f"// change {i}\n")
        commit_git(repo, "commit", "-q", "-am", f"change {i}", when=i)
    assert main(["index", str(repo)]) == 0
    weights = tmp_path / "weights.toml"
    only = {name: 1.0 if name in ("lexical_match", "partner_affinity") else 0.0 for name in SIGNALS}
    weights.write_text("[weights]\n" + "".join(f"{name} = {value}\n" for name, value in only.items()))
    capsys.readouterr()
    task = "tokenize_quoted_string drops the closing quote of a quoted string"
    assert main(["retrieve", task, "--repo", str(repo), "--format", "json", "--weights", str(weights)]) == 0
    scope = {row["path"]: row for row in json.loads(capsys.readouterr().out)["provenance"]["scope"]}
    assert scope["src/failure.rs"]["signals"]["partner_affinity"] > 0  # no task word, but changes with the best match
    assert "src/render.rs" not in scope or scope["src/render.rs"]["signals"]["partner_affinity"] == 0
    assert {scope["src/tokenizer.rs"]["rank"], scope["src/failure.rs"]["rank"]} == {1, 2}  # beside the best match
    assert scope["src/failure.rs"]["rank"] < scope["src/quoted_docs.rs"]["rank"]
