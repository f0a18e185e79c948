"""The symbol signal matrix and ranking, each signal on a small repository indexed as a user would."""

from __future__ import annotations

import json
import textwrap

import pytest

from cra.drivers.cli.main import main
from cra.drivers.index.indexer import index_repository
from cra.drivers.kb.store import default_kb_dir, load_kb
from cra.drivers.retrieval.retriever import retrieve
from tests.contract import assert_json_contract

FILES = {
    "shop/models.py": '''
        class Base:
            """A stored record."""

            def save(self, force=False):
                """Write the record to the store."""
                if self.pk is None and not force:
                    raise ValueError("cannot save a record without a primary key")
                return self.store.put(self.pk, self.values())

            def values(self):
                return dict(self.__dict__)


        class Order(Base):
            """A customer's order of items."""

            def total(self):
                return sum(item.price * item.quantity for item in self.items)

            def add_item(self, item):
                self.items.append(item)
                return self.total()


        def discount_for(order, code):
            """The discount a coupon code gives an order."""
            if code.startswith("VIP"):
                return order.total() * 0.1
            return 0
        ''',
    "shop/parsing.py": '''
        def parse_header(line):
            """Split an order file's header line into field names."""
            fields = [f.strip() for f in line.split(",")]
            if not all(fields):
                raise ValueError("empty field name in the order header")
            return fields


        def parse_row(header, line):
            values = line.split(",")
            return dict(zip(header, values))


        def read_orders(text):
            lines = text.splitlines()
            header = parse_header(lines[0])
            return [parse_row(header, line) for line in lines[1:]]
        ''',
    "shop/report.py": """
        from shop.parsing import read_orders


        def monthly_report(text):
            orders = read_orders(text)
            return len(orders)


        def format_money(value):
            return f"{value:.2f}"
        """,
    "tests/test_parsing.py": """
        from shop.parsing import parse_header, read_orders


        def test_header_with_trailing_comma():
            assert parse_header("a,b,") == ["a", "b"]


        def test_read_orders():
            assert read_orders("a\\n1") == [{"a": "1"}]
        """,
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("shop")
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text).lstrip())
    index_repository(root)
    return str(root)


@pytest.fixture(scope="module")
def kb(repo):
    return load_kb(default_kb_dir(repo))


def ranking(kb, task: str):
    out = retrieve(kb, task, budget=4096, outputs=("symbol_ranking",)).outputs["symbol_ranking"]
    return out.assign(key=out["path"] + "::" + out["qualified_name"]).set_index("key")


def test_one_row_per_source_definition_and_every_signal_in_range(kb):
    ranked = ranking(kb, "Order totals are wrong when an item has no quantity")
    assert not ranked.index.str.startswith("tests/").any()  # test files are ranked through the tests signal only
    assert {"shop/models.py::Order.total", "shop/parsing.py::parse_header", "shop/models.py::Base"} <= set(ranked.index)
    signals = [
        "lexical",
        "title",
        "name",
        "mention",
        "trace",
        "message",
        "calls",
        "hierarchy",
        "tests",
        "file",
        "file_top",
        "lexical_in_file",
        "size",
        "callable",
    ]
    assert ((ranked[signals] >= 0) & (ranked[signals] <= 1)).all().all()
    assert list(ranked["rank"]) == list(range(1, len(ranked) + 1))
    assert ranked["score"].is_monotonic_decreasing


def test_the_title_names_the_function_when_the_body_is_about_something_else(kb):
    task = (
        "Coupon discount missing for VIP codes\n\nOur nightly job reads the order file: it splits the header line "
        "into field names, strips each field, checks for an empty field name, and splits every line into values. "
        "The header fields are parsed, the rows are parsed, the field names are stripped."
    )
    ranked = ranking(kb, task)
    assert ranked.at["shop/parsing.py::parse_header", "lexical"] == 1.0  # the body's words point at the parser
    assert ranked.at["shop/models.py::discount_for", "title"] == 1.0
    assert ranked.index[0] == "shop/models.py::discount_for"


def test_a_qualified_mention_ranks_that_method_first(kb):
    ranked = ranking(kb, "`Order.add_item` should not recompute the total every time")
    assert ranked.index[0] == "shop/models.py::Order.add_item"
    assert ranked.at["shop/models.py::Order.add_item", "mention"] == 1.0


def test_an_installed_package_trace_frame_maps_to_the_repository_file_and_line(kb):
    trace = textwrap.dedent("""
        Traceback (most recent call last):
          File "/home/u/app.py", line 3, in <module>
          File "/usr/lib/python3/site-packages/shop/parsing.py", line 16, in read_orders
          File "/usr/lib/python3/site-packages/shop/parsing.py", line 4, in parse_header
        ValueError: boom
        """)
    ranked = ranking(kb, "Reading this file crashes\n" + trace)
    assert ranked.at["shop/parsing.py::parse_header", "trace"] == 1.0  # innermost frame, its line inside
    assert ranked.at["shop/parsing.py::read_orders", "trace"] == 0.5  # the frame above it
    assert ranked.at["shop/parsing.py::parse_row", "trace"] == 0.0
    assert ranked.index[0] == "shop/parsing.py::parse_header"


def test_a_quoted_error_message_finds_the_function_that_raises_it(kb):
    ranked = ranking(kb, 'Importing fails with ValueError: empty field name in the order header "Qty"')
    assert ranked.at["shop/parsing.py::parse_header", "message"] == 1.0
    assert ranked.loc[ranked.index != "shop/parsing.py::parse_header", "message"].eq(0).all()


def test_a_class_the_task_names_brings_its_base_class_method(kb):
    ranked = ranking(kb, "Order.save writes orders without their items")
    assert ranked.at["shop/models.py::Base.save", "hierarchy"] == 1.0  # Order has no save of its own
    assert ranked.at["shop/models.py::Base", "hierarchy"] == 1.0
    assert ranked.at["shop/models.py::discount_for", "hierarchy"] == 0.0


def test_a_named_test_points_at_what_it_calls(kb):
    ranked = ranking(kb, "test_header_with_trailing_comma fails since the last release")
    assert ranked.at["shop/parsing.py::parse_header", "tests"] == 1.0
    assert ranked.at["shop/parsing.py::read_orders", "tests"] == 0.0


def test_call_graph_neighbours_of_a_mentioned_function_are_near(kb):
    ranked = ranking(kb, "read_orders() drops the last line")
    assert ranked.at["shop/parsing.py::parse_header", "calls"] == 0.5
    assert ranked.at["shop/parsing.py::parse_row", "calls"] == 0.5
    assert ranked.at["shop/parsing.py::read_orders", "calls"] == 0.0  # the anchor itself
    ranked = ranking(kb, "parse_row() drops empty values")
    assert ranked.at["shop/parsing.py::read_orders", "calls"] == 0.5  # its caller
    assert ranked.at["shop/parsing.py::parse_header", "calls"] == 1 / 3  # two hops: parse_row <- read_orders -> it


def test_json_provenance_carries_the_symbol_ranking_and_primaries_say_why(repo, capsys):
    assert main(["retrieve", "`Order.add_item` recomputes the total", "--repo", repo, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert_json_contract(doc)
    top = doc["provenance"]["symbol_ranking"][0]
    assert (top["path"], top["symbol"], top["rank"]) == ("shop/models.py", "Order.add_item", 1)
    assert set(top["signals"]) >= {"mention", "trace", "message", "hierarchy"}
    primary = [s for s in doc["provenance"]["symbols"] if s["symbol"] == "Order.add_item"]
    assert primary and primary[0]["tier"] == "primary" and primary[0]["reason"].startswith("ranked #1")


def test_budget_auto_keeps_only_the_bodies_near_the_best_and_says_where_it_stopped(repo, capsys):
    assert (
        main(
            [
                "retrieve",
                "`Order.add_item` recomputes the total",
                "--repo",
                repo,
                "--budget",
                "auto",
                "--format",
                "json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert_json_contract(doc)
    stop = doc["provenance"]["auto_budget"]
    assert stop["bodies"] >= 1 and stop["reason"]
    bodies = [s for f in doc["files"] for s in f["symbols"] if s["body"]]
    assert len(bodies) == stop["bodies"]
    assert "Order.add_item" in [s["qualified_name"] for s in bodies]
    assert all(s["relevance"] in ("primary", "supporting") for f in doc["files"] for s in f["symbols"])
    assert main(["retrieve", "`Order.add_item` recomputes the total", "--repo", repo, "--format", "json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert doc["token_count"] < full["token_count"]


def test_a_budget_that_is_neither_a_number_nor_auto_is_one_line(repo, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["retrieve", "anything", "--repo", repo, "--budget", "lots"])
    assert exc.value.code == 2
    assert "auto" in capsys.readouterr().err


def test_a_go_struct_beside_its_methods_keeps_its_body(tmp_path, capsys):
    """Go methods name their struct as parent but lie outside its braces: the struct is no holder of theirs."""
    (tmp_path / "command.go").write_text(
        textwrap.dedent("""
        package cli

        // Command is one command line command.
        type Command struct {
        	Name         string
        	ArgValidator func(args []string) error
        }

        func (c *Command) checkHelp() bool {
        	return c.Name == "help"
        }
        """).lstrip()
    )
    index_repository(tmp_path)
    assert (
        main(
            [
                "retrieve",
                "Command needs an ArgValidator hook that checkHelp and run call first",
                "--repo",
                str(tmp_path),
                "--format",
                "json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    depth = {s["symbol"]: (s["tier"], s["depth"]) for s in doc["provenance"]["symbols"]}
    assert depth["Command"] == ("primary", "body") and depth["Command.checkHelp"] == ("primary", "body")


def test_a_typescript_type_alias_and_interface_are_ranked_like_functions(tmp_path):
    """Fixes change type definitions too: a TS type alias or interface the task is about is a ranked candidate."""
    (tmp_path / "types.ts").write_text(
        textwrap.dedent("""
        export type WritableDraft<T> = {
        	-readonly [K in keyof T]: Draft<T[K]>
        }

        export interface PatchListener {
        	(patches: Patch[], inversePatches: Patch[]): void
        }

        export function freeze<T>(value: T): T {
        	return Object.freeze(value)
        }
        """).lstrip()
    )
    index_repository(tmp_path)
    kb = load_kb(default_kb_dir(tmp_path))
    ranked = ranking(kb, "improve type inference for WritableDraft of tuples")
    assert ranked.index[0] == "types.ts::WritableDraft"
    assert (
        ranked.loc["types.ts::WritableDraft", "callable"] == 0.0 and ranked.loc["types.ts::freeze", "callable"] == 1.0
    )
    assert ranking(kb, "PatchListener should receive the inverse patches").index[0] == "types.ts::PatchListener"


def test_a_method_the_task_names_ranks_above_its_big_class_unless_the_task_is_about_the_class(tmp_path):
    """A class's size and the union of its members' words lift it over the method the task is about; it ranks just
    below that member when the member scores close to it (MEMBER_SHARE), and stays first when none does (its
    constructor, named like it, does not count)."""
    headers = "".join(
        textwrap.dedent(f"""
          public String header{i}(Response response) {{
            String value = response.headers().get("X-Header-{i}");
            if (value == null) {{
              return "missing header {i} in the response";
            }}
            return value.trim() + " status " + status;
          }}
        """)
        for i in range(25)
    )
    source = tmp_path / "src" / "main" / "java" / "feign" / "FeignException.java"
    source.parent.mkdir(parents=True)
    source.write_text(
        textwrap.dedent("""
        package feign;

        public class FeignException extends RuntimeException {
          private final int status;
          private byte[] responseBody;

          protected FeignException(int status, String message) {
            super(message);
            this.status = status;
          }

          public int status() {
            return status;
          }

          public byte[] responseBody() {
            return responseBody;
          }

          static FeignException errorReading(Request request, Response response, IOException cause) {
            return new FeignException(response.status(), cause.getMessage(), request.body(), request.headers());
          }
        """).lstrip()
        + headers
        + "}\n"
    )
    (source.parent / "Retryer.java").write_text(
        textwrap.dedent("""
        package feign;

        public interface Retryer {
          void continueOrPropagate(RetryableException e);

          class Default implements Retryer {
            int attempt;

            public void continueOrPropagate(RetryableException e) {
              if (attempt++ >= 5) {
                throw e;
              }
            }
          }
        }
        """).lstrip()
    )
    index_repository(tmp_path, history=0)
    kb = load_kb(default_kb_dir(tmp_path))
    path = "src/main/java/feign/FeignException.java::"
    about_the_method = ranking(kb, "Return response body in FeignException from errorReading")
    assert list(about_the_method.index[:2]) == [path + "FeignException.errorReading", path + "FeignException"]
    assert ranking(kb, "Make FeignException serializable").index[0] == path + "FeignException"


def test_an_enum_the_task_names_is_shown_whole_with_its_constants(tmp_path, capsys):
    """Its methods alone (primaries) would hide the constants; ranked among the best itself, it may take the room of
    less relevant pieces to be shown whole."""
    members = "".join(
        f"    default Connection requestBody{i}(String body) {{\n        // a request method with a body\n"
        f"        return method(Method.POST).body(body, {i});\n    }}\n\n"
        for i in range(30)
    )
    (tmp_path / "Connection.java").write_text(
        "package org.example;\n\npublic interface Connection {\n"
        + members
        + textwrap.indent(
            textwrap.dedent("""
            enum Method {
                GET(false),
                POST(true),
                HEAD(false);

                private final boolean hasBody;

                Method(boolean hasBody) {
                    this.hasBody = hasBody;
                }

                public final boolean hasBody() {
                    return hasBody;
                }
            }
            """),
            "    ",
        )
        + "}\n"
    )
    index_repository(tmp_path)
    assert (
        main(
            [
                "retrieve",
                "Connection.Method says whether a request method has a body; HEAD must not send one",
                "--repo",
                str(tmp_path),
                "--budget",
                "1000",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "HEAD(false);" in out and "public final boolean hasBody()" in out


def test_a_closure_never_turns_its_matching_function_into_a_signature(tmp_path, capsys):
    (tmp_path / "options.js").write_text(
        textwrap.dedent("""
        class Command {
          addOption(option) {
            const handleOptionValue = (value) => {
              this.setOptionValue(option.name, value);
            };
            this.options.push(option);
            this.on('option:' + option.name, handleOptionValue);
            return this;
          }
        }
        module.exports = { Command };
        """).lstrip()
    )
    index_repository(tmp_path)
    assert (
        main(
            [
                "retrieve",
                "addOption: handleOptionValue ignores the option value of a negated option",
                "--repo",
                str(tmp_path),
                "--format",
                "json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    depth = {s["symbol"]: (s["tier"], s["depth"], s.get("inside")) for s in doc["provenance"]["symbols"]}
    assert depth["Command.addOption"] == ("primary", "body", "Command")
    assert depth["Command"] == ("primary", "body", None)  # the budget had room for the class's own lines
    bodies = [s["body"] for f in doc["files"] for s in f["symbols"] if s["body"]]
    assert sum(b.count("const handleOptionValue") for b in bodies) == 1  # the closure once, inside its function
    assert (
        main(
            [
                "retrieve",
                "addOption: handleOptionValue ignores the option value of a negated option",
                "--repo",
                str(tmp_path),
                "--budget",
                "auto",
                "--format",
                "json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    depth = {s["symbol"]: (s["tier"], s["depth"]) for s in doc["provenance"]["symbols"]}
    assert depth["Command.addOption"] == ("primary", "body")
    assert depth["Command"] == ("supporting", "signature")  # with `--budget auto` a class holds its methods


def test_go_and_java_trace_frames_point_at_the_function_holding_the_line(tmp_path):
    (tmp_path / "router").mkdir()
    (tmp_path / "router" / "tree.go").write_text(
        textwrap.dedent("""
        package router

        func insert(path string) int {
        	return len(path)
        }

        func lookup(path string) int {
        	var table map[string]int
        	return table[path] + insert(path)
        }
        """).lstrip()
    )
    (tmp_path / "src" / "main" / "java" / "acme").mkdir(parents=True)
    (tmp_path / "src" / "main" / "java" / "acme" / "Pool.java").write_text(
        textwrap.dedent("""
        package acme;

        public class Pool {
            public int borrow() {
                return take(0);
            }

            private int take(int index) {
                return new int[0][index];
            }
        }
        """).lstrip()
    )
    index_repository(tmp_path)
    kb = load_kb(default_kb_dir(tmp_path))
    go = ranking(
        kb,
        "panic: assignment to entry in nil map\n\ngoroutine 1 [running]:\n"
        "example.com/app/router.lookup(...)\n\t/home/u/src/app/router/tree.go:9 +0x1d\n"
        "main.main()\n\t/home/u/src/app/main.go:12 +0x25",
    )
    assert go.at["router/tree.go::lookup", "trace"] == 1.0 and go.at["router/tree.go::insert", "trace"] == 0.0
    java = ranking(
        kb,
        "java.lang.ArrayIndexOutOfBoundsException: Index 0 out of bounds for length 0\n"
        "\tat acme.Pool.take(Pool.java:9)\n\tat acme.Pool.borrow(Pool.java:5)",
    )
    path = "src/main/java/acme/Pool.java"
    assert java.at[f"{path}::Pool.take", "trace"] == 1.0  # innermost frame first in a Java trace
    assert java.at[f"{path}::Pool.borrow", "trace"] == 0.5
    assert java.index[0] == f"{path}::Pool.take"


RUST_WITH_UNIT_TESTS = """
    pub fn wrap_line(line: &str, width: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = line;
        while rest.len() > width {
            out.push(rest[..width].to_string());
            rest = &rest[width..];
        }
        out.push(rest.to_string());
        out
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn wrapped_line_numbers(line: &str, width: usize) -> usize {
            // a helper of the tests (no #[test] of its own): test code as much as they are
            wrap_line(line, width).len()
        }

        #[test]
        fn test_wrap_long_line_with_line_numbers() {
            // a long line wraps; with line numbers the wrapped line keeps its number
            assert_eq!(wrap_line("long line", 4), vec!["long", " lin", "e"]);
        }

        #[tokio::test]
        async fn wraps_long_line_numbers_side_by_side() {
            assert_eq!(wrap_line("long line numbers", 8).len(), 3);
        }
    }
    """


def test_rust_unit_tests_in_a_source_file_give_way_to_the_code_they_test(tmp_path, capsys):
    """`#[test]` functions and their helpers inside the module they test (`#[cfg(test)] mod tests`) repeat its words:
    they are not ranked as the code to change (data/conventions/rust.toml `tests.attributes`), unless the task names
    them."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "wrapping.rs").write_text(textwrap.dedent(RUST_WITH_UNIT_TESTS).lstrip())
    index_repository(tmp_path)
    task = "a long line wraps wrongly when line numbers are shown"
    assert main(["retrieve", task, "--repo", str(tmp_path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ranked = [s["symbol"] for s in doc["provenance"]["symbol_ranking"]]
    assert ranked == ["wrap_line"]
    tiers = {s["symbol"]: s["tier"] for s in doc["provenance"]["symbols"]}
    assert tiers["wrap_line"] == "primary"
    assert "test_wrap_long_line_with_line_numbers" not in tiers and "wraps_long_line_numbers_side_by_side" not in tiers
    assert "wrapped_line_numbers" not in tiers
    assert (
        main(
            [
                "retrieve",
                f"{task}: `test_wrap_long_line_with_line_numbers` fails",
                "--repo",
                str(tmp_path),
                "--format",
                "json",
            ]
        )
        == 0
    )
    tiers = {s["symbol"]: s["tier"] for s in json.loads(capsys.readouterr().out)["provenance"]["symbols"]}
    assert tiers.get("test_wrap_long_line_with_line_numbers") == "primary"  # named: shown


def test_a_constructor_does_not_take_its_class_name_as_its_own(tmp_path):
    """`PropertyElf(...)` is named as its class: a task naming the class says nothing of the constructor, whose tiny
    body otherwise ranked it first for every task about the class (Java, C#, C++)."""
    source = tmp_path / "src" / "main" / "java" / "pool" / "PropertyElf.java"
    source.parent.mkdir(parents=True)
    source.write_text(
        textwrap.dedent("""
        package pool;

        public final class PropertyElf {
          private PropertyElf() {
            // utility class
          }

          public static void setTargetFromProperties(Object target, Properties properties) {
            properties.forEach((key, value) -> setProperty(target, key.toString(), value));
          }

          private static void setProperty(Object target, String propName, Object propValue) {
            Method writeMethod = findSetter(target, propName);
            if (writeMethod == null) {
              throw new RuntimeException("Property " + propName + " does not exist on target " + target.getClass());
            }
            writeMethod.invoke(target, propValue);
          }
        }
        """).lstrip()
    )
    index_repository(tmp_path, history=0)
    ranked = ranking(load_kb(default_kb_dir(tmp_path)), "PropertyElf fails to set a property whose value is a boolean")
    path = "src/main/java/pool/PropertyElf.java::"
    constructor, method = ranked.loc[path + "PropertyElf.PropertyElf"], ranked.loc[path + "PropertyElf.setProperty"]
    assert constructor["name"] == 0 and constructor["mention"] == 0
    assert ranked.loc[path + "PropertyElf", "mention"] > 0  # the class itself is named
    assert method["rank"] < constructor["rank"]
