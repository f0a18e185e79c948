"""Collect the per-file signal matrix of every mined case, the learned ranker's training data.

    python -m cra.drivers.research.mined_signals --mirror ../.mirror [--per-repo 40] [--shard 1/2] [--out DIR]
    python -m cra.drivers.research.mined_signals --relabel --cases FILE [FILE ...] [--out DIR]

File rows go to DIR/parts (what `cra.drivers.research.learn_ranker` trains on), the candidate symbols of the same requests to
DIR/symbols (what `cra.drivers.research.fit_symbol_weights --signals DIR` fits on).

Thousands of cases each need their base commit indexed. Cases of one repository are taken oldest first and each
tree's index starts from the previous tree's KB, so a case re-parses only the files its commit range changed (the
incremental index equals a fresh one: tests/test_reindex.py). Rows are written in parts of PART cases, atomically:
an interrupted run resumes after the last part. Trees it extracted are deleted once the next tree of their
repository is indexed (the cases keep nothing else on disk). `--relabel` gives collected rows the gold of case
files derived again, without collecting.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import pandas as pd

from cra.dataflows.evaluation.cases import MODULE_SYMBOL
from cra.dataflows.retrieval.symbol_signals import SYMBOL_SIGNALS
from cra.drivers.common.errors import CraError, exit_code
from cra.drivers.common.home import cache_root
from cra.drivers.common.output import write_bytes_atomic
from cra.drivers.common.progress import Progress
from cra.drivers.research.figures import parquet_bytes
from cra.drivers.research.tune import case_signal_rows

PART = 25  # cases per written part: what an interruption can cost
EXTRA = ("language", "tokens", "n_lines", "commit_count", "last_commit_time")
MODULE_LEVEL = f"::{MODULE_SYMBOL}"  # a gold function of module-level code: no symbol row is one


def default_dir() -> Path:
    """Where mined signals go unless --out says otherwise."""
    return cache_root() / "mined" / "signals"


def mined_cases(path: Path) -> pd.DataFrame:
    """The normalised cases of a case file with the two fields normalising drops: language (else that of the first
    gold file) and date."""
    from cra.dataflows.index.parsers import language_of
    from cra.drivers.evaluation.evaluate import load_cases
    from cra.drivers.research.mine_cases import FAMILY

    cases = load_cases(path)
    raw = pd.read_json(path, lines=True, dtype=False).rename(columns={"instance_id": "case_id"})
    raw = raw.reindex(columns=["case_id", "language", "created_at"])
    cases = cases.merge(raw, on="case_id", how="left")
    guessed = cases["expected_files"].map(
        lambda files: FAMILY.get(language_of(files[0]) or "", "") if len(files) else ""
    )
    return cases.assign(
        language=cases["language"].astype(object).fillna(guessed),
        created_at=cases["created_at"].astype(object).fillna(""),
    )


def chosen_cases(cases: pd.DataFrame, per_repo: int | None, shard: tuple[int, int]) -> pd.DataFrame:
    """This shard's cases: the newest `per_repo` of each repository (all without it), repositories dealt round-robin
    over the shards by size so shards take about as long; oldest first within a repository."""
    cases = cases.sort_values(["repo", "created_at"], kind="stable")
    if per_repo:
        cases = cases.groupby("repo", sort=False).tail(per_repo)
    sizes = cases["repo"].value_counts(sort=False)
    order = sorted(sizes.index, key=lambda r: (-sizes[r], r))
    mine = {repo for i, repo in enumerate(order) if i % shard[1] == shard[0] - 1}
    return cases[cases["repo"].isin(mine)]


def case_symbol_rows(case: dict, kb) -> pd.DataFrame:
    """Every candidate symbol's signals for one case, labelled with whether the fix changed it (and the language
    family of its gold)."""
    from cra.dataflows.index.parsers import language_of
    from cra.drivers.research.mine_cases import FAMILY
    from cra.drivers.retrieval.retriever import retrieve

    matrix = retrieve(kb, case["task"], outputs=("symbol_signal_matrix",)).outputs["symbol_signal_matrix"]
    gold = {s for s in case.get("expected_symbols") or [] if not s.endswith("::<module>")}
    keys = matrix["path"].astype(str) + "::" + matrix["qualified_name"].astype(str)
    language = language_of(next(iter(sorted(gold)), "").split("::")[0]) or "unknown"
    return matrix.assign(
        gold=keys.isin(gold).to_numpy(),
        case_id=case["case_id"],
        repo=case["repo"],
        n_gold=len(gold),
        language=FAMILY.get(language, language),
    )


def case_rows(case: dict, kb) -> pd.DataFrame:
    """A case's file signals (as `cra.drivers.research.tune` collects them) plus what a learned ranker may also use: the file's
    language, size, history, and the case's language family."""
    rows = case_signal_rows(case, kb)
    files = kb.files.set_index("path")[list(EXTRA)]
    extra = files.reindex(rows["path"])
    times = pd.to_numeric(extra["last_commit_time"], errors="coerce").astype("float64").to_numpy()
    newest = pd.to_numeric(kb.files["last_commit_time"], errors="coerce").astype("float64").max()
    return rows.assign(
        file_language=extra["language"].astype(str).to_numpy(),
        file_tokens=extra["tokens"].astype("float64").to_numpy(),
        file_lines=extra["n_lines"].astype("float64").to_numpy(),
        commit_count=extra["commit_count"].astype("float64").to_numpy(),
        age_days=(newest - times) / 86400.0,
        case_language=case.get("language") or "",
        n_files=len(rows),
    )


class Trees:
    """Each repository's last indexed tree, the seed of its next one; trees this run extracted are removed after."""

    def __init__(self, mirror: Path):
        self.mirror, self.last, self.created = mirror, {}, set()

    def kb(self, case: dict):
        from cra.drivers.evaluation.trees import (
            indexed_tree_kb,
            materialize_tree,
            mirror_git_dir,
            repo_key,
            trees_dir,
        )
        from cra.drivers.index.indexer import index_repository
        from cra.drivers.kb.store import default_kb_dir, has_usable_kb, load_kb

        git_dir = mirror_git_dir(self.mirror, case["repo"])
        if not git_dir.is_dir():
            return None
        repo = case["repo"]
        existed = (trees_dir() / f"{repo_key(repo)}@{case['base_commit']}").is_dir()
        tree = materialize_tree(git_dir, case["base_commit"], repo)
        if not existed:
            self.created.add(tree)
        kb_dir = default_kb_dir(tree)
        seed = self.last.get(repo)  # the repository's previous tree: its KB makes this index incremental
        if seed is not None and not kb_dir.exists() and has_usable_kb(default_kb_dir(seed)):
            shutil.copytree(default_kb_dir(seed), kb_dir)
            index_repository(tree, history_from=(git_dir, case["base_commit"]))
        else:
            indexed_tree_kb(tree, git_dir, case["base_commit"])
        previous, self.last[repo] = self.last.get(repo), tree
        if previous is not None and previous != tree and previous in self.created:
            _remove(previous)
            self.created.discard(previous)
        return load_kb(kb_dir)

    def close(self) -> None:
        for tree in self.created:
            _remove(tree)


def _remove(tree: Path) -> None:
    """A tree and the list of files its mirror lacked (`<tree>.missing`)."""
    shutil.rmtree(tree, ignore_errors=True)
    tree.with_name(f"{tree.name}.missing").unlink(missing_ok=True)


def done_cases(parts: Path) -> set[str]:
    """Case ids already written by any shard (a later run may deal the cases out differently)."""
    done: set[str] = set()
    for part in sorted(parts.glob("*.parquet")):
        done |= set(pd.read_parquet(part, columns=["case_id"])["case_id"].unique())
    return done


def collect(cases: pd.DataFrame, out: Path, mirror: Path, shard: tuple[int, int]) -> int:
    """Collect the shard's cases not yet written, in parts; returns how many cases were written."""
    parts = out / "parts"
    for directory in (parts, out / "symbols"):
        directory.mkdir(parents=True, exist_ok=True)
    shard_name = f"{shard[0]}of{shard[1]}"
    done = done_cases(parts)
    todo = cases[~cases["case_id"].isin(done)]
    n_part = len(list(parts.glob(f"{shard_name}-*.parquet")))
    trees, frames, symbol_frames, written = Trees(mirror), [], [], 0
    progress = Progress(f"collecting ({len(cases) - len(todo)} of {len(cases)} done before)", unit="cases")
    progress.update(0, len(todo))  # (on a terminal, or with CRA_PROGRESS=1 in a log)
    try:
        for i, case in enumerate(todo.to_dict("records"), start=1):
            kb = trees.kb(case)
            if kb is not None:
                frames.append(case_rows(case, kb))
                symbol_frames.append(case_symbol_rows(case, kb))
            if len(frames) == PART or (i == len(todo) and frames):
                name = f"{shard_name}-{n_part:04d}.parquet"
                write_bytes_atomic(out / "symbols" / name, parquet_bytes(pd.concat(symbol_frames)))
                write_bytes_atomic(parts / name, parquet_bytes(pd.concat(frames)))  # last: it marks the cases done
                n_part, written, frames, symbol_frames = n_part + 1, written + len(frames), [], []
            progress.update(i, len(todo))
    finally:
        progress.close()
        trees.close()
    return written


def read_signals(out: Path, kind: str = "parts") -> pd.DataFrame:
    """Every part collected so far, one frame: file rows (`parts`) or symbol rows (`symbols`). A symbol signal added
    after the parts were collected reads as 0 everywhere, and says so: collect again to measure it."""
    parts = sorted((out / kind).glob("*.parquet"))
    frame = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True) if parts else pd.DataFrame()
    missing = [s for s in SYMBOL_SIGNALS if s not in frame] if kind == "symbols" and len(frame) else []
    if missing:
        print(
            f"note: {out / kind} has no {', '.join(missing)} column (collected before it existed): read as 0",
            file=sys.stderr,
        )
    return frame.assign(**dict.fromkeys(missing, 0.0))


def relabeled(frame: pd.DataFrame, cases: pd.DataFrame, kind: str = "parts") -> pd.DataFrame:
    """The rows of the cases still in the case files, gold taken from them again: gold is a label, not a signal, so
    cases whose gold was derived again (`cra.drivers.research.mine_cases --refresh-gold`) need no new collection."""
    column = "expected_files" if kind == "parts" else "expected_symbols"
    latest = cases.drop_duplicates("case_id", keep="last").set_index("case_id")[column]  # a later file wins
    gold = latest.map(lambda items: {i for i in items or () if not i.endswith(MODULE_LEVEL)})
    frame = frame[frame["case_id"].isin(gold.index)]
    keys = frame["path"].astype(str)
    if kind == "symbols":
        keys = keys + "::" + frame["qualified_name"].astype(str)
    out = frame.assign(gold=[key in gold[case] for case, key in zip(frame["case_id"], keys)])
    return out.assign(n_gold=frame["case_id"].map(gold.map(len))) if kind == "symbols" else out


def relabel(out: Path, cases: pd.DataFrame) -> int:
    """Rewrite every part of OUT with the gold of CASES (each part atomically; one left with no case is removed);
    returns how many collected cases are no longer cases."""
    gone: set[str] = set()
    for kind in ("symbols", "parts"):  # parts last: they mark what was collected
        for part in sorted((out / kind).glob("*.parquet")):
            frame = pd.read_parquet(part)
            fresh = relabeled(frame, cases, kind)
            gone |= set(frame["case_id"]) - set(fresh["case_id"])
            if fresh.empty:
                part.unlink()
            else:
                write_bytes_atomic(part, parquet_bytes(fresh))
    return len(gone)


def main(argv: list[str] | None = None) -> int:
    from cra.drivers.research.mine_cases import default_out

    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.mined_signals", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--cases",
        nargs="+",
        default=[str(default_out("train"))],
        help="mined case files (python -m cra.drivers.research.mine_cases --set train)",
    )
    parser.add_argument("--mirror", help="git mirrors laid out as DIR/<owner>+<name>/repo (to collect)")
    parser.add_argument("--out", default=str(default_dir()))
    parser.add_argument("--per-repo", type=int, help="the newest N cases of each repository (default: all)")
    parser.add_argument("--shard", default="1/1", help="K/N: collect the K-th of N disjoint parts (run N at once)")
    parser.add_argument(
        "--relabel",
        action="store_true",
        help="collect nothing: give the collected rows the gold of --cases again (cases no longer there are dropped)",
    )
    args = parser.parse_args(argv)
    cases = pd.concat([mined_cases(Path(path)) for path in args.cases], ignore_index=True)
    if args.relabel:
        gone = relabel(Path(args.out), cases)
        print(f"{args.out}: gold taken again from {', '.join(args.cases)}; {gone} collected cases are no longer cases")
        return 0
    if not args.mirror:
        raise CraError("collecting needs the git mirrors: pass --mirror DIR (laid out as DIR/<owner>+<name>/repo)")
    k, n = (int(x) for x in args.shard.split("/"))
    cases = chosen_cases(cases, args.per_repo, (k, n))
    written = collect(cases, Path(args.out), Path(args.mirror), (k, n))
    print(f"{written} cases written to {Path(args.out) / 'parts'}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
