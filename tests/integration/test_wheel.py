"""The built wheel, installed (not editable) into a fresh venv, runs `magi research` from any folder.

Installing every dependency afresh costs ~1 GB and a minute, so the fresh venv borrows the project
venv's third-party packages through a plain path line in a .pth file. Such a line only extends
sys.path: the .pth files inside that folder (among them the editable install's import hook) are not
run, so `core`, `data`, `cli`... can only come from the wheel. The test checks that they do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
TOPIC = "中小企業の価格転嫁の現状"
NOT_SHIPPED = shutil.ignore_patterns(
    ".git",
    ".venv",
    ".magi",
    "out",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    "tests",
    "benchmarks",
)

pytestmark = pytest.mark.slow


def run(*cmd: str | Path, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a command without PYTHONPATH (which could reach the checkout) and with ``env`` added."""
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, env={**clean, **env})
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the sources (the build leaves build/ and *.egg-info behind)."""
    src = tmp_path_factory.mktemp("src") / "magi-cluster"
    shutil.copytree(REPO, src, ignore=NOT_SHIPPED)
    dist = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", ".", "-w", dist, cwd=src)
    (built,) = dist.glob("magi_cluster-*.whl")
    return built


@pytest.fixture(scope="module")
def fresh_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with the wheel installed normally, seeing the project venv's dependencies."""
    venv = tmp_path_factory.mktemp("venv") / "fresh"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=venv.parent)
    python = venv / "bin" / "python"
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=venv).stdout.strip())
    borrowed = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "project_venv_packages.pth").write_text("".join(f"{p}\n" for p in borrowed), encoding="utf-8")
    run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-deps",
        "--no-index",
        "--quiet",
        wheel,
        cwd=venv,
    )
    return python


def test_the_wheel_ships_every_data_file_and_the_serve_config(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data_files = {
        p.relative_to(REPO).as_posix()
        for p in (REPO / "data").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert len(data_files) > 50
    assert data_files - names == set(), "pyproject's package-data globs miss these files"
    assert "deployments/serve.yaml" in names
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)


def test_installed_wheel_researches_the_bundled_corpus_from_another_folder(fresh_python: Path, tmp_path: Path) -> None:
    venv = fresh_python.parent.parent
    where = run(
        fresh_python,
        "-c",
        "import core, cli, deployments.apps as a; from core.resources import data_path; "
        "print(core.__file__); print(cli.__file__); print(a.SERVE_CONFIG); print(data_path('corpus'))",
        cwd=tmp_path,
    ).stdout.split()
    for path in where:
        assert Path(path).is_relative_to(venv), f"{path} is not from the installed wheel"
    corpus = Path(where[-1])

    out = tmp_path / "report"
    result = run(
        venv / "bin" / "magi",
        "research",
        TOPIC,
        "--agents",
        "2",
        "--iterations",
        "1",
        "--out",
        out,
        "--format",
        "json",
        "--no-progress",
        cwd=tmp_path,
        MAGI_DATA_DIR=str(tmp_path / "data"),
    )
    summary = json.loads(result.stdout)
    assert summary["report"] == str(out / "report.md")
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    manifest = yaml.safe_load((corpus / "manifest.yaml").read_text(encoding="utf-8"))
    cited = {s["url"] for s in report["sources"]}
    assert len(cited) >= 5 and cited <= {page["url"] for page in manifest["pages"]}  # all from the bundled corpus
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert markdown.startswith(f"# {TOPIC}")
    assert any(url in markdown for url in cited)
