"""The real `magi` executable in a subprocess: exit codes, stderr, one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MAGI = [sys.executable, "-m", "cli.main"]
REPO = Path(__file__).resolve().parents[2]


def magi(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {**os.environ, **(env or {})}
    return subprocess.run([*MAGI, *args], capture_output=True, text=True, timeout=120, env=full_env, cwd=REPO)


def test_version_and_help() -> None:
    version = magi("--version")
    assert version.returncode == 0 and version.stdout.startswith("magi 0.")
    helped = magi("--help")
    assert helped.returncode == 0
    assert "research" in helped.stdout and "doctor" in helped.stdout


def test_unknown_command_lists_commands_on_stderr() -> None:
    result = magi("frobnicate")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "frobnicate" in result.stderr and "commands: research, doctor" in result.stderr


def test_research_with_missing_corpus_is_one_line() -> None:
    result = magi("research", "x", "--corpus", "/nonexistent")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "/nonexistent" in lines[0] and "Traceback" not in result.stderr


def test_research_with_empty_topic_is_one_line() -> None:
    result = magi("research", "   ")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "topic is empty" in result.stderr


def test_bad_config_value_is_reported_with_file(tmp_path: Path) -> None:
    config = tmp_path / "magi.yaml"
    config.write_text("research_agents: -1\n")
    result = magi("--config", str(config), "research", "x")
    assert result.returncode == 2
    assert "research_agents" in result.stderr and str(config) in result.stderr


def test_doctor_llm_without_provider_fails_fast() -> None:
    result = magi("doctor", "--llm")
    assert result.returncode == 3
    assert "needs an LLM" in result.stderr and "MAGI_LLM_PROVIDER" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_first_line_of_an_empty_error_is_its_type() -> None:
    from core.errors import InputError, first_line

    assert first_line(InputError("")) == "InputError"
    assert first_line(ValueError("one\ntwo")) == "one"


def _serve_first_words(env: dict[str, str]) -> str:
    """stderr of ``magi serve --host 0.0.0.0`` up to its warning or Ray's first complaint (an address
    nobody listens on keeps it from ever serving); the process is stopped right after."""
    import os

    process = subprocess.Popen(
        [*MAGI, "serve", "--host", "0.0.0.0", "--address", "127.0.0.1:1"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **env},
        cwd=REPO,
    )
    seen: list[str] = []
    try:
        assert process.stderr is not None
        for line in process.stderr:
            seen.append(line)
            if "--host 127.0.0.1" in line or "GCS" in line or "error" in line:
                break
    finally:
        process.kill()
        process.wait()
    return "".join(seen)


def test_serve_warns_loudly_when_exposed_without_keys() -> None:
    exposed = _serve_first_words({"MAGI_API_KEYS": ""})
    assert "WARNING: magi serve listens on 0.0.0.0" in exposed and "MAGI_API_KEYS" in exposed
    guarded = _serve_first_words({"MAGI_API_KEYS": "k-123"})
    assert "WARNING: magi serve listens" not in guarded and "k-123" not in guarded
