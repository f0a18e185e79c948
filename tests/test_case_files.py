"""Case files for `cra evaluate` in every JSON layout (the `seed` example first), and the errors of broken ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cra.drivers.cli.main import main
from cra.drivers.common.errors import CraError
from cra.drivers.evaluation.evaluate import load_cases
from tests.fixture_repo import make_repo

# the reference example of the `seed` case format: verbatim, one pretty-printed object
SEED_EXAMPLE = """{
  "task": "fix the login validation bug when LDAP source is used",
  "expected_files": ["src/auth/handler.py", "src/auth/ldap.py", "tests/test_auth.py"],
  "expected_symbols": ["validate_login", "_validate_ldap", "test_ldap_login"],
  "repo_path": "/path/to/repo"
}
"""
LOGIN = {
    "id": "login",
    "task": "fix the login validation bug when LDAP source is used",
    "expected_files": ["app/auth/handler.py"],
}
INVOICE = {
    "id": "invoice",
    "task": "Invoice total_amount should round to cents",
    "expected_files": ["app/billing/invoice.py"],
}

LAYOUTS = {
    "pretty list": json.dumps([LOGIN, INVOICE], indent=2),
    "compact list": json.dumps([LOGIN, INVOICE]),
    "list on one line after blank lines": "\n\n" + json.dumps([LOGIN, INVOICE]) + "\n\n",
    "jsonl with blank lines": "\n" + json.dumps(LOGIN) + "\n\n\n" + json.dumps(INVOICE) + "\n",
    "jsonl with CRLF": json.dumps(LOGIN) + "\r\n" + json.dumps(INVOICE) + "\r\n",
    "pretty objects one after another": json.dumps(LOGIN, indent=4) + "\n" + json.dumps(INVOICE, indent=4),
    "list with tabs and odd breaks": '[\n\t{"id": "login",\n\t"task": "fix the login validation bug when LDAP source is used",'
    '\n"expected_files":\n["app/auth/handler.py"]}\n,\n' + json.dumps(INVOICE) + "]",
}


def write(tmp_path: Path, text: str, name: str = "cases.json") -> Path:
    path = tmp_path / name
    path.write_text(text, newline="")
    return path


def test_seed_example_layout_is_one_case(tmp_path):
    frame = load_cases(write(tmp_path, SEED_EXAMPLE))
    assert len(frame) == 1
    case = frame.iloc[0]
    assert case["task"] == "fix the login validation bug when LDAP source is used"
    assert case["expected_files"] == ["src/auth/handler.py", "src/auth/ldap.py", "tests/test_auth.py"]
    assert case["expected_symbols"] == ["validate_login", "_validate_ldap", "test_ldap_login"]
    assert case["repo_path"] == "/path/to/repo"


def test_seed_example_as_a_pretty_list_and_with_a_byte_order_mark(tmp_path):
    pretty_list = "[\n" + SEED_EXAMPLE.rstrip() + ",\n" + SEED_EXAMPLE.rstrip().replace("LDAP", "SAML") + "\n]\n"
    frame = load_cases(write(tmp_path, pretty_list))
    assert [t.split()[-4] for t in frame["task"]] == ["LDAP", "SAML"]
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + SEED_EXAMPLE.encode())
    assert load_cases(bom)["task"].tolist() == ["fix the login validation bug when LDAP source is used"]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_layout_reads_the_same_cases(tmp_path, layout):
    frame = load_cases(write(tmp_path, LAYOUTS[layout]))
    assert frame["case_id"].tolist() == ["login", "invoice"]
    assert frame["task"].tolist() == [LOGIN["task"], INVOICE["task"]]
    assert frame["expected_files"].tolist() == [["app/auth/handler.py"], ["app/billing/invoice.py"]]


@pytest.mark.parametrize(
    "text, where",
    [
        # pretty object, comma missing after the task line: the parser stops at the next key
        ('{\n  "task": "fix it"\n  "expected_files": ["a.py"]\n}\n', r"line 3, column 3: Expecting ',' delimiter"),
        # JSONL, second record cut short
        (json.dumps(LOGIN) + '\n{"id": "x", "task": "y", ', r"line 2, column 26: Expecting property name"),
        # pretty list, trailing comma before the closing bracket
        ('[\n  {"task": "a", "expected_files": []},\n]\n', r"line 3, column 1: Expecting value"),
        # text after a complete object that is not JSON
        ('{"task": "a", "expected_files": []}\nthanks!\n', r"line 2, column 1: Expecting value"),
    ],
)
def test_malformed_file_names_file_line_column_and_what_was_expected(tmp_path, text, where):
    with pytest.raises(CraError, match=r"bad\.json: malformed JSON at " + where) as err:
        load_cases(write(tmp_path, text, "bad.json"))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "text, message",
    [
        ("  \n\n", r"is empty"),
        ("[1, 2]", r"case #1 is a JSON number, not an object"),
        ('{"task": "a", "expected_files": []}\n"b"\n', r"case #2 is a JSON string, not an object"),
        ('{"task": 5, "expected_files": []}', r"case #1: field 'task' must be a string, not number"),
        (
            '{"task": "a", "expected_files": {"a.py": 1}}',
            r"field 'expected_files' must be a list of strings, not object",
        ),
        ('{"task": "a", "expected_files": [], "id": [1]}', r"field 'id' must be a string or a number, not list"),
        ('{"task": null, "expected_files": []}', r"field 'task' must be a string, not null"),
        ("[" * 100_000, r"unreadable JSON"),
    ],
)
def test_wrong_shapes_and_types_are_one_line_errors(tmp_path, text, message):
    with pytest.raises(CraError, match=message) as err:
        load_cases(write(tmp_path, text))
    assert "\n" not in str(err.value)


def test_case_file_that_is_not_utf8_or_not_a_file(tmp_path):
    binary = tmp_path / "cases.json"
    binary.write_bytes(b'{"task": "caf\xe9", "expected_files": []}')
    with pytest.raises(CraError, match=r"cases.json is not UTF-8 text \(at byte offset 13\)"):
        load_cases(binary)
    with pytest.raises(CraError, match=r"Cannot read case file .*Check the path"):
        load_cases(tmp_path)


def test_optional_fields_may_be_null(tmp_path):
    frame = load_cases(
        write(tmp_path, '{"task": "a", "expected_files": ["a.py"], "expected_symbols": null, "repo_path": null}')
    )
    assert frame.loc[0, "expected_symbols"] == [] and frame.loc[0, "repo_path"] is None


def test_cli_evaluates_the_seed_example_layout(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CRA_CACHE", str(tmp_path / "cache"))
    repo = make_repo(tmp_path / "repo")
    cases = write(tmp_path, SEED_EXAMPLE.replace("/path/to/repo", str(repo)).replace("src/auth/", "app/auth/"))
    assert main(["evaluate", "--cases", str(cases), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 cases evaluated, 0 skipped" in out
    malformed = write(tmp_path, SEED_EXAMPLE.replace('",\n  "expected_files"', '"\n  "expected_files"'), "broken.json")
    assert main(["evaluate", "--cases", str(malformed), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "broken.json: malformed JSON at line 3, column 3: Expecting ',' delimiter" in err
