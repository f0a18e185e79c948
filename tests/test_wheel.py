"""The built wheel installs like real software: one top-level namespace (`cra`), every shipped data file the code
reads, no research tooling or benchmarks, and an installed `cra` that answers outside the checkout.

The wheel is built (or taken from CRA_TEST_WHEEL) and installed once into a fresh venv whose dependencies come from
this environment (no network); every command then runs from a folder outside the checkout, without PYTHONPATH, with
CRA_HOME and CRA_CACHE in tmp: index, retrieve (markdown, prompt, json, --budget auto; the json equal to the
checkout's), memory, attempt / retry / report / guide, findings (recalled by the shipped model), diagnose and `serve`
driven by the MCP client."""

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.contract import assert_json_contract
from tests.fixture_repo import make_repo

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY_ONLY = ("eval", "bench")  # data/ folders of development cases and benchmark figures: not shipped
pytestmark = pytest.mark.skipif(
    not (ROOT / "drivers" / "common").is_dir(),
    reason="the cra namespace layout comes with the restructure script (issue 56)",
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from this checkout, or the one CRA_TEST_WHEEL names (a wheel built for release)."""
    if os.environ.get("CRA_TEST_WHEEL"):
        return Path(os.environ["CRA_TEST_WHEEL"])
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    [built] = out.glob("cra_engine-*.whl")
    return built


def shipped_data_files() -> list[Path]:
    """The checkout's data/ files that the wheel ships (all but the development cases and benchmark figures)."""
    return [
        p
        for p in (ROOT / "data").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.relative_to(ROOT / "data").parts[0] not in REPOSITORY_ONLY
    ]


def test_the_wheel_holds_one_namespace_and_every_shipped_file(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"cra"}
    data = [p.relative_to(ROOT).as_posix() for p in shipped_data_files()]
    missing = [d for d in data if f"cra/{d}" not in names]
    assert data and not missing, missing
    read = {
        "/".join(re.findall(r'"([^"]+)"', args))
        for p in (ROOT / "drivers").rglob("*.py")
        for args in re.findall(r"shipped_path\(([^)]*)\)", p.read_text())
    } - {""}
    assert read and all(any(n.startswith(f"cra/data/{r}") for n in names) for r in read), read
    assert not [n for n in names if n.startswith(("cra/drivers/research/", "cra/drivers/bench/"))]


class Installed:
    """The wheel installed into a fresh venv outside the checkout, and a generated repository indexed by its `cra`."""

    def __init__(self, root: Path, wheel: Path):
        self.root, self.venv = root, root / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(self.venv)], check=True)
        [self.packages] = (self.venv / "lib").glob("python3*/site-packages")
        # the dependencies come from this environment's site-packages (no network); its editable finder is not loaded
        (self.packages / "zz_dependencies.pth").write_text(
            "\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n"
        )
        pip = [sys.executable, "-m", "pip", "--python", str(self.venv / "bin" / "python"), "install", "-q"]
        subprocess.run([*pip, "--no-deps", str(wheel)], check=True, capture_output=True)
        self.cwd = root / "elsewhere"  # no checkout on the way up: every command runs here
        self.cwd.mkdir()
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CRA_DEBUG")}
        self.env.update(CRA_HOME=str(root / "home"), CRA_CACHE=str(root / "cache"))
        self.repo = make_repo(root / "repo")

    def run(self, program: str, *args: str, home: Path | None = None) -> subprocess.CompletedProcess:
        env = self.env if home is None else {**self.env, "CRA_HOME": str(home)}
        return subprocess.run(
            [str(self.venv / "bin" / program), *args], cwd=self.cwd, env=env, capture_output=True, text=True
        )

    def cra(self, *args: str, home: Path | None = None) -> str:
        """stdout of the installed `cra ARGS`, which must succeed and warn of nothing."""
        done = self.run("cra", *args, home=home)
        assert done.returncode == 0 and done.stderr == "", (args, done.returncode, done.stderr)
        return done.stdout


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Installed:
    """Built and installed once for the module; the repository indexed by the installed `cra`."""
    venv = Installed(tmp_path_factory.mktemp("installed"), wheel)
    assert re.match(r"indexed \d+ files \(python \d+, typescript \d+, go \d+", venv.cra("index", str(venv.repo)))
    return venv


TASK = "fix the login validation for LDAP users"


def test_the_venv_imports_cra_from_its_own_site_packages_and_the_wheel_installed_nothing_else(installed):
    where = installed.run(
        "python",
        "-c",
        "import json, cra, cra.data, cra.dataflows, cra.drivers, cra.drivers.cli.main as m; "
        "print(json.dumps([*cra.__path__, cra.data.__file__, cra.dataflows.__file__, cra.drivers.__file__, m.__file__]))",
    )
    assert where.returncode == 0, where.stderr
    paths = json.loads(where.stdout)
    assert len(paths) == 5 and all(Path(p).is_relative_to(installed.packages / "cra") for p in paths), paths
    # every data file of the checkout, found where the installed code reads it (importlib.resources), same bytes
    found = installed.run(
        "python",
        "-c",
        "import hashlib, json; from importlib.resources import files; from pathlib import Path; "
        "root = Path(str(files('cra.data'))); "
        "print(json.dumps({p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() "
        "for p in root.rglob('*') if p.is_file() and '__pycache__' not in p.parts}))",
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout) == {
        p.relative_to(ROOT / "data").as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in shipped_data_files()
    }
    [record] = installed.packages.glob("cra_engine-*.dist-info/RECORD")
    entries = [line.split(",")[0] for line in record.read_text().splitlines() if line]
    tops = {e.split("/")[0] for e in entries if not e.startswith("../")}  # ../../../bin/cra: the console script
    assert {t for t in tops if not t.endswith(".dist-info")} == {"cra"}, tops
    assert "cra/data/models/minilm-l6-static/model.safetensors" in entries
    assert installed.cra("--version").strip() == f"cra {version('cra-engine')}"  # the dist-info was read
    research = installed.run("python", "-c", "import cra.drivers.research.tune")
    assert research.returncode != 0 and "ModuleNotFoundError" in research.stderr  # a checkout's tooling only


def test_retrieve_in_every_format_answers_as_the_checkout_does(installed, tmp_path, capsys, monkeypatch):
    from cra.drivers.cli.main import main

    repo = str(installed.repo)
    markdown = installed.cra("retrieve", TASK, "--repo", repo)
    assert "app/auth/handler.py" in markdown and "def validate_login" in markdown
    prompt = installed.cra("retrieve", TASK, "--repo", repo, "--format", "prompt", "--budget", "4096")
    assert prompt.index("# Task") < prompt.index(TASK) < prompt.index("def validate_ldap")
    auto = ["retrieve", TASK, "--repo", repo, "--format", "json", "--budget", "auto"]
    doc = json.loads(installed.cra(*auto))
    assert_json_contract(doc)
    assert doc["provenance"]["auto_budget"]["bodies"] >= 1 and doc["provenance"]["warnings"] == []
    assert {"validate_login", "validate_ldap"} <= {s["name"] for f in doc["files"] for s in f["symbols"]}
    # the checkout's own answer from its own index, field for field: every shipped weight, model and convention
    # table the index and retrieval read reached the wheel
    monkeypatch.setenv("CRA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CRA_CACHE", str(tmp_path / "cache"))
    kb = str(tmp_path / "checkout-kb")
    assert main(["index", repo, "--kb", kb]) == 0
    capsys.readouterr()
    assert main([*auto, "--kb", kb]) == 0
    assert json.loads(capsys.readouterr().out) == doc


def test_memories_added_come_back_listed_and_queried(installed, tmp_path):
    text = "Validate passwords with the shared policy helper"
    assert "added to" in installed.cra("memory", "add", text, "--scope", "project:repo", home=tmp_path)
    [listed] = json.loads(installed.cra("memory", "list", "--json", home=tmp_path))
    assert (listed["content"], listed["scope"], listed["category"]) == (text, "project:repo", "decisions")
    query = ["memory", "query", "--project", "repo", "--text", "password validation", "--json"]
    [found] = json.loads(installed.cra(*query, home=tmp_path))["memories"]
    assert found["content"] == text and "about the task" in found["reason"]


def test_failed_attempts_escalate_and_guidance_requeues_the_task(installed, tmp_path):
    error = "AssertionError: expected 401, got 200 in tests/test_auth.py::test_ldap"
    attempt = ["attempt", "T-7", "--title", "LDAP login rejects valid users", "--error", error, "--max-retries", "2"]
    assert "recorded attempt 1 of task T-7 (logic)" in installed.cra(*attempt, home=tmp_path)
    escalated = installed.cra(*attempt, home=tmp_path)
    assert "recorded attempt 2 of task T-7 (logic)" in escalated and "task T-7 escalated" in escalated
    [header, row, _] = installed.cra("retry", "--all", home=tmp_path).splitlines()
    assert row.split()[:3] == ["T-7", "escalated", "logic"]
    report = installed.cra("report", "T-7", home=tmp_path)
    assert report.startswith("# Escalation Report: T-7 (LDAP login rejects valid users)") and error in report
    guided = installed.cra("guide", "T-7", "--hint", "mock the LDAP client in the test", home=tmp_path)
    assert "guidance stored; task T-7 re-queued" in guided
    doc = json.loads(installed.cra("report", "T-7", "--format", "json", home=tmp_path))
    assert (doc["task_id"], doc["total_attempts"], doc["error_category"]) == ("T-7", 2, "logic")
    assert (doc["human_guidance"], doc["status"]) == ("mock the LDAP client in the test", "queued")


def test_findings_are_recalled_by_the_shipped_embedding_model(installed, tmp_path):
    text = "Passwords shorter than eight characters are accepted; check the length before issuing a token"
    assert installed.cra(
        "findings",
        "add",
        text,
        "--repo",
        "acme/demo",
        "--file",
        "app/auth/handler.py",
        "--severity",
        "major",
        home=tmp_path,
    ).startswith("added 1 finding")
    lines = [
        {"finding_text": "Invoice totals are summed as floats; use Decimal for money", "repo": "acme/demo"},
        {"finding_text": "The deploy script echoes secrets to the log", "repo": "acme/demo"},
    ]
    source = tmp_path / "findings.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert installed.cra("findings", "import", str(source), home=tmp_path).startswith("imported 2 findings")
    query = ["findings", "query", "--title", "fix: reject short passwords at login", "--repo", "acme/demo"]
    found = json.loads(installed.cra(*query, "--files", "app/auth/handler.py", "--json", home=tmp_path))["findings"]
    # a distance, and no warning (cra cheks stderr): the vector search ran with the model shipped in the wheel
    assert found[0]["finding_text"] == text and found[0]["distance"] is not None and found[0]["distance"] < 0.4


def test_diagnose_decides_on_a_thin_bundle_after_a_failed_attempt(installed, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "phase_001_attempt_1.log").write_text("ERROR: test_ldap failed\nFAILED tests/test_auth.py::test_ldap\n")
    bundle = tmp_path / "handoff.json"
    bundle.write_text(json.dumps({"error_message": "Error", "root_cause": "Unknown"}))
    argv = ["--bundle", str(bundle), "--run-dir", str(run), "--repo", str(installed.repo), "--phase-id", "phase_001"]
    doc = json.loads(installed.cra("diagnose", *argv, "--attempt", "2", home=tmp_path))
    assert doc["escalate"] is True and doc["priority"] == "high"
    assert {t["name"]: t["fired"] for t in doc["triggers"]} == dict.fromkeys(
        ["empty_bundle", "lacks_actionable_context", "repeated_failures", "no_clear_root_cause"], True
    )
    assert [a["path"] for a in doc["run_artifacts"]] == ["phase_001_attempt_1.log"]
    assert doc["stats"]["sot_ranking"] == "kb" and doc["sot_files"][0]["path"] == "tests/test_auth.py"


def test_serve_answers_the_mcp_client_over_stdio(installed):
    mcp = pytest.importorskip("mcp")
    import anyio
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=str(installed.venv / "bin" / "cra"),
        args=["serve", "--repo", str(installed.repo)],
        env={"CRA_HOME": installed.env["CRA_HOME"], "CRA_CACHE": installed.env["CRA_CACHE"]},
        cwd=installed.cwd,
    )

    async def round_trip():
        with open(installed.root / "serve.err", "w") as err:
            async with mcp.Client(stdio_client(params, errlog=err), read_timeout_seconds=120) as client:
                tools = await client.list_tools()
                return tools, await client.call_tool("get_context", {"task": TASK, "format": "json", "budget": 4000})

    try:
        tools, answer = anyio.run(round_trip)
    except Exception as exc:  # the server died or never answered: what it said on stderr is the story
        raise AssertionError((installed.root / "serve.err").read_text()) from exc
    assert {"get_context", "explain_file", "search_symbols", "past_findings", "diagnose"} <= {
        t.name for t in tools.tools
    }
    assert not answer.is_error, answer.content
    doc = json.loads(answer.content[0].text)
    assert_json_contract(doc)
    assert "validate_login" in {s["name"] for f in doc["files"] for s in f["symbols"]}
