"""A new user's machine: `magi` from their own folder, no Japanese font, and CI that proves the README.

These run the installed `magi` console script as a user would (no PYTHONPATH, the current folder the
user's), each starting its own local Ray.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.fonts import FONT_DIRS, INSTALL_HINT, find_japanese_font
from core.system_packages import system_packages

REPO = Path(__file__).resolve().parents[2]
MAGI = Path(sys.executable).parent / "magi"
SHADOWING = ("data", "core", "nlp", "actors", "research", "scrapers", "cli", "jobs")


def run_magi(
    args: list[str], *, cwd: Path, env: dict[str, str] | None = None, wrapper: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [*(wrapper or []), str(MAGI), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**clean, **(env or {})},
    )


def without_fonts() -> list[str]:
    """A command prefix that runs the command in a private mount namespace where every font folder is
    an empty tmpfs: a machine with no font at all, for this one command."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("hiding the fonts needs root and unshare (util-linux); CI runs as root")
    mounts = " && ".join(f"mount -t tmpfs none {d}" for d in FONT_DIRS if d.is_dir())
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", f'{mounts} && exec "$@"', "sh"]


def test_magi_runs_from_a_folder_whose_subfolders_share_the_projects_package_names(tmp_path: Path) -> None:
    for name in SHADOWING:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise ImportError('a user folder shadowed the project')\n")
    out = tmp_path / "out"
    done = run_magi(
        ["research", "価格転嫁", "--agents", "1", "--iterations", "1", "--out", str(out), "--format", "json"],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sources"] >= 1 and (out / "report.md").is_file()


def test_without_any_font_the_demo_research_writes_its_reports_without_charts(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    cache = tmp_path / "mplconfig"
    done = run_magi(
        ["research", "中小企業の価格転嫁の現状", "--out", str(out), "--format", "json"],
        cwd=tmp_path,
        env={"MPLCONFIGDIR": str(cache)},
        wrapper=without_fonts(),
    )
    assert done.returncode == 0, done.stderr
    (warning,) = json.loads(done.stdout)["warnings"]
    assert "グラフ" in warning and "日本語フォント" in warning and INSTALL_HINT in warning
    report = (out / "report.md").read_text(encoding="utf-8")
    assert warning in report and "](charts/" not in report
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["warnings"] == [warning]
    assert not (out / "charts").exists()

    # matplotlib's font list cached on a machine without the font, then the font "installed" (visible
    # again): the next process draws, whatever the cache says.
    if find_japanese_font() is None:
        pytest.skip(f"no Japanese font on this machine to reveal; {INSTALL_HINT}")
    listed = subprocess.run(
        [*without_fonts(), sys.executable, "-c", "import matplotlib.font_manager"],
        env={**os.environ, "MPLCONFIGDIR": str(cache)},
        capture_output=True,
        timeout=120,
    )
    assert listed.returncode == 0 and list(cache.glob("fontlist-*.json")), listed.stderr
    drawn = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from research.charts import ChartRef, write_charts;"
            "ref = ChartRef(title='価格転嫁率の推移', file='a.png', key='k',"
            "               points=[('2024', 1.0, '1%'), ('2025', 2.0, '2%')]);"
            "print(len(write_charts([ref], Path(sys.argv[1]))))",
            str(tmp_path / "after"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MPLCONFIGDIR": str(cache)},
    )
    assert drawn.stdout.strip() == "1", drawn.stderr


def test_the_advisor_chart_tool_without_a_font_says_what_to_install(tmp_path: Path) -> None:
    chart = {"chart_type": "bar", "title": "原価の内訳", "data": {"categories": [{"label": "材料費", "value": 10}]}}
    (tmp_path / "chart.json").write_text(json.dumps(chart, ensure_ascii=False), encoding="utf-8")
    done = run_magi(
        ["tool", "generate_chart", "--input", str(tmp_path / "chart.json")],
        cwd=tmp_path,
        env={"MPLCONFIGDIR": str(tmp_path / "mplconfig")},
        wrapper=without_fonts(),
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "fonts-ipaexfont-gothic" in done.stderr and "Traceback" not in done.stderr


def test_ci_runs_the_readme_test_command_and_installs_nothing_itself() -> None:
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands == ["set -euo pipefail", 'cd "$(dirname "$0")/.."', "make test"]
    assert "make test" in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_package_list_names_a_group_for_each_package_and_the_makefile_installs_them() -> None:
    packages = system_packages()
    assert {p.group for p in packages} <= {"demo", "test", "bench"}
    assert "fonts-ipaexfont-gothic" in {p.name for p in packages if p.group == "demo"}
    makefile = (REPO / "Makefile").read_text(encoding="utf-8").splitlines()
    assert any(line.startswith("demo: system-deps-demo") for line in makefile)
    assert any(line.startswith("test: system-deps-test") for line in makefile)
