"""Python: parsed with the standard library `ast`; imports resolve through the dotted module names of the indexed
files (`file_facts` names them: a file plus every enclosing package, a directory with __init__.py)."""

from __future__ import annotations

import posixpath
import tomllib
from collections import defaultdict

from cra.dataflows.index.languages.common import RepositoryFiles
from cra.dataflows.index.parsers.python_ast import parse_python as parse  # noqa: F401 - the parser entry point

LANGUAGES = frozenset({"python"})
CONVENTIONS = "python"  # data/conventions/python.toml
PY_ROOTS = ("", "src/")  # where absolute Python imports start when no __init__.py names the module (PEP 420)
MANIFESTS = ("pyproject.toml",)  # setuptools' package-dir: `cra.dataflows` served from dataflows/


def manifest_roots(manifests: list[tuple[str, str]]) -> dict[str, dict[str, list[str]]]:
    """ "python_package_dirs": dotted package -> the directories setuptools' `package-dir` serves it from (paths from
    the repository root), read from each pyproject.toml; none when no manifest maps a package (an unreadable one
    maps nothing)."""
    mapped: dict[str, list[str]] = {}
    for path, text in manifests:
        try:
            table = tomllib.loads(text).get("tool", {}).get("setuptools", {}).get("package-dir", {})
        except tomllib.TOMLDecodeError:
            continue
        base = posixpath.dirname(path)
        for package, directory in table.items() if isinstance(table, dict) else ():
            if package and isinstance(directory, str):
                mapped.setdefault(package, []).append(posixpath.normpath(posixpath.join(base, directory)))
    return {"python_package_dirs": mapped} if mapped else {}


def package_dirs(paths) -> frozenset[str]:
    """The directories holding an __init__.py: Python packages, which name the modules below them."""
    return frozenset(posixpath.dirname(p) for p in paths if p == "__init__.py" or p.endswith("/__init__.py"))


def module_name(path: str, text: str, package_dirs: frozenset[str]) -> str:
    """Dotted import name: the file plus every enclosing package dir (one with __init__.py); src/ etc. drop out."""
    directory, name = posixpath.split(path)
    stem = name.rsplit(".", 1)[0]
    parts = [] if stem == "__init__" else [stem]
    while directory and directory in package_dirs:
        directory, pkg = posixpath.split(directory)
        parts.insert(0, pkg)
    return ".".join(parts)


class Resolver:
    """Python imports: `import a.b [as c]`, `from a import f [as g]`, relative `from ..m import f`."""

    def __init__(self, repo: RepositoryFiles):
        self.by_path = repo.by_path
        self.package_dirs: dict[str, list[str]] = repo.roots.get("python_package_dirs", {})
        self.py_modules: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for fid, _, module, package in repo.rows(LANGUAGES):
            self.py_modules[module].append((fid, package))

    def _py_module(self, name: str, package: str, anchor: str | None = None, written: str | None = None) -> int | None:
        """The file of a python module, preferring one next to the importer when the name is ambiguous; else, as in a
        namespace package (a directory without __init__.py, which gives no module its dotted name), the file at the
        path the import names (`written`, default name) from the repository root or src/. A relative import (anchor:
        the directory its dots name, "" for the root) is looked up by its path first, as Python does."""
        if (
            anchor is not None
            and (found := self._py_file((f"{anchor}/" if anchor else "",), written or "")) is not None
        ):
            return found
        found = self.py_modules.get(name)
        if not found:
            if anchor is not None:
                return None
            dotted = name if written is None else written
            found_file = self._py_file(PY_ROOTS, dotted)
            return found_file if found_file is not None else self._mapped_file(dotted)
        return next((fid for fid, pkg in found if pkg == package), found[0][0])

    def _py_file(self, roots: tuple[str, ...], dotted: str) -> int | None:
        """`b.helper` -> b/helper.py or b/helper/__init__.py under the first of roots holding one (what Python finds
        with that root on its path)."""
        rel = dotted.replace(".", "/")
        for root in roots:
            base = (root + rel).rstrip("/")
            for candidate in (f"{base}.py", f"{base}/__init__.py") if base else ("__init__.py",):
                if candidate in self.by_path:
                    return int(self.by_path[candidate])
        return None

    def _mapped_file(self, dotted: str) -> int | None:
        """`cra.dataflows.text` -> dataflows/text.py when pyproject.toml maps `cra.dataflows` to dataflows/ (the
        longest mapped package that the name starts with)."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            for directory in self.package_dirs.get(".".join(parts[:cut]), ()):
                found = self._py_file((f"{directory}/" if directory != "." else "",), ".".join(parts[cut:]))
                if found is not None:
                    return found
        return None

    def _python_module_binding(self, full: str, package: str, local: str):
        """`import full [as local]`: the module's file (or its nearest enclosing package) bound to local."""
        dst = self._py_module(full, package)
        prefix = full
        while dst is None and "." in prefix:
            prefix = prefix.rpartition(".")[0]
            dst = self._py_module(prefix, package)
        return [] if dst is None else [(dst, local, None)]

    def resolve(self, path: str, module: str, package: str, target: str, names: list[str], level: int):
        anchor = None  # an absolute import
        if level > 0:
            parts = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
            parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
            full = ".".join([*parts, target] if target else parts)
            anchor = path.rsplit("/", level)[0] if path.count("/") >= level else ""  # the directory `.`/`..` names
        else:
            full = target
        if not names:
            return self._python_module_binding(full, package, full)
        out = []
        if level == 0 and len(names) == 1 and " as " in names[0] and names[0].partition(" as ")[0].strip() == target:
            # `import a.b as c` is stored as target "a.b", names ("a.b as c",); an undotted one reads the same
            # as `from a import a as c`, so both readings are bound (they rarely both resolve)
            out.extend(self._python_module_binding(full, package, names[0].partition(" as ")[2].strip()))
            if "." in target:
                return out
        for name in names:
            orig, _, alias = name.partition(" as ")
            orig, local = orig.strip(), (alias or orig).strip()
            sub = None
            if orig != "*":
                sub = self._py_module(
                    f"{full}.{orig}" if full else orig, package, anchor, f"{target}.{orig}" if target else orig
                )
            if sub is not None:
                out.append((sub, local, None))
                continue
            dst = self._py_module(full, package, anchor, target)
            if dst is not None:
                out.append((dst, None if orig == "*" else local, None if orig == "*" else orig))
        return list(dict.fromkeys(out))
