"""JS / TS / TSX / Go / Java / Rust / C / C++ / C# / Ruby / PHP parser on tree-sitter 0.26 and the grammar wheels.

One walk over the syntax tree per file; a per-language `Spec` (built in the `ts_<language>.py` modules; each
language's module in `cra.dataflows.index.languages` names its spec factory and grammar) says which node types declare symbols (and of which kind), which are calls, comments, imports, base clauses and
namespaces (C++ / C# / PHP namespaces qualify the names declared in them: `ns.Class.method`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import replace

from tree_sitter import Language, Node, Parser

from cra.dataflows.index.languages import SPEC_FACTORIES, grammar
from cra.dataflows.index.parsers.models import (
    ParsedComment,
    ParsedFile,
    ParsedImport,
    ParsedReference,
    ParsedSymbol,
)
from cra.dataflows.index.parsers.ts_common import WHITESPACE, Decl, Spec

_TYPE_NAMES = frozenset({"type_identifier", "nested_type_identifier", "qualified_type", "scoped_type_identifier"})
# type names here are declarations or constructor calls, not annotations
_NOT_ANNOTATIONS = frozenset(
    {"type_parameter", "type_parameters", "object_creation_expression", "type_parameter_declaration", "new_expression"}
)
_DECORATORS = frozenset({"decorator", "marker_annotation", "annotation", "attribute_item", "attribute_list"})
_SUMMARY_TAGS = re.compile(r"</?(?:summary|remarks|returns|para)>")


_LOCAL = threading.local()  # parsers are not thread-safe: one per language per thread


# what the grammars (tree-sitter-typescript 0.23, -javascript 0.25, -rust 0.24) do not parse, each rewritten
# to a same-length form they do
_TYPESCRIPT_GAPS = (
    # a generic call signature alone on its line, `{ (): S \n  <U>(select: (s: S) => U): U }`, read as `S<U>(...)`
    # (tree-sitter-typescript issue 335): the line's first indent becomes `;`
    (re.compile(rb"^[ \t](?=[ \t]*<[A-Za-z_$][^\n]*>[ \t]*\()", re.MULTILINE), lambda m: b";"),
    # variance annotations on type parameters, `interface ZodType<out Output, in Input>` (TypeScript 4.7): blanked
    (
        re.compile(rb"(?<=[<,\s])(?:in\s+out|out|in)(?=\s+[A-Za-z_$][\w$]*\s*(?:extends\b|=|,|>))"),
        lambda m: b" " * len(m.group(0)),
    ),
)
# a variable named `using` (`using += ...`, `return using`), read as a `using` declaration (explicit resource
# management): any `using` not followed by a name is renamed
_USING_VARIABLE = (re.compile(rb"\busing\b(?!\s+[A-Za-z_$])"), lambda m: b"usinG")


def _blank(text: bytes) -> bytes:
    """A space for every byte but newlines: a rewrite that keeps every byte offset and line."""
    return re.sub(rb"[^\n]", b" ", text)


# C# `#if A` / `#else` branches that each open the same method (`#if SPAN void F(Span<T> x) #else void F(T[] x) #endif
# { ... }`): the grammar sees two headers before one body, and no directive may stand between a header and its body.
# The first branch is kept: the `#else`/`#elif` branches and the `#if`/`#endif` lines are blanked.
_FIRST_BRANCHES = (
    (
        re.compile(rb"^[ \t]*#[ \t]*(?:else|elif)\b[\s\S]*?(?=^[ \t]*#[ \t]*endif\b)", re.MULTILINE),
        lambda m: _blank(m.group(0)),
    ),
    (re.compile(rb"^[ \t]*#[ \t]*(?:if|endif)\b[^\n]*", re.MULTILINE), lambda m: _blank(m.group(0))),
)
_GRAMMAR_GAPS = {
    "csharp": _FIRST_BRANCHES,
    "javascript": (_USING_VARIABLE,),
    "typescript": (*_TYPESCRIPT_GAPS, _USING_VARIABLE),
    "tsx": (*_TYPESCRIPT_GAPS, _USING_VARIABLE),
    # a macro named like the primitive type, snapbox's `str![...]` in many crates' tests: `stR!`
    "rust": ((re.compile(rb"\bstr!"), lambda m: b"stR!"),),
}


def _gaps_bridged(tree, source: bytes, language: str):
    """The tree of a file that failed to parse on one of its grammar's gaps (_GRAMMAR_GAPS): parsed again with them
    rewritten; every rewrite keeps every byte offset, so the walker still reads the original source. Kept only if
    that parse is clean."""
    bridged = source
    for pattern, replacement in _GRAMMAR_GAPS.get(language, ()):
        bridged = pattern.sub(replacement, bridged)
    if bridged == source:
        return tree
    retry = _parser(language).parse(bridged)
    return tree if retry.root_node.has_error else retry


def _parser(language: str) -> Parser:
    cache = _LOCAL.__dict__.setdefault("parsers", {})
    if language not in cache:
        cache[language] = Parser(Language(grammar(language)))
    return cache[language]


def parse_treesitter(language: str, text: str) -> ParsedFile:
    """Parse one file of a tree-sitter language; syntax errors keep what parsed plus `error`.

    A "c" file with C++ in it (`is_cpp_text`: a namespace, a template, `::`, ...) is parsed as C++. C and C++ are
    parsed with the macros in front of a declaration blanked (`_C_DECLARATION_MACROS`).
    """
    from cra.dataflows.index.parsers import is_cpp_text

    source = text.encode("utf-8", errors="replace")
    if language == "c" and is_cpp_text(text):
        language = "cpp"
    parsed = source
    if language in ("c", "cpp"):
        for pattern, blanked in _C_DECLARATION_MACROS:
            parsed = pattern.sub(blanked, parsed)
    tree = _parser(language).parse(parsed)
    if tree.root_node.has_error:
        tree = _gaps_bridged(tree, source, language)
    walker = _Walker(SPEC_FACTORIES[language](source), source)
    walker.walk(tree.root_node)
    walker.resolve_receivers()
    if language == "rust":
        walker.symbols = _with_module_attributes(walker.symbols, rust_module_attributes(source, tree.root_node))
    error = None
    if tree.root_node.has_error:
        error = f"syntax error at line {_first_error_line(tree.root_node)}"
    return ParsedFile(
        symbols=walker.symbols,
        comments=walker.comments(),
        imports=walker.imports,
        references=walker.references,
        error=error,
    )


# export, inline and attribute macros in front of a C/C++ declaration (`CLI11_INLINE bool App::parse(`, `YAML_CPP_API
# std::string Dump(`, `ATTR_NONNULL ATTR_ACCESS3_R(1, 2)` on the line above `size_t countDigits(`, after a
# `template <...>`), which the grammars read as its type and the real type as a scope (`bool.parse`): blanked,
# keeping every byte offset and line, wherever a type and a name (maybe on the next line) follow
# (and `class YAML_CPP_API Binary {`, which they read as a function named Binary)
_C_DECLARATION_MACROS = (
    (
        re.compile(
            rb"^([ \t]*(?:template[ \t]*<[^\n]*>[ \t]*)?)((?:[A-Z][A-Z0-9_]*[A-Z0-9](?:\([^()\n]*\))?(?:[ \t]+|[ \t]*\n[ \t]*))+)"
            rb"(?=[A-Za-z_][^\n(;{}=]*?(?:[ \t*&>]|\n)[ \t*&]*[~A-Za-z_][\w:~]*[ \t]*\()",
            re.MULTILINE,
        ),
        lambda m: m.group(1) + _blank(m.group(2)),
    ),
    (
        re.compile(
            rb"\b((?:class|struct)[ \t]+)([A-Z][A-Z0-9_]*[A-Z0-9])(?=[ \t]+[A-Za-z_]\w*[ \t]*(?:final\b[ \t]*)?[:{\n])"
        ),
        lambda m: m.group(1) + _blank(m.group(2)),
    ),
)


class _Walker:
    def __init__(self, spec: Spec, source: bytes):
        self.spec = spec
        self.source = source
        self.symbols: list[ParsedSymbol] = []
        self.imports: list[ParsedImport] = []
        self.references: list[ParsedReference] = []
        self._comments: list[tuple[int, str]] = []
        self._seen: set[tuple[int, str, str]] = set()
        self._receivers: list[tuple[int, str]] = []  # (symbol, receiver type) for Go methods
        self._classes: set[str] = set()  # receivers that are classes whatever they are declared as (JS prototypes)
        self._type_bases: list[
            tuple[str, str]
        ] = []  # (type, base) declared outside the type: Rust `impl Trait for Type`
        self._file_namespace: str | None = None  # C# `namespace A.B;` / PHP `namespace A\B;` (statement form)

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    def add_type_base(self, type_name: str, base: str) -> None:
        self._type_bases.append((type_name, base))

    def walk(self, root: Node) -> None:
        stack: list[tuple[Node, int | None, str | None, str | None]] = [(root, None, None, None)]
        while stack:
            node, scope, qualifier, namespace = stack.pop()
            kind = node.type
            if kind in self.spec.comment_types:
                self._comments.append((node.start_point[0] + 1, _clean_comment(self.text(node))))
                continue
            if kind in self.spec.namespace_types:
                name, block = self.spec.namespace(node)
                if block and name:
                    outer = namespace or self._file_namespace
                    namespace = f"{outer}.{name}" if outer else name
                elif name:
                    self._file_namespace = name
            decl = self.spec.declare(node, self)
            own_name = None
            if decl is not None:
                scope = self._add(decl, scope, qualifier, namespace or self._file_namespace)
                own_name = node.child_by_field_name("name")
                if decl.kind in ("class", "interface", "enum") or kind in self.spec.qualifier_types:
                    qualifier = None
            elif kind in self.spec.qualifier_types:  # Rust `impl`: methods inside are "Type.method"
                qualifier = self.spec.qualifier(node, self)
            self.imports.extend(self.spec.imports(node))
            if scope is not None:
                self._references(node, scope, decl)
            children = node.children
            for child in reversed(children):
                if own_name is not None and child.id == own_name.id:
                    continue
                if scope is not None and child.type in _TYPE_NAMES:
                    name = WHITESPACE.sub("", self.text(child))
                    if node.type not in _NOT_ANNOTATIONS and name not in self.spec.builtin_types:
                        kind_of_ref = "base" if node.type in self.spec.bound_types else "annotation"
                        self._ref(scope, name, kind_of_ref)
                    continue
                stack.append((child, scope, qualifier, namespace))

    def _references(self, node: Node, scope: int, decl: Decl | None) -> None:
        name = self.spec.calls(node)
        if name:
            self._ref(scope, name, "call")
        if decl is not None:
            for base in decl.bases:
                self._ref(scope, base if isinstance(base, str) else WHITESPACE.sub("", self.text(base)), "base")
        if node.type in self.spec.mixin_types:
            for base in self.spec.mixins(node):
                self._ref(scope, base, "base")

    def _ref(self, symbol: int, name: str, kind: str) -> None:
        key = (symbol, name, kind)
        if key not in self._seen:
            self._seen.add(key)
            self.references.append(ParsedReference(symbol=symbol, name=name, kind=kind))

    def _add(self, decl: Decl, scope: int | None, qualifier: str | None, namespace: str | None = None) -> int:
        outer = self.symbols[scope].qualified_name if scope is not None else namespace
        if decl.qualifier:
            prefix = f"{outer}.{decl.qualifier}" if outer else decl.qualifier
        else:
            prefix = qualifier or outer
        kind = decl.kind
        if kind == "function" and (qualifier or decl.qualifier or _is_class_scope(self.symbols, scope)):
            kind = "method"
        start_node, decorators = _leading_attributes(decl.outer, self)
        self.symbols.append(
            ParsedSymbol(
                name=decl.name,
                qualified_name=f"{prefix}.{decl.name}" if prefix else decl.name,
                kind=kind,
                start_line=start_node.start_point[0] + 1,
                end_line=decl.outer.end_point[0] + 1 - (decl.outer.end_point[1] == 0),
                signature=_signature(decl, self),
                docstring=_docstring(start_node, self),
                decorators=decorators,
                parent=scope,
            )
        )
        idx = len(self.symbols) - 1
        if decl.qualifier or qualifier:
            self._receivers.append((idx, prefix))
            if decl.makes_class:
                self._classes.add(prefix)
        return idx

    def resolve_receivers(self) -> None:
        """Go methods / Rust impl items / C++ `Class::method`: parent = the receiver type's symbol when it is in
        this file (by qualified name, else by its last name); impl traits are its bases."""
        by_name = {s.name: i for i, s in enumerate(self.symbols) if s.parent is None and s.kind != "method"}
        by_qualified = {s.qualified_name: i for i, s in enumerate(self.symbols) if s.kind in _OWNER_KINDS}
        made: set[int] = set()  # constructors found to be classes: `function Foo` with `Foo.prototype.bar = ...`
        for idx, receiver in self._receivers:
            owner = by_qualified.get(receiver, by_name.get(receiver.rpartition(".")[2]))
            if owner is not None and owner != idx and self.symbols[idx].parent is None:
                self.symbols[idx] = _replace_parent(self.symbols[idx], owner)
                if receiver in self._classes and self.symbols[owner].kind == "function":
                    self.symbols[owner] = replace(self.symbols[owner], kind="class")
                    made.add(owner)
        for idx, s in enumerate(self.symbols):  # (their `this.f = function` in the constructor: methods too)
            if s.kind == "function" and s.parent in made:
                self.symbols[idx] = replace(s, kind="method")
        for type_name, base in self._type_bases:
            if type_name in by_name:
                self._ref(by_name[type_name], base, "base")

    def comments(self) -> list[ParsedComment]:
        owner = _line_owners(self.symbols, max((s.end_line for s in self.symbols), default=0))
        return [
            ParsedComment(line=line, text=text, symbol=owner[line] if line < len(owner) else None)
            for line, text in self._comments
        ]


_OWNER_KINDS = frozenset({"class", "interface", "enum", "type_alias"})


def rust_module_attributes(source: bytes, root: Node | None = None) -> list[tuple[int, int, tuple[str, ...]]]:
    """(first line, last line, attributes) of each inline module (`#[cfg(test)] mod tests { ... }`) that has
    attributes, its attribute lines included; `root` is the source's parsed tree (parsed here when None)."""
    out, stack = [], [root or _parser("rust").parse(source).root_node]
    while stack:
        for child in stack.pop().named_children:
            body = child.child_by_field_name("body") if child.type == "mod_item" else None
            if body is None:
                continue
            start, attributes = _attribute_items(child, source)
            if attributes:
                out.append((start.start_point[0] + 1, child.end_point[0] + 1, attributes))
            stack.append(body)
    return out


def _with_module_attributes(
    symbols: list[ParsedSymbol], modules: list[tuple[int, int, tuple[str, ...]]]
) -> list[ParsedSymbol]:
    """Each item with the attributes of the modules around it among its decorators: a helper inside
    `#[cfg(test)] mod tests` is test code as much as the `#[test]` functions beside it."""
    from dataclasses import replace

    out = []
    for symbol in symbols:
        inherited = [a for first, last, attributes in modules if first < symbol.start_line <= last for a in attributes]
        extra = tuple(a for a in dict.fromkeys(inherited) if a not in symbol.decorators)
        out.append(replace(symbol, decorators=symbol.decorators + extra) if extra else symbol)
    return out


def _replace_parent(symbol: ParsedSymbol, parent: int) -> ParsedSymbol:
    from dataclasses import replace

    return replace(symbol, parent=parent)


def _is_class_scope(symbols: list[ParsedSymbol], scope: int | None) -> bool:
    return scope is not None and symbols[scope].kind in ("class", "interface", "enum")


def _line_owners(symbols: list[ParsedSymbol], n_lines: int) -> list[int | None]:
    """Per line, the innermost symbol containing it (later, nested symbols overwrite their parents)."""
    owner: list[int | None] = [None] * (n_lines + 2)
    order = sorted(range(len(symbols)), key=lambda i: (symbols[i].start_line, -symbols[i].end_line))
    for idx in order:
        sym = symbols[idx]
        owner[sym.start_line : sym.end_line + 1] = [idx] * (sym.end_line - sym.start_line + 1)
    return owner


def _first_error_line(root: Node) -> int:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            return node.start_point[0] + 1
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return root.start_point[0] + 1


def _clean_comment(raw: str) -> str:
    """Comment text without //, ///, //!, /* */, /** */, leading '*' of block lines, and # (Ruby, PHP)."""
    if raw.startswith("/*"):
        body = raw[2:-2] if raw.endswith("*/") else raw[2:]
        lines = [re.sub(r"^\s*\*+ ?", "", line).strip() for line in body.lstrip("*!").split("\n")]
        return "\n".join(line for line in lines if line).strip()
    if raw.startswith("#"):
        return raw.lstrip("#").strip()
    if raw.startswith("=begin"):
        return raw.removeprefix("=begin").strip().removesuffix("=end").strip()
    return re.sub(r"^//[/!]?", "", raw).strip()


def _attribute_items(node: Node, source: bytes) -> tuple[Node, tuple[str, ...]]:
    """The first of the Rust attributes right before a node (the node when none), and their texts without `#[ ]`."""
    start, prev, attributes = node, node.prev_named_sibling, []
    while prev is not None and prev.type == "attribute_item":
        attributes.insert(0, source[prev.start_byte : prev.end_byte].decode("utf-8", errors="replace")[2:-1].strip())
        start, prev = prev, prev.prev_named_sibling
    return start, tuple(attributes)


def _leading_attributes(outer: Node, walker: _Walker) -> tuple[Node, tuple[str, ...]]:
    """The first node of a declaration including preceding Rust attributes, and its decorators."""
    start, attributes = _attribute_items(outer, walker.source)
    decorators = list(attributes)
    stack = list(outer.children)
    for child in stack:
        if child.type in ("decorator", "marker_annotation", "annotation"):
            decorators.append(walker.text(child).lstrip("@").strip())
        elif child.type == "attribute_list":  # C# [Attr], PHP #[Attr]
            decorators.append(walker.text(child).lstrip("#").strip().removeprefix("[").removesuffix("]").strip())
        elif child.type == "modifiers":
            stack.extend(child.children)
    return start, tuple(decorators)


def _docstring(start: Node, walker: _Walker) -> str | None:
    """The doc comment right above a declaration: JSDoc/Javadoc block, or a run of //, /// lines."""
    lines: list[str] = []
    node, expected_row = start.prev_sibling, start.start_point[0]
    while node is None and start.parent is not None and start.parent.start_byte == start.start_byte:
        start = start.parent  # Ruby: a class/def that opens a body is preceded by its comments one level up
        node = start.prev_sibling
    while node is not None and node.type in walker.spec.comment_types:
        raw = walker.text(node)
        if node.end_point[0] < expected_row - 1 - (node.end_point[1] == 0) or not walker.spec.doc_comment(raw):
            break
        before = node.prev_sibling  # (a Rust line comment ends at column 0 of the next line)
        if before is not None and before.end_point[0] - (before.end_point[1] == 0) == node.start_point[0]:
            break  # a trailing comment of the line above (`}  // namespace x`) documents that line
        lines.insert(0, _clean_comment(raw))
        if raw.startswith("/*"):
            break
        node, expected_row = node.prev_sibling, node.start_point[0]
    text = "\n".join(lines).strip()
    if "<summary>" in text:  # C# XML doc comments
        text = _SUMMARY_TAGS.sub("", text).strip()
    return text or None


_LIST_EDGES = re.compile(r"([(\[]) |,? ([)\]])")


def _signature(decl: Decl, walker: _Walker) -> str:
    """Declaration source up to (not including) its body, whitespace-collapsed; first line if bodiless."""
    start = decl.outer
    for child in decl.outer.children:  # skip decorators / annotations / JSDoc-like leading children
        if child.type in _DECORATORS or child.type == "comment":
            continue
        if child.type == "modifiers":
            rest = [c for c in child.children if c.type not in _DECORATORS]
            if not rest:
                continue
            child = rest[0]
        start = child
        break
    if decl.body is not None:
        raw = walker.source[start.start_byte : decl.body.start_byte]
    else:
        raw = walker.source[start.start_byte : decl.outer.end_byte].split(b"\n", 1)[0]
    text = WHITESPACE.sub(" ", raw.decode("utf-8", errors="replace")).strip().rstrip("{;").strip()
    return _LIST_EDGES.sub(lambda m: m[1] or m[2], text)  # a wrapped parameter list, `( &mut self, x: u8, )`, joined
