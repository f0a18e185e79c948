"""The built wheel installs like real software: one top-level namespace (`cra`), every shipped data file the code
reads, no research tooling or benchmarks, and an installed `cra` that answers outside the checkout."""

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.fixture_repo import make_repo

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY_ONLY = ("eval", "bench")  # data/ folders of development cases and benchmark figures: not shipped
pytestmark = pytest.mark.skipif(
    not (ROOT / "drivers" / "common").is_dir(),
    reason="the cra namespace layout comes with the restructure script (issue 56)",
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    [built] = out.glob("cra_engine-*.whl")
    return built


def test_the_wheel_holds_one_namespace_and_every_shipped_file(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"cra"}
    data = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "data").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.relative_to(ROOT / "data").parts[0] not in REPOSITORY_ONLY
    ]
    missing = [d for d in data if f"cra/{d}" not in names]
    assert data and not missing, missing
    read = {
        "/".join(re.findall(r'"([^"]+)"', args))
        for p in (ROOT / "drivers").rglob("*.py")
        for args in re.findall(r"shipped_path\(([^)]*)\)", p.read_text())
    } - {""}
    assert read and all(any(n.startswith(f"cra/data/{r}") for n in names) for r in read), read
    assert not [n for n in names if n.startswith(("cra/drivers/research/", "cra/drivers/bench/"))]


def test_the_installed_cra_answers_outside_the_checkout(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [packages] = (venv / "lib").glob("python3*/site-packages")
    # the dependencies come from this environment's site-packages (no network); its editable finder is not loaded
    (packages / "zz_dependencies.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "-q",
            "--no-deps",
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    repo = make_repo(tmp_path / "repo")
    env = {**os.environ, "CRA_HOME": str(tmp_path / "home"), "CRA_CACHE": str(tmp_path / "cache"), "PYTHONPATH": ""}

    def cra(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(venv / "bin" / "cra"), *args], cwd=tmp_path, env=env, capture_output=True, text=True)

    assert cra("index", str(repo)).returncode == 0
    answer = cra(
        "retrieve",
        "fix the login validation for LDAP users",
        "--repo",
        str(repo),
        "--format",
        "json",
        "--budget",
        "auto",
    )
    assert answer.returncode == 0, answer.stderr
    assert any("handler" in f["path"] for f in json.loads(answer.stdout)["files"])
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import cra.drivers.cli.main as m; print(m.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert str(venv) in where.stdout and str(ROOT) not in where.stdout
    research = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import cra.drivers.research.tune"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert research.returncode != 0  # research tooling runs from a checkout only
