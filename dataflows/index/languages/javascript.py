"""JavaScript / TypeScript / TSX: the tree-sitter walker's `js_spec`; imports resolve relative to the importer or,
bare, through the manifests (package.json `name` and entry fields, tsconfig.json `paths` aliases)."""

from __future__ import annotations

import json
import posixpath
import re

from cra.dataflows.index.languages.common import RepositoryFiles
from cra.dataflows.index.parsers.ts_javascript import js_spec

LANGUAGES = frozenset({"javascript", "typescript", "tsx", "jsx"})
CONVENTIONS = "javascript"  # data/conventions/javascript.toml
SPECS = {"javascript": js_spec, "typescript": js_spec, "tsx": js_spec}
MANIFESTS = ("package.json", "tsconfig.json")
JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts")


def grammar(language: str):
    """The tree-sitter grammar of javascript, typescript or tsx."""
    if language == "javascript":
        import tree_sitter_javascript as grammar

        return grammar.language()
    import tree_sitter_typescript as grammar

    return grammar.language_typescript() if language == "typescript" else grammar.language_tsx()


_JS_ENTRY_FIELDS = ("source", "module", "main", "types", "typings")
_JSONC_NOISE = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.DOTALL)  # strings kept, comments dropped
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _json(text: str) -> dict:
    """A JSON object, also from JSON with comments and trailing commas (tsconfig.json); {} when unreadable."""
    for attempt in (text, _TRAILING_COMMA.sub(r"\1", _JSONC_NOISE.sub(lambda m: m.group(1) or "", text))):
        try:
            value = json.loads(attempt)
            return value if isinstance(value, dict) else {}
        except ValueError:
            continue
    return {}


def _export_targets(exports) -> list[str]:
    """The file paths of a package.json `exports` value for its root entry ("." or the whole value)."""
    if isinstance(exports, str):
        return [exports]
    if isinstance(exports, list):
        return [t for e in exports for t in _export_targets(e)]
    if isinstance(exports, dict):
        root = exports.get(".", exports if not any(k.startswith(".") for k in exports) else None)
        if isinstance(root, dict):
            return [t for v in root.values() for t in _export_targets(v)]
        return _export_targets(root) if root is not None else []
    return []


def _js_manifest(directory: str, text: str, name: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(package name -> entry paths, import alias prefix -> path prefixes) of one package.json / tsconfig.json."""
    data = _json(text)
    if name == "package.json":
        if not isinstance(data.get("name"), str):
            return {}, {}
        entries = [data[f] for f in _JS_ENTRY_FIELDS if isinstance(data.get(f), str)] + _export_targets(
            data.get("exports")
        )
        paths = [posixpath.normpath(posixpath.join(directory, e)) for e in entries]
        return {
            data["name"]: [
                *paths,
                posixpath.join(directory, "src/index"),
                posixpath.join(directory, "index"),
                posixpath.join(directory, "lib/index"),
            ]
        }, {data["name"] + "/": [directory + "/" if directory else ""]}
    options = data.get("compilerOptions") if isinstance(data.get("compilerOptions"), dict) else {}
    base = posixpath.normpath(posixpath.join(directory, options.get("baseUrl") or "."))
    aliases = {}
    for alias, targets in (options.get("paths") or {}).items():
        if isinstance(targets, list) and alias != "*":
            aliases[alias.rstrip("*")] = [
                posixpath.normpath(posixpath.join(base, t.rstrip("*"))) + ("/" if t.endswith("/*") else "")
                for t in targets
                if isinstance(t, str)
            ]
    return {}, aliases


def manifest_roots(manifests: list[tuple[str, str]]) -> dict[str, dict[str, list[str]]]:
    """From (path, text) of the package.json / tsconfig.json files in path order: "js_packages" (package name -> its
    entry files, `name/` -> its directory) and "js_aliases" (tsconfig.json `paths`); the first manifest naming a
    key wins."""
    roots: dict[str, dict[str, list[str]]] = {"js_packages": {}, "js_aliases": {}}
    for path, text in manifests:
        directory, name = posixpath.split(path)
        packages, aliases = _js_manifest(directory, text, name)
        for key, value in packages.items():
            roots["js_packages"].setdefault(key, value)
        for key, value in aliases.items():
            roots["js_aliases"].setdefault(key, value)
    return roots


class Resolver:
    """JS / TS `import` / `require`: a relative specifier from the importer's directory, a bare one through the
    manifests' packages and aliases."""

    def __init__(self, repo: RepositoryFiles):
        self.by_path = repo.by_path
        self.roots = repo.roots

    def _js_file(self, base: str) -> int | None:
        """The indexed file a JS/TS module path names: as is, with an extension, or its directory's index file."""
        stems = (
            [base, base[: -len(posixpath.splitext(base)[1])]]
            if base.endswith((".js", ".jsx", ".mjs", ".cjs"))
            else [base]
        )
        candidates = [
            c
            for stem in stems
            for c in (stem, *(stem + e for e in JS_EXTENSIONS), *(f"{stem}/index{e}" for e in JS_EXTENSIONS))
        ]
        return next((self.by_path[c] for c in candidates if c in self.by_path), None)

    def _js_bare(self, target: str) -> int | None:
        """A bare specifier through the manifests: a workspace package's entry, `pkg/sub` inside it, a tsconfig alias."""
        for entry in self.roots.get("js_packages", {}).get(target, ()):
            if (dst := self._js_file(entry)) is not None:
                return dst
        prefixes = {**self.roots.get("js_aliases", {})}
        for prefix in sorted(prefixes, key=len, reverse=True):
            if prefix and (target == prefix.rstrip("/") or target.startswith(prefix)):
                rest = target[len(prefix) :]
                for root in prefixes[prefix]:
                    for sub in ("", "src/", "lib/"):
                        if (
                            dst := self._js_file(
                                posixpath.normpath(root + (sub if root.endswith("/") or not root else "") + rest)
                            )
                        ) is not None:
                            return dst
        return None

    @staticmethod
    def question(path: str, module: str, package: str, target: str, names: tuple[str, ...], level: int) -> tuple:
        """What `resolve` reads of an import row: its target, names and, for a relative target, the importer's directory (its package)."""
        return package if target.startswith(".") else None, target, names

    def resolve(self, path: str, module: str, package: str, target: str, names: list[str], level: int):
        dst = (
            self._js_file(posixpath.normpath(posixpath.join(package, target)))
            if target.startswith(".")
            else self._js_bare(target)
        )
        if dst is None:
            return []
        bound = [n.partition(" as ") for n in names if n and n != "*"]  # "* as m": the module itself, bound to m
        return [
            (dst, (alias or orig).strip(), None if orig.strip() == "*" else orig.strip()) for orig, _, alias in bound
        ] or [(dst, None, None)]
