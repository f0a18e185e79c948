"""Per-language figures of `cra evaluate` runs: Acc@1/5/10 of the pipeline with BM25 beside it, and
Acc@5 apart for one-file and multi-file fixes (Acc@k needs every gold file in the top k, so a language whose fixes
span more files scores lower at the same per-file quality).

    python -m cra.drivers.research.language_report --cases data/eval/multilang.jsonl out/ml-base [out/ml-conventions ...] [--out DIR]

The language of a case is its record's `language` field (as `cra.drivers.research.mine_cases` writes it), else the language
family of its gold files. Only cases every run evaluated are compared. With --out, the tables also go to
DIR/languages.parquet (one row per run and language) and DIR/languages.png (Acc@5 per language and run, BM25 beside).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from cra.dataflows.index.parsers import language_of
from cra.drivers.common.errors import CraError, exit_code
from cra.drivers.common.output import write_bytes_atomic
from cra.drivers.research.figures import parquet_bytes, write_bar_chart
from cra.drivers.research.mine_cases import FAMILY

METRICS = ("file_acc@1", "file_acc@5", "file_acc@10")


def case_languages(case_file: Path) -> pd.Series:
    """case_id -> language family, from the case file."""
    out = {}
    if not Path(case_file).is_file():
        raise CraError(f"No case file at {case_file}: pass the JSONL the runs evaluated with --cases.")
    for line in Path(case_file).read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            families = [
                FAMILY.get(language_of(p) or "", language_of(p) or "other") for p in record.get("gold_files", [])
            ]
            out[str(record["instance_id"])] = record.get("language") or (
                max(set(families), key=families.count) if families else "other"
            )
    return pd.Series(out, name="language")


def language_table(results: pd.DataFrame, languages: pd.Series) -> pd.DataFrame:
    """Per language (and all): n, pipeline Acc@1/5/10 and BM25 Acc@1/5/10 over the evaluated cases of one run; the
    share of multi-file fixes and the pipeline's Acc@5 on one-file and on multi-file fixes."""
    ok = results[results["status"] == "ok"].join(languages, on="case_id")
    multi = ok["n_expected_files"] > 1
    ok = ok.assign(
        multi=multi.astype(float),
        **{"acc@5 one-file": ok["file_acc@5"].where(~multi), "acc@5 multi-file": ok["file_acc@5"].where(multi)},
    )
    columns = [*METRICS, *(f"bm25_{m}" for m in METRICS), "multi", "acc@5 one-file", "acc@5 multi-file"]
    table = ok.groupby("language")[columns].mean()
    table.loc["all"] = ok[columns].mean()
    table.insert(0, "n", ok.groupby("language").size().reindex(table.index).fillna(len(ok)).astype(int))
    return table.rename(columns=lambda c: c.replace("file_", "").replace("bm25_", "bm25 "))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.language_report", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--cases", required=True, help="the case file the runs evaluated")
    parser.add_argument("runs", nargs="+", help="`cra evaluate --out` directories (each with cases.parquet)")
    parser.add_argument("--out", help="also write languages.parquet and languages.png here")
    args = parser.parse_args(argv)
    languages = case_languages(Path(args.cases))
    frames = {}
    for run in args.runs:
        path = Path(run) / "cases.parquet"
        if not path.exists():
            raise CraError(f"No {path}: run `cra evaluate --out {run}` first.")
        frames[run] = pd.read_parquet(path)
    common = set.intersection(*(set(f.loc[f["status"] == "ok", "case_id"]) for f in frames.values()))
    tables = {run: language_table(frame[frame["case_id"].isin(common)], languages) for run, frame in frames.items()}
    for run, table in tables.items():
        print(f"== {run} ({len(common)} cases evaluated by every run)")
        print(table.to_string(float_format=lambda x: f"{x:.3f}"))
    if args.out:
        out = Path(args.out)
        rows = pd.concat([t.rename_axis("language").reset_index().assign(run=r) for r, t in tables.items()])
        write_bytes_atomic(out / "languages.parquet", parquet_bytes(rows))
        wide = rows.pivot_table(index="language", columns="run", values="acc@5", sort=False)
        wide = wide.join(tables[args.runs[-1]]["bm25 acc@5"].rename(f"BM25 ({args.runs[-1]})"))
        write_bar_chart(
            wide, out / "languages.png", "File Acc@5 per language", "file Acc@5 (every gold file in the top 5)"
        )
        print(f"wrote {out / 'languages.parquet'}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
