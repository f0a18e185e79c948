"""Monorepo scoping: `cra retrieve --path` (a candidate filter inside the retrieval dataflow) and `.cra.toml`'s
include/exclude globs at index time, through the CLI on the fixture repository."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cra.dataflows.path_globs import matching, normalised_pattern
from cra.drivers.cli.main import main
from tests.contract import assert_json_contract
from tests.fixture_repo import make_repo

TASK = "validate_login accepts short passwords for LDAP users"
NAMED = "Fix the login validation bug in handler.py: validate_login accepts short passwords for LDAP users"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = make_repo(tmp_path_factory.mktemp("scope") / "repo")
    assert main(["index", str(root)]) == 0
    return root


def _retrieve(capsys, repo, *args) -> tuple[dict, str]:
    capsys.readouterr()
    code = main(["retrieve", *args, "--repo", str(repo), "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    assert_json_contract(doc)
    return doc, out.err


def test_globs_name_a_subtree_however_it_is_written():
    paths = pd.Series(["app/auth/handler.py", "app/authz.py", "web/src/api.ts", "lib/gen/x/y.py", "app"])
    for pattern in ("app/auth", "./app/auth/", "app/auth/**", "app/*/handler.py", "**/auth"):
        assert matching(paths, (normalised_pattern(pattern),)).tolist() == [True, False, False, False, False], pattern
    assert matching(paths, ("**/gen/**",)).tolist() == [False, False, False, True, False]
    assert matching(paths, ("app/auth?.py", "web")).tolist() == [False, True, True, False, False]
    for bad in ("/etc", "../other", ""):
        with pytest.raises(ValueError):
            normalised_pattern(bad)


def test_path_ranks_only_files_of_the_subtree_and_says_how_many_were_out(repo, capsys):
    whole, _ = _retrieve(capsys, repo, TASK)
    assert any(r["path"].startswith("app/auth/") for r in whole["provenance"]["scope"])  # the match, unscoped
    doc, err = _retrieve(capsys, repo, TASK, "--path", "web", "--path", "server/")
    ranked = [r["path"] for r in doc["provenance"]["scope"]]
    assert ranked and all(p.startswith(("web/", "server/")) for p in ranked), ranked
    assert all(f["path"].startswith(("web/", "server/")) for f in doc["files"])
    scope = doc["provenance"]["path_scope"]
    assert scope["paths"] == ["web", "server"]
    assert scope["files_in_scope"] == 5 and scope["files_out_of_scope"] > 10
    assert f"{scope['files_out_of_scope']:,} out of scope" in err
    absolute, _ = _retrieve(capsys, repo, TASK, "--path", str(repo / "web"), "--path", "server/")
    assert absolute["provenance"]["path_scope"] == scope  # an absolute path inside the repository is the same


def test_expansion_stays_in_scope_but_a_file_the_task_names_is_kept(repo, capsys):
    whole, _ = _retrieve(capsys, repo, NAMED)
    assert {"app/auth/types.py", "app/auth/ldap.py"} <= {r["path"] for r in whole["provenance"]["scope"]}
    doc, err = _retrieve(capsys, repo, NAMED, "--path", "web")
    rows = {r["path"]: r for r in doc["provenance"]["scope"]}
    assert rows["app/auth/handler.py"]["seed"] is True  # named by the task: kept although out of scope
    assert "app/auth/types.py" not in rows and "app/auth/ldap.py" not in rows  # its imports are not pulled in
    assert set(rows) - {"app/auth/handler.py"} <= {"web/src/api.ts", "web/src/login.ts", "web/src/index.ts"}
    assert doc["provenance"]["path_scope"]["named_outside"] == ["app/auth/handler.py"]
    assert "the task names by path: app/auth/handler.py" in err


@pytest.mark.parametrize(
    "path, message",
    [
        ("nowhere", "'nowhere' matches no indexed file"),
        ("build", "'build' matches no indexed file"),  # (.gitignore keeps it out of the index)
        ("../elsewhere", "leaves the repository"),
    ],
)
def test_a_scope_naming_nothing_indexed_is_one_error(repo, capsys, path, message):
    capsys.readouterr()
    assert main(["retrieve", TASK, "--repo", str(repo), "--path", "web", "--path", path]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cra_toml_excludes_at_index_time_and_a_change_is_picked_up(tmp_path, capsys):
    root = make_repo(tmp_path / "r")
    (root / ".cra.toml").write_text('[index]\nexclude = ["web/**", "**/billing"]\n')
    assert main(["index", str(root)]) == 0
    out = capsys.readouterr().out
    assert "left out by .cra.toml (include/exclude): 5 files, e.g. app/billing/__init__.py" in out
    doc, _ = _retrieve(capsys, root, "the login form of the web session")
    assert not [r for r in doc["provenance"]["scope"] if r["path"].startswith(("web/", "app/billing/"))]
    (root / ".cra.toml").write_text('[index]\ninclude = ["web", "app/auth"]\n')  # the next index must see it
    assert main(["index", str(root)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("indexed 7 files")  # 3 web files, 4 app/auth files
    assert "nothing changed" not in out


@pytest.mark.parametrize(
    "text, message",
    [
        ("[index\n", "is not valid TOML"),
        ('[index]\nexclud = ["web"]\n', "unknown key 'index.exclud'"),
        ('[indexing]\nexclude = ["web"]\n', "unknown key 'indexing'"),
        ('exclude = ["web"]\n', "'exclude' must go under the table [index]"),
        ('[index]\nexclude = "web"\n', "'index.exclude' must be a list of path globs"),
        ('[index]\ninclude = ["/abs"]\n', "'index.include': '/abs' is absolute"),
    ],
)
def test_a_bad_cra_toml_is_one_error_naming_the_file_and_the_key(tmp_path, capsys, text, message):
    root = make_repo(tmp_path / "r", git=False)
    (root / ".cra.toml").write_text(text)
    assert main(["index", str(root)]) == 2
    err = capsys.readouterr().err
    assert ".cra.toml" in err and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
