"""CommonJS-style JavaScript (Node's own library style): functions assigned to members, `exports`, prototypes and
object literals are symbols named as a reader calls them, with bodies, calls and edges (issue 54, item 3)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from cra.dataflows.index.parsers import parse_source
from cra.drivers.cli.main import main
from cra.drivers.common.tokens import count_tokens
from cra.drivers.index.indexer import index_frames

RESPONSE = """
var utils = require('./utils');
var res = Object.create(http.ServerResponse.prototype);

/**
 * Set the location header to `url`.
 */
res.location = function location(url) {
  return this.set('Location', encodeurl(url));
};

/**
 * Redirect to the given `url`; 'back' goes to the Referrer.
 */
res.redirect = function redirect(url) {
  var address = this.location(url);
  var parse = utils.compileQueryParser('extended');
  return address;
};

res.contentType =
res.type = function contentType(type) {
  return this.set('Content-Type', type);
};

res.set = (field, val) => val;
"""

UTILS = """
exports.compileQueryParser = function compileQueryParser(val) {
  return parseExtended(val);
};

module.exports.etag = (body) => createETag(body);

function parseExtended(str) {
  return qs.parse(str);
}
"""

VIEW = """
function View(name, options) {
  this.name = name;
  this.reset = function () { this.name = null; };
}

View.prototype.lookup = function lookup(name) {
  return tryStat(name);
};

View.prototype.render = function render(options, callback) {
  return this.lookup(this.name);
};

View.prototype = Object.assign(View.prototype, {});

function tryStat(path) {
  return fs.statSync(path);
}

module.exports = View;
"""

EXPORTED_OBJECT = """
module.exports = {
  parse(text) {
    return split(text);
  },
  format: function (value) {
    return join(value);
  },
  nested: {
    deep: () => helper(),
  },
};

Router.prototype = {
  handle: function handle(req) { return dispatch(req); },
};

register({ onDone: function () { return 1; } });
"""


def parsed(source: str, language: str = "javascript"):
    result = parse_source(language, textwrap.dedent(source).lstrip("\n"))
    assert result is not None and result.error is None
    return result


def rows(result) -> dict[str, tuple]:
    """qualified name -> (name, kind, first line, last line, parent's qualified name)."""
    names = [s.qualified_name for s in result.symbols]
    return {
        s.qualified_name: (s.name, s.kind, s.start_line, s.end_line, None if s.parent is None else names[s.parent])
        for s in result.symbols
    }


def calls(result, qualified_name: str) -> set[str]:
    idx = [s.qualified_name for s in result.symbols].index(qualified_name)
    return {r.name for r in result.references if r.symbol == idx and r.kind == "call"}


def test_functions_assigned_to_members_are_symbols_with_bodies_docs_and_calls():
    result = parsed(RESPONSE)
    found = rows(result)
    assert found["res.location"] == ("location", "method", 7, 9, None)
    assert found["res.redirect"] == ("redirect", "method", 14, 18, None)
    assert found["res.set"] == ("set", "method", 25, 25, None)  # an arrow function assigned to a property
    assert found["res.type"] == ("type", "method", 20, 23, None)  # a chain: the statement is its span
    redirect = next(s for s in result.symbols if s.qualified_name == "res.redirect")
    assert redirect.signature == "res.redirect = function redirect(url)"
    assert redirect.docstring == "Redirect to the given `url`; 'back' goes to the Referrer."
    assert next(s for s in result.symbols if s.name == "type").signature.startswith("res.contentType = res.type =")
    assert calls(result, "res.redirect") == {"this.location", "utils.compileQueryParser"}


def test_exports_are_named_as_the_importer_calls_them():
    found = rows(parsed(UTILS))
    assert found["compileQueryParser"] == ("compileQueryParser", "function", 1, 3, None)  # exports.x = function
    assert found["etag"] == ("etag", "function", 5, 5, None)  # module.exports.x = arrow function
    assert "parseExtended" in found
    assert rows(parsed("module.exports = function createServer(opts) {\n  return listen(opts);\n};\n")) == {
        "createServer": ("createServer", "function", 1, 3, None)
    }


def test_prototype_methods_are_methods_of_their_constructor_which_is_a_class():
    result = parsed(VIEW)
    found = rows(result)
    assert found["View"] == ("View", "class", 1, 4, None)
    assert found["View.lookup"] == ("lookup", "method", 6, 8, "View")
    assert found["View.render"] == ("render", "method", 10, 12, "View")
    assert found["View.reset"] == ("reset", "method", 3, 3, "View")  # `this.reset = function` in the constructor
    assert "View.prototype" not in found and "prototype" not in {s.name for s in result.symbols}
    assert calls(result, "View.render") == {"this.lookup"}


def test_object_literal_members_held_by_a_name_are_symbols_and_arguments_are_not():
    result = parsed(EXPORTED_OBJECT)
    found = rows(result)
    assert found["parse"] == ("parse", "method", 2, 4, None)  # module.exports = { parse() {} }
    assert found["format"] == ("format", "method", 5, 7, None)  # module.exports = { format: function () {} }
    assert found["nested.deep"] == ("deep", "method", 9, 9, None)
    assert found["Router.handle"][:2] == ("handle", "method")  # Foo.prototype = { ... }
    assert "onDone" not in {s.name for s in result.symbols}  # an options object passed to a call defines nothing
    assert calls(result, "format") == {"join"} and calls(result, "nested.deep") == {"helper"}


def test_typescript_gets_the_same_where_the_syntax_applies():
    source = """
        exports.parse = (text: string): Node[] => split(text);
        Parser.prototype.next = function (this: Parser): Token { return this.scan(); };
        export class Button { onClick = (e: Event): void => { emit(e); }; }
        """
    found = rows(parsed(source, "typescript"))
    assert found["parse"] == ("parse", "function", 1, 1, None)
    assert found["Parser.next"] == ("next", "method", 2, 2, None)  # (Parser is not declared in this file)
    assert found["Button.onClick"] == ("onClick", "method", 3, 3, "Button")


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def test_calls_between_commonjs_functions_become_symbol_edges(tmp_path):
    repo = _write(
        tmp_path / "repo",
        {
            "lib/response.js": RESPONSE,
            "lib/utils.js": UTILS,
            "lib/view.js": VIEW,
            "package.json": '{"name": "web", "main": "lib/response.js"}',
        },
    )
    tables, _ = index_frames(repo, count_tokens=count_tokens, history=0)
    name = dict(zip(tables["symbols"]["symbol_id"], tables["symbols"]["qualified_name"]))
    edges = {
        (name[s], name[d])
        for s, d, k in tables["symbol_edges"][["src_symbol_id", "dst_symbol_id", "kind"]].itertuples(index=False)
        if k == "call"
    }
    assert ("res.redirect", "res.location") in edges  # this.x in a function assigned to res.f: res.x
    assert ("res.redirect", "compileQueryParser") in edges  # utils.f() through `var utils = require('./utils')`
    assert ("View.render", "View.lookup") in edges  # this.x in a prototype method: a method of the class
    assert ("View.lookup", "tryStat") in edges and ("compileQueryParser", "parseExtended") in edges
    files = dict(zip(tables["files"]["file_id"], tables["files"]["path"]))
    imports = {(files[s], files[d]) for s, d in tables["edges"][["src_file_id", "dst_file_id"]].itertuples(index=False)}
    assert ("lib/response.js", "lib/utils.js") in imports


@pytest.fixture(scope="module")
def express_like(tmp_path_factory):
    """A small Express-like package, indexed with `cra index`."""
    root = _write(
        tmp_path_factory.mktemp("cjs") / "web",
        {
            "lib/response.js": RESPONSE,
            "lib/utils.js": UTILS,
            "lib/view.js": VIEW,
            "lib/request.js": "var req = exports = module.exports = {};\n\nreq.get = function header(name) {\n"
            "  return this.headers[name.toLowerCase()];\n};\n",
            "package.json": '{"name": "web", "main": "lib/response.js"}',
        },
    )
    assert main(["index", str(root), "--history", "0"]) == 0
    return root


def test_retrieve_about_an_assigned_function_packages_its_body(express_like, capsys):
    capsys.readouterr()
    task = "res.redirect('back') should use the Referrer header when there is one"
    assert main(["retrieve", task, "--repo", str(express_like), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    symbols = {(f["path"], s["qualified_name"]): s for f in doc["files"] for s in f["symbols"]}
    redirect = symbols[("lib/response.js", "res.redirect")]
    assert redirect["relevance"] == "primary" and redirect["kind"] == "method" and redirect["name"] == "redirect"
    assert doc["task"]["symbol_hints"] == ["res.redirect"]
    assert "var address = this.location(url);" in redirect["body"]


def test_index_warns_once_with_a_count_about_large_files_that_define_no_symbol(tmp_path, capsys):
    # AMD-style modules: all code in anonymous functions passed to define(), which define nothing the parser reads
    amd = (
        "define(['dep'], function (dep) {\n"
        + "".join(f"  dep.step{i}(function () {{ return {i}; }});\n" for i in range(200))
        + "});\n"
    )
    tree = _write(
        tmp_path / "tree",
        {
            "src/a.js": amd,
            "src/b.js": amd,
            "test/c.js": amd,  # (a test is not counted)
            "src/small.js": "define([], function () { return 1; });\n",
            "src/fine.js": "".join(f"function f{i}() {{\n  return {i};\n}}\n" for i in range(80)),
        },
    )
    capsys.readouterr()
    assert main(["index", str(tree), "--history", "0"]) == 0
    err = capsys.readouterr().err
    warned = [line for line in err.splitlines() if "define (almost) no symbol" in line]
    assert len(warned) == 1
    assert warned[0].startswith("warning: 2 source files of 150+ lines") and "src/a.js" in warned[0]
    assert "test/c.js" not in warned[0] and "fine.js" not in warned[0] and "small.js" not in warned[0]
    # said once, by the index: a request does not repeat it (the user cannot act on it there)
    assert main(["retrieve", "step function", "--repo", str(tree), "--budget", "1000"]) == 0
    assert "define (almost) no symbol" not in capsys.readouterr().err
