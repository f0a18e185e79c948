"""Per language, what the index knows of it, one module each (helper library, not a Hamilton module).

A language module says which KB languages it covers (`LANGUAGES`), which convention table is its own (`CONVENTIONS`:
the stem of data/conventions/<name>.toml, shipped as data and loaded by `cra.drivers.common.conventions`), how its
files are parsed (`SPECS` and `grammar` for the tree-sitter walker of `parsers.treesitter`, whose per-language
specs stay in `parsers/ts_<language>.py`; Python's `parse`), what its files' module names are (`module_name`, where
they are not the path without its extension), how its imports resolve (`Resolver`, built over a
`common.RepositoryFiles`) and, where it has them, which manifests it reads (`MANIFESTS`, `manifest_roots`; Go's
go.mod is read by the `go_modules` node). `PATH_IMPORTS` / `NAMESPACE_IMPORTS` mark the languages whose imports
name files (`paths`) or namespaced classes (`namespaces`); `PACKAGE_SCOPE` / `PROJECT_SCOPE` the languages whose
files see each other's top-level names unimported, per directory or across the repository (symbol edges). This
module is the registry over them; `cra.dataflows.index.edges` resolves every import row through `ImportResolver`.
"""

from __future__ import annotations

import posixpath
import re
from types import ModuleType

import pandas as pd

from cra.dataflows.index.languages import c, csharp, go, java, javascript, namespaces, php, python, ruby, rust
from cra.dataflows.index.languages.common import BINDING_COLUMNS, GLOB, Binding, RepositoryFiles

MODULES: tuple[ModuleType, ...] = (python, javascript, go, java, rust, c, ruby, php, csharp)
MODULE_OF: dict[str, ModuleType] = {language: module for module in MODULES for language in module.LANGUAGES}
PATH_LANGUAGES = frozenset(lang for m in MODULES if getattr(m, "PATH_IMPORTS", False) for lang in m.LANGUAGES)
NAMESPACE_LANGUAGES = frozenset(lang for m in MODULES if getattr(m, "NAMESPACE_IMPORTS", False) for lang in m.LANGUAGES)
PACKAGE_LANGUAGES = frozenset(lang for m in MODULES for lang in getattr(m, "PACKAGE_SCOPE", ()))
PROJECT_LANGUAGES = frozenset(lang for m in MODULES for lang in getattr(m, "PROJECT_SCOPE", ()))
SPEC_FACTORIES = {language: spec for m in MODULES for language, spec in getattr(m, "SPECS", {}).items()}
_EXTENSION = re.compile(r"(\.d\.ts|\.[^./]+)$")

__all__ = [
    "BINDING_COLUMNS",
    "GLOB",
    "MODULES",
    "MODULE_OF",
    "NAMESPACE_LANGUAGES",
    "PACKAGE_LANGUAGES",
    "PATH_LANGUAGES",
    "PROJECT_LANGUAGES",
    "SPEC_FACTORIES",
    "Binding",
    "ImportResolver",
    "grammar",
    "manifest_roots",
    "module_name",
    "namespaced_names",
]


def grammar(language: str):
    """The tree-sitter grammar a language is parsed with (its module imports the grammar wheel on first use)."""
    module = MODULE_OF.get(language)
    if module is None or language not in getattr(module, "SPECS", {}):
        raise ValueError(f"no tree-sitter grammar for {language!r}")
    return module.grammar(language)


def module_name(path: str, language: str | None, text: str, package_dirs: frozenset[str]) -> str:
    """A file's module name as its language's imports name it (Python dotted import, Java package.Class, Go package
    directory; package_dirs: the Python packages); for any other language the path without its extension."""
    module = MODULE_OF.get(language or "")
    if module is not None and hasattr(module, "module_name"):
        return module.module_name(path, text, package_dirs)
    return _EXTENSION.sub("", path)


def manifest_roots(manifests: pd.DataFrame, wanted: frozenset[str]) -> dict[str, dict[str, list[str]]]:
    """What each language reads from its manifests ((path, text) rows; only file names in `wanted`, the names the
    convention tables list), one table per kind of name ("js_packages", "js_aliases", "rust_crates")."""
    names = [posixpath.basename(p) for p in manifests["path"]]
    rows = list(zip(manifests["path"], manifests["text"]))
    roots: dict[str, dict[str, list[str]]] = {}
    for module in MODULES:
        if hasattr(module, "manifest_roots"):
            mine = set(module.MANIFESTS) & wanted
            roots.update(module.manifest_roots([row for row, name in zip(rows, names) if name in mine]))
    return roots


def namespaced_names(
    files: pd.DataFrame, symbols: pd.DataFrame | None
) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """The top-level symbols of the files of namespace-import languages (C#, PHP): qualified name -> declaring files,
    namespace -> files."""
    return namespaces.namespaced_names(files, symbols, NAMESPACE_LANGUAGES)


class ImportResolver:
    """`resolve` maps one import row to its bindings through its language's resolver (each built on first use over
    the shared `RepositoryFiles`); a language without a resolver binds nothing."""

    def __init__(self, files: pd.DataFrame, roots: dict, symbols: pd.DataFrame | None = None):
        self.repo = RepositoryFiles(files, roots, symbols, PATH_LANGUAGES, NAMESPACE_LANGUAGES)
        self._resolvers: dict[str, object] = {}
        self._askers: dict[str, object] = {}

    def resolve(
        self, lang: str, path: str, module: str, package: str, target: str, names: list[str], level: int
    ) -> list[Binding]:
        """(dst_file_id, local name bound in the importer or None, member of dst or None) per resolved target."""
        language_module = MODULE_OF.get(lang)
        if language_module is None:
            return []
        resolver = self._resolvers.get(language_module.__name__)
        if resolver is None:
            resolver = self._resolvers[language_module.__name__] = language_module.Resolver(self.repo)
        return resolver.resolve(path, module, package, target, names, level)

    def question(
        self, lang: str, path: str, module: str, package: str, target: str, names: tuple[str, ...], level: int
    ) -> tuple:
        """What an import row asks its language's resolver, as a key: rows with one key get the same bindings (from
        the inputs that language's `Resolver.question` names, else from all of them), so each distinct question is
        resolved once (Java's `import java.util.List;` in thousands of files)."""
        asker = self._askers.get(lang)
        if asker is None:
            asker = self._askers[lang] = _asker(lang)
        return asker(path, module, package, target, names, level)


def _asker(lang: str):
    """The function that keys a row of this language's imports for `ImportResolver.question`."""
    language_module = MODULE_OF.get(lang)
    if language_module is None:
        return lambda *row: (None,)
    name, ask = language_module.__name__, getattr(language_module.Resolver, "question", None)
    if ask is None:
        return lambda *row: (name, row)
    return lambda *row: (name, ask(*row))
