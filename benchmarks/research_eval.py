"""Research evaluated on real documentation Debian ships, with hand-written questions and expected facts.

``benchmarks/research_eval/sets/*.yaml`` names each documentation set: the Debian package, where its
HTML pages are installed, which pages to read. Its questions are split in halves with the same
file name: ``dev/`` (the engine may be tuned on them) and ``test/`` (never tuned on: committed before
the engine changes they measure). ``third/`` is a third half on documentation sets of kinds the first
ten lack (asciidoc man pages, Sphinx FAQ/HOWTO pages, DocBook references, plain HTML READMEs), two in
Japanese, committed before any engine change of the "reading any manual" work and never tuned on.
A question names the facts an answer must state and the page that states them. The packages are
installed when missing (apt-get; CI runs as root). Each document set is copied into a scratch corpus
folder and ``magi research QUESTION --corpus DIR`` runs once per question (the real CLI, one data
directory for the whole evaluation, so pages and analyses are cached across questions, as for a user
asking several questions of one manual).

Printed as JSON, for each half that ran, overall and per set:

* ``factRecall``: share of expected facts stated by a claim of the answer (a fact is a list of terms
  that one claim must all contain, case- and width-insensitive; the claim is read with the subject
  its document gives it, the claim's ``context``, when the report shows one);
* ``pageCited``: share of questions where a claim stating an expected fact cites the holding page;
* ``summaryRecall``: share of expected facts stated by the executive summary (the answer read first);
* ``calibration``: whether a claim's confidence means something. The judged claims are the answers the
  executive summary gives (its ``answers`` ids, else the claims quoted before its supporting facts);
  one is *right* when it states an expected fact. ``high`` is the share of judged claims at confidence
  >= 0.8 that are right, ``low`` the share of those below 0.4 that are wrong (each with its count);
* ``meanSourceOverlap``: mean pairwise Jaccard overlap of the agents' sources, over all iterations;
* ``iterationsAdding``: share of iterations 2..N that added at least one claim to the answer;
* ``seconds``: wall time of the runs.

``--check`` runs no research: it verifies that every expected fact is on its holding page (all its
terms in the page's text), so a question cannot expect what the document does not say.

``--served-model`` runs the agents with an LLM: the bundled small model (SmolLM2-135M, English only)
served by llama.cpp on a loopback port, every role pointed at it; the rows then count the LLM calls.
Its quality is not the target: the run shows that the LLM path answers documentation questions end
to end, and how far a model this small falls below the offline engine.

How the runs are started. By default each question is its own ``magi research`` process, which starts
its own Ray and NLP pool (what a user does). ``--ray-address ADDR`` attaches those processes to one
long-lived Ray cluster instead (``ray start --head``), so a loaded machine does not time out starting
Ray for every question. ``--one-process`` runs every question's full research in this process, on one
Ray and one NLP pool kept between questions (as a Serve replica keeps them), and writes each result
with the CLI's own ``write_outputs``: the same engine, without a process, Ray and model start-up per
question (about 40 s of overhead a question on a loaded machine). ``--tree DIR`` takes the engine from
another checkout (a baseline: ``git archive COMMIT | tar -x -C DIR``), with this evaluation's questions.

Usage: .venv/bin/python benchmarks/research_eval.py [--split dev|test|third|all] [--set NAME] [--limit N]
       [--agents 3] [--iterations 3] [--verbose] [--check] [--served-model]
       [--ray-address ADDR | --one-process] [--tree DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any

import yaml
from lxml import html as lxml_html

ROOT = Path(__file__).resolve().parents[1]


def _engine_tree(argv: list[str]) -> Path:
    """The checkout whose engine answers (``--tree DIR``), read before anything of it is imported."""
    for n, arg in enumerate(argv):
        if arg == "--tree" and n + 1 < len(argv):
            return Path(argv[n + 1]).resolve()
        if arg.startswith("--tree="):
            return Path(arg.split("=", 1)[1]).resolve()
    return ROOT


ENGINE = _engine_tree(sys.argv)
sys.path.insert(0, str(ENGINE))

from research.debian_docs import doc_files, ensure_packages  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "research_eval"
SPLITS = ("dev", "test", "third")


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def load_sets(only: str | None, splits: tuple[str, ...]) -> list[dict[str, Any]]:
    """Each set's description with its questions, every question marked with the half it belongs to."""
    sets = []
    for path in sorted((QUESTIONS / "sets").glob("*.yaml")):
        if not any((QUESTIONS / split / path.name).exists() for split in splits):
            continue  # a set none of the chosen halves asks about is not even installed
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        if only and spec["name"] != only:
            continue
        spec["questions"] = []
        for split in splits:
            half = QUESTIONS / split / path.name
            if not half.exists():
                continue
            questions = yaml.safe_load(half.read_text(encoding="utf-8"))
            if questions["name"] != spec["name"]:
                raise SystemExit(f"{half} names set {questions['name']!r}, expected {spec['name']!r}")
            spec["questions"] += [q | {"split": split} for q in questions["questions"]]
        sets.append(spec)
    if not sets:
        raise SystemExit(f"no question set named {only!r} in {QUESTIONS / 'sets'}")
    return sets


def build_corpus(spec: dict[str, Any], into: Path) -> Path:
    """Copy the set's installed HTML pages into a scratch folder (the corpus reads regular files only)."""
    ensure_packages([spec["package"]])
    folder: Path = into / str(spec["name"])
    folder.mkdir(parents=True, exist_ok=True)
    patterns = spec["files"] if isinstance(spec["files"], list) else [spec["files"]]
    for path in (p for pattern in patterns for p in doc_files(Path(spec["root"]), pattern)):
        if path.name not in spec.get("exclude", []):  # pages of several folders land side by side
            shutil.copyfile(path, folder / path.name)
    return folder


def check_facts(spec: dict[str, Any], corpus: Path) -> list[str]:
    """Questions whose expected fact is not on the holding page (every term must occur in its text)."""
    problems = []
    texts: dict[str, str] = {}
    for item in spec["questions"]:
        page = corpus / item["page"]
        if not page.exists():
            problems.append(f"{spec['name']}: {item['question']!r}: page {item['page']} is not in the corpus")
            continue
        if item["page"] not in texts:
            root = lxml_html.parse(str(page)).getroot()  # elements read joined and apart (segmented lists)
            texts[item["page"]] = _norm(root.text_content()) + "\n" + _norm(" ".join(root.itertext()))
        for fact in item["facts"]:
            # "name: value" is a record's field and value, which the page holds apart (a table, a list)
            parts = [part for term in fact for part in _norm(str(term)).split(": ")]
            missing = [t for t in parts if t not in texts[item["page"]]]
            if missing:
                problems.append(f"{spec['name']}: {item['question']!r}: {missing} not on {item['page']}")
    return problems


def served_model_config(folder: Path) -> tuple[Any, Path]:
    """Load the bundled small model on llama.cpp and write the ``magi.yaml`` that points every LLM role
    at it (:meth:`LocalModel.llm_settings`). Returns the model (keep it alive while the runs last) and
    the file."""
    from core.llm.local_model import LocalModel, ModelConfig

    model = LocalModel(ModelConfig(context_tokens=8192, parallel=3, threads=1))
    config = {"llm": model.llm_settings(), "research": {"agent_timeout_s": 1800}}
    path = folder / "magi.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return model, path


class ProcessRuns:
    """Each question a ``magi research`` process of its own (what a user runs), optionally attached to a
    long-lived Ray cluster (``ray_address``) instead of starting one."""

    def __init__(self, data_dir: Path, agents: int, iterations: int, config: Path | None, ray_address: str | None):
        self.env = {**os.environ, "MAGI_DATA_DIR": str(data_dir), "PYTHONPATH": str(ENGINE)}
        if config is not None:
            self.env["MAGI_CONFIG"] = str(config)
        if ray_address:
            # a head started on loopback (``ray start --head --node-ip-address=127.0.0.1``) is reached there
            self.env |= {"RAY_ADDRESS": ray_address, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
        self.options = ["--agents", str(agents), "--iterations", str(iterations)]

    def __enter__(self) -> ProcessRuns:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def run(self, question: str, corpus: Path, out: Path) -> dict[str, Any]:
        command = [
            sys.executable, "-m", "cli.main", "research", question, "--corpus", str(corpus), "--out", str(out),
            "--format", "json", "--no-progress", *self.options,
        ]  # fmt: skip
        for _attempt in range(RUN_ATTEMPTS):  # a machine too loaded for Ray to start in time fails a run
            done = subprocess.run(command, env=self.env, cwd=ENGINE, capture_output=True, text=True, check=False)
            if done.returncode == 0:
                break
            time.sleep(RETRY_PAUSE_S)  # let the machine's load ease before Ray starts again
        if done.returncode != 0:
            raise SystemExit(f"magi research failed for {question!r}: {done.stderr.strip()[-800:]}")
        result: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))
        return result


class InProcessRuns:
    """Every question's whole research in this process: one Ray (started, or attached at ``ray_address``)
    and one NLP pool for all of them, as a Serve replica keeps them; each result written by the CLI's
    ``write_outputs`` and read back from its ``report.json``."""

    def __init__(self, data_dir: Path, agents: int, iterations: int, config: Path | None, ray_address: str | None):
        os.environ["MAGI_DATA_DIR"] = str(data_dir)  # read by every load of the settings below
        if config is not None:
            os.environ["MAGI_CONFIG"] = str(config)
        if ray_address:
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        self.address = ray_address
        self.options = {"agent_count": agents, "iteration_count": iterations}
        self.loop = asyncio.Runner()
        self.stack = contextlib.AsyncExitStack()
        self.runtime: Any = None
        self.pool: Any = None

    def __enter__(self) -> InProcessRuns:
        from core.runtime import ray_runtime
        from core.settings import load_settings
        from nlp.settings import NlpSettings
        from research.engine import start_pool

        settings = load_settings(None)
        self.runtime = self.loop.run(self.stack.enter_async_context(ray_runtime(settings, address=self.address)))
        self.pool = start_pool(self.runtime, NlpSettings.of(settings))
        return self

    def __exit__(self, *_exc: object) -> None:
        for worker in self.pool.workers if self.pool else []:
            self.runtime.kill(worker)
        self.loop.run(self.stack.aclose())
        self.loop.close()

    def run(self, question: str, corpus: Path, out: Path) -> dict[str, Any]:
        from core.events import ListSink
        from core.settings import load_settings
        from research.engine import preflight, run_research
        from research.outputs import write_outputs
        from research.settings import RESEARCH_OPTIONS

        given = RESEARCH_OPTIONS.from_keywords({**self.options, "corpus": str(corpus)})
        settings = RESEARCH_OPTIONS.apply(load_settings(None), given)
        topic = preflight(question, settings)
        result = self.loop.run(run_research(topic, settings, self.runtime, ListSink(), pool=self.pool))
        out.mkdir(parents=True, exist_ok=True)
        _md, path = write_outputs(result, out)
        report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return report


def _claim_urls(claim: dict[str, Any]) -> set[str]:
    return {claim["source"], *(s["url"] for s in claim.get("supporting", []))}


def _stated(claim: dict[str, Any]) -> str:
    """What a claim states: its sentence, read with the subject its document gives it (when shown)."""
    return _norm(f"{claim.get('context') or ''} {claim['text']}")


def _states(text: str, fact: list[Any]) -> bool:
    return all(_norm(str(term)) in text for term in fact)


HIGH_CONFIDENCE, LOW_CONFIDENCE = 0.8, 0.4
RUN_ATTEMPTS, RETRY_PAUSE_S = 5, 15
_SUPPORTING_LABELS = ("supporting facts:", "裏付けとなる事実:", "key verified facts", "検証済みの主な事実")


def answer_claims(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims the executive summary gives as its answer: the ids it names (``answers``), else the
    claims whose sentence it quotes before its supporting facts (summaries that name no ids)."""
    summary = result["executiveSummary"]
    if "answers" in summary:
        ids = set(summary["answers"])
        return [c for c in result["claims"] if c["claimId"] in ids]
    head = _norm(summary["text"])
    cut = min((i for label in _SUPPORTING_LABELS if (i := head.find(_norm(label))) >= 0), default=len(head))
    head = head[:cut]
    return [c for c in result["claims"] if c["claimId"] in summary.get("claimsUsed", []) and _norm(c["text"]) in head]


def score_question(result: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    claims = result["claims"]
    page = item["page"]
    summary = _norm(result["executiveSummary"]["text"])
    found, in_summary, cited = 0, 0, False
    for fact in item["facts"]:
        stating = [c for c in claims if _states(_stated(c), fact)]
        in_summary += _states(summary, fact)
        if stating:
            found += 1
            cited = cited or any(url.endswith("/" + page) for c in stating for url in _claim_urls(c))
    judged = [
        [c["confidence"], any(_states(_stated(c), fact) for fact in item["facts"])] for c in answer_claims(result)
    ]
    overlaps = [it["sourceOverlap"] for it in result["iterations"]]
    first_seen = [min(c["iterations"]) for c in claims if c.get("iterations")]
    later = [it["iteration"] for it in result["iterations"] if it["iteration"] > 1]
    adding = [i for i in later if i in first_seen]
    return {
        "question": item["question"],
        "split": item["split"],
        "facts": len(item["facts"]),
        "found": found,
        "inSummary": in_summary,
        "pageCited": cited,
        "sourceOverlap": round(sum(overlaps) / len(overlaps), 3) if overlaps else 0.0,
        "laterIterations": len(later),
        "iterationsAdding": len(adding),
        "judged": judged,
        "answer": result["executiveSummary"]["text"].splitlines()[:3],
    } | ({"llmCalls": result["usage"]["calls"]} if result.get("usage") else {})


def calibration(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Share of judged claims at high confidence that are right, and at low confidence that are wrong."""
    judged = [pair for r in rows for pair in r["judged"]]
    high = [right for confidence, right in judged if confidence >= HIGH_CONFIDENCE]
    low = [right for confidence, right in judged if confidence < LOW_CONFIDENCE]
    return {
        "judged": len(judged),
        "high": {"claims": len(high), "right": round(sum(high) / len(high), 3) if high else None},
        "low": {"claims": len(low), "wrong": round(1 - sum(low) / len(low), 3) if low else None},
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    facts = sum(r["facts"] for r in rows)
    later = sum(r["laterIterations"] for r in rows)
    return {
        "questions": len(rows),
        "factRecall": round(sum(r["found"] for r in rows) / facts, 3) if facts else 0.0,
        "pageCited": round(sum(r["pageCited"] for r in rows) / len(rows), 3) if rows else 0.0,
        "summaryRecall": round(sum(r["inSummary"] for r in rows) / facts, 3) if facts else 0.0,
        "meanSourceOverlap": round(sum(r["sourceOverlap"] for r in rows) / len(rows), 3) if rows else 0.0,
        "iterationsAdding": round(sum(r["iterationsAdding"] for r in rows) / later, 3) if later else 0.0,
        "questionsWithAddingIterations": sum(1 for r in rows if r["iterationsAdding"] > 0),
        "calibration": calibration(rows),
    }


def report_halves(rows_by_set: dict[str, list[dict[str, Any]]], splits: tuple[str, ...]) -> dict[str, Any]:
    """Each half overall and per set, so the two halves are always read side by side."""
    halves: dict[str, Any] = {}
    for split in splits:
        per_set = {name: [r for r in rows if r["split"] == split] for name, rows in rows_by_set.items()}
        every = [r for rows in per_set.values() for r in rows]
        if every:
            sets = {name: summarise(rows) for name, rows in per_set.items() if rows}
            halves[split] = {"overall": summarise(every), "sets": sets}
    return halves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all", help="which half to run")
    parser.add_argument("--set", dest="only", help="run one question set (its name:)")
    parser.add_argument("--limit", type=int, default=0, help="at most N questions per set")
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--verbose", action="store_true", help="print every question's row")
    parser.add_argument("--check", action="store_true", help="only check that each fact is on its page")
    parser.add_argument("--served-model", action="store_true", help="LLM agents on the bundled small model")
    parser.add_argument("--ray-address", help="attach every run to this Ray cluster (a long-lived head)")
    parser.add_argument(
        "--one-process", action="store_true", help="every run in this process, one Ray and NLP pool for all"
    )
    parser.add_argument("--tree", type=Path, help="take the engine from this checkout (a baseline)")
    args = parser.parse_args()
    splits = SPLITS if args.split == "all" else (args.split,)
    report: dict[str, Any] = {"split": args.split, "agents": args.agents, "iterations": args.iterations}
    report["runs"] = "one process" if args.one_process else "a process per question"
    if ENGINE != ROOT:
        report["engine"] = str(ENGINE)
    if args.served_model:
        report["llm"] = "smollm2-135m-instruct on llama.cpp (loopback)"
    rows_by_set: dict[str, list[dict[str, Any]]] = {}
    seconds: dict[str, float] = {}
    problems: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="magi-eval-") as tmp:
        scratch = Path(tmp)
        # the model (when asked for) stays loaded while this block runs
        _model, config = served_model_config(scratch) if args.served_model else (None, None)
        runs_of = InProcessRuns if args.one_process and not args.check else ProcessRuns
        with runs_of(scratch / "data", args.agents, args.iterations, config, args.ray_address) as runs:
            for spec in load_sets(args.only, splits):
                corpus = build_corpus(spec, scratch / "corpora")
                questions = spec["questions"][: args.limit or None]
                if args.check:
                    problems += check_facts(spec | {"questions": questions}, corpus)
                    rows_by_set[spec["name"]] = []
                    continue
                rows = []
                set_started = time.perf_counter()
                for n, item in enumerate(questions):
                    result = runs.run(item["question"], corpus, scratch / "out" / spec["name"] / str(n))
                    rows.append(score_question(result, item))
                rows_by_set[spec["name"]] = rows
                seconds[spec["name"]] = round(time.perf_counter() - set_started, 1)
    if args.check:
        count = sum(len(s["questions"]) for s in load_sets(args.only, splits))
        print(json.dumps({"questions": count, "problems": problems}, ensure_ascii=False, indent=2))
        raise SystemExit(1 if problems else 0)
    report["halves"] = report_halves(rows_by_set, splits)
    every = [r for rows in rows_by_set.values() for r in rows]
    report["all"] = summarise(every) | {"seconds": round(time.perf_counter() - started, 1)}
    report["setSeconds"] = seconds
    if args.served_model:
        report["all"]["llmCalls"] = sum(r.get("llmCalls", 0) for r in every)
    if args.verbose:
        report["rows"] = rows_by_set
    print(json.dumps(report, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
