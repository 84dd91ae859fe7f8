"""The sdd plugin's workflow (``magi spec "<request>"``): a cc-sdd spec drafted, reviewed by the
three sages and revised.

1. cc-sdd's templates: when ``<dir>/.kiro/settings/templates/specs`` is missing, the plugin's
   ``install`` bridge command runs (``npx -y cc-sdd@latest --claude --lang ja --yes`` by default; the
   real tool is an installer of templates and rules, it takes no request). Idempotent: templates
   present means no install. A missing ``npx`` or a failing installer is one line saying how to install
   it or disable the plugin.
2. Draft: ``requirements.md`` (EARS, with cc-sdd's ``rules/ears-format.md`` when present), then
   ``design.md``, then ``tasks.md``, each by filling cc-sdd's template through the LLM (role
   ``magi.sdd``), each seeing the documents before it.
3. Review: the three resident sages (their personas plus the plugin's agent_overrides, in a
   conversation of the review's own) review the whole draft in parallel: findings per sage with
   document, severity and suggestion, and a verdict.
4. Revise: each document is rewritten to address the findings about it; the revised documents, the
   first drafts (``drafts/``) and the review record (``review.md``, ``review.json``) are written under
   ``.kiro/specs/<feature>/``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.errors import ConfigError, InputError, first_line
from core.files import atomic_write_text
from core.llm import LLMClient, Message, generate, make_llm
from core.llm.fencing import fence
from core.messages import catalogue, language_of
from core.models import CamelModel
from core.policy import PolicyModel, load_policy
from core.resources import data_path
from core.runtime import Runtime
from core.settings import Settings
from magi.executor import CommandResult, run_command
from magi.models import SAGES, Failure, SageName, Verdict, Vote
from magi.personas import system_prompts
from magi.plugins import Plugin, overrides_for
from magi.sage import Sage
from magi.seats import Seats
from magi.settings import CouncilSettings, Threshold
from magi.tally import NO_DECISION_EXIT, decision_name, exit_code, is_split, tally

DRAFT_ROLE = "magi.sdd"
DocumentName = Literal["requirements", "design", "tasks"]
DOCUMENTS: tuple[DocumentName, ...] = ("requirements", "design", "tasks")
DISABLE_HINT = "or disable the plugin (council.disabled_plugins: [sdd], or MAGI_COUNCIL_DISABLED_PLUGINS=sdd)"


class SddPrompts(PolicyModel):
    policy_name: ClassVar[str] = "sdd plugin prompts"

    system: str
    draft: str
    review: str
    revise: str


@cache
def sdd_prompts() -> SddPrompts:
    return load_policy(data_path("magi", "sdd.yaml"), SddPrompts)


class SddOptions(BaseModel):
    """The ``options:`` of the sdd plugin file."""

    model_config = ConfigDict(extra="forbid")

    kiro_dir: str = ".kiro"
    templates: str = "settings/templates/specs"
    rules: str = "settings/rules"
    documents: list[DocumentName] = Field(default_factory=lambda: list(DOCUMENTS))


class SpecDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    markdown: str = Field(min_length=1)


class RevisedDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    markdown: str = Field(min_length=1)
    addressed: list[int] = Field(default_factory=list)


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    document: Literal["requirements", "design", "tasks"]
    severity: Literal["high", "medium", "low"]
    finding: str = Field(min_length=1)
    suggestion: str = ""


class ReviewFindings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    findings: list[Finding] = Field(default_factory=list)
    verdict: Verdict
    summary: str = ""


class SageReview(CamelModel):
    sage: SageName
    verdict: Verdict
    summary: str
    findings: list[Finding]


class SpecResult(CamelModel):
    feature: str
    folder: str
    installed: bool
    install: CommandResult | None = None
    files: list[str]
    reviews: list[SageReview]
    addressed: dict[str, list[int]]
    failures: list[Failure]
    language: Literal["ja", "en"] = "ja"
    decision: Literal["APPROVE", "DENY", "CONDITIONAL", "NO_DECISION"] = "NO_DECISION"
    split: bool = False
    exit_code: int = NO_DECISION_EXIT  # follows the review's decision like `magi ask`

    def markdown(self) -> str:
        c, lang = catalogue("magi"), self.language
        decision = c.text("decision.split" if self.split else f"decision.{self.decision}", lang)
        lines = [
            c.text("spec.title", lang, feature=self.feature),
            "",
            c.text("spec.decision", lang, decision=decision, code=self.exit_code),
            c.text("spec.folder", lang, folder=self.folder),
        ]
        if self.installed:
            argv = " ".join(self.install.argv if self.install else [])
            lines.append(c.text("spec.installed", lang, argv=argv))
        lines += [f"- {f}" for f in self.files]
        for review in self.reviews:
            verdict = c.text(f"verdict.{review.verdict.value}", lang)
            lines += [
                "",
                c.text("spec.review", lang, sage=review.sage.display, verdict=verdict),
                "",
                review.summary,
                "",
            ]
            lines += [
                c.text(
                    "spec.finding",
                    lang,
                    severity=c.text(f"severity.{f.severity}", lang),
                    document=f.document,
                    finding=f.finding,
                )
                for f in review.findings
            ]
        for failure in self.failures:
            kind = c.text(f"failure.{failure.kind}", lang)
            lines.append(c.text("spec.failed", lang, sage=failure.sage.display, kind=kind, message=failure.message))
        return "\n".join(lines) + "\n"


def feature_name(request: str, given: str | None = None) -> str:
    """A readable folder name: ``--feature`` as given (checked), else the words of the request's first
    line (any script: 「ログイン機能を追加」 stays Japanese) joined by '-', else a hash."""
    if given is not None:
        if not re.fullmatch(r"[^\W_][\w-]{0,63}", given) or "_" in given or given != given.lower():
            raise InputError(f"--feature {given!r}: use lower-case letters, digits and '-' (at most 64)")
        return given
    first = unicodedata.normalize("NFKC", request.strip().splitlines()[0] if request.strip() else "")
    words = re.findall(r"[^\W_]+", first.lower())
    slug = "-".join(words)[:48].strip("-")
    return slug or "feature-" + hashlib.sha256(request.encode()).hexdigest()[:8]


def review_decision(reviews: list[SageReview], threshold: Threshold = "majority") -> tuple[Verdict | None, bool]:
    """The council's decision on the draft, by the same tally as ``magi ask`` (and whether it is split)."""
    votes: dict[SageName, Vote | None] = {s: None for s in SAGES}
    for review in reviews:
        votes[review.sage] = Vote(verdict=review.verdict, reason=review.summary or "-", confidence=1.0)
    decision, _ = tally(votes, threshold)
    return decision, is_split(votes, decision)


async def ensure_templates(plugin: Plugin, options: SddOptions, workdir: Path) -> CommandResult | None:
    """Install cc-sdd's templates when missing (None when they were already there)."""
    templates = workdir / options.kiro_dir / options.templates
    if templates.is_dir():
        return None
    command = plugin.bridge.get("install")
    if command is None:
        raise ConfigError(
            f"plugin {plugin.name} ({plugin.source}) has no bridge command 'install'; add one, {DISABLE_HINT}"
        )
    result = await run_command(command, workdir=workdir)
    shown = " ".join(command.argv)
    if result.error is not None and "program not found" in result.error:
        raise ConfigError(
            f"cc-sdd could not run: {command.argv[0]} was not found; install Node.js 18+ (it provides npx), "
            + DISABLE_HINT
        )
    if not result.ok:
        raise ConfigError(
            f"cc-sdd installer `{shown}` failed: {result.describe()}; run it yourself to see why, {DISABLE_HINT}"
        )
    if not templates.is_dir():
        raise ConfigError(
            f"cc-sdd installer `{shown}` succeeded but {templates} is still missing; check the plugin's install argv "
            f"and options.templates, {DISABLE_HINT}"
        )
    return result


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read {what} {path}: {exc}; reinstall the templates (delete the folder and rerun)"
        ) from exc


async def _draft(client: LLMClient, request: str, options: SddOptions, workdir: Path) -> dict[str, str]:
    prompts = sdd_prompts()
    root = workdir / options.kiro_dir
    ears = root / options.rules / "ears-format.md"
    rules = _read(ears, "EARS rules") if ears.is_file() else "Write acceptance criteria in EARS form."
    drafts: dict[str, str] = {}
    for document in options.documents:
        template = _read(root / options.templates / f"{document}.md", f"cc-sdd {document} template")
        context = "\n\n".join(f"## {name}.md\n{text}" for name, text in drafts.items()) or "(none yet)"
        prompt = prompts.draft.format(
            document=document,
            request=fence(request, "REQUEST"),
            template=template,
            rules=rules if document == "requirements" else "Stay consistent with the documents above.",
            context=context,
        )
        result = await generate(
            client,
            system=prompts.system,
            messages=[Message(role="user", content=prompt)],
            output_type=SpecDocument,
            role=DRAFT_ROLE,
            max_tokens=8000,
        )
        assert result.parsed is not None
        drafts[document] = result.parsed.markdown
    return drafts


async def _review(
    request: str,
    drafts: Mapping[str, str],
    settings: Settings,
    runtime: Runtime,
    plugin: Plugin,
    clients: Mapping[SageName, LLMClient] | None,
) -> tuple[list[SageReview], list[Failure]]:
    cfg = CouncilSettings.of(settings)
    systems = system_prompts(overrides_for([plugin]))
    seats = Seats(
        f"sdd-{uuid.uuid4().hex[:12]}",
        runtime,
        cfg,
        settings.llm,
        systems,
        clients=clients,
        outputs={"review": ReviewFindings},
    )
    try:
        await seats.open()
        draft = "\n\n".join(f"# {name}.md\n\n{text}" for name, text in drafts.items())
        prompt = sdd_prompts().review.format(request=fence(request, "REQUEST"), draft=draft)
        outcomes = await runtime.gather([seats.call(s, Sage.ask, "review", prompt) for s in SAGES], cfg.timeout_s)
    finally:
        await seats.close()
    reviews: list[SageReview] = []
    failures: list[Failure] = []
    for sage, outcome in zip(SAGES, outcomes, strict=True):
        reply = outcome.value
        if outcome.timed_out:
            failures.append(
                Failure(sage=sage, phase="review", kind="timeout", message=f"no answer within {cfg.timeout_s:g} s")
            )
        elif outcome.error is not None or reply is None:
            message = first_line(outcome.error or RuntimeError("no reply"), 300)
            failures.append(Failure(sage=sage, phase="review", kind="exception", message=message))
        elif reply.output is None:
            failures.append(
                Failure(sage=sage, phase="review", kind="invalid_output", message=reply.error or "no output")
            )
        else:
            found = ReviewFindings.model_validate(reply.output)
            reviews.append(SageReview(sage=sage, verdict=found.verdict, summary=found.summary, findings=found.findings))
    return reviews, failures


def _numbered(reviews: list[SageReview]) -> list[tuple[int, SageReview, Finding]]:
    numbered: list[tuple[int, SageReview, Finding]] = []
    for review in reviews:
        for finding in review.findings:
            numbered.append((len(numbered) + 1, review, finding))
    return numbered


async def _revise(
    client: LLMClient, drafts: Mapping[str, str], reviews: list[SageReview]
) -> tuple[dict[str, str], dict[str, list[int]]]:
    prompts = sdd_prompts()
    numbered = _numbered(reviews)
    revised: dict[str, str] = {}
    addressed: dict[str, list[int]] = {}
    for document, draft in drafts.items():
        mine = [(n, r, f) for n, r, f in numbered if f.document == document]
        if not mine:
            revised[document], addressed[document] = draft, []
            continue
        findings = "\n".join(f"{n}. [{f.severity}] ({r.sage.display}) {f.finding} — {f.suggestion}" for n, r, f in mine)
        result = await generate(
            client,
            system=prompts.system,
            messages=[
                Message(role="user", content=prompts.revise.format(document=document, draft=draft, findings=findings))
            ],
            output_type=RevisedDocument,
            role=DRAFT_ROLE,
            max_tokens=8000,
        )
        assert result.parsed is not None
        revised[document] = result.parsed.markdown
        addressed[document] = sorted(set(result.parsed.addressed) & {n for n, _, _ in mine})
    return revised, addressed


def _record(
    request: str, reviews: list[SageReview], failures: list[Failure], addressed: Mapping[str, list[int]]
) -> str:
    done = {n for numbers in addressed.values() for n in numbers}
    lines = ["# Review record", "", "Request:", "", *(f"> {line}" for line in request.splitlines()), ""]
    for n, review, f in _numbered(reviews):
        mark = "addressed" if n in done else "open"
        lines.append(
            f"{n}. [{f.severity}] {review.sage.display} on {f.document}: {f.finding} — {f.suggestion} ({mark})"
        )
    lines += ["", "## Verdicts on the draft", ""]
    lines += [f"- {r.sage.display}: {r.verdict.value} — {r.summary}" for r in reviews]
    lines += [f"- {f.sage.display}: no review ({f.kind}: {f.message})" for f in failures]
    return "\n".join(lines) + "\n"


async def spec_workflow(
    request: str,
    settings: Settings,
    runtime: Runtime,
    plugin: Plugin,
    *,
    workdir: Path,
    feature: str | None = None,
    clients: Mapping[SageName, LLMClient] | None = None,
    drafter: LLMClient | None = None,
) -> SpecResult:
    options = SddOptions.model_validate(plugin.options)
    name = feature_name(request, feature)
    if not workdir.is_dir():
        raise InputError(f"--dir {workdir} is not a folder; give the project folder")
    client = drafter or make_llm(settings.llm, role=DRAFT_ROLE)
    if client is None:
        raise ConfigError("`magi spec` needs an LLM, but none is configured; set MAGI_LLM_PROVIDER")
    install = await ensure_templates(plugin, options, workdir)
    drafts = await _draft(client, request, options, workdir)
    reviews, failures = await _review(request, drafts, settings, runtime, plugin, clients)
    revised, addressed = await _revise(client, drafts, reviews)
    folder = workdir / options.kiro_dir / "specs" / name
    files = []
    for document, text in revised.items():
        files.append(atomic_write_text(folder / f"{document}.md", text))
        atomic_write_text(folder / "drafts" / f"{document}.md", drafts[document])
    files.append(atomic_write_text(folder / "review.md", _record(request, reviews, failures, addressed)))
    decision, split = review_decision(reviews, CouncilSettings.of(settings).threshold)
    result = SpecResult(
        language=language_of(request),
        decision=decision_name(decision),
        split=split,
        exit_code=exit_code(decision),
        feature=name,
        folder=str(folder),
        installed=install is not None,
        install=install,
        files=[str(f) for f in files],
        reviews=reviews,
        addressed=addressed,
        failures=failures,
    )
    atomic_write_text(folder / "review.json", result.model_dump_json(indent=2, by_alias=True))
    return result


__all__ = [
    "DISABLE_HINT",
    "DRAFT_ROLE",
    "Finding",
    "ReviewFindings",
    "RevisedDocument",
    "SageReview",
    "SddOptions",
    "SddPrompts",
    "SpecDocument",
    "SpecResult",
    "ensure_templates",
    "feature_name",
    "review_decision",
    "sdd_prompts",
    "spec_workflow",
]
