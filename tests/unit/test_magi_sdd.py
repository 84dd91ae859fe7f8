"""`magi spec` with a FAKE `npx` on PATH: a real executable that writes cc-sdd-like templates (the real
package is installed only by the `registry` test), the shipped scripted LLM, the sages in process."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from cli.main import main
from magi.models import SageName, Verdict

REQUIREMENTS = """# Requirements Document

## Introduction
{{INTRODUCTION}}

## Requirements

### Requirement 1: {{REQUIREMENT_AREA_1}}
**Objective:** As a {{ROLE}}, I want {{CAPABILITY}}, so that {{BENEFIT}}

#### Acceptance Criteria
1. When [event], the [system] shall [response/action]
"""
FAKE_NPX = f"""#!{sys.executable}
import os, sys
from pathlib import Path
with open(Path(__file__).parent.parent / "npx.log", "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
if (Path(__file__).parent / "fail").exists():
    sys.stderr.write("npm ERR! code E404\\nnpm ERR! 404 Not Found - cc-sdd\\n")
    sys.exit(1)
specs = Path(".kiro/settings/templates/specs")
specs.mkdir(parents=True, exist_ok=True)
(specs / "requirements.md").write_text({REQUIREMENTS!r})
(specs / "design.md").write_text("# Design\\n\\n## Overview\\n{{{{OVERVIEW}}}}\\n")
(specs / "tasks.md").write_text("# Implementation Plan\\n\\n- [ ] 1. {{{{TASK_1}}}}\\n")
rules = Path(".kiro/settings/rules")
rules.mkdir(parents=True, exist_ok=True)
(rules / "ears-format.md").write_text("# EARS\\nWhen [event], the [system] shall [response].\\n")
print("40/40 files written")
"""


@pytest.fixture
def fake_npx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npx = bin_dir / "npx"
    npx.write_text(FAKE_NPX)
    npx.chmod(npx.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:magi.scripted:respond")
    project = tmp_path / "project"
    project.mkdir()
    return project


def spec(project: Path, *args: str) -> int:
    return main(["spec", "--in-process", "--dir", str(project), *args])


def test_spec_installs_templates_drafts_reviews_and_revises(
    fake_npx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = spec(fake_npx, "--format", "json", "Add login with e-mail and password")
    out = capsys.readouterr().out
    assert code == 3, out  # two sages reviewed CONDITIONAL: the exit code follows, like `magi ask`
    result = json.loads(out)
    assert (tmp_path / "npx.log").read_text() == "-y cc-sdd@latest --claude --lang ja --yes\n"
    assert result["installed"] and result["install"]["exitCode"] == 0
    folder = fake_npx / ".kiro" / "specs" / "add-login-with-e-mail-and-password"
    assert result["folder"] == str(folder)
    requirements = (folder / "requirements.md").read_text()
    assert "## Requirements" in requirements and "{{" not in requirements  # the template, filled
    assert "When event (Add login with e-mail and password), the system" in requirements
    assert "Review notes addressed" in requirements  # MELCHIOR-1's finding was on requirements
    assert "Review notes addressed" in (folder / "design.md").read_text()  # BALTHASAR-2's
    assert "Review notes addressed" in (folder / "tasks.md").read_text()  # CASPER-3's
    assert "Review notes addressed" not in (folder / "drafts" / "design.md").read_text()
    assert [r["sage"] for r in result["reviews"]] == ["melchior", "balthasar", "casper"]
    assert result["addressed"] == {"requirements": [1], "design": [2], "tasks": [3]}
    record = (folder / "review.md").read_text()
    assert "BALTHASAR-2 on design: no error handling" in record and "(addressed)" in record
    assert json.loads((folder / "review.json").read_text())["feature"] == "add-login-with-e-mail-and-password"

    # idempotent: the templates are there now, the installer does not run again
    assert spec(fake_npx, "--feature", "second", "Add logout") == 3
    assert (tmp_path / "npx.log").read_text().count("cc-sdd") == 1
    assert (fake_npx / ".kiro" / "specs" / "second" / "tasks.md").is_file()


def test_missing_npx_is_one_line_saying_how_to_install_or_disable(
    fake_npx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert spec(fake_npx, "Add login") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "npx was not found" in err and "Node.js" in err and "disabled_plugins" in err


def test_failing_installer_reports_its_error_in_one_line(fake_npx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (fake_npx.parent / "bin" / "fail").touch()  # the fake installer fails like npm on a 404
    assert spec(fake_npx, "Add login") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "exited with code 1: npm ERR! 404 Not Found - cc-sdd" in err and "disable the plugin" in err


def test_spec_is_not_a_command_when_the_plugin_is_disabled(
    fake_npx: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGI_COUNCIL_DISABLED_PLUGINS", "sdd")
    with pytest.raises(SystemExit) as caught:
        spec(fake_npx, "Add login")
    assert caught.value.code == 2
    assert "invalid choice: 'spec'" in capsys.readouterr().err


@pytest.mark.registry
def test_real_cc_sdd_from_the_npm_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAGI_LLM_PROVIDER", "python:magi.scripted:respond")
    project = tmp_path / "real"
    project.mkdir()
    assert spec(project, "--feature", "login", "Add login with e-mail and password") == 3
    assert (project / ".kiro" / "settings" / "templates" / "specs" / "requirements.md").is_file()
    requirements = (project / ".kiro" / "specs" / "login" / "requirements.md").read_text()
    assert "Requirement 1" in requirements and "{{" not in requirements


def test_feature_folder_is_a_readable_slug_of_the_request_in_any_script() -> None:
    from magi.sdd import feature_name

    assert feature_name("ログイン機能を追加したい\nメールとパスワードで") == "ログイン機能を追加したい"
    assert feature_name("Add login: e-mail & password!") == "add-login-e-mail-password"
    assert feature_name("「在庫 管理」画面") == "在庫-管理-画面"
    assert feature_name("！？").startswith("feature-")


def test_review_decision_is_the_council_tally() -> None:
    from magi.sdd import SageReview, review_decision

    def review(sage: SageName, verdict: Verdict) -> SageReview:
        return SageReview(sage=sage, verdict=verdict, summary="", findings=[])

    two_conditional = [
        review(SageName.MELCHIOR, Verdict.CONDITIONAL),
        review(SageName.BALTHASAR, Verdict.CONDITIONAL),
        review(SageName.CASPER, Verdict.APPROVE),
    ]
    assert review_decision(two_conditional) == (Verdict.CONDITIONAL, False)
    split = [
        review(SageName.MELCHIOR, Verdict.APPROVE),
        review(SageName.BALTHASAR, Verdict.DENY),
        review(SageName.CASPER, Verdict.CONDITIONAL),
    ]
    assert review_decision(split) == (Verdict.CONDITIONAL, True)
