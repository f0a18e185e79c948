"""JavaScript / TypeScript / TSX / Go / Java / Rust parser on tree-sitter 0.26 and the grammar wheels.

One walk over the syntax tree per file; a per-language `_Spec` says which node types declare
symbols (and of which kind), which are calls, comments, imports and base clauses.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Callable

from tree_sitter import Language, Node, Parser

from dataflows.index.parsers.models import (
    ParsedComment,
    ParsedFile,
    ParsedImport,
    ParsedReference,
    ParsedSymbol,
)

_CONSTANT_NAME = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_WS = re.compile(r"\s+")
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "generator_function_expression"}
)
_TYPE_NAMES = frozenset({"type_identifier", "nested_type_identifier", "qualified_type", "scoped_type_identifier"})
# type names here are declarations or constructor calls, not annotations
_NOT_ANNOTATIONS = frozenset({"type_parameter", "type_parameters", "object_creation_expression"})
_GO_BUILTIN_TYPES = frozenset(
    "any bool byte comparable complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string "
    "uint uint8 uint16 uint32 uint64 uintptr".split()
)
_DECORATORS = frozenset({"decorator", "marker_annotation", "annotation", "attribute_item"})


def _grammar(language: str):
    if language == "javascript":
        import tree_sitter_javascript as grammar

        return grammar.language()
    if language in ("typescript", "tsx"):
        import tree_sitter_typescript as grammar

        return grammar.language_typescript() if language == "typescript" else grammar.language_tsx()
    if language == "go":
        import tree_sitter_go as grammar

        return grammar.language()
    if language == "java":
        import tree_sitter_java as grammar

        return grammar.language()
    if language == "rust":
        import tree_sitter_rust as grammar

        return grammar.language()
    raise ValueError(f"no tree-sitter grammar for {language!r}")


_LOCAL = threading.local()  # parsers are not thread-safe: one per language per thread


def _parser(language: str) -> Parser:
    cache = _LOCAL.__dict__.setdefault("parsers", {})
    if language not in cache:
        cache[language] = Parser(Language(_grammar(language)))
    return cache[language]


def parse_treesitter(language: str, text: str) -> ParsedFile:
    """Parse one JS/TS/TSX/Go/Java/Rust file; syntax errors keep what parsed plus `error`."""
    source = text.encode("utf-8", errors="replace")
    tree = _parser(language).parse(source)
    walker = _Walker(_SPEC_FACTORIES[language](source), source)
    walker.walk(tree.root_node)
    walker.resolve_receivers()
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


@dataclass
class _Decl:
    """What a declaring node contributes: name, kind, the node whose lines it spans, its body."""

    name: str
    kind: str
    outer: Node
    body: Node | None
    qualifier: str | None = None  # Go/Rust receiver type: qualified name "Type.method"
    bases: list[Node] = field(default_factory=list)


@dataclass(frozen=True)
class _Spec:
    declare: Callable[[Node, "_Walker"], _Decl | None]
    calls: Callable[[Node], str | None]
    imports: Callable[[Node], list[ParsedImport]]
    comment_types: frozenset[str]
    doc_comment: Callable[[str], bool]
    bound_types: frozenset[str] = frozenset()  # node types whose type names are bases, not annotations
    builtin_types: frozenset[str] = frozenset()  # predeclared type names not worth a reference


class _Walker:
    def __init__(self, spec: _Spec, source: bytes):
        self.spec = spec
        self.source = source
        self.symbols: list[ParsedSymbol] = []
        self.imports: list[ParsedImport] = []
        self.references: list[ParsedReference] = []
        self._comments: list[tuple[int, str]] = []
        self._seen: set[tuple[int, str, str]] = set()
        self._receivers: list[tuple[int, str]] = []  # (symbol, receiver type) for Go methods
        self._impl_bases: list[tuple[str, str]] = []  # (type, trait) for Rust `impl Trait for Type`

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    def walk(self, root: Node) -> None:
        stack: list[tuple[Node, int | None, str | None]] = [(root, None, None)]
        while stack:
            node, scope, qualifier = stack.pop()
            kind = node.type
            if kind in self.spec.comment_types:
                self._comments.append((node.start_point[0] + 1, _clean_comment(self.text(node))))
                continue
            decl = self.spec.declare(node, self)
            own_name = None
            if decl is not None:
                scope = self._add(decl, scope, qualifier)
                own_name = node.child_by_field_name("name")
                if decl.kind in ("class", "interface", "enum") or node.type == "impl_item":
                    qualifier = None
            elif kind == "impl_item":  # Rust: methods inside are "Type.method"
                qualifier = _rust_impl_type(node, self)
            self.imports.extend(self.spec.imports(node))
            if scope is not None:
                self._references(node, scope, decl)
            children = node.children
            for child in reversed(children):
                if own_name is not None and child.id == own_name.id:
                    continue
                if scope is not None and child.type in _TYPE_NAMES:
                    name = _WS.sub("", self.text(child))
                    if node.type not in _NOT_ANNOTATIONS and name not in self.spec.builtin_types:
                        kind_of_ref = "base" if node.type in self.spec.bound_types else "annotation"
                        self._ref(scope, name, kind_of_ref)
                    continue
                stack.append((child, scope, qualifier))

    def _references(self, node: Node, scope: int, decl: _Decl | None) -> None:
        name = self.spec.calls(node)
        if name:
            self._ref(scope, name, "call")
        if decl is not None:
            for base in decl.bases:
                self._ref(scope, _WS.sub("", self.text(base)), "base")

    def _ref(self, symbol: int, name: str, kind: str) -> None:
        key = (symbol, name, kind)
        if key not in self._seen:
            self._seen.add(key)
            self.references.append(ParsedReference(symbol=symbol, name=name, kind=kind))

    def _add(self, decl: _Decl, scope: int | None, qualifier: str | None) -> int:
        prefix = decl.qualifier or qualifier or (self.symbols[scope].qualified_name if scope is not None else None)
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
        receiver = decl.qualifier or qualifier
        if receiver:
            self._receivers.append((idx, receiver))
        return idx

    def resolve_receivers(self) -> None:
        """Go methods / Rust impl items: parent = the receiver type's symbol when it is in this file; impl traits are its bases."""
        by_name = {s.name: i for i, s in enumerate(self.symbols) if s.parent is None and s.kind != "method"}
        for idx, receiver in self._receivers:
            if receiver in by_name and self.symbols[idx].parent is None:
                self.symbols[idx] = _replace_parent(self.symbols[idx], by_name[receiver])
        for type_name, trait in self._impl_bases:
            if type_name in by_name:
                self._ref(by_name[type_name], trait, "base")

    def comments(self) -> list[ParsedComment]:
        owner = _line_owners(self.symbols, max((s.end_line for s in self.symbols), default=0))
        return [
            ParsedComment(line=line, text=text, symbol=owner[line] if line < len(owner) else None)
            for line, text in self._comments
        ]


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
    """Comment text without //, ///, //!, /* */, /** */ and leading '*' of block lines."""
    if raw.startswith("/*"):
        body = raw[2:-2] if raw.endswith("*/") else raw[2:]
        lines = [re.sub(r"^\s*\*+ ?", "", line).strip() for line in body.lstrip("*!").split("\n")]
        return "\n".join(line for line in lines if line).strip()
    return re.sub(r"^//[/!]?", "", raw).strip()


def _leading_attributes(outer: Node, walker: _Walker) -> tuple[Node, tuple[str, ...]]:
    """The first node of a declaration including preceding Rust attributes, and its decorators."""
    decorators: list[str] = []
    start = outer
    prev = outer.prev_named_sibling
    while prev is not None and prev.type == "attribute_item":
        decorators.insert(0, walker.text(prev)[2:-1].strip())
        start, prev = prev, prev.prev_named_sibling
    stack = list(outer.children)
    for child in stack:
        if child.type in ("decorator", "marker_annotation", "annotation"):
            decorators.append(walker.text(child).lstrip("@").strip())
        elif child.type == "modifiers":
            stack.extend(child.children)
    return start, tuple(decorators)


def _docstring(start: Node, walker: _Walker) -> str | None:
    """The doc comment right above a declaration: JSDoc/Javadoc block, or a run of //, /// lines."""
    lines: list[str] = []
    node, expected_row = start.prev_sibling, start.start_point[0]
    while node is not None and node.type in walker.spec.comment_types:
        raw = walker.text(node)
        if node.end_point[0] < expected_row - 1 - (node.end_point[1] == 0) or not walker.spec.doc_comment(raw):
            break
        lines.insert(0, _clean_comment(raw))
        if raw.startswith("/*"):
            break
        node, expected_row = node.prev_sibling, node.start_point[0]
    return "\n".join(lines).strip() or None


def _signature(decl: _Decl, walker: _Walker) -> str:
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
    return _WS.sub(" ", raw.decode("utf-8", errors="replace")).strip().rstrip("{;").strip()


def _string_value(node: Node | None, walker_source: bytes) -> str | None:
    if node is None:
        return None
    raw = walker_source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")
    return raw.strip("\"'`")


# ----------------------------------------------------------------------------------- JS / TS / TSX


def _js_declare(node: Node, walker: _Walker) -> _Decl | None:
    decl = _js_declaration(node, walker)
    if decl is not None and decl.outer.parent is not None and decl.outer.parent.type == "export_statement":
        decl.outer = decl.outer.parent
    return decl


def _js_declaration(node: Node, walker: _Walker) -> _Decl | None:
    kind = node.type
    name = node.child_by_field_name("name")
    if kind in ("function_declaration", "generator_function_declaration", "function_signature"):
        return _Decl(walker.text(name), "function", node, node.child_by_field_name("body")) if name else None
    if kind == "method_definition":
        return _Decl(walker.text(name), "method", node, node.child_by_field_name("body")) if name else None
    if kind in ("class_declaration", "abstract_class_declaration", "class") and name is not None:
        bases = []
        for child in node.children:
            if child.type == "class_heritage":
                bases = [
                    b
                    for clause in child.named_children
                    for b in (clause.named_children if clause.type.endswith("_clause") else [clause])
                    if b.type in ("identifier", "member_expression", "type_identifier", "nested_type_identifier", "generic_type")
                ]
        return _Decl(walker.text(name), "class", node, node.child_by_field_name("body"), bases=bases)
    if kind == "interface_declaration" and name is not None:
        bases = [b for c in node.children if c.type == "extends_type_clause" for b in c.named_children]
        return _Decl(walker.text(name), "interface", node, node.child_by_field_name("body"), bases=bases)
    if kind == "type_alias_declaration" and name is not None:
        return _Decl(walker.text(name), "type_alias", node, None)
    if kind == "enum_declaration" and name is not None:
        return _Decl(walker.text(name), "enum", node, node.child_by_field_name("body"))
    if kind == "variable_declarator" and name is not None and name.type == "identifier":
        return _js_variable(node, name, walker)
    return None


def _js_variable(node: Node, name: Node, walker: _Walker) -> _Decl | None:
    """`const f = () => ...` is a function; a top-level `const UPPER = ...` is a constant."""
    value = node.child_by_field_name("value")
    declaration = node.parent
    outer = declaration if declaration is not None and declaration.named_child_count == 1 else node
    if value is not None and value.type in _FUNCTION_VALUES:
        return _Decl(walker.text(name), "function", outer, value.child_by_field_name("body"))
    at_top = declaration is not None and declaration.type == "lexical_declaration" and _js_is_top_level(declaration)
    if at_top and _CONSTANT_NAME.match(walker.text(name)) and walker.text(declaration).startswith("const"):
        return _Decl(walker.text(name), "constant", outer, None)
    return None


def _js_is_top_level(declaration: Node) -> bool:
    parent = declaration.parent
    if parent is not None and parent.type == "export_statement":
        parent = parent.parent
    return parent is not None and parent.type == "program"


def _dotted_callee(node: Node | None, source: bytes, parts: frozenset[str]) -> str | None:
    """Text of a callee made only of identifiers / this / property access; None for anything else."""
    if node is None:
        return None
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type not in parts:
            return None
        stack.extend(current.named_children)
    return _WS.sub("", source[node.start_byte : node.end_byte].decode("utf-8", errors="replace"))


_JS_CALLEE_PARTS = frozenset(
    {"identifier", "this", "super", "member_expression", "property_identifier", "private_property_identifier"}
)


def _make_js_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            if callee is None or callee.type == "import":
                return None
            name = _dotted_callee(callee, source_of(), _JS_CALLEE_PARTS)
            return None if name == "require" else name
        if node.type == "new_expression":
            return _dotted_callee(node.child_by_field_name("constructor"), source_of(), _JS_CALLEE_PARTS)
        return None

    return calls


def _js_imports(node: Node, source: bytes) -> list[ParsedImport]:
    kind = node.type
    line = node.start_point[0] + 1
    if kind in ("import_statement", "export_statement"):
        target = _string_value(node.child_by_field_name("source"), source)
        if target is None:
            return []
        names = []
        stack = list(node.named_children)
        while stack:
            child = stack.pop(0)
            if child.type in ("import_specifier", "export_specifier"):
                names.append(source[child.child_by_field_name("name").start_byte : child.child_by_field_name("name").end_byte].decode())
            elif child.type == "namespace_import" or child.type == "namespace_export":
                names.append("*")
            elif child.type == "identifier" and child.parent is not None and child.parent.type == "import_clause":
                names.append(source[child.start_byte : child.end_byte].decode())
            elif child.type in ("import_clause", "named_imports", "export_clause"):
                stack.extend(child.named_children)
        return [ParsedImport(target=target, names=tuple(names), line=line)]
    if kind == "call_expression":
        callee = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if callee is None or args is None or args.named_child_count != 1 or args.named_children[0].type != "string":
            return []
        is_require = callee.type == "identifier" and source[callee.start_byte : callee.end_byte] == b"require"
        if not (is_require or callee.type == "import"):
            return []
        names: tuple[str, ...] = ()
        parent = node.parent
        if parent is not None and parent.type == "variable_declarator":
            pattern = parent.child_by_field_name("name")
            if pattern is not None and pattern.type == "identifier":
                names = (source[pattern.start_byte : pattern.end_byte].decode(),)
            elif pattern is not None and pattern.type == "object_pattern":
                names = tuple(
                    source[c.start_byte : c.end_byte].decode()
                    for c in pattern.named_children
                    if c.type == "shorthand_property_identifier_pattern"
                )
        return [ParsedImport(target=_string_value(args.named_children[0], source), names=names, line=line)]
    return []


# ----------------------------------------------------------------------------------------------- Go


def _go_declare(node: Node, walker: _Walker) -> _Decl | None:
    kind = node.type
    name = node.child_by_field_name("name")
    if kind == "function_declaration" and name is not None:
        return _Decl(walker.text(name), "function", node, node.child_by_field_name("body"))
    if kind == "method_declaration" and name is not None:
        receiver = _go_receiver_type(node.child_by_field_name("receiver"), walker)
        return _Decl(walker.text(name), "method", node, node.child_by_field_name("body"), qualifier=receiver)
    if kind in ("type_spec", "type_alias") and name is not None:
        declaration = node.parent
        outer = declaration if declaration is not None and declaration.named_child_count == 1 else node
        type_node = node.child_by_field_name("type")
        type_kind = type_node.type if type_node is not None else ""
        symbol_kind = {"struct_type": "class", "interface_type": "interface"}.get(type_kind, "type_alias")
        body = None
        if type_node is not None and type_kind in ("struct_type", "interface_type"):
            body = next((c for c in type_node.children if c.type in ("field_declaration_list", "{")), None)
        return _Decl(walker.text(name), symbol_kind, outer, body)
    if kind == "const_spec" and name is not None:
        text = walker.text(name)
        if _CONSTANT_NAME.match(text) or text[:1].isupper():
            declaration = node.parent
            outer = declaration if declaration is not None and declaration.named_child_count == 1 else node
            return _Decl(text, "constant", outer, None)
    return None


def _go_receiver_type(receiver: Node | None, walker: _Walker) -> str | None:
    if receiver is None:
        return None
    for node in _descendants(receiver):
        if node.type == "type_identifier":
            return walker.text(node)
    return None


def _descendants(node: Node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


_GO_CALLEE_PARTS = frozenset({"identifier", "selector_expression", "field_identifier"})


def _make_go_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type == "call_expression":
            return _dotted_callee(node.child_by_field_name("function"), source_of(), _GO_CALLEE_PARTS)
        return None

    return calls


def _go_imports(node: Node, source: bytes) -> list[ParsedImport]:
    if node.type != "import_spec":
        return []
    target = _string_value(node.child_by_field_name("path"), source)
    return [ParsedImport(target=target, line=node.start_point[0] + 1)] if target else []


# --------------------------------------------------------------------------------------------- Java

_JAVA_KINDS = {
    "class_declaration": "class",
    "record_declaration": "class",
    "interface_declaration": "interface",
    "annotation_type_declaration": "interface",
    "enum_declaration": "enum",
    "method_declaration": "method",
    "constructor_declaration": "method",
    "compact_constructor_declaration": "method",
}


def _java_declare(node: Node, walker: _Walker) -> _Decl | None:
    kind = _JAVA_KINDS.get(node.type)
    name = node.child_by_field_name("name")
    if kind is not None and name is not None:
        bases = []
        for child in node.children:
            if child.type in ("superclass", "super_interfaces", "extends_interfaces"):
                bases.extend(
                    t for t in _descendants(child) if t.type in ("type_identifier", "scoped_type_identifier") and t.parent.type != "scoped_type_identifier"
                )
        return _Decl(walker.text(name), kind, node, node.child_by_field_name("body"), bases=bases)
    if node.type == "variable_declarator" and node.parent is not None and node.parent.type == "field_declaration":
        modifiers = next((c for c in node.parent.children if c.type == "modifiers"), None)
        words = walker.text(modifiers).split() if modifiers is not None else []
        text = walker.text(name) if name is not None else ""
        if "static" in words and "final" in words and _CONSTANT_NAME.match(text):
            outer = node.parent if node.parent.named_child_count <= 3 else node
            return _Decl(text, "constant", outer, None)
    return None


_JAVA_OBJECT_PARTS = frozenset({"identifier", "this", "super", "field_access"})


def _make_java_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        source = source_of()
        if node.type == "method_invocation":
            name = node.child_by_field_name("name")
            obj = node.child_by_field_name("object")
            method = source[name.start_byte : name.end_byte].decode()
            if obj is None:
                return method
            prefix = _dotted_callee(obj, source, _JAVA_OBJECT_PARTS)
            return f"{prefix}.{method}" if prefix else None
        if node.type == "object_creation_expression":
            type_node = node.child_by_field_name("type")
            if type_node is not None and type_node.type == "generic_type":
                type_node = type_node.named_children[0]
            if type_node is not None and type_node.type in ("type_identifier", "scoped_type_identifier"):
                return source[type_node.start_byte : type_node.end_byte].decode()
        return None

    return calls


def _java_imports(node: Node, source: bytes) -> list[ParsedImport]:
    if node.type != "import_declaration":
        return []
    parts = [
        source[c.start_byte : c.end_byte].decode()
        for c in node.named_children
        if c.type in ("scoped_identifier", "identifier", "asterisk")
    ]
    return [ParsedImport(target=".".join(parts), line=node.start_point[0] + 1)] if parts else []


# --------------------------------------------------------------------------------------------- Rust

_RUST_KINDS = {
    "function_item": "function",
    "function_signature_item": "function",
    "struct_item": "class",
    "union_item": "class",
    "enum_item": "enum",
    "trait_item": "interface",
    "type_item": "type_alias",
    "const_item": "constant",
    "static_item": "constant",
}


def _rust_declare(node: Node, walker: _Walker) -> _Decl | None:
    kind = _RUST_KINDS.get(node.type)
    name = node.child_by_field_name("name")
    if kind is None or name is None:
        return None
    bases = []
    if node.type == "trait_item":
        bounds = node.child_by_field_name("bounds")
        bases = [b for b in bounds.named_children] if bounds is not None else []
    return _Decl(walker.text(name), kind, node, node.child_by_field_name("body"), bases=bases)


def _rust_impl_type(node: Node, walker: _Walker) -> str | None:
    """`impl<T> Trait for Type<T>` -> "Type" (and remember Trait as a base of Type)."""
    type_node = node.child_by_field_name("type")
    while type_node is not None and type_node.type in ("generic_type", "reference_type", "scoped_type_identifier"):
        type_node = type_node.child_by_field_name("type") or type_node.child_by_field_name("name")
    if type_node is None:
        return None
    type_name = walker.text(type_node)
    trait = node.child_by_field_name("trait")
    if trait is not None:
        walker._impl_bases.append((type_name, _WS.sub("", walker.text(trait))))
    return type_name


_RUST_CALLEE_PARTS = frozenset(
    {"identifier", "scoped_identifier", "field_expression", "field_identifier", "self", "crate", "super"}
)


def _make_rust_calls(source_of: Callable[[], bytes]):
    def calls(node: Node) -> str | None:
        if node.type != "call_expression":
            return None
        callee = node.child_by_field_name("function")
        if callee is not None and callee.type == "generic_function":
            callee = callee.child_by_field_name("function")
        return _dotted_callee(callee, source_of(), _RUST_CALLEE_PARTS)

    return calls


def _rust_imports(node: Node, source: bytes) -> list[ParsedImport]:
    line = node.start_point[0] + 1
    if node.type == "mod_item" and node.child_by_field_name("body") is None:
        name = node.child_by_field_name("name")
        return [ParsedImport(target=source[name.start_byte : name.end_byte].decode(), line=line)]
    if node.type != "use_declaration":
        return []
    argument = node.child_by_field_name("argument")
    if argument is None:
        return []

    def text(n: Node) -> str:
        return _WS.sub("", source[n.start_byte : n.end_byte].decode())

    if argument.type == "scoped_use_list":
        path = argument.child_by_field_name("path")
        items = argument.child_by_field_name("list")
        names = tuple(_rust_use_name(c, text) for c in items.named_children) if items is not None else ()
        return [ParsedImport(target=text(path) if path is not None else "", names=names, line=line)]
    if argument.type == "use_wildcard":
        return [ParsedImport(target=text(argument).removesuffix("::*"), names=("*",), line=line)]
    if argument.type == "use_as_clause":
        argument = argument.child_by_field_name("path")
    if argument is not None and argument.type == "scoped_identifier":
        path, name = argument.child_by_field_name("path"), argument.child_by_field_name("name")
        return [ParsedImport(target=text(path) if path else "", names=(text(name),), line=line)]
    return [ParsedImport(target=text(argument), line=line)] if argument is not None else []


def _rust_use_name(item: Node, text: Callable[[Node], str]) -> str:
    if item.type == "use_as_clause":
        item = item.child_by_field_name("path") or item
    return text(item)


# ----------------------------------------------------------------------------------------- registry


def _spec(
    declare,
    make_calls,
    imports,
    comment_types: set[str],
    doc_comment,
    bound_types: frozenset[str] = frozenset(),
    builtin_types: frozenset[str] = frozenset(),
) -> Callable[[bytes], _Spec]:
    def bind(source: bytes) -> _Spec:
        return _Spec(
            declare=declare,
            calls=make_calls(lambda: source),
            imports=lambda node: imports(node, source),
            comment_types=frozenset(comment_types),
            doc_comment=doc_comment,
            bound_types=bound_types,
            builtin_types=builtin_types,
        )

    return bind


def _is_jsdoc(raw: str) -> bool:
    return raw.startswith("/**")


def _is_line_comment(raw: str) -> bool:
    return raw.startswith("//") and not raw.startswith("///")


def _is_rust_doc(raw: str) -> bool:
    return raw.startswith("///") or raw.startswith("/**")


_JS = _spec(
    _js_declare,
    _make_js_calls,
    _js_imports,
    {"comment"},
    _is_jsdoc,
    bound_types=frozenset({"extends_clause", "implements_clause", "extends_type_clause"}),
)
_SPEC_FACTORIES: dict[str, Callable[[bytes], _Spec]] = {
    "javascript": _JS,
    "typescript": _JS,
    "tsx": _JS,
    "go": _spec(
        _go_declare, _make_go_calls, _go_imports, {"comment"}, _is_line_comment, builtin_types=_GO_BUILTIN_TYPES
    ),
    "java": _spec(
        _java_declare,
        _make_java_calls,
        _java_imports,
        {"line_comment", "block_comment"},
        _is_jsdoc,
        bound_types=frozenset({"superclass", "type_list", "extends_interfaces"}),
    ),
    "rust": _spec(
        _rust_declare,
        _make_rust_calls,
        _rust_imports,
        {"line_comment", "block_comment"},
        _is_rust_doc,
        bound_types=frozenset({"trait_bounds"}),
    ),
}
