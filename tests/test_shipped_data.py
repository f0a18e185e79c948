"""The shipped defaults (weights, ranker, conventions, categories, model) come from the data package; a missing one
is one clear error naming it, never a run without it."""

import shutil

import pytest

from cra.drivers.cli.main import main
from cra.drivers.common import shipped
from cra.drivers.retrieval import retriever
from tests.fixture_repo import make_repo


@pytest.fixture
def data_without_weights(tmp_path, monkeypatch):
    """A copy of the data package without weights.toml, importable as `shipped_copy`."""
    copy = tmp_path / "site" / "shipped_copy"
    shutil.copytree(shipped.shipped_path(), copy)
    (copy / "weights.toml").unlink()
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(shipped, "DATA_PACKAGE", "shipped_copy")
    retriever.default_weight_profile.cache_clear()
    yield copy
    retriever.default_weight_profile.cache_clear()


def test_every_default_a_request_reads_is_shipped():
    for parts in [
        ("weights.toml",),
        ("symbol_weights.toml",),
        ("models", "file_ranker.json"),
        ("error_categories.toml",),
        ("conventions", "python.toml"),
        ("models", "minilm-l6-static"),
    ]:
        assert shipped.shipped_path(*parts).exists()


def test_a_missing_shipped_file_is_one_error_naming_it(tmp_path, capsys, data_without_weights):
    repo = make_repo(tmp_path / "repo")
    assert main(["index", str(repo)]) == 0
    capsys.readouterr()
    code = main(["retrieve", "fix the login validation", "--repo", str(repo)])
    err = capsys.readouterr().err
    assert code == 2 and "weights.toml" in err and "Traceback" not in err
