"""Diagnostics: the four triggers and priority, bounded deep retrieval (caps, 24 h window,
ranking, truncation, memory), isolation (nothing written, protected paths, symlinks, '..', binary, a 1 GB log) and
`cra diagnose` through `cra.drivers.cli.main.main`."""

import hashlib
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cra.drivers.cli.main import main
from cra.drivers.common.errors import CraError
from cra.drivers.diagnostics.diagnose import diagnose, get_retrieval_priority, read_text, should_escalate

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
MARKER = "\n[... truncated ...]\n"
THIN = {"error_message": "Error", "root_cause": "Unknown"}
RICH = {
    "error_message": "FileNotFoundError: Could not find config.yaml in /path/to/dir",
    "stack_trace": "Traceback (most recent call last):\n  File test.py line 10\n" * 3,
    "recent_changes": ["file1.py", "file2.py"],
    "root_cause": "Missing configuration file config.yaml in expected directory /etc/app",
}


def _file(path: Path, text: str | bytes, hours_ago: float = 1.0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    stamp = (NOW - timedelta(hours=hours_ago)).timestamp()
    os.utime(path, (stamp, stamp))
    return path


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("CRA_HOME", str(tmp_path / "home"))  # default stores: missing
    run, repo = tmp_path / "run", tmp_path / "repo"
    run.mkdir()
    (repo / "docs").mkdir(parents=True)
    return run, repo


def _diagnose(run, repo, bundle=THIN, phase="phase_001", attempt=1, **kw):
    return diagnose(bundle, run, repo, phase, attempt, now=NOW, **kw).bundle.to_dict()


def _fired(bundle_dict) -> dict:
    return {t["name"]: t["fired"] for t in bundle_dict["triggers"]}


# --- triggers -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bundle", [None, {}, [], "not a bundle"])
def test_trigger_1_empty_or_missing_bundle(bundle, dirs):
    d = _diagnose(*dirs, bundle=bundle)
    assert _fired(d)["empty_bundle"] and d["escalate"] and should_escalate(bundle, "phase_001")
    assert d["priority"] == "high"  # an empty bundle has no message and no root cause either


def test_trigger_1_minimal_and_sufficient_bundles(dirs):
    minimal = {"error_message": "Error", "stack_trace": "", "recent_changes": []}
    assert _fired(_diagnose(*dirs, bundle=minimal))["empty_bundle"]
    assert not _fired(_diagnose(*dirs, bundle=RICH))["empty_bundle"]
    # a short message is not minimal when a stack trace or changes came with it
    assert not _fired(_diagnose(*dirs, bundle={"error_message": "Error", "recent_changes": ["a.py"]}))["empty_bundle"]


@pytest.mark.parametrize(
    "message, fires",
    [
        ("An unknown error occurred", True),
        ("Internal error while syncing users between the two regions", True),
        ("Something went wrong", True),
        ("Timeout", True),
        ("FileNotFoundError: Could not find config.yaml in /path/to/dir", False),
        ("KeyError in app/db.py", False),  # short, but it names a file
        ("Detailed error message with sufficient context", False),
    ],
)
def test_trigger_2_actionable_context(message, fires, dirs):
    d = _diagnose(*dirs, bundle={"error_message": message, "root_cause": "Missing configuration file config.yaml"})
    assert _fired(d)["lacks_actionable_context"] is fires


def test_trigger_3_repeated_failures_from_earlier_attempt_logs(dirs):
    run, repo = dirs
    _file(run / "phase_001_attempt_1.log", "ERROR: First failure\nFAILED to complete")
    _file(run / "phase_001_attempt_2.log", "ERROR: Second failure\nFAILED again")
    assert should_escalate(RICH, "phase_001", attempt=2, run_dir=run)
    d = _diagnose(run, repo, bundle=RICH, attempt=2)
    assert _fired(d) == {
        "empty_bundle": False,
        "lacks_actionable_context": False,
        "repeated_failures": True,
        "no_clear_root_cause": False,
    }
    assert "phase_001_attempt_1.log" in d["triggers"][2]["reason"] and d["priority"] == "medium"
    assert not should_escalate(RICH, "phase_001", attempt=1, run_dir=run)  # first attempt
    assert not should_escalate(RICH, "phase_002", attempt=2, run_dir=run)  # no logs of that phase


def test_trigger_3_needs_markers_in_an_earlier_attempt(dirs):
    run, _ = dirs
    _file(run / "phase_001_attempt_1.log", "all good, 12 tests passed\nerror: lower case is not a marker")
    _file(run / "phase_001_attempt_2.log", "ERROR: only the current attempt failed")
    assert not should_escalate(RICH, "phase_001", attempt=2, run_dir=run)
    for marker in ("ERROR:", "FAILED", "Exception:", "Traceback:"):
        _file(run / "phase_001_attempt_1.log", f"step 3\n{marker} boom\n")
        assert should_escalate(RICH, "phase_001", attempt=2, run_dir=run), marker


@pytest.mark.parametrize(
    "cause, fires",
    [
        (None, True),
        ("", True),
        ("Unknown cause", True),
        ("The cause is unclear to the agent", True),
        ("Needs to investigate the scheduler", True),
        ("Not sure why the job stalls", True),
        ("Bad config", True),
        ("Missing configuration file config.yaml in expected directory /etc/app", False),
    ],
)
def test_trigger_4_root_cause(cause, fires, dirs):
    bundle = {**RICH, "root_cause": cause}
    assert _fired(_diagnose(*dirs, bundle=bundle))["no_clear_root_cause"] is fires


def test_priority_from_how_many_fired():
    assert get_retrieval_priority(THIN) == "high"
    assert (
        get_retrieval_priority(
            {"error_message": "Detailed error message with sufficient context", "root_cause": "Unknown"}
        )
        == "medium"
    )
    assert (
        get_retrieval_priority(
            {
                "error_message": "FileNotFoundError: config.yaml not found in /path",
                "root_cause": "Missing configuration file config.yaml in expected directory",
            }
        )
        == "low"
    )


def test_malformed_and_unicode_bundles_do_not_crash(dirs):
    odd = {"error_message": None, "stack_trace": 123, "recent_changes": "file.py", "root_cause": ["a", {"b": 1}]}
    d = _diagnose(*dirs, bundle=odd)
    assert d["escalate"] and len(d["triggers"]) == 4
    uni = {
        "error_message": "Ошибка: не найден файл конфигурации 設定.yaml 🚨",
        "root_cause": "ファイル設定が見つかりません in /etc/app 設定",
    }
    d = _diagnose(*dirs, bundle=uni, force=True)
    assert json.loads(json.dumps(d, ensure_ascii=False)) == d


# --- nothing fires ---------------------------------------------------------------------------------------------


def test_nothing_fires_means_low_and_empty_unless_forced(dirs):
    run, repo = dirs
    _file(run / "build.log", "compiled 3 modules")
    _file(repo / "docs" / "config.md", "config.yaml lives in /etc/app; missing configuration file errors")
    d = _diagnose(run, repo, bundle=RICH)
    assert (d["escalate"], d["priority"]) == (False, "low")
    assert d["run_artifacts"] == d["sot_files"] == d["memory_entries"] == []
    forced = _diagnose(run, repo, bundle=RICH, force=True)
    assert not forced["escalate"] and [a["path"] for a in forced["run_artifacts"]] == ["build.log"]
    assert [s["path"] for s in forced["sot_files"]] == ["docs/config.md"]


# --- run artifacts: caps, window, truncation ----------------------------------------------------------------


def test_run_artifact_file_cap(dirs):
    run, repo = dirs
    for i in range(8):
        _file(run / f"artifact_{i}.log", f"line {i}\n" * 50, hours_ago=i + 1)
    d = _diagnose(run, repo)
    assert [a["path"] for a in d["run_artifacts"]] == [f"artifact_{i}.log" for i in range(5)]
    assert d["stats"]["run_artifacts_count"] == 5
    assert d["stats"]["run_artifacts_size"] == sum(a["size"] for a in d["run_artifacts"]) == 5 * len("line 0\n" * 50)


def test_run_artifact_size_cap_truncates_the_last_file(dirs):
    run, repo = dirs
    _file(run / "a.log", "a" * 6000, hours_ago=1)
    _file(run / "b.log", "b" * 6000, hours_ago=2)
    _file(run / "c.log", "c" * 100, hours_ago=3)
    d = _diagnose(run, repo)
    assert [a["path"] for a in d["run_artifacts"]] == ["a.log", "b.log"]  # stops after the cut
    cut = d["run_artifacts"][1]
    assert cut["content"].endswith(MARKER) and cut["content"].startswith("b" * 100)
    assert cut["size"] == len(cut["content"].encode()) and d["stats"]["run_artifacts_size"] <= 10 * 1024
    assert 10 * 1024 - 30 <= d["stats"]["run_artifacts_size"]  # the budget is used, not wasted


def test_no_truncated_entry_when_100_bytes_or_less_remain(dirs):
    run, repo = dirs
    _file(run / "a.log", "a" * (10 * 1024 - 90), hours_ago=1)
    _file(run / "b.log", "b" * 500, hours_ago=2)
    d = _diagnose(run, repo)
    assert [a["path"] for a in d["run_artifacts"]] == ["a.log"]


def test_24_hour_window_first_newest_first(dirs):
    run, repo = dirs
    _file(run / "artifact_3.log", "old", hours_ago=48)
    _file(run / "artifact_2.log", "two hours", hours_ago=2)
    _file(run / "artifact_1.log", "one hour", hours_ago=1)
    _file(run / "future.log", "dated after now", hours_ago=-5)
    _file(run / "artifact_4.log", "older", hours_ago=72)
    d = _diagnose(run, repo)
    assert [a["path"] for a in d["run_artifacts"]] == [
        "artifact_1.log",
        "artifact_2.log",
        "future.log",
        "artifact_3.log",
        "artifact_4.log",
    ]
    assert d["run_artifacts"][0]["modified"] == "2026-06-01T11:00:00Z"
    # no file in the window: the most recent overall come first
    d = diagnose(THIN, run, repo, "phase_001", 1, now=NOW + timedelta(days=10)).bundle.to_dict()
    assert [a["path"] for a in d["run_artifacts"]][:2] == ["future.log", "artifact_1.log"]


def test_unicode_content_is_cut_on_a_character_boundary(dirs):
    run, repo = dirs
    _file(run / "a.log", "é" * 3000, hours_ago=1)  # 6000 bytes
    _file(run / "b.log", "日本語のログ" * 1000, hours_ago=2)  # 18000 bytes, read only up to the cap
    d = _diagnose(run, repo)
    cut = d["run_artifacts"][1]
    assert cut["content"].endswith(MARKER) and set(cut["content"][: -len(MARKER)]) <= set("日本語のログ")
    assert d["stats"]["run_artifacts_size"] <= 10 * 1024


# --- SOT files -------------------------------------------------------------------------------------------------


def test_sot_ranked_by_keyword_relevance_with_recency_tiebreak(dirs):
    run, repo = dirs
    bundle = {"error_message": "Database connection failed unexpectedly", "root_cause": "Connection timeout occurred"}
    _file(repo / "docs" / "error_handling.md", "database connection timeout: connection failed", hours_ago=30)
    _file(repo / "docs" / "introduction.md", "welcome", hours_ago=1)
    _file(repo / "docs" / "database_guide.md", "the database and its timeout", hours_ago=20)
    _file(repo / "src" / "db.py", "def connect(): pass  # timeout", hours_ago=10)
    _file(repo / "tests" / "test_db.py", "def test_timeout(): pass", hours_ago=5)
    _file(repo / "other" / "notes.md", "database connection connection connection", hours_ago=1)  # not SOT
    d = _diagnose(run, repo, bundle=bundle, force=True)  # a good bundle: nothing fires
    got = [(s["path"], s["relevance_score"]) for s in d["sot_files"]]
    # error_handling: database, connection x2, timeout, failed = 5; guide: 2; db.py and test_db.py tie at 1: newer first
    assert got == [("docs/error_handling.md", 5), ("docs/database_guide.md", 2), ("tests/test_db.py", 1)]
    assert d["stats"]["sot_ranking"] == "keywords"


def test_sot_size_cap(dirs):
    run, repo = dirs
    for name, hours in (("a", 1), ("b", 2), ("c", 3)):
        _file(repo / "docs" / f"{name}.md", "timeout " * 1200, hours_ago=hours)  # 9600 bytes each
    d = _diagnose(run, repo, bundle={"error_message": "Connection timeout", "root_cause": ""})
    assert [s["path"] for s in d["sot_files"]] == ["docs/a.md", "docs/b.md"]
    assert d["sot_files"][1]["content"].endswith(MARKER) and d["stats"]["sot_files_size"] <= 15 * 1024


def test_sot_ranked_by_the_kb_when_the_repository_has_one(dirs):
    from cra.drivers.index.indexer import index_repository

    run, repo = dirs
    _file(repo / "src" / "scheduler.py", "def reschedule_backoff(job):\n    return job.delay * 2\n")
    _file(repo / "src" / "util.py", "def helper():\n    return 1\n")
    _file(repo / "docs" / "notes.md", "General notes about the project.\n")
    index_repository(repo, history=0)
    bundle = {"error_message": "reschedule_backoff raised ZeroDivisionError", "root_cause": "Unknown"}
    d = _diagnose(run, repo, bundle=bundle)
    assert d["stats"]["sot_ranking"] == "kb" and d["sot_files"][0]["path"] == "src/scheduler.py"
    assert isinstance(d["sot_files"][0]["relevance_score"], float) and d["sot_files"][0]["relevance_score"] > 0
    assert all(".cra" not in s["path"] for s in d["sot_files"])


# --- memory ----------------------------------------------------------------------------------------------------


def test_memory_empty_when_stores_are_missing_and_none_is_created(dirs, tmp_path):
    d = _diagnose(*dirs, force=True)
    assert d["memory_entries"] == [] and d["stats"]["memory_entries_count"] == 0
    d = _diagnose(*dirs, force=True, memory_dir=tmp_path / "no-memory", db=tmp_path / "no.db")
    assert d["memory_entries"] == []
    assert not (tmp_path / "home").exists() and not (tmp_path / "no.db").exists()


def test_memory_entries_from_scoped_memories_and_past_failures(dirs, tmp_path):
    from cra.drivers.escalation import attempts as escalation

    run, repo = dirs
    memory = tmp_path / "memory"
    entries = [
        {"content": f"Connection pool rule {i}: always set a connect timeout", "timestamp": "2026-05-30T00:00:00+00:00"}
        for i in range(8)
    ]
    _file(memory / "profile.json", json.dumps({"general": entries}))
    db = tmp_path / "escalations.db"
    escalation.record_attempt(
        db,
        "sync-7",
        "Connection timeout talking to the billing API at api.example.com",
        max_retries=1,
        now="2026-05-01T00:00:00+00:00",
    )
    escalation.guide(db, "sync-7", "Use the backup endpoint")
    bundle = {"error_message": "Connection timeout talking to the billing API", "root_cause": "Unknown"}
    d = _diagnose(run, repo, bundle=bundle, memory_dir=memory, db=db)
    sources = [m["source"] for m in d["memory_entries"]]
    assert len(sources) == 5 and sources.count("past_failure") == 1 and d["stats"]["memory_entries_size"] <= 5 * 1024
    past = next(m for m in d["memory_entries"] if m["source"] == "past_failure")
    assert (
        past["phase_id"] == "sync-7"
        and past["resolution"] == "Use the backup endpoint"
        and past["similarity_score"] > 0
    )
    assert "Use the backup endpoint" in past["content"]


# --- isolation -------------------------------------------------------------------------------------------------


def _state(root: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(filenames + dirnames):
            p = Path(dirpath) / name
            st = p.lstat()
            h.update(f"{p.relative_to(root)}|{st.st_mode}|{st.st_size}|{st.st_mtime_ns}".encode())
            if p.is_file() and not p.is_symlink():
                h.update(p.read_bytes())
    return h.hexdigest()


def test_nothing_written_and_protected_paths_never_included(dirs, tmp_path):
    run, repo = dirs
    secret = _file(tmp_path / "outside" / "secret.txt", "TOP SECRET outside the run directory")
    _file(run / "phase_001_attempt_1.log", "ERROR: boom")
    _file(run / ".git" / "config", "GITCONFIG timeout", hours_ago=0.1)
    _file(run / ".autonomous_runs" / "other.log", "AUTONOMOUS timeout", hours_ago=0.1)
    _file(run / "autopack.db", "SQLITEDB timeout", hours_ago=0.1)
    _file(run / "autopack.db-wal", "WALDATA timeout", hours_ago=0.1)
    _file(repo / "docs" / ".git" / "HEAD", "GITHEAD timeout", hours_ago=0.1)
    _file(repo / "tests" / "cache.db", "SQLITEDB2 timeout", hours_ago=0.1)
    _file(repo / "docs" / "guide.md", "timeout guide")
    (run / "link.log").symlink_to(secret)
    (run / "linkdir").symlink_to(secret.parent, target_is_directory=True)
    (repo / "docs" / "link.md").symlink_to(secret)
    (repo / "src").symlink_to(secret.parent, target_is_directory=True)  # a SOT directory that leaves the repo
    before = (_state(run), _state(repo), _state(tmp_path / "outside"))
    result = diagnose(THIN, run, repo, "phase_001", 2, now=NOW, force=True, outputs=("bundle_json", "bundle_markdown"))
    assert (_state(run), _state(repo), _state(tmp_path / "outside")) == before
    text = result.outputs["bundle_json"] + result.outputs["bundle_markdown"]
    for leaked in ("TOP SECRET", "GITCONFIG", "AUTONOMOUS", "SQLITEDB", "WALDATA", "GITHEAD"):
        assert leaked not in text
    d = result.bundle.to_dict()
    assert [a["path"] for a in d["run_artifacts"]] == ["phase_001_attempt_1.log"]
    assert [s["path"] for s in d["sot_files"]] == ["docs/guide.md"]
    assert not (tmp_path / "home").exists()


def test_symlinked_attempt_log_and_dotdot_are_refused(dirs, tmp_path):
    run, _ = dirs
    outside = _file(tmp_path / "elsewhere" / "phase_001_attempt_1.log", "ERROR: outside FAILED")
    (run / "phase_001_attempt_1.log").symlink_to(outside)
    assert not should_escalate(RICH, "phase_001", attempt=2, run_dir=run)
    _file(run / "x_attempt_1.log", "ERROR: fine")
    for bad in ("../elsewhere/phase_001", "..", "a/b", "a\\b", ""):
        with pytest.raises(CraError):
            should_escalate(RICH, bad, attempt=2, run_dir=run)
    assert read_text(run, "../elsewhere/phase_001_attempt_1.log", 1000) is None
    assert read_text(run, "phase_001_attempt_1.log", 1000) is None  # a symlink
    assert read_text(run, "x_attempt_1.log", 1000) == "ERROR: fine"


def test_binary_and_undecodable_files_are_skipped(dirs):
    run, repo = dirs
    _file(run / "core.bin", b"\x7fELF\x00\x01\x02" * 100, hours_ago=0.1)
    _file(run / "latin1.log", "café crème".encode("latin-1"), hours_ago=0.2)
    _file(run / "text.log", "ERROR: the real log", hours_ago=0.3)
    os.mkfifo(run / "pipe.log")  # never opened for reading (it would block)
    d = _diagnose(run, repo)
    assert [a["path"] for a in d["run_artifacts"]] == ["text.log"]


def _bytes_read() -> int:
    with open("/proc/self/io") as handle:
        return int(next(line for line in handle if line.startswith("rchar:")).split()[1])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux /proc/self/io")
def test_a_1_gb_log_is_read_only_as_far_as_the_caps_need(dirs):
    run, repo = dirs
    huge = run / "phase_001_attempt_1.log"
    with open(huge, "wb") as handle:  # sparse: text at both ends, a hole of ~1 GB between (no disk used)
        handle.write(b"INFO: starting\n" * 5000)
        handle.truncate(2**30)
        tail = b"DEBUG: still working\n" * 4000 + b"ERROR: out of memory\nFAILED\n"  # more than the 64 KB scanned
        handle.seek(2**30 - len(tail))
        handle.write(tail)
    stamp = (NOW - timedelta(minutes=5)).timestamp()
    os.utime(huge, (stamp, stamp))
    diagnose(THIN, run, repo, "phase_001", 2, now=NOW)  # warm: imports and drivers are built
    before = _bytes_read()
    d = diagnose(THIN, run, repo, "phase_001", 2, now=NOW).bundle.to_dict()
    read = _bytes_read() - before
    assert read < 2 * 2**20, read  # 10 KB of the artifact, 64 KB of the attempt log's end, not a gigabyte
    assert _fired(d)["repeated_failures"]  # the failure markers at the end were found
    (artifact,) = d["run_artifacts"]
    assert artifact["content"].startswith("INFO: starting") and artifact["content"].endswith(MARKER)
    assert artifact["size"] <= 10 * 1024


# --- adaptive caps ---------------------------------------------------------------------------------------------


def test_adaptive_caps_follow_priority(dirs):
    run, repo = dirs
    for i in range(9):
        _file(run / f"a{i}.log", "x" * 100, hours_ago=i + 1)
    assert len(_diagnose(run, repo, adaptive_caps=True)["run_artifacts"]) == 7  # high
    assert len(_diagnose(run, repo, adaptive_caps=False)["run_artifacts"]) == 5
    low = _diagnose(run, repo, bundle=RICH, adaptive_caps=True, force=True)
    assert low["priority"] == "low" and len(low["run_artifacts"]) == 3


# --- CLI -------------------------------------------------------------------------------------------------------


def _cli(capsys, *argv):
    capsys.readouterr()
    code = main(["diagnose", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_json_and_markdown(dirs, tmp_path, capsys):
    run, repo = dirs
    _file(run / "phase_001_attempt_1.log", "ERROR: boom\nFAILED")
    bundle = _file(tmp_path / "handoff.json", json.dumps(THIN))
    base = ["--bundle", str(bundle), "--run-dir", str(run), "--repo", str(repo), "--phase-id", "phase_001"]
    code, out, err = _cli(capsys, *base, "--attempt", "2")
    d = json.loads(out)
    assert code == 0 and err == ""
    assert list(d) == [
        "phase_id",
        "timestamp",
        "priority",
        "escalate",
        "triggers",
        "run_artifacts",
        "sot_files",
        "memory_entries",
        "stats",
    ]
    assert (
        d["priority"] == "high" and d["escalate"] and all(set(t) == {"name", "fired", "reason"} for t in d["triggers"])
    )
    assert set(d["stats"]) == {
        "run_artifacts_count",
        "run_artifacts_size",
        "sot_files_count",
        "sot_files_size",
        "memory_entries_count",
        "memory_entries_size",
        "sot_ranking",
    }
    assert set(d["run_artifacts"][0]) == {"path", "content", "size", "modified"}
    code, out, _ = _cli(capsys, *base, "--attempt", "2", "--format", "markdown")
    assert code == 0 and out.startswith("# Diagnostics for phase_001") and "- [x] repeated_failures" in out


@pytest.mark.parametrize("content, warning", [("null", "is null"), ("", "is empty"), ("  \n", "is empty")])
def test_cli_null_or_empty_bundle_is_an_empty_bundle(content, warning, dirs, tmp_path, capsys):
    run, repo = dirs
    bundle = _file(tmp_path / "handoff.json", content)
    code, out, err = _cli(
        capsys, "--bundle", str(bundle), "--run-dir", str(run), "--repo", str(repo), "--phase-id", "p", "--attempt", "1"
    )
    assert code == 0 and json.loads(out)["escalate"] and warning in err and len(err.splitlines()) == 1


def test_cli_unicode_bundle(dirs, tmp_path, capsys):
    run, repo = dirs
    bundle = _file(
        tmp_path / "handoff.json", json.dumps({"error_message": "Échec: 設定ファイル 🚨"}, ensure_ascii=False)
    )
    _file(run / "run.log", "ERREUR: Échec du chargement de 設定ファイル 🚨\n")
    code, out, err = _cli(
        capsys, "--bundle", str(bundle), "--run-dir", str(run), "--repo", str(repo), "--phase-id", "p", "--attempt", "1"
    )
    assert code == 0 and err == "" and "設定ファイル 🚨" in out  # UTF-8 kept as is, not escaped
    assert json.loads(out)["run_artifacts"][0]["content"] == "ERREUR: Échec du chargement de 設定ファイル 🚨\n"


@pytest.mark.parametrize(
    "case", ["malformed", "list", "missing", "no-run-dir", "no-repo", "attempt", "attempt0", "phase"]
)
def test_cli_unusable_input_is_one_line_exit_2(case, dirs, tmp_path, capsys):
    run, repo = dirs
    good = _file(tmp_path / "ok.json", "{}")
    args = {"--bundle": str(good), "--run-dir": str(run), "--repo": str(repo), "--phase-id": "p", "--attempt": "1"}
    changes = {
        "malformed": ("--bundle", str(_file(tmp_path / "bad.json", '{"error_message": "x",'))),
        "list": ("--bundle", str(_file(tmp_path / "list.json", "[1, 2]"))),
        "missing": ("--bundle", str(tmp_path / "nope.json")),
        "no-run-dir": ("--run-dir", str(tmp_path / "no-run")),
        "no-repo": ("--repo", str(tmp_path / "no-repo")),
        "attempt": ("--attempt", "two"),
        "attempt0": ("--attempt", "0"),
        "phase": ("--phase-id", "../../etc/passwd"),
    }
    key, value = changes[case]
    args[key] = value
    code, out, err = _cli(capsys, *[x for kv in args.items() for x in kv])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and err.startswith("cra: error: ")
