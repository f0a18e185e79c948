"""Each distinct import question is resolved once (`ImportResolver.question`, `edges.import_bindings`): on random
trees of every language with a resolver, the bindings are those of resolving every import row on its own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cra.dataflows.index import edges, languages
from cra.dataflows.index.languages import BINDING_COLUMNS

DIRS = ["", "src", "src/app", "lib", "lib/app", "src/app/util"]
LANGS = {
    "java": ".java",
    "c": ".h",
    "cpp": ".cpp",
    "javascript": ".js",
    "typescript": ".ts",
    "go": ".go",
    "csharp": ".cs",
    "php": ".php",
    "ruby": ".rb",
    "python": ".py",
    "rust": ".rs",
    "markdown": ".md",
}
STEMS = ["a", "b", "util", "index", "mod", "lib", "main", "__init__", "c"]
TARGETS = {  # per language: targets that resolve differently from different importers
    "java": ["pkg.A", "pkg.B", "pkg.*", "pkg.A.m", "app.a", "pkg"],
    "c": ["a.h", "util/a.h", "../a.h", "b.h", "app/a.h", "c.h", "./a.h"],
    "javascript": ["./a", "../a", "./util", "../util/index", "./b.js", "web", "web/a", "./app/a"],
    "go": ["example.com/m/src", "example.com/m/lib/app", "example.com/m/src/app", "other.org/x"],
    "csharp": ["App.Models", "App.Models.X", "App", "App.Models.Y"],
    "php": ["App\\Models", "App\\Models\\X", "a.php", "../b.php", "util.php", "./a"],
    "ruby": ["a", "util", "../b", "app/a", "./a"],
    "python": ["app.a", "a", "util", "", "app", "src.app"],
    "rust": ["crate::a", "super::b", "self::util", "a", "b", "crate"],
}
TARGETS |= {"cpp": TARGETS["c"], "typescript": TARGETS["javascript"], "markdown": ["a"]}
NAMES = [[], ["a"], ["b"], ["a", "b"], ["*"], ["x as y"], ["X"], ["A"], ["_"], ["util"], ["a::C"], ["{b, c}"]]


def _tree(seed: int):
    """Random files (same stems in several directories and languages) and import rows asking repeated questions."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    few = rng.choice(list(LANGS), size=int(rng.integers(1, 4)), replace=False)  # (so that rows ask alike)
    paths = sorted(
        {
            "/".join(p for p in (str(rng.choice(DIRS)), f"{rng.choice(STEMS)}{LANGS[lang]}") if p)
            for lang in rng.choice(few, size=n)
        }
    )
    ext_lang = {e: lang for lang, e in LANGS.items()}
    langs = [ext_lang["." + p.rsplit(".", 1)[1]] for p in paths]
    package = [p.rpartition("/")[0] for p in paths]
    module = [
        f"pkg.{p.rsplit('/', 1)[-1].split('.')[0].upper()}"
        if lang == "java" and rng.random() < 0.5
        else p.rsplit(".", 1)[0].replace("/", ".")
        if lang == "python"
        else p.rsplit(".", 1)[0]
        for p, lang in zip(paths, langs)
    ]
    files = pd.DataFrame(
        {"file_id": range(len(paths)), "path": paths, "language": langs, "module": module, "package": package}
    ).assign(reused=False)
    m = int(rng.integers(0, 300))
    importers = np.sort(rng.integers(0, len(paths), size=m))
    imports = pd.DataFrame(
        {
            "file_id": importers,
            "target": [str(rng.choice(TARGETS[langs[f]])) for f in importers],
            "names": [list(NAMES[i]) if rng.random() < 0.9 else None for i in rng.integers(0, len(NAMES), size=m)],
            "level": rng.choice([0, 0, 0, 1, 2], size=m),
            "line": np.arange(m),
        }
    )
    symbols = pd.DataFrame(
        {
            "file_id": range(len(paths)),
            "qualified_name": [f"App.Models.{s}" if i % 2 else f"App\\Models\\{s}" for i, s in enumerate("XYZUVW" * 9)][
                : len(paths)
            ],
            "parent_id": None,
        }
    )
    roots = {"js_packages": {"web": ["lib/index.js"]}, "js_aliases": {"web/": ["src/"]}, "rust_crates": {}}
    return files, imports, symbols, roots


def _plain_bindings(files, imports, symbols, roots, go_modules) -> pd.DataFrame:
    """The plain definition: every import row resolved on its own, its bindings in order."""
    resolver = languages.ImportResolver(files, {**roots, "go_modules": go_modules}, symbols)
    info = files.set_index("file_id")[["language", "path", "module", "package"]]
    rows = []
    for row in imports.join(info, on="file_id", how="inner").itertuples(index=False):
        names = [] if row.names is None else [str(n) for n in row.names]
        for dst, local, member in resolver.resolve(
            row.language, row.path, row.module, row.package, row.target or "", names, int(row.level or 0)
        ):
            rows.append((int(row.file_id), int(dst), local, member))
    return pd.DataFrame(rows, columns=BINDING_COLUMNS)


@pytest.mark.parametrize("seed", range(60))
def test_resolving_each_question_once_gives_every_rows_own_bindings(seed):
    files, imports, symbols, roots = _tree(seed)
    go_modules = {"example.com/m": ""}
    got = edges.import_bindings(files, imports, go_modules, symbols, roots)
    pd.testing.assert_frame_equal(got, _plain_bindings(files, imports, symbols, roots, go_modules))


def test_many_rows_asking_one_java_question_resolve_it_once(monkeypatch):
    """2,000 files importing the same class: one call to the Java resolver, 2,000 bindings."""
    files = pd.DataFrame(
        {
            "file_id": range(2001),
            "path": [f"src/p{i}/C{i}.java" for i in range(2001)],
            "language": "java",
            "module": [f"p{i}.C{i}" for i in range(2001)],
            "package": [f"src/p{i}" for i in range(2001)],
        }
    ).assign(reused=False)
    imports = pd.DataFrame({"file_id": range(1, 2001), "target": "p0.C0", "names": None, "level": 0, "line": 1})
    calls = []
    resolve = languages.java.Resolver.resolve
    monkeypatch.setattr(languages.java.Resolver, "resolve", lambda self, *a: calls.append(a) or resolve(self, *a))
    got = edges.import_bindings(files, imports, {})
    assert len(calls) == 1 and len(got) == 2000 and set(got["dst_file_id"]) == {0}
