"""Rust: the tree-sitter walker's `rust_spec`; a `use` path resolves through the module tree of files (crate::,
self::, super::, `mod x;`) and, for another crate of a Cargo workspace, through its Cargo.toml package name."""

from __future__ import annotations

import posixpath
import tomllib

import pandas as pd

from cra.dataflows.index.languages.common import BINDING_COLUMNS, GLOB, RepositoryFiles
from cra.dataflows.index.parsers.ts_rust import rust_spec

LANGUAGES = frozenset({"rust"})
CONVENTIONS = "rust"  # data/conventions/rust.toml
SPECS = {"rust": rust_spec}
MANIFESTS = ("Cargo.toml",)


def grammar(language: str):
    """The tree-sitter grammar of Rust."""
    import tree_sitter_rust as grammar

    return grammar.language()


def manifest_roots(manifests: list[tuple[str, str]]) -> dict[str, dict[str, list[str]]]:
    """From (path, text) of the Cargo.toml files in path order: "rust_crates", package name (`-` as `_`) -> its
    src/ directory, so `use other_crate::x` resolves in a workspace; the last manifest naming a crate wins."""
    crates: dict[str, list[str]] = {}
    for path, text in manifests:
        try:
            crate = tomllib.loads(text).get("package", {}).get("name")
        except tomllib.TOMLDecodeError:
            continue
        if isinstance(crate, str):
            crates[crate.replace("-", "_")] = [posixpath.join(posixpath.dirname(path), "src")]
    return {"rust_crates": crates}


def _rust_use_items(inner: str) -> list[str]:
    """The items of a use list's braces, split at its top-level commas: "E,f::{G,H},self" -> [E, f::{G,H}, self]."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(inner):
        depth += (char == "{") - (char == "}")
        if char == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
    return [item for item in (*items, inner[start:]) if item]


class Resolver:
    """Rust `use` / `mod` rows."""

    def __init__(self, repo: RepositoryFiles):
        self.by_path = repo.by_path
        self.roots = repo.roots

    def resolve(self, path: str, module: str, package: str, target: str, names: list[str], level: int):
        return self.rust(path, target, names)

    def _rust_crate_root(self, src: str):
        """The root file of a crate's src/ directory (lib.rs, else main.rs)."""
        found = next((self.by_path[c] for c in (f"{src}/lib.rs", f"{src}/main.rs") if c in self.by_path), None)
        return [] if found is None else [(found, None, None)]

    def rust(self, path: str, target: str, names: list[str] = ()):
        """A `use` / `mod` row: the module file it names, each item bound to its name, so references to the item
        resolve to its definition: `use a::b::C` binds C to member C of a/b.rs, `use a::b` (b a file) binds the
        module b, `use a::{b::C, d::{E, F}}` each leaf alike; `self` and a row without names bind the module, `*` binds
        it as a GLOB."""
        module = self._rust_module(path, target, names)
        if not names:
            return module
        out = []
        for name in names:
            prefix, _, leaf = name.rpartition("::")
            if leaf.startswith("{") or "{" in prefix:  # `d::{E,F}`: the braces' items under target::d
                head, _, inner = name.partition("::{")
                out.extend(self.rust(path, f"{target}::{head}", _rust_use_items(inner.removesuffix("}"))))
            elif prefix:  # `b::C`
                out.extend(self.rust(path, f"{target}::{prefix}", [leaf]))
            elif name == "*":  # a glob: the module, marked so its names resolve (see `reexported_bindings`)
                out.extend((dst, GLOB, None) for dst, _, _ in module)
            elif name == "self" or not name.isidentifier():
                out.extend(module)
            elif (sub := self._rust_module(path, f"{target}::{name}")) and sub != module:
                out.extend((dst, name, None) for dst, _, _ in sub)  # a submodule's file, bound as a module
            else:
                out.extend((dst, name, name) for dst, _, _ in module)  # an item of the module's file
        return list(dict.fromkeys(out))

    def _rust_module(self, path: str, target: str, names: list[str] = ()):
        """The file(s) of the module a `use` path (or `mod x;`) names, by the longest prefix that is a file."""
        directory, name = posixpath.split(path)
        stem = name[:-3] if name.endswith(".rs") else name
        module_dir = directory if stem in ("lib", "main", "mod") else posixpath.join(directory, stem)
        parts = [p for p in target.replace("::", "/").split("/") if p and p not in ("{", "}")]
        if not parts:
            return []
        if parts[0] == "crate":
            crate = path[: path.rfind("src/") + 3] if "src/" in path else directory
            root, parts = crate, parts[1:]
        elif parts[0] in ("self", "super"):
            root = module_dir
            while parts and parts[0] in ("self", "super"):
                root = posixpath.dirname(root) if parts[0] == "super" else root
                parts = parts[1:]
        elif parts[0] in self.roots.get("rust_crates", {}):  # another crate of the workspace (Cargo.toml name)
            root, parts = self.roots["rust_crates"][parts[0]][0], parts[1:]
            named = [n for n in names if n.isidentifier()]
            found = [
                self.by_path[c] for n in named for c in (posixpath.join(root, *parts, n) + ".rs",) if c in self.by_path
            ]
            if found or not parts:
                return [(dst, None, None) for dst in dict.fromkeys(found)] or self._rust_crate_root(root)
        elif len(parts) == 1:  # `mod x;`
            root = module_dir
        else:
            return []
        for n in range(len(parts), 0, -1):
            base = posixpath.join(root, *parts[:n])
            for candidate in (base + ".rs", base + "/mod.rs"):
                if candidate in self.by_path:
                    return [(self.by_path[candidate], None, None)]
        if not parts:  # `crate`, `super`, `self` themselves: the module file of that directory
            for candidate in (f"{root}/mod.rs", f"{root}.rs", f"{root}/lib.rs", f"{root}/main.rs"):
                if candidate in self.by_path:
                    return [(self.by_path[candidate], None, None)]
        return []


def reexported_bindings(
    import_bindings: pd.DataFrame, kb_symbols: pd.DataFrame, indexed_files: pd.DataFrame
) -> pd.DataFrame:
    """Bindings a Rust file gets through another module (same columns as import_bindings, not stored): `use m::*`
    binds every top-level name of m and every item m itself imports (the `pub use` re-exports of a crate root that
    `use super::*` / `use crate::*` reach), and an item imported from a module that only re-exports it binds to
    where that module imports it from (`use crate::Recipe` with `pub use recipe::Recipe` in lib.rs). One step:
    a re-export of a re-export is not followed. Resolved after the file's own imports (see `edges._resolved_symbol_edges`)."""
    rust = indexed_files.loc[indexed_files["language"].isin(LANGUAGES), "file_id"]
    bindings = import_bindings[import_bindings["file_id"].isin(rust)]
    as_objects = {"local": object, "member": object}
    if bindings.empty:  # no Rust file imports anything (most repositories): nothing to derive
        return pd.DataFrame(columns=BINDING_COLUMNS).astype({"file_id": "int64", "dst_file_id": "int64", **as_objects})
    items = import_bindings.loc[import_bindings["member"].notna(), BINDING_COLUMNS].astype(as_objects)
    bindings = bindings.astype(as_objects)
    globs = bindings.loc[bindings["local"] == GLOB, ["file_id", "dst_file_id"]]
    top = kb_symbols.loc[kb_symbols["parent_id"].isna(), ["file_id", "name"]].astype({"name": object}).drop_duplicates()
    own = globs.merge(top.rename(columns={"file_id": "dst_file_id", "name": "local"}), on="dst_file_id")
    through_glob = globs.rename(columns={"dst_file_id": "via"}).merge(
        items.rename(columns={"file_id": "via"}), on="via"
    )
    named = bindings[bindings["member"].notna()].merge(
        top,
        left_on=["dst_file_id", "member"],
        right_on=["file_id", "name"],
        how="left",
        indicator=True,
        suffixes=("", "_top"),
    )
    unresolved = named.loc[named["_merge"] == "left_only", ["file_id", "dst_file_id", "local", "member"]]
    onward = items.rename(columns={"file_id": "via", "local": "name", "dst_file_id": "dst", "member": "item"})
    hops = unresolved.rename(columns={"dst_file_id": "via", "member": "name"}).merge(onward, on=["via", "name"])
    through_item = pd.DataFrame(
        {"file_id": hops["file_id"], "dst_file_id": hops["dst"], "local": hops["local"], "member": hops["item"]}
    )
    derived = pd.concat(
        [
            own.assign(member=own["local"]),
            through_glob[BINDING_COLUMNS],
            through_item,
        ],
        ignore_index=True,
    )
    derived = derived[derived["file_id"] != derived["dst_file_id"]].astype(as_objects)
    return derived.drop_duplicates(ignore_index=True)
