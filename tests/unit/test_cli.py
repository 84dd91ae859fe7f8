"""The real `magi` executable in a subprocess: exit codes, stderr, one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MAGI = [sys.executable, "-m", "cli.main"]
REPO = Path(__file__).resolve().parents[2]


def magi(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
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
    assert result.returncode == 5
    assert "needs an LLM" in result.stderr and "MAGI_LLM_PROVIDER" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_first_line_of_an_empty_error_is_its_type() -> None:
    from core.errors import InputError, first_line

    assert first_line(InputError("")) == "InputError"
    assert first_line(ValueError("one\ntwo")) == "one"


def test_unwritable_out_fails_before_any_research(tmp_path: Path) -> None:
    """``--out`` that cannot take the report: one line, exit 2, and no run started (no store, no Ray)."""
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    cases = {"/proc/x": "/proc/x is not writable", "/proc": "/proc is not writable", str(a_file): "is a file"}
    read_only = tmp_path / "read-only"
    read_only.mkdir(mode=0o555)
    # root writes into a mode-555 folder anyway; an immutable folder (chattr +i) refuses root too
    immutable = os.geteuid() == 0 and subprocess.run(["chattr", "+i", str(read_only)], check=False).returncode == 0
    if os.geteuid() != 0 or immutable:
        cases[str(read_only)] = f"{read_only} is not writable ("
    data_dir = tmp_path / "data"
    try:
        for out, expected in cases.items():
            result = magi("research", "価格転嫁", "--out", out, env={"MAGI_DATA_DIR": str(data_dir)})
            assert result.returncode == 2, result.stderr
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and expected in lines[0] and "pass a folder" in lines[0], result.stderr
            assert "Ray" not in result.stderr and result.stdout == ""
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(read_only)], check=True)
    assert not data_dir.exists()  # the store was never opened: nothing ran


def test_batch_job_checks_out_before_any_research(tmp_path: Path) -> None:
    topics = tmp_path / "topics.txt"
    topics.write_text("価格転嫁\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "jobs.research_batch", str(topics), "--out", "/proc/x"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "MAGI_DATA_DIR": str(tmp_path / "data")},
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "research_batch: error: --out folder /proc/x is not writable "
        "(No such file or directory when creating it); pass a folder you can write to"
    )
    assert not (tmp_path / "data").exists()


def _one_line_exit_2(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr and "internal error" not in result.stderr, lines
    return lines[0]


def test_broken_yaml_in_the_config_keeps_its_line_and_column(tmp_path: Path) -> None:
    config = tmp_path / "magi.yaml"
    config.write_text("output_format: json\nray:\n  address: [auto\nllm: {}\n", encoding="utf-8")
    line = _one_line_exit_2(magi("--config", str(config), "research", "x"))
    assert f"config file {config}, line 4, column 4: not valid YAML" in line and "fix the syntax there" in line


def test_config_that_is_not_utf8_names_the_file_and_the_fix(tmp_path: Path) -> None:
    config = tmp_path / "magi.yaml"
    config.write_bytes("output_format: json\ndata_dir: /tmp/café\n".encode("latin-1"))
    line = _one_line_exit_2(magi("--config", str(config), "doctor"))
    assert line == f"magi doctor: error: config file {config}, line 2, column 19: not UTF-8 text (byte 0xe9); " + (
        "save the file as UTF-8"
    )


def test_config_that_is_a_folder_a_device_or_missing_is_one_line(tmp_path: Path) -> None:
    line = _one_line_exit_2(magi("--config", str(tmp_path), "research", "x"))
    assert line.endswith(f"config file {tmp_path} is a directory, not a file; point --config at a YAML file")
    line = _one_line_exit_2(magi("--config", "/dev/null", "research", "x"))
    assert "/dev/null is not a regular file" in line
    line = _one_line_exit_2(magi("research", "x", env={"MAGI_CONFIG": str(tmp_path)}))
    assert line.endswith("is a directory, not a file; point MAGI_CONFIG at a YAML file")
    line = _one_line_exit_2(magi("research", "x", env={"MAGI_CONFIG": str(tmp_path / "gone.yaml")}))
    assert line.endswith("gone.yaml does not exist; point MAGI_CONFIG at a YAML file that exists")


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
