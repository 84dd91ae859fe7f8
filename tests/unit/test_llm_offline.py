"""The shipped offline models: each answers its own system's roles only, a wrong one is refused before any
work (not on the first call), and data/llm/offline.yaml gives every role its own."""

from __future__ import annotations

import pytest

from core.errors import LLMNotConfiguredError
from core.llm import require_llm
from core.llm.offline import offline_config_path, offline_roles
from core.llm.python_provider import PythonClient
from core.settings import load_settings
from deployments.readiness import llm_check, run_check


def test_a_system_refuses_another_systems_scripted_model_and_names_the_fix() -> None:
    llm = load_settings(None, {"llm": {"provider": "python:magi.scripted:respond"}}).llm
    require_llm(llm, "magi ask", "magi.melchior")  # its own system: fine
    with pytest.raises(LLMNotConfiguredError) as refused:
        require_llm(llm, "magi critic", "critic.worker")
    said = str(refused.value)
    assert "answers only the roles magi.*" in said and "llm.roles.critic.worker.provider" in said
    assert "python:critic.scripted:judge" in said and str(offline_config_path()) in said
    assert LLMNotConfiguredError.exit_code == 5


def test_no_model_names_the_shipped_offline_one() -> None:
    with pytest.raises(LLMNotConfiguredError) as refused:
        require_llm(load_settings(None, {}).llm, "magi critic", "critic.worker")
    assert "python:critic.scripted:judge" in str(refused.value) and "magi serve --config" in str(refused.value)


def test_the_offline_file_gives_every_role_a_model_that_answers_it() -> None:
    settings = load_settings(offline_config_path())
    roles = offline_roles()
    assert {"magi.melchior", "critic.worker", "router.general", "advisor.mode2"} <= set(roles)
    for role, provider in roles.items():
        answers = PythonClient(provider).roles()
        assert answers is not None and role.startswith(answers), role
        require_llm(settings.llm, "offline", role)


async def test_readiness_says_no_model_with_a_code_for_the_page() -> None:
    llm = load_settings(None, {"llm": {"provider": "python:magi.scripted:respond"}}).llm
    part = await run_check(llm_check(llm, "POST /critic/evaluate", ("critic.worker",)))
    assert not part.ready and part.as_json()["code"] == "no_llm"
    ready = await run_check(llm_check(llm, "POST /magi/ask", ("magi.melchior",)))
    assert ready.ready and "code" not in ready.as_json()
