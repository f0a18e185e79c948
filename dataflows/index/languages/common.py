"""What every language's import resolver looks imports up in (helper library, not a Hamilton module).

A resolver turns one import row into bindings (dst_file_id, local name bound in the importer or None, member of dst
or None). `RepositoryFiles` holds the indexed files as plain lists (iterating Arrow strings one by one is slow), path
-> file_id, the facts read from the manifests (`roots`) and, built on first use, the path-suffix table of the
languages whose imports name files and the namespaced names of those whose imports name namespaces.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property

import pandas as pd

from cra.dataflows.index.languages import namespaces, paths

Binding = tuple[int, str | None, str | None]
BINDING_COLUMNS = ["file_id", "dst_file_id", "local", "member"]  # an import binding's row (edges.import_bindings)
GLOB = "*"  # the local name of a glob import's binding (Rust `use m::*`): every name of m is bound
COLUMNS = ("file_id", "path", "language", "module", "package")


class RepositoryFiles:
    """The indexed files, the manifests' facts (roots: package_roots plus "go_modules") and the symbols, as lookup
    tables the language resolvers share."""

    def __init__(
        self,
        files: pd.DataFrame,
        roots: dict,
        symbols: pd.DataFrame | None,
        path_languages: frozenset[str],
        namespace_languages: frozenset[str],
    ):
        self.columns = {c: files[c].tolist() for c in COLUMNS}
        self.by_path = dict(zip(self.columns["path"], self.columns["file_id"]))
        self.roots = roots
        self._files, self._symbols = files, symbols
        self._path_languages, self._namespace_languages = path_languages, namespace_languages

    def rows(self, languages: frozenset[str]) -> Iterator[tuple[int, str, str, str]]:
        """(file_id, path, module, package) of the files of these languages, in file order."""
        for fid, path, lang, module, package in zip(*self.columns.values()):
            if lang in languages:
                yield int(fid), path, module, package

    @cached_property
    def by_suffix(self) -> dict[str, list[str]]:
        """Every path suffix ("b/c.h" of "a/b/c.h") -> the paths of path-import languages ending in it."""
        return paths.by_suffix(self.columns["path"], self.columns["language"], self._path_languages)

    @cached_property
    def namespaced(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        """(qualified name -> declaring files, namespace -> files) of the namespace-import languages."""
        return namespaces.namespaced_names(self._files, self._symbols, self._namespace_languages)
