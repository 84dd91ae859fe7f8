"""The ``python:MODULE_OR_FILE:FUNCTION`` provider: loading, return shapes, errors, pickling."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.errors import ConfigError, LLMError
from core.llm.base import LLMRequest, LLMResponse, Message, ToolCallPart, ToolResultPart
from core.llm.python_provider import PythonClient

PROVIDER_SOURCE = """
from core.llm.base import LLMResponse, Usage

def sync_text(request):
    return "echo: " + request.messages[-1].content

async def async_dict(request):
    return {"text": request.system, "usage": {"input_tokens": 3, "output_tokens": 1}}

def full(request):
    return LLMResponse(text="full", model="my-model", output={"k": 1})

async def structured(request):
    return {"output": {"name": request.output_name}}

def boom(request):
    raise ValueError("kaputt")

def wrong(request):
    return 42

NOT_CALLABLE = 1
"""


def write(path: Path, source: str = PROVIDER_SOURCE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def request(text: str = "hi") -> LLMRequest:
    return LLMRequest(system="sys", messages=[Message(role="user", content=text)])


async def complete(provider: str, req: LLMRequest | None = None) -> LLMResponse:
    return await PythonClient(provider).complete(req or request())


@pytest.fixture
def module_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    write(tmp_path / "pkgroot" / "magi_fake_llm_pkg" / "__init__.py", "")
    write(tmp_path / "pkgroot" / "magi_fake_llm_pkg" / "provider.py")
    monkeypatch.syspath_prepend(str(tmp_path / "pkgroot"))
    yield "magi_fake_llm_pkg.provider"
    for name in [n for n in sys.modules if n.startswith("magi_fake_llm_pkg")]:
        del sys.modules[name]


async def test_module_form_sync_str_return(module_name: str) -> None:
    response = await complete(f"python:{module_name}:sync_text", request("ping"))
    assert response.text == "echo: ping"
    assert response.model == f"python:{module_name}:sync_text"


async def test_module_form_async_dict_return(module_name: str) -> None:
    response = await complete(f"python:{module_name}:async_dict")
    assert response.text == "sys"
    assert response.usage.input_tokens == 3


async def test_file_form_relative_to_cwd(tmp_path: Path) -> None:
    write(tmp_path / "providers" / "fake.py")  # the cwd is tmp_path (tests/conftest.py)
    assert (await complete("python:providers/fake.py:sync_text")).text == "echo: hi"
    assert (await complete("python:./providers/fake.py:async_dict")).text == "sys"
    full = await complete(f"python:{tmp_path / 'providers' / 'fake.py'}:full")
    assert (full.text, full.model, full.output) == ("full", "my-model", {"k": 1})


async def test_structured_output_from_dict(tmp_path: Path) -> None:
    write(tmp_path / "fake.py")
    req = request().model_copy(update={"output_schema": {"type": "object"}, "output_name": "Thing"})
    assert (await complete("python:fake.py:structured", req)).output == {"name": "Thing"}


@pytest.mark.parametrize(
    ("provider", "message"),
    [
        ("python:", "not of the form python:MODULE_OR_FILE:FUNCTION"),
        ("python:only_module", "not of the form"),
        ("python:mod:not-an-identifier", "not of the form"),
        ("python:magi_no_such_module_xyz:f", "module 'magi_no_such_module_xyz' not found"),
        ("python:missing/provider.py:f", r"provider\.py not found"),
        ("python:fake.py:nope", "has no function 'nope'"),
        ("python:fake.py:NOT_CALLABLE", "has no function 'NOT_CALLABLE'"),
        ("python:broken.py:f", "importing LLM provider file .*broken.py failed: SyntaxError"),
    ],
)
def test_bad_specs_are_config_errors(tmp_path: Path, provider: str, message: str) -> None:
    write(tmp_path / "fake.py")
    write(tmp_path / "broken.py", "def f(:\n")
    with pytest.raises(ConfigError, match=message):
        PythonClient(provider).load()


async def test_function_errors_and_bad_returns_are_llm_errors(tmp_path: Path) -> None:
    write(tmp_path / "fake.py")
    with pytest.raises(LLMError, match=r"raised ValueError: kaputt"):
        await complete("python:fake.py:boom")
    with pytest.raises(LLMError, match=r"returned int; expected LLMResponse, dict or str"):
        await complete("python:fake.py:wrong")


async def test_pickled_client_works_here_and_in_a_fresh_process(tmp_path: Path) -> None:
    write(tmp_path / "fake.py")
    client = PythonClient("python:fake.py:sync_text")
    await client.complete(request())  # loaded here; the function must not be pickled
    blob = pickle.dumps(client)
    assert b"sync_text" in blob and b"_magi_llm_provider_" not in blob
    copy = pickle.loads(blob)
    assert (await copy.complete(request("again"))).text == "echo: again"

    # Like a Ray worker: another process, another cwd, only the pickled client.
    (tmp_path / "client.pkl").write_bytes(blob)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = (
        "import asyncio, pickle, sys\n"
        "from core.llm.base import LLMRequest, Message\n"
        f"client = pickle.loads(open({str(tmp_path / 'client.pkl')!r}, 'rb').read())\n"
        "req = LLMRequest(system='s', messages=[Message(role='user', content='worker')])\n"
        "print(asyncio.run(client.complete(req)).text)\n"
    )
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=elsewhere,
        env={"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "echo: worker"


async def test_provider_sees_parts_and_answers_with_tool_calls(tmp_path: Path) -> None:
    write(
        tmp_path / "agent.py",
        """
def act(request):
    last = request.messages[-1]
    if isinstance(last.content, list):
        return {"text": "result was " + last.content[0].content}
    return {"tool_calls": [{"id": "t1", "name": "lookup", "arguments": {"q": last.content}}]}
""",
    )
    provider = f"python:{tmp_path / 'agent.py'}:act"
    first = await complete(provider, request("price"))
    assert first.tool_calls == [ToolCallPart(id="t1", name="lookup", arguments={"q": "price"})]
    follow_up = LLMRequest(
        system="sys",
        messages=[
            Message(role="user", content="price"),
            first.as_message(),
            Message(role="user", content=[ToolResultPart(tool_call_id="t1", content="49.7%")]),
        ],
    )
    assert (await complete(provider, follow_up)).text == "result was 49.7%"
