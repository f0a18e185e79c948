"""The registry of tree-sitter languages: the spec factory (a `ts_<language>.py` module) that parses each.

`treesitter.py` looks languages up here; the language modules import only `ts_common.py`, so nothing imports back.
"""

from __future__ import annotations

from collections.abc import Callable

from cra.dataflows.index.parsers.ts_c import c_spec, cpp_spec
from cra.dataflows.index.parsers.ts_common import Spec
from cra.dataflows.index.parsers.ts_csharp import csharp_spec
from cra.dataflows.index.parsers.ts_go import go_spec
from cra.dataflows.index.parsers.ts_java import java_spec
from cra.dataflows.index.parsers.ts_javascript import js_spec
from cra.dataflows.index.parsers.ts_php import php_spec
from cra.dataflows.index.parsers.ts_ruby import ruby_spec
from cra.dataflows.index.parsers.ts_rust import rust_spec

SPEC_FACTORIES: dict[str, Callable[[bytes], Spec]] = {
    "javascript": js_spec,
    "typescript": js_spec,
    "tsx": js_spec,
    "go": go_spec,
    "java": java_spec,
    "rust": rust_spec,
    "c": c_spec,
    "cpp": cpp_spec,
    "csharp": csharp_spec,
    "ruby": ruby_spec,
    "php": php_spec,
}
