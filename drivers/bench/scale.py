"""`make bench-scale`: how `cra index` and `cra retrieve` grow with the number of files.

Indexes generated trees of 1k, 5k, 20k, 50k and 100k files (Python, Go, TypeScript and Java modules that import
each other) and, with `--real`, OpenJDK 17's source (65,000
files, 48,000 of them Java, from Debian's source package: a GitHub mirror of a repository that large is more than
this machine may fetch). Each measurement is the installed `cra` command in a child process: index wall time, peak
memory of the whole process tree (PSS summed over the driver and its workers, sampled every 0.2 s), KB size on disk,
cold CLI request wall time and warm request latency in one process; then, on the indexed tree, the whole `cra index`
command (wall time and peak memory, medians of `--edit-runs`) after touching one file (a comment appended), adding a
function to it, and deleting another file (each restored and re-indexed, unmeasured, before the next). Results: printed, and
`out/scale/scale.parquet` (the frame `notebooks/scaling.ipynb` plots and fits). Not part of the tests.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import threading
import time
from contextlib import suppress
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

from cra.drivers.bench.speed import request_times
from cra.drivers.common.home import cache_root

SIZES = (1_000, 5_000, 20_000, 50_000, 100_000)
CACHE = cache_root() / "bench" / "scale"
CRA = Path(sys.executable).with_name("cra")
WORDS = (
    "invoice account ledger session token cache router handler widget render parser schema query index order "
    "payment customer report metric sample buffer stream socket client server config option plugin module "
    "channel message queue worker task batch retry limit quota policy audit user group role permission "
    "document page layout style theme asset image upload storage bucket region zone cluster node pod"
).split()
LANGUAGES = (("py", 7), ("go", 1), ("ts", 1), ("java", 1))  # shares of the generated files
TASKS = (
    "invoice_ledger_3 rounds the payment total the wrong way for a customer account",
    "The session token cache never expires entries: fix SessionTokenCache.evict",
    "Add a retry limit option to the queue worker batch handler",
)
OPENJDK = "openjdk-17"


def _name(rng: random.Random, n: int = 2) -> list[str]:
    return [rng.choice(WORDS) for _ in range(n)]


def _module(lang: str, i: int, n_files: int, rng: random.Random) -> str:
    """One generated source file: a module of ~150 lines with classes, functions, docstrings and two imports."""
    deps = [rng.randrange(n_files) for _ in range(2)]
    out = []
    for k in range(6):
        a, b = _name(rng)
        fn, cls = f"{a}_{b}_{k}", f"{a.title()}{b.title()}{i % 97}"
        lines = [f"{rng.choice(WORDS)} = {a} + {b} * {k}" for _ in range(14)]
        if lang == "py":
            out += [
                f"class {cls}:",
                f'    """{a} {b} of module {i}: kept per {rng.choice(WORDS)}."""',
                "",
                f"    def {fn}(self, {a}, {b}):",
                *(f"        {line}" for line in lines),
                f"        return {a}",
                "",
            ]
        elif lang == "go":
            out += [
                f"// {cls} holds the {a} {b} of module {i}.",
                f"type {cls} struct {{ {a.title()} int }}",
                "",
                f"func (x *{cls}) {fn.title()}({a} int, {b} int) int {{",
                *(f"\t{line.replace(' = ', ' := ', 1)}" for line in lines),
                f"\treturn {a}",
                "}",
                "",
            ]
        else:
            out += [
                f"/** {a} {b} of module {i}. */",
                f"export class {cls} {{" if lang == "ts" else f"public class {cls}{k} {{",
                f"  {'' if lang == 'ts' else 'public int '}{fn}({a}: number, {b}: number) {{"
                if lang == "ts"
                else f"  public int {fn}(int {a}, int {b}) {{",
                *(f"    {'let' if lang == 'ts' else 'int'} {line};" for line in lines),
                f"    return {a};",
                "  }",
                "}",
                "",
            ]
    if lang == "py":
        head = [
            f'"""Module {i}: {" ".join(_name(rng, 6))}."""',
            *(f"from pkg{d % 50}.mod{d} import *" for d in deps),
            "",
        ]
    elif lang == "go":
        head = [f"package pkg{i % 50}", "", *(f'import _ "example.com/gen/pkg{d % 50}"' for d in deps), ""]
    elif lang == "ts":
        head = [*(f'import * as m{d} from "../pkg{d % 50}/mod{d}";' for d in deps), ""]
    else:
        head = [f"package pkg{i % 50};", "", *(f"import pkg{d % 50}.*;" for d in deps), ""]
    return "\n".join([*head, *out])


def generated_tree(n_files: int, cache: Path = CACHE) -> Path:
    """A tree of n_files modules in 50 packages, the same for the same n_files (generated once into cache)."""
    root, complete = cache / f"tree-{n_files}", cache / f"tree-{n_files}.complete"
    if complete.is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    langs = [lang for lang, share in LANGUAGES for _ in range(share)]
    for i in range(n_files):
        lang = langs[i % len(langs)]
        path = root / f"pkg{i % 50}" / f"sub{i // 5000}" / f"mod{i}.{lang}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_module(lang, i, n_files, random.Random(i)))
    complete.touch()
    return root


def openjdk_source(cache: Path = CACHE) -> Path:
    """OpenJDK 17's upstream source tree from Debian's source package (downloaded once through apt, cached)."""
    target, complete = cache / "openjdk-17", cache / "openjdk-17.complete"
    if complete.is_file():
        return next(p for p in target.iterdir() if p.is_dir())
    work = cache / "apt"
    work.mkdir(parents=True, exist_ok=True)
    sources = work / "sources.list"
    sources.write_text(
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main\n"
    )
    apt = [
        "apt-get",
        "-o",
        f"Dir::Etc::sourcelist={sources}",
        "-o",
        "Dir::Etc::sourceparts=-",
        "-o",
        "APT::Get::List-Cleanup=0",
        "-o",
        "APT::Sandbox::User=root",
    ]
    try:
        subprocess.run([*apt, "update", "-qq"], check=True)
        subprocess.run([*apt, "source", "--download-only", "-qq", OPENJDK], check=True, cwd=work)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(
            f"could not download {OPENJDK}'s source with apt ({exc}): it needs root and deb.debian.org; "
            "run without --real to measure the generated trees only"
        ) from None
    archive = next(p for p in work.glob(f"{OPENJDK}_*.orig.tar.xz"))
    shutil.rmtree(target, ignore_errors=True)
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    complete.touch()
    return next(p for p in target.iterdir() if p.is_dir())


def growth_exponent(files, values) -> float:
    """k in values ~ files^k: the slope of a least-squares line through (log files, log values)."""
    return float(np.polyfit(np.log(np.asarray(files, float)), np.log(np.asarray(values, float)), 1)[0])


def _tree_pss_mb(proc: psutil.Process) -> float:
    """Proportional set size of a process and all its descendants (shared pages counted once), in MB."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with suppress(psutil.NoSuchProcess, psutil.AccessDenied):  # it ended meanwhile
            total += p.memory_full_info().pss
    return total / 2**20


def measured(argv: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, peak PSS of the process tree in MB, the finished process) of one command."""
    started = time.perf_counter()
    proc = psutil.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, done = 0.0, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            try:
                peak = max(peak, _tree_pss_mb(proc))
            except psutil.NoSuchProcess:
                return
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err.strip()[-500:]}")
    return wall, peak, subprocess.CompletedProcess(argv, proc.returncode, out, err)


_COMMENT = {".py": "#"}  # a line comment by suffix ("//" otherwise: Go, TypeScript, Java)


EDITABLE = (".py", ".go", ".java", ".ts", ".rs")  # suffixes `added_function` writes a definition for


def added_function(path: Path, name: str) -> str:
    """A definition of `name` appended to a source file that parses as a new one in its language (EDITABLE)."""
    if path.suffix == ".py":
        return f"\n\ndef {name}(value):\n    return value.strip().lower()\n"
    if path.suffix == ".go":
        return f"\nfunc {name}(value int) int {{ return value + 1 }}\n"
    if path.suffix == ".java":
        return f"\nclass {name}Holder {{ int {name}(int value) {{ return value + 1; }} }}\n"
    if path.suffix == ".rs":
        return f"\npub fn {name}(value: i32) -> i32 {{ value + 1 }}\n"
    if path.suffix == ".ts":
        return f"\nexport function {name}(value: number) {{ return value + 1; }}\n"
    raise ValueError(f"no added function for {path.name}: pick a file ending in {', '.join(EDITABLE)}")


def edit_files(repo: Path) -> tuple[Path, Path]:
    """(the file to touch and add functions to, the file to delete): two source files of the tree's commonest
    language, the same two on every run (sorted paths, a walk of the tree)."""
    found = sorted(p for p in repo.rglob("*") if p.suffix in (".py", ".go", ".java", ".ts") and p.is_file())
    common = max({p.suffix for p in found}, key=lambda s: sum(p.suffix == s for p in found))
    same = [p for p in found if p.suffix == common]
    return same[len(same) // 2], same[len(same) // 3]


def measure_edits(repo: Path, kb: Path, runs: int = 3) -> dict:
    """Whole `cra index` command (median wall s, median peak PSS MB) after touching a file, adding a function to it,
    deleting another and adding a new file beside the first (what an agent does); the tree and the KB are as before
    when it returns."""
    edited, deleted = edit_files(repo)
    new_file = edited.with_name(f"BenchNew{edited.suffix}")
    index = [str(CRA), "index", str(repo), "--kb", str(kb), "--history", "0"]
    original, removed = edited.read_bytes(), deleted.read_bytes()
    changes = {
        "touch": lambda i: edited.write_bytes(original + f"\n{_COMMENT.get(edited.suffix, '//')} touch {i}\n".encode()),
        "add_function": lambda i: edited.write_bytes(original + added_function(edited, f"bench_edit_{i}").encode()),
        "delete": lambda i: deleted.unlink(),
        "add_file": lambda i: new_file.write_text(added_function(edited, f"bench_new_{i}")),
    }
    out = {}
    try:
        for name, change in changes.items():
            walls, peaks = [], []
            for i in range(runs):
                change(i)
                wall, peak, _ = measured(index)
                walls.append(wall)
                peaks.append(peak)
                edited.write_bytes(original)
                deleted.write_bytes(removed)
                new_file.unlink(missing_ok=True)
                measured(index)  # the KB catches up with the restored tree (not measured)
            out[f"{name}_s"] = round(statistics.median(walls), 2)
            out[f"{name}_peak_mb"] = round(statistics.median(peaks))
    finally:
        edited.write_bytes(original)
        deleted.write_bytes(removed)
        new_file.unlink(missing_ok=True)
    print(f"  edits of {edited.relative_to(repo)} / {deleted.relative_to(repo)}: {out}", file=sys.stderr, flush=True)
    return out


def measure_tree(label: str, repo: Path, tasks: tuple[str, ...], cache: Path = CACHE, edit_runs: int = 3) -> dict:
    """Index repo from scratch with the installed `cra`, then time requests against its KB, then one-file edits."""
    kb = cache / f"kb-{label}"
    shutil.rmtree(kb, ignore_errors=True)
    wall, peak, done = measured([str(CRA), "index", str(repo), "--kb", str(kb), "--history", "0"])
    n_files = int(done.stdout.split("indexed ", 1)[1].split()[0])
    cold = []
    for task in tasks:
        t, _, _ = measured(
            [str(CRA), "retrieve", task, "--repo", str(repo), "--kb", str(kb), "--budget", "8192", "--format", "json"]
        )
        cold.append(t)
    first, times = request_times(kb, tasks)
    kb_mb = sum(f.stat().st_size for f in kb.rglob("*") if f.is_file()) / 2**20
    return {
        "tree": label,
        "files": n_files,
        "index_s": round(wall, 2),
        "files_per_s": round(n_files / wall, 1),
        "peak_pss_mb": round(peak),
        "kb_mb": round(kb_mb, 1),
        "cold_cli_s": round(statistics.median(cold), 2),
        "first_request_s": round(first, 2),
        "warm_request_s": round(statistics.median(times), 3),
        **(measure_edits(repo, kb, edit_runs) if edit_runs > 0 else {}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cra.drivers.bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="generated tree sizes (files)")
    parser.add_argument("--real", action="store_true", help="also index OpenJDK 17's source (apt source, ~65 MB)")
    parser.add_argument("--out", default="out/scale", help="where scale.parquet goes")
    parser.add_argument(
        "--cache", type=Path, default=CACHE, help=f"where trees, OpenJDK's source and KBs are kept (default {CACHE})"
    )
    parser.add_argument(
        "--edit-runs", type=int, default=3, help="runs of each one-file edit measured, median reported (0: none)"
    )
    args = parser.parse_args(argv)
    rows = []
    for n in (int(s) for s in args.sizes.split(",") if s):
        print(f"generating and indexing {n:,} files ...", file=sys.stderr, flush=True)
        rows.append(measure_tree(f"generated-{n}", generated_tree(n, args.cache), TASKS, args.cache, args.edit_runs))
        print(rows[-1], file=sys.stderr, flush=True)
    if args.real:
        repo = openjdk_source(args.cache)
        rows.append(
            measure_tree(
                "openjdk-17",
                repo,
                (
                    "HashMap.computeIfAbsent throws ConcurrentModificationException when the mapping function modifies the map",
                    "String.indent adds a trailing newline to an empty string",
                    "ZipFile fails to open archives whose central directory has more than 65535 entries",
                ),
                args.cache,
                args.edit_runs,
            )
        )
    frame = pd.DataFrame(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(out / "scale.parquet", index=False)
    print(frame.to_string(index=False))
    generated = frame[frame["tree"].str.startswith("generated")]
    if len(generated) >= 2:
        edits = [c for c in ("touch_s", "add_function_s", "delete_s", "add_file_s", "touch_peak_mb") if c in generated]
        for column in ("index_s", "kb_mb", "peak_pss_mb", "warm_request_s", "cold_cli_s", *edits):
            print(f"{column} grows as files^{growth_exponent(generated['files'], generated[column]):.2f}")
    print(f"written: {out / 'scale.parquet'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
