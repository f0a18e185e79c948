"""Training pairs of the code-reading reranker (issue 57): per mined case, its gold files and functions beside the
hard negatives of the current ranking's TOP best, each as the text the model reads (research tooling).

    python -m cra.drivers.research.reader_pairs --cases FILE [FILE ...] --signals DIR [DIR ...] --mirror DIR [--out DIR] [--top 20]

The ranking is the one a request makes: the shipped learned file ranker (`data/models/file_ranker.json`) over the
weighted sum's candidates, and the shipped symbol weights over the candidate symbols, both computed from the
signal frames `cra.drivers.research.mined_signals` collected. Every file of a case's TOP best and every gold file becomes a
`file` row (its path and best-matching chunks, `cra.dataflows.retrieval.passages.file_passage`), every symbol of its
TOP best symbols and every gold function a `symbol` row (its own chunk). Texts come from the mirror at the case's
base commit. `rank` is the first stage's (0: not in its TOP best); `n_gold`/`n_gold_top` count the case's gold and
how much of it the first stage brings into its TOP best: training keeps the cases whose gold it retrieves (the
SweRank lesson), evaluation counts the others as misses. Rows carry `repo` and `language`, so folds can leave
repositories out. One Parquet file per signal part under OUT/<set>/, written atomically: a rerun skips what is
written.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cra.dataflows.retrieval.passages import file_passage, symbol_passage, task_passage
from cra.drivers.common.errors import CraError, exit_code
from cra.drivers.common.home import cache_root
from cra.drivers.common.output import write_bytes_atomic
from cra.drivers.research.figures import parquet_bytes

TOP = 20
COLUMNS = (
    "case_id",
    "repo",
    "language",
    "set",
    "kind",
    "key",
    "query",
    "passage",
    "gold",
    "rank",
    "n_gold",
    "n_gold_top",
)


def default_dir() -> Path:
    """Where pairs go unless --out says otherwise."""
    return cache_root() / "reader" / "pairs"


def file_ranking(frame: pd.DataFrame) -> pd.DataFrame:
    """Per case with gold files: its candidate files in the order a request gives them (the learned ranker over the
    weighted sum's best; the sum alone when no ranker ships), with `rank` (1 = best) and `gold`."""
    from cra.drivers.research.learn_ranker import case_candidates
    from cra.drivers.retrieval.retriever import default_file_ranker, default_weight_profile

    candidates, _ = case_candidates(frame, default_weight_profile())
    model = default_file_ranker()
    score = (
        model.predict(candidates[list(model.features)].to_numpy(float))
        if model
        else -candidates["sum_rank"].to_numpy(float)
    )
    ranked = candidates[["case_id", "path", "gold", "sum_rank"]].assign(score=score)
    ranked = ranked.sort_values(["case_id", "score", "sum_rank"], ascending=[True, False, True], kind="stable")
    return ranked.assign(rank=ranked.groupby("case_id").cumcount() + 1)


def symbol_ranking(frame: pd.DataFrame) -> pd.DataFrame:
    """Per case: its candidate symbols by the shipped symbol weights, with `rank` (1 = best) and `gold`."""
    from cra.dataflows.retrieval.symbol_signals import summed_symbol_ranking as ranked_symbols
    from cra.drivers.retrieval.retriever import default_symbol_weights

    weights = default_symbol_weights() or {}
    parts = [
        ranked_symbols(case.reset_index(drop=True), weights).assign(case_id=case_id)
        for case_id, case in frame.groupby("case_id", sort=True)
    ]
    return (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame(columns=["case_id", "path", "qualified_name", "rank", "gold"])
    )


class Sources:
    """File texts and symbol spans at one commit of a mirror, read once each."""

    def __init__(self, git_dir: Path, commit: str):
        self.git_dir, self.commit, self.texts, self.spans = git_dir, commit, {}, {}

    def text(self, path: str) -> str | None:
        from cra.drivers.evaluation.trees import read_at_commit

        if path not in self.texts:
            self.texts[path] = read_at_commit(self.git_dir, self.commit, path)
        return self.texts[path]

    def symbols(self, path: str) -> dict[str, tuple[int, int]]:
        """qualified name -> (first, last) line of each definition of the file (the first of overloads)."""
        from cra.dataflows.index.parsers import language_of, parse_source

        if path not in self.spans:
            source, language = self.text(path), language_of(path)
            parsed = parse_source(language, source) if source is not None and language else None
            spans: dict[str, tuple[int, int]] = {}
            for s in parsed.symbols if parsed else ():
                spans.setdefault(s.qualified_name, (s.start_line, s.end_line))
            self.spans[path] = spans
        return self.spans[path]


def case_pairs(case: dict, files: pd.DataFrame, symbols: pd.DataFrame, sources: Sources, top: int = TOP) -> list[dict]:
    """The rows of one case: its TOP best files and every gold file, its TOP best symbols and every gold function."""
    query = task_passage(case["task"])
    base = {"case_id": case["case_id"], "repo": case["repo"], "language": case.get("language") or "", "query": query}
    rows = []
    gold_files = [p for p in case["expected_files"]]
    shown = files[files["rank"] <= top]
    ranks = dict(zip(shown["path"], shown["rank"]))
    n_top = sum(p in ranks for p in gold_files)
    for path in dict.fromkeys([*shown["path"], *gold_files]):
        source = sources.text(path)
        if source is None:
            continue
        spans = list(sources.symbols(path).values())
        rows.append(
            base
            | {
                "kind": "file",
                "key": path,
                "passage": file_passage(path, source, spans, case["task"]),
                "gold": path in gold_files,
                "rank": int(ranks.get(path, 0)),
                "n_gold": len(gold_files),
                "n_gold_top": n_top,
            }
        )
    gold_symbols = [s for s in case["expected_symbols"] or [] if not s.endswith("::<module>")]
    shown = symbols[symbols["rank"] <= top]
    keys = (shown["path"].astype(str) + "::" + shown["qualified_name"].astype(str)).tolist()
    ranks = dict(zip(keys, shown["rank"]))
    n_top = sum(k in ranks for k in gold_symbols)
    for key in dict.fromkeys([*keys, *gold_symbols]):
        path, _, name = key.partition("::")
        source, span = sources.text(path), sources.symbols(path).get(name)
        if source is None or span is None:
            continue
        rows.append(
            base
            | {
                "kind": "symbol",
                "key": key,
                "passage": symbol_passage(path, name, source, span, case["task"]),
                "gold": key in gold_symbols,
                "rank": int(ranks.get(key, 0)),
                "n_gold": len(gold_symbols),
                "n_gold_top": n_top,
            }
        )
    return rows


def part_pairs(part: Path, cases: pd.DataFrame, mirror: Path, set_name: str, top: int = TOP) -> pd.DataFrame:
    """The pairs of every case of one signal part (its file rows, and the symbol rows of the same name beside)."""
    from cra.drivers.evaluation.trees import mirror_git_dir

    frame = pd.read_parquet(part)
    symbol_part = part.parent.parent / "symbols" / part.name
    symbol_frame = pd.read_parquet(symbol_part) if symbol_part.is_file() else pd.DataFrame(columns=["case_id"])
    files = file_ranking(frame)
    symbols = (
        symbol_ranking(symbol_frame)
        if len(symbol_frame)
        else pd.DataFrame(columns=["case_id", "path", "qualified_name", "rank"])
    )
    by_case = cases.drop_duplicates("case_id", keep="last").set_index("case_id")
    rows = []
    for case_id in sorted(set(files["case_id"])):
        if case_id not in by_case.index:
            continue
        case = by_case.loc[case_id].to_dict() | {"case_id": case_id}
        git_dir = mirror_git_dir(mirror, case["repo"])
        if not git_dir.is_dir():
            print(f"{case_id}: skipped (no mirror at {git_dir}; fetch github:{case['repo']})", file=sys.stderr)
            continue
        rows += case_pairs(
            case,
            files[files["case_id"] == case_id],
            symbols[symbols["case_id"] == case_id],
            Sources(git_dir, case["base_commit"]),
            top,
        )
    out = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "set"]).assign(set=set_name)
    return out.astype({"gold": bool, "rank": np.int32, "n_gold": np.int32, "n_gold_top": np.int32})[list(COLUMNS)]


def build(signals: list[Path], cases: pd.DataFrame, mirror: Path, out: Path, top: int = TOP) -> int:
    """Write the pairs of every signal part not yet done; returns how many parts were written."""
    written, started = 0, time.perf_counter()
    for directory in signals:
        parts = sorted((directory / "parts").glob("*.parquet"))
        if not parts:
            raise CraError(
                f"No signal rows under {directory / 'parts'}: collect them first "
                f"(python -m cra.drivers.research.mined_signals --mirror DIR --out {directory})."
            )
        for part in parts:
            target = out / directory.name / part.name
            if target.is_file() and target.stat().st_mtime >= part.stat().st_mtime:
                continue
            pairs = part_pairs(part, cases, mirror, directory.name, top)
            target.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(target, parquet_bytes(pairs))
            written += 1
            print(
                f"{target}: {pairs['case_id'].nunique()} cases, {len(pairs)} pairs "
                f"({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    return written


def read_pairs(out: Path) -> pd.DataFrame:
    """Every pairs file under OUT, one frame."""
    files = sorted(Path(out).glob("*/*.parquet"))
    return (
        pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
        if files
        else pd.DataFrame(columns=list(COLUMNS))
    )


def main(argv: list[str] | None = None) -> int:
    from cra.drivers.research.mine_cases import default_out
    from cra.drivers.research.mined_signals import default_dir as signals_dir
    from cra.drivers.research.mined_signals import mined_cases

    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.reader_pairs", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--cases", nargs="+", default=[str(default_out("train"))], help="the case files of the signals")
    parser.add_argument(
        "--signals", nargs="+", default=[str(signals_dir())], help="cra.drivers.research.mined_signals outputs"
    )
    parser.add_argument("--mirror", required=True, help="git mirrors laid out as DIR/<owner>+<name>/repo")
    parser.add_argument("--out", default=str(default_dir()))
    parser.add_argument(
        "--top", type=int, default=TOP, help=f"hard negatives: the first stage's N best (default {TOP})"
    )
    args = parser.parse_args(argv)
    cases = pd.concat([mined_cases(Path(path)) for path in args.cases], ignore_index=True)
    written = build([Path(s) for s in args.signals], cases, Path(args.mirror), Path(args.out), args.top)
    pairs = read_pairs(Path(args.out))
    files = pairs[pairs["kind"] == "file"]
    print(
        f"{written} parts written; {pairs['case_id'].nunique()} cases, {len(files)} file pairs "
        f"({int(files['gold'].sum())} gold), {len(pairs) - len(files)} symbol pairs -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
