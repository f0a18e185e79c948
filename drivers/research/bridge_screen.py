"""Screen learned vocabulary bridges: do task words point, across repositories, to code words they do not
share, well enough to re-order the files the pipeline already ranks?

    python -m cra.drivers.research.bridge_screen --train $CRA_CACHE/mined/train.jsonl --cases all.jsonl --results DIR [--out OUT]

A bridge table says which code words (stems of path parts and of the fixed functions' names) the fixes of tasks
that use a word touched, beyond the words the task itself has (lexical signals already match those). It is learned
from the mined pairs (`cra.drivers.research.mine_cases --set train`) as a lift, P(code word | task word) / P(code word), kept only
where at least MIN_CASES fixes in MIN_REPOS repositories support it, so that it is a general bridge, not one
repository's layout. Each development case (`--cases`, evaluated into `--results` by `cra evaluate`) is scored with
the table learned without its repository. Within its top ten files, every gold file is compared with every other
file on its bridge score, beside a control that knows only file size (words a file has) and the comparison at
matched size; then the top ten are re-ordered by rank + weight x bridge score. A bridge worth a signal wins those
comparisons beyond what size alone wins, and lifts Acc@1/5. Tables go to OUT as Parquet.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from cra.dataflows.text import STOP_WORDS, split_identifier, stem
from cra.drivers.common.errors import CraError, exit_code

MIN_CASES = 3  # fixes that support a bridge
MIN_REPOS = 3  # ... in this many repositories: a bridge of one repository is its layout, not the language's
MIN_LIFT = 2.0
MATCHED_SIZE = 1.5  # "matched size": the two files' word counts within this ratio
WEIGHTS = (0.0, 1.5, 2.0, 4.0, 8.0)  # bridge weight against the rank (1 per place) when re-ordering the top ten
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]+$")


def _stems(identifier: str) -> set[str]:
    return {stem(w) for w in split_identifier(identifier) if len(w) >= 3 and w not in STOP_WORDS and not w.isdigit()}


def task_words(text: str) -> set[str]:
    """Stems of the words of a task text (identifiers split), stop words and numbers left out."""
    return set().union(*(_stems(ident) for ident in _IDENT.findall(text)))


def code_words(path: str, names=()) -> set[str]:
    """Stems of a file's path parts (extension dropped) and of the given symbol names (`a.py::Foo.bar` -> bar)."""
    parts = _EXTENSION.sub("", path).split("/")
    return set().union(
        *(_stems(p) for p in parts), *(_stems(str(n).rsplit("::", 1)[-1].rsplit(".", 1)[-1]) for n in names)
    )


@dataclass
class PairCounts:
    """Per repository: cases, cases per task word, per code word, and per (task word, code word not in the task)."""

    cases: Counter = field(default_factory=Counter)
    task: dict = field(default_factory=lambda: defaultdict(Counter))
    code: dict = field(default_factory=lambda: defaultdict(Counter))
    pairs: dict = field(default_factory=lambda: defaultdict(Counter))

    def add(self, repo: str, task: set[str], code: set[str]) -> None:
        self.cases[repo] += 1
        self.task[repo].update(task)
        self.code[repo].update(code)
        self.pairs[repo].update((t, c) for t in task for c in code - task)


def pair_counts(records) -> PairCounts:
    """Counts over mined case records (`problem_statement`, `gold_files`, `gold_functions`, `repo`)."""
    counts = PairCounts()
    for r in records:
        gold = set().union(*(code_words(p) for p in r["gold_files"]), code_words("", r.get("gold_functions") or ()))
        counts.add(r["repo"], task_words(r["problem_statement"]), gold)
    return counts


def bridge_table(counts: PairCounts, without: str | None = None) -> dict[str, dict[str, float]]:
    """task word -> {code word: log(lift) x P(code word | task word)} from every repository but `without`."""
    repos = [r for r in counts.cases if r != without]
    n = sum(counts.cases[r] for r in repos)
    task, code, pairs, support = Counter(), Counter(), Counter(), Counter()
    for r in repos:
        task.update(counts.task[r])
        code.update(counts.code[r])
        pairs.update(counts.pairs[r])
        support.update(counts.pairs[r].keys())
    table: dict[str, dict[str, float]] = defaultdict(dict)
    for (t, c), k in pairs.items():
        if k >= MIN_CASES and support[(t, c)] >= MIN_REPOS:
            lift = k * n / (task[t] * code[c])
            if lift > MIN_LIFT:
                table[t][c] = math.log(lift) * k / task[t]
    return dict(table)


def bridged(table: dict[str, dict[str, float]], task: set[str]) -> dict[str, float]:
    """Code words a task bridges to (not its own words), each with its strongest bridge."""
    out: dict[str, float] = {}
    for t in task:
        for c, w in table.get(t, {}).items():
            if c not in task and w > out.get(c, 0.0):
                out[c] = w
    return out


def case_pairs(
    case_id: str, repo: str, top: list[str], gold: set[str], words: dict[str, set[str]], bridges: dict[str, float]
) -> pd.DataFrame:
    """One row per file of the top ten: its place, whether it is gold (and how many gold files the case has),
    its bridge score and word count."""
    return pd.DataFrame(
        {
            "case_id": case_id,
            "repo": repo,
            "path": top,
            "place": range(1, len(top) + 1),
            "gold": [p in gold for p in top],
            "n_gold": len(gold),
            "bridge": [
                sum(bridges.get(w, 0.0) for w in sorted(words[p])) for p in top
            ],  # (sorted: the same sum every run)
            "n_words": [len(words[p]) for p in top],
        }
    )


def comparisons(files: pd.DataFrame) -> pd.DataFrame:
    """Gold against other files of the same top ten: how often bridge score, word count, and bridge score at matched
    word count put the gold file above (win), below (loss) or level (tie)."""
    rows = []
    for _, case in files.groupby("case_id"):
        gold, other = case[case["gold"]], case[~case["gold"]]
        for g in gold.itertuples():
            for o in other.itertuples():
                ratio = (g.n_words + 1) / (o.n_words + 1)
                rows.append(
                    {
                        "bridge": _sign(g.bridge, o.bridge),
                        "size": _sign(g.n_words, o.n_words),
                        "bridge_matched_size": _sign(g.bridge, o.bridge)
                        if 1 / MATCHED_SIZE < ratio < MATCHED_SIZE
                        else None,
                    }
                )
    signs = pd.DataFrame(rows, columns=["bridge", "size", "bridge_matched_size"])
    out = pd.DataFrame({s: signs[s].value_counts().reindex(["win", "loss", "tie"], fill_value=0) for s in signs}).T
    out["win_share"] = out["win"] / (out["win"] + out["loss"]).where(lambda x: x > 0)
    return out


def _sign(a: float, b: float) -> str:
    return "win" if a > b else "loss" if a < b else "tie"


def reordered_accuracy(files: pd.DataFrame) -> pd.DataFrame:
    """Acc@1/5 of the top ten re-ordered by (11 - place) + weight x bridge / the case's best bridge, per weight."""
    rows = []
    for weight in WEIGHTS:
        acc1 = acc5 = 0.0
        cases = files.groupby("case_id")
        for _, case in cases:
            best = case["bridge"].max()
            score = (11 - case["place"]) + (weight * case["bridge"] / best if best > 0 else 0.0)
            order = case.assign(score=score).sort_values(["score", "place"], ascending=[False, True])
            n_gold = int(order["n_gold"].iloc[0])
            acc1 += float(order["gold"].head(1).sum() == n_gold)
            acc5 += float(order["gold"].head(5).sum() == n_gold)
        rows.append({"weight": weight, "acc@1": acc1 / cases.ngroups, "acc@5": acc5 / cases.ngroups})
    return pd.DataFrame(rows)


def _file_words(tree: str, top: list[str]) -> dict[str, set[str]]:
    """Code words of each top file: its path and the names of the symbols the case tree's KB holds for it."""
    from cra.drivers.kb.location import default_kb_dir
    from cra.drivers.kb.store import read_tables

    tables = read_tables(default_kb_dir(Path(tree)), ["files", "symbols"])
    files = tables["files"][tables["files"]["path"].isin(top)][["file_id", "path"]]
    names = tables["symbols"][["file_id", "name"]].merge(files, on="file_id").groupby("path")["name"].agg(list)
    return {p: code_words(p, names.get(p, ())) for p in top}


def _records(path: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]
    except (OSError, ValueError) as exc:
        raise CraError(f"Cannot read case file {path} ({exc}). Pass a JSONL case file.") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.bridge_screen", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--train", required=True, help="mined training cases (cra.drivers.research.mine_cases --set train)"
    )
    parser.add_argument("--cases", required=True, help="the development case file --results evaluated")
    parser.add_argument("--results", required=True, help="a `cra evaluate --out` directory (cases.parquet)")
    parser.add_argument("--out", help="directory for files.parquet, comparisons.parquet and reordered.parquet")
    args = parser.parse_args(argv)
    texts = {str(r["instance_id"]): r["problem_statement"] for r in _records(Path(args.cases))}
    counts = pair_counts(r for r in _records(Path(args.train)) if str(r["instance_id"]) not in texts)
    results_path = Path(args.results) / "cases.parquet"
    if not results_path.exists():
        raise CraError(f"No {results_path}: run `cra evaluate --cases {args.cases} --out {args.results}` first.")
    results = pd.read_parquet(results_path)
    results = results[(results["status"] == "ok") & results["case_id"].isin(texts.keys())]
    print(
        f"training pairs: {sum(counts.cases.values())} cases from {len(counts.cases)} repositories; "
        f"development: {len(results)} cases",
        file=sys.stderr,
    )
    tables, frames = {}, []
    for i, case in enumerate(results.itertuples(), 1):
        top = list(case.scope_top10)
        if not top:
            continue
        if case.repo not in tables:
            tables[case.repo] = bridge_table(counts, without=case.repo)
        bridges = bridged(tables[case.repo], task_words(texts[case.case_id]))
        words = {p: w - task_words(texts[case.case_id]) for p, w in _file_words(case.tree, top).items()}
        frames.append(case_pairs(case.case_id, case.repo, top, set(case.expected_files), words, bridges))
        if i % 50 == 0:
            print(f"  {i}/{len(results)} cases", file=sys.stderr)
    files = pd.concat(frames, ignore_index=True)
    compared, reordered = comparisons(files), reordered_accuracy(files)
    print(compared.to_string(float_format=lambda v: f"{v:.3f}"))
    print(reordered.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        files.to_parquet(out / "files.parquet")
        compared.to_parquet(out / "comparisons.parquet")
        reordered.to_parquet(out / "reordered.parquet")
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
