"""`magi research` whose output folder stops being writable during the run: recorded failed, not completed.

The folder is swapped for a plain file while the run works, by the one fake allowed here: a python
LLM provider (it writes the executive summary near the end of the run). Everything else is real:
the CLI in a subprocess, its own local Ray, the SQLite store.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SWAPPING_LLM = '''
import shutil
from pathlib import Path

OUT = Path({out!r})


def answer(request):
    """Replace the output folder by a file (once), then answer like a model that has nothing to say."""
    if OUT.is_dir():
        shutil.rmtree(OUT)
        OUT.write_text("the folder is gone")
    return ""
'''


def test_outputs_lost_at_the_end_mark_the_run_failed_with_the_reason(tmp_path: Path) -> None:
    out = tmp_path / "report"
    data_dir = tmp_path / "data"
    llm = tmp_path / "swapping_llm.py"
    llm.write_text(SWAPPING_LLM.format(out=str(out)), encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "MAGI_DATA_DIR": str(data_dir),
        "MAGI_LLM_PROVIDER": f"python:{llm}:answer",
    }
    command = ["research", "価格転嫁", "--agents", "1", "--iterations", "1", "--out", str(out), "--no-progress"]
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", *command],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env=env,
    )
    assert out.is_file(), result.stderr  # the swap happened: the run really lost its folder
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"the report could not be written to {out}" in lines[0] and "kept with run" in lines[0]
    with sqlite3.connect(data_dir / "magi.sqlite3") as db:
        rows = db.execute("SELECT status, error, result_json FROM research_runs").fetchall()
    assert len(rows) == 1
    status, error, result_json = rows[0]
    assert status == "failed" and error.startswith(f"the report could not be written to {out}")
    assert json.loads(result_json)["metadata"]["topic"] == "価格転嫁"  # the work is not lost
