"""Research evaluated on real documentation Debian ships, with hand-written questions and expected facts.

Each ``benchmarks/research_eval/*.yaml`` names a Debian documentation package, where its HTML pages
are installed, and questions with the facts an answer must state and the page that states them. The
packages are installed when missing (apt-get; CI runs as root). Each document set is copied into a
scratch corpus folder and ``magi research QUESTION --corpus DIR`` runs once per question (the real
CLI, one data directory for the whole evaluation, so pages and analyses are cached across questions,
as for a user asking several questions of one manual).

Printed as JSON, per set and overall:

* ``factRecall``: share of expected facts stated by a claim of the answer (a fact is a list of terms
  that one claim must all contain, case- and width-insensitive);
* ``pageCited``: share of questions where a claim stating an expected fact cites the holding page;
* ``meanSourceOverlap``: mean pairwise Jaccard overlap of the agents' sources, over all iterations;
* ``iterationsAdding``: share of iterations 2..N that added at least one claim to the answer;
* ``seconds``: wall time of the runs.

Usage: .venv/bin/python benchmarks/research_eval.py [--set NAME] [--limit N] [--agents 3] [--iterations 3]
"""

from __future__ import annotations

import argparse
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from research.debian_docs import doc_files, ensure_packages  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "research_eval"


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def load_sets(only: str | None) -> list[dict[str, Any]]:
    sets = []
    for path in sorted(QUESTIONS.glob("*.yaml")):
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        if only and spec["name"] != only:
            continue
        sets.append(spec)
    if not sets:
        raise SystemExit(f"no question set named {only!r} in {QUESTIONS}")
    return sets


def build_corpus(spec: dict[str, Any], into: Path) -> Path:
    """Copy the set's installed HTML pages into a scratch folder (the corpus reads regular files only)."""
    ensure_packages([spec["package"]])
    folder = into / spec["name"]
    folder.mkdir(parents=True, exist_ok=True)
    for path in doc_files(Path(spec["root"]), spec["files"]):
        if path.name not in spec.get("exclude", []):
            shutil.copyfile(path, folder / path.name)
    return folder


def run_question(
    question: str, corpus: Path, out: Path, data_dir: Path, agents: int, iterations: int
) -> dict[str, Any]:
    env = {**os.environ, "MAGI_DATA_DIR": str(data_dir)}
    command = [
        sys.executable, "-m", "cli.main", "research", question, "--corpus", str(corpus), "--out", str(out),
        "--format", "json", "--no-progress", "--agents", str(agents), "--iterations", str(iterations),
    ]  # fmt: skip
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"magi research failed for {question!r}: {done.stderr.strip()[-800:]}")
    result: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return result


def _claim_urls(claim: dict[str, Any]) -> set[str]:
    return {claim["source"], *(s["url"] for s in claim.get("supporting", []))}


def score_question(result: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    claims = result["claims"]
    page = item["page"]
    found, cited = 0, False
    for fact in item["facts"]:
        terms = [_norm(t) for t in fact]
        stating = [c for c in claims if all(t in _norm(c["text"]) for t in terms)]
        if stating:
            found += 1
            cited = cited or any(url.endswith("/" + page) for c in stating for url in _claim_urls(c))
    overlaps = [it["sourceOverlap"] for it in result["iterations"]]
    first_seen = [min(c["iterations"]) for c in claims if c.get("iterations")]
    later = [it["iteration"] for it in result["iterations"] if it["iteration"] > 1]
    adding = [i for i in later if i in first_seen]
    return {
        "question": item["question"],
        "facts": len(item["facts"]),
        "found": found,
        "pageCited": cited,
        "sourceOverlap": round(sum(overlaps) / len(overlaps), 3) if overlaps else 0.0,
        "laterIterations": len(later),
        "iterationsAdding": len(adding),
        "answer": result["executiveSummary"]["text"].splitlines()[:3],
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    facts = sum(r["facts"] for r in rows)
    later = sum(r["laterIterations"] for r in rows)
    return {
        "questions": len(rows),
        "factRecall": round(sum(r["found"] for r in rows) / facts, 3) if facts else 0.0,
        "pageCited": round(sum(r["pageCited"] for r in rows) / len(rows), 3) if rows else 0.0,
        "meanSourceOverlap": round(sum(r["sourceOverlap"] for r in rows) / len(rows), 3) if rows else 0.0,
        "iterationsAdding": round(sum(r["iterationsAdding"] for r in rows) / later, 3) if later else 0.0,
        "questionsWithAddingIterations": sum(1 for r in rows if r["iterationsAdding"] > 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="only", help="run one question set (its name:)")
    parser.add_argument("--limit", type=int, default=0, help="at most N questions per set")
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--verbose", action="store_true", help="print every question's row")
    args = parser.parse_args()
    report: dict[str, Any] = {"agents": args.agents, "iterations": args.iterations, "sets": {}}
    all_rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="magi-eval-") as tmp:
        scratch = Path(tmp)
        for spec in load_sets(args.only):
            corpus = build_corpus(spec, scratch / "corpora")
            rows = []
            set_started = time.perf_counter()
            questions = spec["questions"][: args.limit or None]
            for n, item in enumerate(questions):
                out = scratch / "out" / spec["name"] / str(n)
                result = run_question(item["question"], corpus, out, scratch / "data", args.agents, args.iterations)
                rows.append(score_question(result, item))
            summary = summarise(rows) | {"seconds": round(time.perf_counter() - set_started, 1), "lang": spec["lang"]}
            if args.verbose:
                summary["rows"] = rows
            report["sets"][spec["name"]] = summary
            all_rows += rows
    report["overall"] = summarise(all_rows) | {"seconds": round(time.perf_counter() - started, 1)}
    print(json.dumps(report, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
