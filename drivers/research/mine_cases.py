"""Mine cases from the fix history of git mirrors: the development set beyond Python and the training
set of the learned ranker.

    python -m cra.drivers.research.mine_cases --mirror ../.mirror                 # data/eval/multilang.jsonl (committed)
    python -m cra.drivers.research.mine_cases --mirror ../.mirror --set train     # $CRA_CACHE/mined/train.jsonl (regenerated)
    python -m cra.drivers.research.mine_cases --mirror ../.mirror --refresh-gold  # same cases, gold functions named anew

A case is a non-merge commit whose message references an issue (#123, GH-123, an issue URL) and describes a
problem (fix/bug/crash/...), touching 1-3 existing non-test, non-generated source files of its repository's language (tests,
docs and changelogs may change too). Test and non-source paths are judged by the convention tables
(`data/conventions/*.toml`). The case text is the commit message (subject + body, trailers dropped; never the
diff), gold_files the changed non-test source files, gold_functions the def/class around each edit at the
parent (`cra.dataflows.evaluation.cases` patch helpers; not the functions their attributes make tests, Rust's inline
`#[test]`s), base_commit the parent. The newest PER_REPO_OF[set] cases of each repository are kept (so that no
repository outweighs the rest). Prints how many commits each filter removed. Records are in the shared format of
`../shared/eval/dev.jsonl` plus `language` (python, go, rust, javascript, java, c, cpp, ruby, php, csharp).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from cra.dataflows.evaluation.cases import FileEdit, patch_edits, patch_symbols
from cra.dataflows.index.conventions import is_non_source_path, is_test_path, test_attribute_pattern
from cra.dataflows.index.discovery import is_generated
from cra.dataflows.index.parsers import language_of, parse_source
from cra.dataflows.index.parsers.models import ParsedFile
from cra.dataflows.index.parsers.treesitter import rust_module_attributes
from cra.drivers.common.conventions import load_conventions
from cra.drivers.common.home import cache_root
from cra.drivers.common.output import write_text_atomic
from cra.drivers.evaluation.trees import mirror_git_dir, read_at_commit
from cra.drivers.research.findings_mine import FIX_WORDS, TRAILER

# the development set: well-known medium-sized repositories in none of SWE-bench, SWE-bench-java, Multi-SWE-bench
REPOSITORIES = {
    "go": (
        "spf13/cobra",
        "urfave/cli",
        "sirupsen/logrus",
        "go-chi/chi",
        "labstack/echo",
        "pelletier/go-toml",
        "rs/zerolog",
    ),
    "rust": (
        "casey/just",
        "rust-lang/mdBook",
        "starship/starship",
        "dandavison/delta",
        "chronotope/chrono",
        "XAMPPRocky/tokei",
        "seanmonstar/reqwest",
    ),
    "javascript": (
        "tj/commander.js",
        "yargs/yargs",
        "koajs/koa",
        "colinhacks/zod",
        "immerjs/immer",
        "mochajs/mocha",
        "knex/knex",
    ),
    "java": (
        "jhy/jsoup",
        "mybatis/mybatis-3",
        "OpenFeign/feign",
        "square/retrofit",
        "square/javapoet",
        "jline/jline3",
        "brettwooldridge/HikariCP",
    ),
    "c": ("tmux/tmux", "htop-dev/htop", "DaveGamble/cJSON", "json-c/json-c"),
    "cpp": ("jbeder/yaml-cpp", "CLIUtils/CLI11", "gabime/spdlog", "marzer/tomlplusplus"),
    "ruby": ("lostisland/faraday", "jnunemaker/httparty", "thoughtbot/factory_bot", "rack/rack"),
    "php": ("Seldaek/monolog", "guzzle/guzzle", "thephpleague/flysystem", "nikic/PHP-Parser"),
    "csharp": ("serilog/serilog", "FluentValidation/FluentValidation", "App-vNext/Polly", "restsharp/RestSharp"),
}
# the training set: the development repositories and 45 more, five languages. None is named by the harnesses of
# SWE-bench (test, Lite, Verified, multilingual, multimodal, java) or of Multi-SWE-bench / Multi-SWE-RL; EXCLUDED lists
# the ones we had mirrored that are (the first four are Multi-SWE-RL images, used only as development cases).
EXCLUDED = (
    "colinhacks/zod",
    "labstack/echo",
    "rust-lang/mdBook",
    "tj/commander.js",
    "markedjs/marked",
    "zeromicro/go-zero",
    "sqlfluff/sqlfluff",
    "pvlib/pvlib-python",
    "pydicom/pydicom",
    "pylint-dev/astroid",
    "marshmallow-code/marshmallow",
)
TRAINING_REPOSITORIES = {
    "python": (
        "pallets/click",
        "Textualize/rich",
        "python-attrs/attrs",
        "tiangolo/typer",
        "jd/tenacity",
        "hynek/structlog",
        "tqdm/tqdm",
        "arrow-py/arrow",
        "Delgan/loguru",
        "agronholm/anyio",
        "aio-libs/yarl",
        "pallets/jinja",
    ),
    "go": (
        *REPOSITORIES["go"],
        "spf13/viper",
        "spf13/pflag",
        "stretchr/testify",
        "gorilla/mux",
        "go-playground/validator",
        "BurntSushi/toml",
        "charmbracelet/bubbletea",
        "uber-go/zap",
        "go-resty/resty",
        "fatih/color",
    ),
    "rust": (
        *REPOSITORIES["rust"],
        "dtolnay/anyhow",
        "dtolnay/thiserror",
        "rust-cli/env_logger",
        "toml-rs/toml",
        "indexmap-rs/indexmap",
        "console-rs/indicatif",
        "mitsuhiko/insta",
        "mitsuhiko/minijinja",
        "rust-random/rand",
    ),
    "javascript": (
        *REPOSITORIES["javascript"],
        "date-fns/date-fns",
        "handlebars-lang/handlebars.js",
        "pinojs/pino",
        "winstonjs/winston",
        "validatorjs/validator.js",
        "cheeriojs/cheerio",
        "ajv-validator/ajv",
        "sindresorhus/got",
        "hapijs/joi",
    ),
    "java": (
        *REPOSITORIES["java"],
        "apache/commons-lang",
        "apache/commons-io",
        "apache/commons-text",
        "apache/commons-csv",
        "ben-manes/caffeine",
        "resilience4j/resilience4j",
        "JodaOrg/joda-time",
        "zxing/zxing",
    ),
}
TRAINING_REPOSITORIES = {
    family: tuple(r for r in repos if r not in EXCLUDED) for family, repos in TRAINING_REPOSITORIES.items()
}
# a holdout: repositories neither set has, to measure the shipped ranker on fixes nothing was fitted to (none of them
# in the SWE-bench or Multi-SWE-bench harnesses either)
HOLDOUT_REPOSITORIES = {
    "rust": ("eza-community/eza", "bootandy/dust"),
    "java": ("stleary/JSON-java",),
    "csharp": ("JamesNK/Newtonsoft.Json", "JoshClose/CsvHelper"),
    "javascript": ("honojs/hono",),
}
SETS = {"dev": REPOSITORIES, "train": TRAINING_REPOSITORIES, "holdout": HOLDOUT_REPOSITORIES}
FAMILY = {
    "python": "python",
    "go": "go",
    "rust": "rust",
    "java": "java",
    "javascript": "javascript",
    "typescript": "javascript",
    "tsx": "javascript",
    "jsx": "javascript",
    "c": "c",
    "cpp": "cpp",
    "ruby": "ruby",
    "php": "php",
    "csharp": "csharp",
}
KIN = {"c": "cpp", "cpp": "c"}  # a C++ repository's `.h` headers are C by their extension
PER_REPO = 9
PER_REPO_OF = {"dev": PER_REPO, "train": 150, "holdout": 25}  # newest cases kept per repository
MAX_SOURCES = 3
MAX_FILES = 12  # sources + tests + docs: a larger commit is a sweep, not one fix
MIN_WORDS = 8  # a text shorter than this (issue references aside) says too little to be a task
ISSUE_REF = re.compile(
    r"(?:^|[\s(\[])(?:#|GH-)\d+\b|github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+"
    r"|\b(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?)\s+#?\d+",
    re.IGNORECASE,
)
SKIP_SUBJECT = re.compile(r"^(?:(?:merge|revert|bump|release|prepare|version)\b|chore\(deps\))", re.IGNORECASE)
FILTERS = (
    "no issue reference",
    "not a problem (no fix/bug words)",
    "merge/revert/release/bump",
    f"not 1-{MAX_SOURCES} non-test source files of the language",
    f"more than {MAX_FILES} files",
    "a gold file is new or deleted",
    f"text under {MIN_WORDS} words",
    "beyond the newest N per repository",
    "root commit (no parent)",
    "only test code changed (inline unit tests)",
)


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, errors="replace", check=True
    ).stdout


def case_text(subject: str, body: str) -> str:
    """The task text of a commit: subject and body, trailers (Signed-off-by, Co-authored-by, ...) dropped."""
    lines = [line.rstrip() for line in body.strip().splitlines() if not TRAILER.match(line)]
    return "\n".join([subject.strip(), "", *lines]).strip()


def _changes(status: str) -> list[tuple[str, str]]:
    """(status letter, path) per file of a `--name-status` block."""
    out = []
    for line in status.strip().splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            out.append((parts[0][:1], parts[-1]))
    return out


def _why_not(subject: str, body: str, changes: list[tuple[str, str]], family: str, conventions: dict) -> str | None:
    """The filter a commit fails (None when it is a case); gold files come from `_gold`."""
    message = f"{subject}\n{body}"
    if not ISSUE_REF.search(message):
        return FILTERS[0]
    if not FIX_WORDS.search(message):
        return FILTERS[1]
    if SKIP_SUBJECT.match(subject.strip()):
        return FILTERS[2]
    gold = _gold(changes, family, conventions)
    if not 1 <= len(gold) <= MAX_SOURCES:
        return FILTERS[3]
    if len(changes) > MAX_FILES:
        return FILTERS[4]
    if any(status != "M" for status, path in changes if path in gold):
        return FILTERS[5]
    words = re.sub(r"(?:#|GH-)\d+", " ", case_text(subject, body)).split()
    if len(words) < MIN_WORDS:
        return FILTERS[6]
    return None


def _gold(changes: list[tuple[str, str]], family: str, conventions: dict) -> list[str]:
    """The changed non-test, non-vendored source files of the repository's language family."""
    out = []
    for _, path in changes:
        language = language_of(path)
        if family not in (FAMILY.get(language), KIN.get(FAMILY.get(language))):
            continue
        if is_test_path(path, language, conventions) or is_non_source_path(path, language, conventions):
            continue
        out.append(path)
    return list(dict.fromkeys(out))


def _ranges(lines: tuple[int, ...]) -> list[list[int]]:
    out: list[list[int]] = []
    for n in sorted(lines):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def _authored(git_dir: Path, parent: str, gold: list[str]) -> list[str]:
    """The gold files but those generated (a header-only library's amalgamated single header, committed with each
    fix of the sources it is assembled from): the index leaves them out, so they are not the code to change."""
    return [p for p in gold if not is_generated(p, read_at_commit(git_dir, parent, p) or "")]


def _test_spans(parsed: ParsedFile | None, language: str | None, source: str) -> list[tuple[int, int]]:
    """(first, last) line of the test code inside one source file: the functions its language's test attributes mark
    (Rust's inline `#[test]` fns) and the test modules around them (`#[cfg(test)] mod tests`)."""
    pattern = test_attribute_pattern(language, load_conventions())
    if parsed is None or pattern is None:
        return []
    marked = [(s.start_line, s.end_line) for s in parsed.symbols if any(pattern.search(d) for d in s.decorators)]
    if language != "rust":
        return marked
    modules = rust_module_attributes(source.encode("utf-8", errors="replace"))
    return marked + [(first, last) for first, last, attributes in modules if any(pattern.search(a) for a in attributes)]


def _outside_tests(edit: FileEdit, spans: list[tuple[int, int]]) -> FileEdit:
    """The edit without its lines in test code: a regression test added beside the code (Rust keeps unit tests in
    the file they test) is not code to find, as the tests in test files are not; an edit left empty touched tests
    only, and its file is not gold."""
    removed = tuple(n for n in edit.removed if not any(a <= n <= b for a, b in spans))
    inserted = tuple(i for i in edit.inserted if not any(a < i[0] <= b for a, b in spans))
    return FileEdit(edit.path, removed, inserted)


def _record(
    git_dir: Path, repo: str, family: str, sha: str, parent: str, date: str, text: str, gold: list[str]
) -> dict | None:
    """One case in the shared format, with gold_edits and gold_functions from the fix's diff at the parent; its gold
    files those whose code (not only their inline tests) the fix changes, None if that is none of them."""
    patch = _git(git_dir, "diff", "--no-renames", parent, sha, "--", *gold)
    edits, functions = [], []
    for edit in patch_edits(patch):
        source = read_at_commit(git_dir, parent, edit.path) or ""
        language = language_of(edit.path)
        parsed = parse_source(language, source) if language else None
        edit = _outside_tests(edit, _test_spans(parsed, language, source))
        if not edit.removed and not edit.inserted:
            continue
        edits.append(
            {
                "path": edit.path,
                "new_file": False,
                "deleted_file": False,
                "removed": _ranges(edit.removed),
                "inserted": [list(i) for i in edit.inserted],
            }
        )
        functions += patch_symbols(edit, parsed or ParsedFile(), source)
    if not edits:
        return None
    owner, name = repo.split("/")
    return {
        "instance_id": f"{owner}__{name}-{sha[:10]}",
        "repo": repo,
        "base_commit": parent,
        "created_at": date,
        "problem_statement": text,
        "gold_files": [p for p in gold if any(e["path"] == p for e in edits)],
        "gold_edits": edits,
        "gold_functions": list(dict.fromkeys(functions)),
        "language": family,
    }


def refreshed_case(git_dir: Path, case: dict) -> dict | None:
    """The case with its gold files, edits and functions derived again by today's rules and parsers (None: it
    changes only tests): gold functions are named as the parsers name symbols, so a parser that names them better (a
    Java enum constant's `read` is `State.Data.read`, no longer one of seventy `State.read`) must rename the gold too,
    or the metrics compare two namings."""
    sha = _git(git_dir, "rev-parse", "--verify", case["instance_id"].rpartition("-")[2] + "^{commit}").strip()
    fresh = _record(
        git_dir,
        case["repo"],
        case["language"],
        sha,
        case["base_commit"],
        case["created_at"],
        case["problem_statement"],
        case["gold_files"],
    )
    if fresh is None:
        return None
    return case | {key: fresh[key] for key in ("gold_files", "gold_edits", "gold_functions")}


def _refresh_gold(path: Path, mirror: Path) -> int:
    if not path.is_file():
        print(f"error: no case file at {path}; pass the one to refresh with --out", file=sys.stderr)
        return 2
    cases = [json.loads(line) for line in path.read_text().split("\n") if line.strip()]
    out, renamed, dropped = [], 0, 0
    for case in cases:
        git_dir = mirror_git_dir(mirror, case["repo"])
        if not git_dir.is_dir():
            print(
                f"{case['instance_id']}: kept as it was (no mirror at {git_dir}; fetch github:{case['repo']})",
                file=sys.stderr,
            )
            out.append(case)
            continue
        fresh = refreshed_case(git_dir, case)
        if fresh is None:
            dropped += 1
            print(f"{case['instance_id']}: dropped (its fix changes only test code)", file=sys.stderr)
            continue
        out.append(fresh)
        if (fresh["gold_files"], fresh["gold_functions"]) != (case["gold_files"], case["gold_functions"]):
            renamed += 1
            print(f"{case['instance_id']}: {case['gold_functions']} -> {fresh['gold_functions']}", file=sys.stderr)
    write_text_atomic(path, "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in out))
    print(f"{renamed} of {len(cases)} cases have new gold files or functions, {dropped} dropped -> {path}")
    return 0


def mine_repository(
    git_dir: Path, repo: str, family: str, conventions: dict, per_repo: int = PER_REPO
) -> tuple[list[dict], Counter]:
    """(the newest `per_repo` cases of one repository, commits removed per filter)."""
    log = _git(
        git_dir, "log", "--no-merges", "--no-renames", "--name-status", "--format=%x1e%H%x1f%P%x1f%cI%x1f%s%x1f%b%x1f"
    )
    removed: Counter = Counter()
    kept = []
    for record in log.split("\x1e")[1:]:
        sha, parents, date, subject, body, status = (record.split("\x1f") + [""] * 6)[:6]
        changes = _changes(status)
        why = _why_not(subject, body, changes, family, conventions) if parents.strip() else FILTERS[8]
        gold = [] if why else _authored(git_dir, parents.split()[0], _gold(changes, family, conventions))
        if not why and not gold:
            why = FILTERS[3]
        if why:
            removed[why] += 1
        elif len(kept) >= per_repo:  # git log is newest first
            removed[FILTERS[7]] += 1
        else:
            case = _record(git_dir, repo, family, sha, parents.split()[0], date, case_text(subject, body), gold)
            if case is None:
                removed[FILTERS[9]] += 1
            else:
                kept.append(case)
    removed["commits read"] = sum(removed.values()) + len(kept)
    return kept, removed


def default_out(which: str) -> Path:
    """Where a set is written by default: the small development set in the repository, the others in the cache."""
    return Path("data/eval/multilang.jsonl") if which == "dev" else cache_root() / "mined" / f"{which}.jsonl"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cra.drivers.research.mine_cases", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--mirror", default="../.mirror", help="git mirrors laid out as DIR/<owner>+<name>/repo")
    parser.add_argument(
        "--set",
        choices=sorted(SETS),
        default="dev",
        help="dev: the committed development set; train: the learned ranker's training set; "
        "holdout: repositories neither has",
    )
    parser.add_argument(
        "--out",
        help="the case file to write (JSONL; default data/eval/multilang.jsonl for dev, "
        "$CRA_CACHE/mined/<set>.jsonl for the others)",
    )
    parser.add_argument(
        "--per-repo",
        type=int,
        help="newest cases kept per repository (default: "
        + ", ".join(f"{n} for {k}" for k, n in PER_REPO_OF.items())
        + ")",
    )
    parser.add_argument(
        "--refresh-gold",
        action="store_true",
        help="keep the cases of the case file (--out or the set's default) and derive their gold "
        "edits and functions again with today's parsers",
    )
    parser.add_argument(
        "--repos",
        nargs="+",
        metavar="OWNER/NAME",
        help="mine only these repositories of the set (default: every one; those not mirrored are skipped with a note)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else default_out(args.set)
    if args.refresh_gold:
        return _refresh_gold(out, Path(args.mirror))
    per_repo = args.per_repo or PER_REPO_OF[args.set]
    chosen = set(args.repos or ())
    unknown = sorted(chosen - {r for repos in SETS[args.set].values() for r in repos})
    if unknown:
        print(
            f"error: {', '.join(unknown)} not in the {args.set} set; pass repositories of drivers/research/mine_cases.py's "
            f"{args.set} lists",
            file=sys.stderr,
        )
        return 2
    conventions = load_conventions()
    cases, totals = [], Counter()
    for family, repos in SETS[args.set].items():
        for repo in repos:
            if chosen and repo not in chosen:
                continue
            git_dir = mirror_git_dir(Path(args.mirror), repo)
            if not git_dir.is_dir():
                print(f"{repo}: no mirror at {git_dir}; fetch it (github:{repo})", file=sys.stderr)
                continue
            kept, removed = mine_repository(git_dir, repo, family, conventions, per_repo)
            cases += kept
            totals += removed
            print(f"{repo} ({family}): {len(kept)} cases of {removed['commits read']} commits", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    print(f"commits read: {totals['commits read']}")
    for name in FILTERS:
        print(f"  removed, {name}: {totals[name]}")
    by_language = Counter(c["language"] for c in cases)
    print(
        f"cases: {len(cases)} ({', '.join(f'{k} {v}' for k, v in sorted(by_language.items()))}) "
        f"from {len({c['repo'] for c in cases})} repositories -> {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
