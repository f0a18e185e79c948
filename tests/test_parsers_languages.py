"""C, C++, C#, Ruby and PHP parsers (tree-sitter): symbols, signatures, docs, references, imports, and their edges."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd

from cra.dataflows.index import discovery
from cra.dataflows.index import edges as edges_module
from cra.dataflows.index.parsers import PARSED_LANGUAGES, language_of, parse_source
from cra.dataflows.index.parsers.models import ParsedComment, ParsedFile, ParsedImport
from cra.drivers.common.tokens import count_tokens
from cra.drivers.index.indexer import index_frames


def parsed(language: str, source: str) -> ParsedFile:
    result = parse_source(language, textwrap.dedent(source).lstrip("\n"))
    assert result is not None
    return result


def symbol_rows(result: ParsedFile) -> list[tuple]:
    return [(s.qualified_name, s.kind, s.start_line, s.end_line, s.parent) for s in result.symbols]


def symbol(result: ParsedFile, qualified_name: str):
    return next(s for s in result.symbols if s.qualified_name == qualified_name)


def references_of(result: ParsedFile, qualified_name: str) -> set[tuple[str, str]]:
    idx = [s.qualified_name for s in result.symbols].index(qualified_name)
    return {(r.name, r.kind) for r in result.references if r.symbol == idx}


C = """
#include "util.h"
#include <stdio.h>
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define LIMIT 10

typedef struct {
    int x, y;
} Point;

struct node { struct node *next; };
enum color { RED, GREEN };
int make(void);
static int helper(int v);

/** Adds two numbers; must not overflow because of legacy callers. */
int add(int a, int b)
{
    // clamp before the sum, see issue #42
    return helper(a) + MAX(a, b) + ops->get(a);
}
"""


def test_c_symbols_kinds_lines_signatures_and_docs():
    result = parsed("c", C)
    assert result.error is None
    assert symbol_rows(result) == [
        ("MAX", "function", 3, 3, None),
        ("LIMIT", "constant", 4, 4, None),
        ("Point", "class", 6, 8, None),
        ("node", "class", 10, 10, None),
        ("color", "enum", 11, 11, None),
        ("make", "function", 12, 12, None),  # a prototype (header API); the static forward declaration is not
        ("add", "function", 16, 20, None),
    ]
    add = symbol(result, "add")
    assert add.signature == "int add(int a, int b)"
    assert add.docstring == "Adds two numbers; must not overflow because of legacy callers."
    assert symbol(result, "MAX").signature == "#define MAX(a, b)"
    assert symbol(result, "Point").signature == "typedef struct"


def test_c_quoted_includes_calls_and_comments():
    result = parsed("c", C)
    assert result.imports == [ParsedImport(target="util.h", line=1)]  # <stdio.h> is a system header
    assert references_of(result, "add") == {("helper", "call"), ("MAX", "call"), ("ops.get", "call")}
    assert ParsedComment(line=18, text="clamp before the sum, see issue #42", symbol=6) in result.comments


CPP = """
#include "shape.hpp"
namespace geo {
/// A circle.
class Circle : public Shape, private Base<int> {
 public:
  double area() const override;
};

double Circle::area() const {
  return detail::clamp(r_) * std::sqrt(r_) + this->scale() + ptr->go();
}
}  // namespace geo

void geo::Circle::draw() { auto s = new Shape(); }

template <typename T>
T biggest(T a, T b) { return a > b ? a : b; }
"""


def test_cpp_namespaces_and_out_of_line_methods_qualify_names():
    result = parsed("cpp", CPP)
    assert result.error is None
    assert symbol_rows(result) == [
        ("geo.Circle", "class", 4, 7, None),
        ("geo.Circle.area", "method", 6, 6, 0),
        ("geo.Circle.area", "method", 9, 11, 0),  # `Circle::area` defined out of line, parented to its class
        ("geo.Circle.draw", "method", 14, 14, 0),
        ("biggest", "function", 16, 17, None),
    ]
    circle = symbol(result, "geo.Circle")
    assert (circle.signature, circle.docstring) == ("class Circle : public Shape, private Base<int>", "A circle.")
    assert symbol(result, "biggest").signature == "template <typename T> T biggest(T a, T b)"
    assert symbol(result, "geo.Circle.draw").docstring is None  # `}  // namespace geo` is not its doc


def test_cpp_bases_calls_and_includes():
    result = parsed("cpp", CPP)
    assert {("Shape", "base"), ("Base", "base")} <= references_of(result, "geo.Circle")
    assert result.references[[r.name for r in result.references].index("detail.clamp")].symbol == 2
    assert {("detail.clamp", "call"), ("std.sqrt", "call"), ("this.scale", "call"), ("ptr.go", "call")} <= {
        (r.name, r.kind) for r in result.references if r.symbol == 2
    }
    assert references_of(result, "geo.Circle.draw") == {("Shape", "call")}
    assert [i.target for i in result.imports] == ["shape.hpp"]


def test_cpp_header_with_export_macro_class_is_read_as_cpp():
    header = """
    namespace arrow {
    /// Immutable array.
    class ARROW_EXPORT Array : public Base {
     public:
      /// Whether slot i is null.
      bool IsNull(int i) const;
    };
    }
    """
    result = parsed("c", header)  # `.h` maps to C; the C++ markers switch the grammar
    assert [(s.qualified_name, s.kind, s.parent) for s in result.symbols] == [
        ("arrow.Array", "class", None),
        ("arrow.Array.IsNull", "method", 0),
    ]
    assert symbol(result, "arrow.Array").docstring == "Immutable array."
    assert symbol(result, "arrow.Array.IsNull").docstring == "Whether slot i is null."
    assert ("Base", "base") in references_of(result, "arrow.Array")


def test_c_and_cpp_macros_in_front_of_a_declaration_are_not_its_type_or_scope():
    """Export, inline and attribute macros (`CLI11_INLINE bool App::parse(`, on the line above in C) leave the
    method's scope and the function's lines as they are; a caps type (`FILE *`, `DWORD WINAPI f(`) is kept."""
    cpp = parsed(
        "cpp",
        """
    namespace CLI {
    CLI11_INLINE bool App::_parse_arg(std::vector<std::string> &args, bool local) {
        return local;
    }
    CLI11_NODISCARD CLI11_INLINE std::vector<App *> App::get_subcommands(int filter) { return {}; }
    class App {
      public:
        CLI11_NODISCARD std::size_t count() const { return 1; }
    };
    template <class CharT> CLI11_INLINE void App::parse_char_t(int argc, const CharT *const *argv) {}
    CLI11_INLINE std::string
    App::to_config(bool defaults) const { return {}; }
    }
    """,
    )
    assert [(s.qualified_name, s.kind, s.start_line, s.end_line) for s in cpp.symbols] == [
        ("CLI.App._parse_arg", "method", 2, 4),
        ("CLI.App.get_subcommands", "method", 5, 5),
        ("CLI.App", "class", 6, 9),
        ("CLI.App.count", "method", 8, 8),
        ("CLI.App.parse_char_t", "method", 10, 10),
        ("CLI.App.to_config", "method", 11, 12),
    ]
    c = parsed(
        "c",
        """
    ATTR_RETNONNULL ATTR_MALLOC ATTR_ALLOC_SIZE2(1, 2)
    void* xCalloc(size_t nmemb, size_t size) { return 0; }
    FILE *open_log(const char *path) { return 0; }
    DWORD WINAPI worker(LPVOID arg) { return 0; }
    """,
    )
    assert [(s.qualified_name, s.kind, s.start_line) for s in c.symbols] == [
        ("xCalloc", "function", 2),
        ("open_log", "function", 3),
        ("worker", "function", 4),
    ]


def test_a_cpp_class_with_an_export_macro_keeps_its_first_constructor():
    result = parsed(
        "cpp",
        """
    namespace YAML {
    class YAML_CPP_API Binary {
     public:
      Binary(const unsigned char *data_, std::size_t size_)
          : m_data{}, m_size(size_) {}
      std::size_t size() const { return m_size; }
    };
    }
    """,
    )
    assert [(s.qualified_name, s.kind, s.start_line) for s in result.symbols] == [
        ("YAML.Binary", "class", 2),
        ("YAML.Binary.Binary", "method", 4),
        ("YAML.Binary.size", "method", 6),
    ]
    assert result.error is None


def test_csharp_if_else_method_headers_keep_the_class_and_its_methods():
    """`#if A` / `#else` each opening the same method: the first branch is read, so the class and its methods
    parse (before, the whole file was an error and the methods lost their class)."""
    result = parsed(
        "csharp",
        """
    namespace Serilog.Capturing;

    class PropertyBinder
    {
    #if FEATURE_SPAN
        public int Construct(ReadOnlySpan<object> values)
    #else
        public int Construct(object[] values)
    #endif
        {
            return values.Length;
        }
    }
    """,
    )
    assert [(s.qualified_name, s.kind, s.start_line, s.end_line) for s in result.symbols] == [
        ("Serilog.Capturing.PropertyBinder", "class", 3, 13),
        ("Serilog.Capturing.PropertyBinder.Construct", "method", 6, 12),
    ]
    assert result.error is None


CSHARP = """
using System.Collections.Generic;
using static Acme.Util.Numbers;
using Fmt = Acme.Util.Formatter;

namespace Acme.Shop
{
    /// <summary>A cart.</summary>
    [Serializable]
    public class Cart : BaseCart, IDisposable
    {
        public const int MaxItems = 10;
        public int Count { get; set; }

        /// <summary>Total price.</summary>
        public decimal Total(List<Item> items)
        {
            // round because of legacy clients
            var t = Helper.Sum(items);
            this.Log(t);
            return new Money(t).Value;
        }
    }

    public interface IStore : IBase { void Save(Cart c); }
}
"""


def test_csharp_symbols_with_namespace_properties_and_docs():
    result = parsed("csharp", CSHARP)
    assert result.error is None
    assert symbol_rows(result) == [
        ("Acme.Shop.Cart", "class", 8, 22, None),  # from its [Serializable] attribute
        ("Acme.Shop.Cart.MaxItems", "constant", 11, 11, 0),
        ("Acme.Shop.Cart.Count", "method", 12, 12, 0),
        ("Acme.Shop.Cart.Total", "method", 15, 21, 0),
        ("Acme.Shop.IStore", "interface", 24, 24, None),
        ("Acme.Shop.IStore.Save", "method", 24, 24, 4),
    ]
    cart = symbol(result, "Acme.Shop.Cart")
    assert (cart.signature, cart.docstring, cart.decorators) == (
        "public class Cart : BaseCart, IDisposable",
        "A cart.",
        ("Serializable",),
    )
    assert symbol(result, "Acme.Shop.Cart.Total").signature == "public decimal Total(List<Item> items)"
    assert symbol(result, "Acme.Shop.Cart.Total").docstring == "Total price."


def test_csharp_bases_calls_usings_and_file_scoped_namespace():
    result = parsed("csharp", CSHARP)
    assert references_of(result, "Acme.Shop.Cart") == {("BaseCart", "base"), ("IDisposable", "base")}
    assert references_of(result, "Acme.Shop.Cart.Total") == {
        ("Helper.Sum", "call"),
        ("this.Log", "call"),
        ("Money", "call"),
    }
    assert references_of(result, "Acme.Shop.IStore") == {("IBase", "base")}
    assert [(i.target, i.names) for i in result.imports] == [
        ("System.Collections.Generic", ()),
        ("Acme.Util.Numbers", ("*",)),
        ("Acme.Util", ("Formatter as Fmt",)),
    ]
    scoped = parsed("csharp", "namespace Acme.Web;\nclass Page { void Render() { } }\n")
    assert [s.qualified_name for s in scoped.symbols] == ["Acme.Web.Page", "Acme.Web.Page.Render"]


RUBY = """
require "json"
require_relative "../lib/helper"

module Shop
  # A cart.
  # Holds items.
  class Cart < Base::Model
    include Enumerable
    LIMIT = 10

    # Total price.
    def total(tax = 0)
      helper(items)
      Helper.round(sum)
      self.validate!
      Receipt.new(tax)
    end

    def self.build(*args)
      new(*args)
    end
  end
end

class Shop::Order < Cart; end
"""


def test_ruby_modules_classes_methods_and_singleton_methods():
    result = parsed("ruby", RUBY)
    assert result.error is None
    assert symbol_rows(result) == [
        ("Shop", "class", 4, 23, None),
        ("Shop.Cart", "class", 7, 22, 0),
        ("Shop.Cart.LIMIT", "constant", 9, 9, 1),
        ("Shop.Cart.total", "method", 12, 17, 1),
        ("Shop.Cart.build", "method", 19, 21, 1),
        ("Shop.Order", "class", 25, 25, 0),
    ]
    cart = symbol(result, "Shop.Cart")
    assert (cart.signature, cart.docstring) == ("class Cart < Base::Model", "A cart.\nHolds items.")
    total = symbol(result, "Shop.Cart.total")
    assert (total.signature, total.docstring) == ("def total(tax = 0)", "Total price.")


def test_ruby_bases_mixins_calls_and_requires():
    result = parsed("ruby", RUBY)
    assert references_of(result, "Shop.Cart") == {("Base.Model", "base"), ("Enumerable", "base")}
    assert references_of(result, "Shop.Cart.total") == {
        ("helper", "call"),
        ("Helper.round", "call"),
        ("self.validate!", "call"),
        ("Receipt", "call"),  # `Receipt.new(...)` constructs a Receipt
    }
    assert references_of(result, "Shop.Order") == {("Cart", "base")}
    assert result.imports == [
        ParsedImport(target="json", line=1),
        ParsedImport(target="../lib/helper", level=1, line=2),  # require_relative: next to this file
    ]
    assert ParsedComment(line=11, text="Total price.", symbol=1) in result.comments


PHP = """
<?php
namespace App\\Models;

use App\\Support\\Str;
use Illuminate\\Database\\Eloquent\\{Model, Builder as B};
require_once __DIR__ . '/../bootstrap.php';

/**
 * A user.
 */
#[Entity]
final class User extends Model implements Jsonable
{
    use HasFactory;
    const LIMIT = 10;

    /** Full name. */
    public function fullName(int $x): string
    {
        // trim because of legacy rows
        $this->save();
        helper($x);
        return Str::upper((new Formatter($x))->format());
    }
}

interface Jsonable { public function toJson(): string; }
trait Greets { function hi() {} }
function top(): void {}
"""


def test_php_symbols_with_namespace_signature_and_doc():
    result = parsed("php", PHP)
    assert result.error is None
    assert symbol_rows(result) == [
        ("App.Models.User", "class", 11, 25, None),  # from its #[Entity] attribute
        ("App.Models.User.LIMIT", "constant", 15, 15, 0),
        ("App.Models.User.fullName", "method", 18, 24, 0),
        ("App.Models.Jsonable", "interface", 27, 27, None),
        ("App.Models.Jsonable.toJson", "method", 27, 27, 3),
        ("App.Models.Greets", "class", 28, 28, None),
        ("App.Models.Greets.hi", "method", 28, 28, 5),
        ("App.Models.top", "function", 29, 29, None),
    ]
    user = symbol(result, "App.Models.User")
    assert (user.signature, user.docstring, user.decorators) == (
        "final class User extends Model implements Jsonable",
        "A user.",
        ("Entity",),
    )
    full_name = symbol(result, "App.Models.User.fullName")
    assert (full_name.signature, full_name.docstring) == ("public function fullName(int $x): string", "Full name.")


def test_php_bases_traits_calls_and_imports():
    result = parsed("php", PHP)
    assert references_of(result, "App.Models.User") == {
        ("Model", "base"),
        ("Jsonable", "base"),
        ("HasFactory", "base"),
    }
    assert references_of(result, "App.Models.User.fullName") == {
        ("this.save", "call"),
        ("helper", "call"),
        ("Str.upper", "call"),
        ("Formatter", "call"),
    }
    assert [(i.target, i.names, i.level) for i in result.imports] == [
        ("App.Support", ("Str",), 0),
        ("Illuminate.Database.Eloquent", ("Model", "Builder as B"), 0),
        ("./../bootstrap.php", (), 1),
    ]
    assert ParsedComment(line=20, text="trim because of legacy rows", symbol=2) in result.comments


def test_new_languages_are_parsed_and_their_test_files_recognised():
    assert {"c", "cpp", "csharp", "ruby", "php"} <= PARSED_LANGUAGES
    assert [language_of(p) for p in ("a.c", "a.h", "a.cc", "A.cs", "a.rb", "a.php", "Rakefile")] == [
        "c",
        "c",
        "cpp",
        "csharp",
        "ruby",
        "php",
        "ruby",
    ]
    tests = [
        "test_util.c",
        "src/util_test.cc",
        "spec/user_spec.rb",
        "lib/user_test.rb",
        "app/UserTest.php",
        "Shop/CartTests.cs",
        "Shop/CartTest.cs",
    ]
    others = ["src/util.c", "lib/latest.rb", "app/Contest.php", "Shop/Cart.cs"]
    source_files = pd.DataFrame({"path": tests + others, "data": [b"x\n"] * len(tests + others)}).assign(size=2)
    previous = discovery.previous_files(None)
    decoded = discovery.decoded_files(source_files, previous, discovery.previous_content_ids(None))
    facts = discovery.file_facts(decoded, [], [], previous)
    assert dict(zip(facts["path"], facts["is_test"])) == {**dict.fromkeys(tests, True), **dict.fromkeys(others, False)}


def _bindings(files: list[tuple[str, str]], imports: list[tuple], symbols: list[tuple[str, str]] = ()) -> set:
    """(src path, dst path, local, member) bindings for hand-written files, import rows and top-level symbols."""
    frame = pd.DataFrame(files, columns=["path", "language"]).assign(
        file_id=lambda f: range(len(f)), module=lambda f: f["path"], package=lambda f: f["path"].str.rpartition("/")[0]
    )
    ids = dict(zip(frame["path"], frame["file_id"]))
    kb_imports = pd.DataFrame(
        [(ids[src], target, list(names), level, 1) for src, target, names, level in imports],
        columns=["file_id", "target", "names", "level", "line"],
    )
    kb_symbols = pd.DataFrame(
        [(ids[path], qualified, None) for path, qualified in symbols],
        columns=["file_id", "qualified_name", "parent_id"],
    )
    bindings = edges_module.import_bindings(frame, kb_imports, {}, kb_symbols)
    path = dict(zip(frame["file_id"], frame["path"]))
    rows = bindings[["file_id", "dst_file_id", "local", "member"]].astype(object).itertuples(index=False)
    return {(path[s], path[d], None if pd.isna(lo) else lo, None if pd.isna(m) else m) for s, d, lo, m in rows}


def test_path_imports_resolve_next_to_the_file_then_by_suffix():
    files = [
        ("src/a.c", "c"),
        ("src/util.h", "c"),
        ("include/lib/util.h", "c"),
        ("include/lib/x.h", "c"),
        ("lib/shop/cart.rb", "ruby"),
        ("lib/shop/helper.rb", "ruby"),
        ("app/boot.php", "php"),
        ("app/x/y.php", "php"),
    ]
    found = _bindings(
        files,
        [
            ("src/a.c", "util.h", (), 0),  # the header next to the includer wins over include/lib/util.h
            ("src/a.c", "lib/x.h", (), 0),  # -I include/: by path suffix
            ("src/a.c", "missing.h", (), 0),
            ("lib/shop/cart.rb", "shop/helper", (), 0),  # require: load path (lib/)
            ("lib/shop/cart.rb", "./helper", (), 1),  # require_relative
            ("app/x/y.php", "./../boot.php", (), 1),  # require __DIR__ . '/../boot.php'
        ],
    )
    assert {(s, d) for s, d, _, _ in found} == {
        ("src/a.c", "src/util.h"),
        ("src/a.c", "include/lib/x.h"),
        ("lib/shop/cart.rb", "lib/shop/helper.rb"),
        ("app/x/y.php", "app/boot.php"),
    }


def test_namespace_imports_resolve_through_declared_classes():
    files = [
        ("app/Models/User.php", "php"),
        ("app/Http/UserController.php", "php"),
        ("Shop/Cart.cs", "csharp"),
        ("Shop/Money.cs", "csharp"),
        ("Web/Page.cs", "csharp"),
    ]
    symbols = [
        ("app/Models/User.php", "App.Models.User"),
        ("Shop/Cart.cs", "Acme.Shop.Cart"),
        ("Shop/Money.cs", "Acme.Shop.Money"),
    ]
    found = _bindings(
        files,
        [
            ("app/Http/UserController.php", "App.Models", ("User as U",), 0),
            ("Web/Page.cs", "Acme.Shop", (), 0),
            ("Web/Page.cs", "System.Linq", (), 0),
        ],
        symbols,
    )
    assert found == {
        ("app/Http/UserController.php", "app/Models/User.php", "U", "User"),
        ("Web/Page.cs", "Shop/Cart.cs", None, None),
        ("Web/Page.cs", "Shop/Money.cs", None, None),
    }


def _indexed(root: Path, files: dict[str, str]) -> dict:
    """The KB tables of a tree holding `files` (path -> text)."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return index_frames(root, history=0, count_tokens=count_tokens)[0]


def test_index_a_tiny_c_project_links_includes_and_calls(tmp_path: Path):
    files = {
        "src/util.h": "#ifndef UTIL_H\n#define UTIL_H\n/* Rounds to cents. */\nint round_cents(int v);\n#endif\n",
        "src/util.c": '#include "util.h"\n\nint round_cents(int v)\n{\n    return v / 100 * 100;\n}\n',
        "src/a.c": '#include "util.h"\n#include <stdio.h>\n\nstatic int total(int v)\n{\n    return round_cents(v);\n}\n'
        "\nint main(void)\n{\n    return total(1);\n}\n",
    }
    tables = _indexed(tmp_path, files)
    symbols = tables["symbols"]
    path_of = dict(zip(tables["files"]["file_id"], tables["files"]["path"]))
    defined = {(path_of[f], q, k) for f, q, k in zip(symbols["file_id"], symbols["qualified_name"], symbols["kind"])}
    assert {
        ("src/util.h", "round_cents", "function"),
        ("src/util.c", "round_cents", "function"),
        ("src/a.c", "total", "function"),
        ("src/a.c", "main", "function"),
    } <= defined
    edges = {(path_of[s], path_of[d]) for s, d in zip(tables["edges"]["src_file_id"], tables["edges"]["dst_file_id"])}
    assert edges == {("src/a.c", "src/util.h"), ("src/util.c", "src/util.h")}
    name = dict(zip(symbols["symbol_id"], symbols["qualified_name"]))
    calls = {
        (name[s], name[d])
        for s, d in zip(tables["symbol_edges"]["src_symbol_id"], tables["symbol_edges"]["dst_symbol_id"])
    }
    assert ("main", "total") in calls


def test_csharp_calls_resolve_to_types_of_other_namespaces_and_directories(tmp_path: Path):
    """C# names a type of its own or an enclosing namespace unimported, and those of a `using`ed one, from any
    directory: such calls become symbol edges (before, only a narrow `using` bound files, and no call crossed them)."""
    files = {
        "src/Acme/Money.cs": "namespace Acme\n{\n    public static class Money\n    {\n"
        "        public static int Round(int v) { return v / 100 * 100; }\n    }\n}\n",
        "src/Acme/Shop/Billing/Cart.cs": "using Acme.Taxes;\n\nnamespace Acme.Shop.Billing;\n\npublic class Cart\n{\n"
        "    public int Total(int v) { return Money.Round(v) + Tax.Of(v); }\n}\n",
        "src/Acme/Tax/Tax.cs": "namespace Acme.Taxes;\n\npublic static class Tax\n{\n"
        "    public static int Of(int v) { return v / 5; }\n}\n",
    }
    tables = _indexed(tmp_path, files)
    symbols = tables["symbols"]
    name = dict(zip(symbols["symbol_id"], symbols["qualified_name"]))
    calls = {
        (name[s], name[d])
        for s, d in zip(tables["symbol_edges"]["src_symbol_id"], tables["symbol_edges"]["dst_symbol_id"])
    }
    assert ("Acme.Shop.Billing.Cart.Total", "Acme.Money.Round") in calls
    assert ("Acme.Shop.Billing.Cart.Total", "Acme.Taxes.Tax.Of") in calls
