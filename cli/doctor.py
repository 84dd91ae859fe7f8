"""``magi doctor``: the effective settings and whether each dependency is usable, with the fix."""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from cli.common import emit, settings_from
from core.errors import first_line
from core.settings import Settings, describe
from core.version import release

if TYPE_CHECKING:
    from core.llm.roles import ResolvedRole
from scrapers.settings import SearchSettings


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "doctor",
        parents=[shared],
        help="check settings and dependencies",
        description="Show effective settings and check Ray, the store, GiNZA, search and the LLM.",
    )
    parser.add_argument("--llm", action="store_true", help="also send one tiny request through the LLM provider")
    parser.add_argument("--settings", action="store_true", help="also list every effective setting after the checks")
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="print the live figures of the Ray cluster at ADDRESS (its nodes' metrics, ray_magi_*)",
    )
    parser.set_defaults(handler=run)


def check_ray(settings: Settings) -> Check:
    import ray

    from core.runtime import start_ray, stop_ray

    started = time.perf_counter()
    try:
        start_ray(settings)
        cpus = ray.cluster_resources().get("CPU", 0)  # type: ignore[no-untyped-call]
        nodes = len([n for n in ray.nodes() if n.get("Alive")])  # type: ignore[no-untyped-call]
    finally:
        stop_ray()
    where = settings.ray.address or "local single-node Ray"
    return Check(
        "ray",
        "ok",
        f"ray {ray.__version__}: {where}, {nodes} node(s), {cpus:g} CPUs, "
        f"started in {time.perf_counter() - started:.1f} s",
    )


def check_ginza(settings: Settings) -> Check:
    from nlp.entities import ginza_available, ner_backend

    ok, message = ginza_available()
    if not ok:
        return Check("ginza", "fail", message, "pip install ja-ginza (make demo installs it)")
    return Check("ginza", "ok", f"{message}; English entities: {ner_backend('en')}")


def check_local_search(settings: Settings) -> Check:
    from scrapers.search.corpus_files import describe_skips
    from scrapers.search.factory import corpus_limits
    from scrapers.search.local import LocalCorpus

    search = SearchSettings.of(settings)
    corpus_dir = search.corpus_dir
    corpus = LocalCorpus(corpus_dir, corpus_limits(search))
    skipped = describe_skips(corpus.skipped)
    found = f"{len(corpus.documents)} documents in {corpus_dir}"
    return Check("search:local", "ok", found + (f" ({skipped})" if skipped else ""))


def check_ddgs(settings: Settings) -> Check:
    import ddgs

    try:
        socket.getaddrinfo("duckduckgo.com", 443)
    except OSError as exc:
        return Check(
            "search:ddgs",
            "warn",
            f"ddgs {ddgs.__version__} installed, but no network ({exc})",
            "connect to the internet, or use --corpus DIR with the local provider",
        )
    return Check("search:ddgs", "ok", f"ddgs {ddgs.__version__}, duckduckgo.com resolves")


def check_searxng(settings: Settings) -> Check:
    """One search through the research client itself: same SSRF guard on redirects, same error texts."""
    from scrapers.errors import SearchError
    from scrapers.search.searxng import SearxngSearchProvider
    from scrapers.settings import FetchSettings

    search = SearchSettings.of(settings)
    if not search.searxng_url:
        return Check("search:searxng", "warn", "not configured", "set MAGI_SEARCH_SEARXNG_URL to a SearXNG instance")
    provider = SearxngSearchProvider(
        search.searxng_url,
        timeout_s=min(10.0, search.searxng_timeout_s),
        attempts=1,
        allow_private=FetchSettings.of(settings).allow_private,
    )
    try:
        results = asyncio.run(provider.search("test", max_results=10))
    except SearchError as exc:
        return Check("search:searxng", "fail", first_line(exc), "the message says what to change")
    return Check("search:searxng", "ok", f"{provider.base_url} answered {len(results)} results")


def check_llm(settings: Settings, send: bool) -> list[Check]:
    """One check per configured LLM role (``default`` and each ``llm.roles``/``models``/``params`` entry):
    its provider and model, and with ``send`` the answer to one tiny request."""
    from core.llm import resolve_role
    from core.llm.offline import offline_config_path
    from core.llm.roles import configured_roles

    roles = [resolve_role(settings.llm, role) for role in configured_roles(settings.llm)]
    if not any(r.endpoint for r in roles):
        return [
            Check(
                "llm",
                "warn",
                "no LLM provider configured: research and the café router work, the council, critic and advisor "
                "answer 503 / exit 5",
                "set MAGI_LLM_PROVIDER=anthropic|openai|replay|python:MODULE:FUNCTION; to try every system offline "
                f"on the shipped scripted models: magi serve --config {offline_config_path()}",
            )
        ]
    return [_guarded(f"llm:{r.role}", partial(_check_role, settings, r, send)) for r in roles]


def _check_role(settings: Settings, resolved: ResolvedRole, send: bool) -> Check:
    from pydantic import BaseModel

    from core.llm import Generated, Message, generate, require_llm

    name = f"llm:{resolved.role}"
    if resolved.endpoint is None:
        return Check(name, "warn", f"no provider (model {resolved.model})", "set llm.roles.<role>.provider")
    where = f"provider {resolved.endpoint.label}, model {resolved.model}"
    client = require_llm(settings.llm, "magi doctor --llm", resolved.role)  # builds the client: bad settings fail here
    if not send:
        return Check(name, "ok", f"{where} (not contacted; use --llm to send a test request)")
    started = time.perf_counter()
    request = generate(
        client,
        system="You are a health check. Answer with one word.",
        messages=[Message(role="user", content="Reply with: ok")],
        max_tokens=16,
        role=resolved.role,
    )
    generated: Generated[BaseModel] = asyncio.run(request)
    answer = generated.response.text.strip()[:40]
    said = generated.response.model  # the model that answered, not only the one asked for
    if said in ("", resolved.endpoint.label):  # a function provider names itself, not a model
        said = resolved.model
    return Check(
        name,
        "ok",
        f"provider {resolved.endpoint.label}, model {said} answered {answer!r} "
        f"in {time.perf_counter() - started:.2f} s",
    )


def check_store(settings: Settings) -> Check:
    from core.masking import masked
    from core.store import open_store

    store = open_store(settings)  # connects, migrates (refuses a newer release's store): failures land here
    try:
        applied = len(store.applied_migrations())
        releases = store.releases()
    finally:
        store.close()
    written = f"migrated by {', '.join(releases)}" if releases else "no release recorded"
    return Check("store", "ok", f"{store.dialect}: {masked(store.url)}, {applied} migrations applied ({written})")


def check_carried_forward(settings: Settings) -> list[Check]:
    """Each renamed or removed setting the config still uses: it works, and this says what to rename."""
    return [
        Check("settings", "warn", notice, "write the new name (docs: settings reference, renamed keys)")
        for notice in settings.carried_forward
    ]


def check_plugin_isolation() -> Check:
    """How plugin commands are kept apart here (magi/isolation.py): a PID namespace, or the weaker
    fallback, said plainly."""
    from magi.isolation import isolation

    found = isolation()
    if found.kind == "pid-namespace":
        return Check("plugin-isolation", "ok", "each plugin command runs in a PID namespace of its own")
    return Check(
        "plugin-isolation",
        "warn",
        f"no PID namespace ({found.note}): a plugin command's stray descendants may outlive it and it can read "
        "other processes' /proc",
        "install util-linux (unshare) and allow namespaces (root with CAP_SYS_ADMIN, or user namespaces)",
    )


def check_font() -> Check:
    from core.fonts import INSTALL_HINT, find_japanese_font

    found = find_japanese_font()
    if found is None:
        return Check(
            "japanese-font",
            "warn",
            "none installed: research charts are left out, advisor charts and PDFs fail",
            INSTALL_HINT,
        )
    return Check("japanese-font", "ok", str(found))


def check_system_packages() -> list[Check]:
    """Each Debian package of data/system-packages.txt: present, or missing with what it costs and the fix."""
    from core.system_packages import is_installed, system_packages

    checks = []
    for package in system_packages():
        state = is_installed(package.name)
        name = f"system:{package.name}"
        if state is None:
            checks.append(Check(name, "warn", f"not a Debian system, cannot check ({package.purpose})"))
        elif state:
            checks.append(Check(name, "ok", f"installed ({package.purpose})"))
        elif package.group in ("demo", "test"):
            need = {"demo": "used by every command", "test": "used by the tests"}[package.group]
            checks.append(
                Check(name, "warn", f"missing; {need}: {package.purpose}", f"sudo apt-get install {package.name}")
            )
        # a package only the benchmarks use is no concern of a user's machine: not reported when missing
    return checks


def _guarded(name: str, probe: Callable[[], Check]) -> Check:
    try:
        return probe()
    except Exception as exc:
        return Check(name, "fail", first_line(exc), "see the message; magi doctor --format json shows all settings")


def live_figures(settings: Settings, address: str) -> int:
    """``--cluster``: every magi metric of the cluster's nodes, summed, one line per label set."""
    from core.runtime import start_ray, stop_ray
    from core.telemetry.scrape import cluster_metric_urls, scrape

    start_ray(settings, address=address)
    try:
        urls = cluster_metric_urls()
        figures = scrape(urls)
    finally:
        stop_ray()
    lines = [f"# magi doctor --cluster {address}", "", f"nodes read: {len(urls)}", ""]
    for (family, labels), value in sorted(figures.items()):
        shown = ", ".join(f"{k}={v}" for k, v in labels if k != "system")
        lines.append(f"- {family}{' {' + shown + '}' if shown else ''}: {value:,.4g}")
    if not figures:
        lines.append("no magi metrics yet (no traffic since the nodes started, or no metrics port)")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def run(args: argparse.Namespace) -> int:
    from core.llm import require_llm

    settings = settings_from(args)
    if args.cluster:
        return live_figures(settings, args.cluster)
    if args.llm:  # fail fast, before the slower checks, when the asked-for LLM is not configured
        require_llm(settings.llm, "magi doctor --llm")
    checks = [
        _guarded("ray", lambda: check_ray(settings)),
        _guarded("store", lambda: check_store(settings)),
        _guarded("ginza", lambda: check_ginza(settings)),
        _guarded("search:local", lambda: check_local_search(settings)),
        _guarded("search:ddgs", lambda: check_ddgs(settings)),
        _guarded("search:searxng", lambda: check_searxng(settings)),
    ]
    checks += check_carried_forward(settings)
    llm_checks = check_llm(settings, args.llm)
    checks += [*llm_checks, _guarded("japanese-font", check_font), _guarded("plugin-isolation", check_plugin_isolation)]
    checks += check_system_packages()
    for llm_check in llm_checks if args.llm else []:
        if llm_check.status != "ok":
            llm_check.status = "fail"
    # the checks first: what works and what to fix; the ~120 settings only when asked for (or in JSON)
    lines = ["# magi doctor", "", f"magi-cluster {release()}", "", "## Checks", ""]
    for check in checks:
        lines.append(f"- [{check.status}] {check.name}: {check.detail}" + (f" — fix: {check.fix}" if check.fix else ""))
    described = describe(settings)
    lines += ["", "## Settings", ""]
    if args.settings:
        for key, value in described.items():
            if isinstance(value, dict):
                lines.append(f"- {key}:")
                lines += [f"  - {sub}: {shown}" for sub, shown in value.items()]
            else:
                lines.append(f"- {key}: {value}")
    else:
        count = sum(len(v) if isinstance(v, dict) else 1 for v in described.values())
        lines.append(f"{count} effective settings: `magi doctor --settings` lists them (or --format json)")
    emit(
        settings,
        {"version": release(), "settings": described, "checks": [c.__dict__ for c in checks]},
        "\n".join(lines),
    )
    return 1 if any(c.status == "fail" for c in checks) else 0


__all__ = [
    "Check",
    "check_carried_forward",
    "check_ddgs",
    "check_font",
    "check_ginza",
    "check_llm",
    "check_local_search",
    "check_plugin_isolation",
    "check_ray",
    "check_searxng",
    "check_store",
    "check_system_packages",
    "live_figures",
    "register",
    "run",
]
