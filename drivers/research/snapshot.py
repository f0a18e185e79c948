"""Snapshot the retrieval output of a case file, to prove a refactor leaves it byte-identical.

    python -m cra.drivers.research.snapshot --cases CASES.jsonl --mirror DIR --out DIR [--cache DIR] [--limit N]

For every case: materialise its tree (a mirror's base commit, a checkout, or --repo, as `cra evaluate`
resolves it), index it ONCE into a KB under --cache (reused as it is on every later run, so a before/after
pair reads the very same KB files whatever the indexer does meanwhile), then write the retrieval outputs that
a user sees: the JSON package at budgets 4096 and 32768, the markdown and prompt texts, the `-v` report and
the full signal matrix. Nothing depends on the clock, so two runs of the same code give the same bytes and
`diff -r BEFORE AFTER` shows exactly what a change altered.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from cra.drivers.common.errors import CraError
from cra.drivers.common.home import cache_root
from cra.drivers.common.output import write_text_atomic

BUDGETS = (4096, 32768)


def snapshot_kb_dir(cache: Path, location: dict) -> Path:
    """Where the snapshot keeps the KB of one tree location (a stable name per mirror commit or tree path)."""
    if "tree" in location:
        key = Path(location["tree"]).name + "-" + hashlib.sha1(location["tree"].encode()).hexdigest()[:8]
    else:
        key = f"{location['repo'].replace('/', '+')}@{location['commit']}"
    return Path(cache) / "kb" / key


def _tree_and_kb(location: dict, cache: Path) -> tuple[Path, Path]:
    """The case's source tree and its snapshot KB, indexed only when the cache has none yet."""
    from cra.drivers.evaluation.trees import materialize_tree
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.kb.store import has_usable_kb

    kb_dir = snapshot_kb_dir(cache, location)
    if "tree" in location:
        tree, history_from = Path(location["tree"]), None
    else:
        tree = materialize_tree(Path(location["mirror"]), location["commit"], location["repo"], Path(cache) / "trees")
        history_from = (Path(location["mirror"]), location["commit"])
    if not has_usable_kb(kb_dir):
        if (kb_dir / "CURRENT").exists():
            raise CraError(
                f"The snapshot KB {kb_dir} exists but this cra cannot read it; delete it to re-index "
                "(then the before snapshot must be taken again)."
            )
        print(f"[index] {tree}", file=sys.stderr, flush=True)
        index_repository(tree, kb_dir=kb_dir, history_from=history_from)
    return tree, kb_dir


def case_outputs(kb, task: str) -> dict[str, str]:
    """File name -> text of every retrieval output compared for one case (no timing in any of them)."""
    from cra.drivers.retrieval.report import verbose_report
    from cra.drivers.retrieval.retriever import retrieve

    out = {}
    for budget in BUDGETS:
        extra = ("json_text", "markdown_text", "prompt_text", "symbol_tiers", "budget_report")
        result = retrieve(kb, task, budget=budget, outputs=extra)
        out[f"package-{budget}.json"] = result.outputs["json_text"]
        out[f"package-{budget}.md"] = result.outputs["markdown_text"]
        out[f"prompt-{budget}.txt"] = result.outputs["prompt_text"]
        out[f"verbose-{budget}.txt"] = verbose_report(result)
    out["signal_matrix.csv"] = result.signal_matrix.to_csv()
    return out


def snapshot(
    cases_file: Path,
    out: Path,
    *,
    mirror: Path | None = None,
    trees: Path | None = None,
    repo: Path | None = None,
    cache: Path | None = None,
    limit: int | None = None,
) -> dict:
    """Write every case's outputs under out/<case_id>/; returns counts of cases written and skipped."""
    from cra.drivers.evaluation.evaluate import load_cases
    from cra.drivers.evaluation.trees import resolve_tree
    from cra.drivers.kb.store import load_kb

    cache = Path(cache) if cache else cache_root() / "snapshot"
    frame = load_cases(Path(cases_file))
    if limit is not None:
        frame = frame.head(limit)
    written, skipped = 0, {}
    for case in frame.to_dict("records"):
        location, reason = resolve_tree(case, repo=repo, trees=trees, mirror=mirror, base_dir=Path(cases_file).parent)
        if not location:
            skipped[case["case_id"]] = reason
            continue
        try:
            _, kb_dir = _tree_and_kb(location, cache)
        except CraError as exc:
            skipped[case["case_id"]] = str(exc)
            continue
        for name, text in case_outputs(load_kb(kb_dir), case["task"]).items():
            write_text_atomic(Path(out) / str(case["case_id"]) / name, text)
        written += 1
        print(f"[case] {case['case_id']}", file=sys.stderr, flush=True)
    summary = {"written": written, "skipped": skipped}
    write_text_atomic(Path(out) / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.snapshot", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--cases", required=True, help="case file (as for cra evaluate)")
    parser.add_argument("--out", required=True, help="directory for <case_id>/<output> files")
    parser.add_argument("--mirror", help="git mirrors laid out as DIR/<owner>+<name>/repo")
    parser.add_argument("--trees", help="per-instance checkouts: DIR/<instance_id>/")
    parser.add_argument("--repo", help="repository for cases without repo/repo_path")
    parser.add_argument("--cache", help="where trees and their KBs are kept (default <cache>/snapshot)")
    parser.add_argument("--limit", type=int, help="only the first N cases")
    args = parser.parse_args(argv)
    try:
        summary = snapshot(
            Path(args.cases),
            Path(args.out),
            mirror=Path(args.mirror) if args.mirror else None,
            trees=Path(args.trees) if args.trees else None,
            repo=Path(args.repo) if args.repo else None,
            cache=Path(args.cache) if args.cache else None,
            limit=args.limit,
        )
    except CraError as exc:
        print(f"snapshot: error: {exc}", file=sys.stderr)
        return 2
    print(f"{summary['written']} cases written to {args.out}, {len(summary['skipped'])} skipped")
    for case_id, reason in summary["skipped"].items():
        print(f"skipped {case_id}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
