"""Compare two knowledge bases table for table: the check that a refactoring left the index output unchanged.

    python tests/kb_compare.py index REPO KB [--scan FILE]   # index REPO into KB with the code on PYTHONPATH
    python tests/kb_compare.py compare KB_A KB_B              # every Parquet table frame-for-frame; exit 1 on a difference

`index --scan FILE` reads the files git tracks in REPO, pickles them into FILE the first time and feeds the pickled
scan on later runs, so two runs of different code index exactly the same files (a change in how the tree is walked
or .gitignore is read stays out of the comparison). Only wall-clock fields of the metadata (index time stamp, seconds) and the record of file sizes and footers are ignored.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from cra.drivers.kb.mapped import PIECES_SUFFIX, version_table
from cra.drivers.kb.parquet_copies import SUFFIX as PARQUET_COPY

WALL_CLOCK = {"indexed_at", "seconds"}
LAYOUT = {
    "table_files"
}  # each file's size and footer digest (cra.drivers.kb.check): how it was written, not what it holds


def _live(kb_dir: Path) -> Path:
    """The live version directory of a KB (the one CURRENT names)."""
    return Path(kb_dir) / (Path(kb_dir) / "CURRENT").read_text().strip()


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame in a canonical row order: sorted by every column whose values sort (the key is among them)."""
    keys = [c for c in frame.columns if frame[c].map(lambda v: isinstance(v, (str, int, float, bool, bytes))).all()]
    return (
        frame.sort_values(keys, kind="stable", ignore_index=True)
        if keys and len(frame)
        else frame.reset_index(drop=True)
    )


def _derived(name: str) -> bool:
    """A file a load keeps beside the tables (`cra.drivers.kb.parquet_copies`, `cra.drivers.kb.symbol_cache`): a
    KB that was asked a question has them, one that was not has not; neither changes what the KB holds."""
    return name.endswith(PARQUET_COPY) or name.startswith("symbol_table.")


def _table_files(version: Path) -> set[str]:
    """The table files of a version by the name of the whole file, a table kept in pieces included (its segments
    are how it was written, not what it holds)."""
    names = {p.relative_to(version).as_posix() for p in [*version.rglob("*.parquet"), *version.rglob("*.arrow")]}
    names = {
        name for name in names if ".seg-" not in name and not name.endswith(".bm25.delta.arrow") and not _derived(name)
    }
    return names | {p.name.removesuffix(PIECES_SUFFIX) + ".arrow" for p in version.glob(f"*{PIECES_SUFFIX}")}


def _without_clock(value, ignore: frozenset | set = frozenset()):
    """Metadata with its wall-clock fields (and the `ignore` keys) taken out, at any depth."""
    if isinstance(value, dict):
        return {
            k: _without_clock(v, ignore) for k, v in value.items() if k not in WALL_CLOCK | LAYOUT and k not in ignore
        }
    if isinstance(value, list):
        return [_without_clock(v, ignore) for v in value]
    return value


def compare_kbs(kb_a: Path, kb_b: Path, ignore: frozenset | set = frozenset()) -> tuple[list[str], list[str]]:
    """(tables compared, differences) between the live versions of two KBs; no differences means equal output.
    ignore: metadata keys (at any depth) left out besides the wall-clock ones, e.g. what a run did (n_parsed)."""
    a, b = _live(kb_a), _live(kb_b)
    names_a, names_b = _table_files(a), _table_files(b)
    differences = [f"{name}: only in {kb_a}" for name in sorted(names_a - names_b)]
    differences += [f"{name}: only in {kb_b}" for name in sorted(names_b - names_a)]
    compared = sorted(names_a & names_b)
    for name in compared:
        if name.endswith(".arrow"):
            if name.endswith(".bm25.arrow"):  # a persisted lexicon: arrays in a fixed order, layers folded
                if not _same_lexicon(a, b, name.removesuffix(".bm25.arrow")):
                    differences.append(f"{name}: arrays differ")
                continue
            ta, tb = (version_table(v, name.removesuffix(".arrow")) for v in (a, b))
            fa, fb = ta.to_pandas(), tb.to_pandas()
        else:
            fa, fb = pd.read_parquet(a / name), pd.read_parquet(b / name)
        if list(fa.columns) != list(fb.columns) or list(fa.dtypes.astype(str)) != list(fb.dtypes.astype(str)):
            differences.append(f"{name}: columns or dtypes differ")
            continue
        if name == "files.parquet" and not _nested_ranges(fa, fb):
            differences.append(f"{name}: concept ranges not nested")
        fa, fb = (f.drop(columns=[c for c in CONCEPT_RANGE if c in f]) for f in (fa, fb))
        if not _sorted(fa).equals(_sorted(fb)):
            differences.append(f"{name}: {len(fa)} vs {len(fb)} rows, values differ")
    meta_a, meta_b = (_without_clock(json.loads((v / "metadata.json").read_text()), ignore) for v in (a, b))
    differences += [f"metadata.json: {key} differs" for key in _differing_keys(meta_a, meta_b)]
    return compared, differences


CONCEPT_RANGE = ("concept_lo", "concept_hi")


def _nested_ranges(fa: pd.DataFrame, fb: pd.DataFrame) -> bool:
    """Whether each file's concept range (where its concepts hold) in one files table lies within its range in the
    other: a re-index carries a file's range over as it was last computed, a fresh index computes it from the terms
    now, which can only widen it (both are ranges where the same concepts hold); no range (NaN) in either passes."""
    if not set(CONCEPT_RANGE) <= set(fa.columns):
        return True
    a, b = (f.set_index("path")[list(CONCEPT_RANGE)].astype(float) for f in (fa, fb))
    b = b.reindex(a.index)
    tol = 1e-9
    inside = lambda x, y: (x["concept_lo"] >= y["concept_lo"] - tol) & (x["concept_hi"] <= y["concept_hi"] + tol)  # noqa: E731
    unknown = a.isna().any(axis=1) | b.isna().any(axis=1)
    return bool((unknown | inside(a, b) | inside(b, a)).all())


def _same_lexicon(a: Path, b: Path, terms: str) -> bool:
    """Whether two versions' lexicons of a term table are one index, array for array (a layered one folded)."""
    from dataclasses import replace

    from cra.dataflows.lexical import ARRAYS
    from cra.dataflows.lexicon_layers import LayeredIndex
    from cra.drivers.kb.store import LEXICONS, _read_lexicon

    la, lb = (_read_lexicon(v, terms) for v in (a, b))
    if la is None or lb is None:
        return la is lb
    for x in (la, lb):  # (the postings a layered lexicon was written with are those counted over its layers)
        if (
            isinstance(x, LayeredIndex)
            and x.postings is not None
            and x.postings != replace(x, postings=None).n_postings
        ):
            return False
    la, lb = (x.merged(LEXICONS[terms]) if isinstance(x, LayeredIndex) else x for x in (la, lb))
    arrays = lambda index: [  # noqa: E731
        index.vocab.array.to_pylist() if name == "vocab" else index.arrays()[name] for name in ARRAYS
    ]
    return all(
        x == y if isinstance(x, list) else (x.dtype == y.dtype and np.array_equal(x, y))
        for x, y in zip(arrays(la), arrays(lb))
    )


def _differing_keys(a: dict, b: dict, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two metadata dicts (down to the first non-dict level)."""
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _differing_keys(va, vb, f"{prefix}{key}.")
        elif va != vb:
            out.append(f"{prefix}{key} ({str(va)[:40]} vs {str(vb)[:40]})")
    return out


def _tracked_scan(repo: Path):
    """The files git tracks in repo (regular files up to 1 MB), as the source scan `cra index` would make."""
    from cra.drivers.index.sources import SourceScan

    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True).stdout
    rows = []
    for rel in sorted(p for p in listed.decode().split("\0") if p):
        path = repo / rel
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= 1_000_000:
            data = path.read_bytes()
            rows.append((rel, data, len(data), hashlib.sha1(data).hexdigest()))
    frame = pd.DataFrame(rows, columns=["path", "data", "size", "hash"])
    frame["size"] = frame["size"].astype("int64")
    return SourceScan(frame=frame, n_ignored=0)


def _index(repo: Path, kb_dir: Path, scan_file: Path | None) -> None:
    """Index repo into kb_dir as `cra index` does (without its progress bar), the scan read from (or first written
    to) scan_file."""
    from cra.drivers.index import indexer, sources
    from cra.drivers.kb import store as kb

    if scan_file is not None:
        if scan_file.exists():
            scan = pickle.loads(scan_file.read_bytes())
        else:
            scan = _tracked_scan(repo)
            scan_file.write_bytes(pickle.dumps(scan))
        sources.scan_sources = lambda root, max_file_bytes=1_000_000, known=None, walk=None: scan
    index_repository = getattr(indexer, "index_repository", None) or kb.index_repository
    stats = index_repository(repo, kb_dir)
    print(f"{repo}: {stats['n_files']} files, {stats['n_symbols']} symbols, {stats['workers']} workers")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    index = sub.add_parser("index")
    index.add_argument("repo", type=Path)
    index.add_argument("kb", type=Path)
    index.add_argument("--scan", type=Path)
    compare = sub.add_parser("compare")
    compare.add_argument("kb_a", type=Path)
    compare.add_argument("kb_b", type=Path)
    args = parser.parse_args(argv)
    if args.command == "index":
        _index(args.repo, args.kb, args.scan)
        return 0
    compared, differences = compare_kbs(args.kb_a, args.kb_b)
    print(f"{len(compared)} tables compared: {', '.join(compared)}")
    print("\n".join(differences) if differences else "no differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
