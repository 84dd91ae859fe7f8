"""A research batch job across the loss of a node: every topic finishes, and only what the node held is redone.

A ``ray.cluster_utils.Cluster`` of three one-CPU nodes with a PostgreSQL store runs
``jobs/research_batch.py`` (its ``main``, as ``ray job submit`` would, on the head node) over
``--topics`` topics (52 by default) of the bundled corpus, ``--concurrency`` at a time. Once
``--kill-after`` topics are done, one worker node is removed with its raylet and every process on it
(``remove_node(allow_graceful=False)``): the one hosting most of the batch's actors (research agents,
NLP workers). The batch goes on on the two nodes left.

Prints JSON: the node removed and what it hosted; the batch's outcome from its ``summary.json``
(topics done, failed, ``redone``: topics researched again because the node held part of them); the
agents run again inside a topic (iterations retried after an agent was lost); the batch's time and,
as the same-run baseline, the mean time per topic before and after the loss (their ratio).

Usage: .venv/bin/python benchmarks/batch_node_loss.py [--topics 52] [--concurrency 2] [--kill-after 8]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUBJECTS = (
    "中小企業の価格転嫁",
    "労務費の価格転嫁",
    "原材料費の価格転嫁",
    "エネルギー費の価格転嫁",
    "価格交渉促進月間",
    "下請取引の監視",
    "発注者との価格交渉",
    "価格転嫁率の推移",
    "県内中小企業の価格転嫁",
    "取引適正化の指針",
    "受注者の価格交渉",
    "価格据え置きの要請",
    "転嫁できなかった費用",
)
ANGLES = ("の現状", "の課題", "の最新調査", "と業種別の違い")


def topics(count: int) -> list[str]:
    """``count`` distinct topics on the bundled corpus's subject (subjects x angles, then numbered)."""
    made = [subject + angle for angle in ANGLES for subject in SUBJECTS]
    while len(made) < count:
        made += [f"{topic}（その{len(made) // len(SUBJECTS) + 1}）" for topic in made[: count - len(made)]]
    return made[:count]


def actors_by_node() -> dict[str, list[str]]:
    """Live actors per node (from the GCS's actor table: no dashboard needed), by class."""
    from ray._private import state

    found: dict[str, list[str]] = {}
    for actor in state.actors().values():
        if actor.get("State") == "ALIVE":
            found.setdefault(actor["Address"]["NodeID"], []).append(str(actor.get("ActorClassName")))
    return found


BATCH_ACTORS = {"ResearchAgent", "NlpWorker", "Collector"}


def busiest_worker(cluster: Any) -> tuple[Any, int]:
    """The worker node hosting most of the batch's actors, and how many it hosts."""
    hosted = actors_by_node()
    node = max(cluster.worker_nodes, key=lambda n: len(BATCH_ACTORS.intersection(hosted.get(n.node_id, []))))
    return node, sum(name in BATCH_ACTORS for name in hosted.get(node.node_id, []))


def remove_busiest_worker(cluster: Any) -> dict[str, Any]:
    """Remove the worker node hosting most of the batch's actors, as a crash would; returns what it hosted."""
    hosted = actors_by_node()
    node, _ = busiest_worker(cluster)
    components = dict(sorted(Counter(hosted.get(node.node_id, [])).items()))
    cluster.remove_node(node, allow_graceful=False)
    return {"node": node.node_id[:12], "components": components}


def done_count(out: Path) -> int:
    return sum(1 for _ in out.glob("*/done.json"))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    import ray
    from ray.cluster_utils import Cluster

    from jobs import research_batch
    from tests.postgres import PostgresServer

    with tempfile.TemporaryDirectory(prefix="batch-node-loss-") as tmp:
        os.chmod(tmp, 0o755)
        pg_root = Path(tmp) / "pg"
        pg_root.mkdir()
        if os.geteuid() == 0:
            import pwd

            entry = pwd.getpwnam("postgres")
            os.chown(pg_root, entry.pw_uid, entry.pw_gid)
        postgres = PostgresServer(pg_root)
        postgres.start()
        cluster = None
        try:
            os.environ["MAGI_STORE_URL"] = postgres.create_database()
            os.environ["MAGI_DATA_DIR"] = str(Path(tmp) / "data")
            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
            for _ in range(2):
                cluster.add_node(num_cpus=1)
            cluster.wait_for_nodes()
            ray.init(address=cluster.address, log_to_driver=False)
            topics_file = Path(tmp) / "topics.txt"
            topics_file.write_text("\n".join(topics(args.topics)) + "\n", encoding="utf-8")
            out = Path(tmp) / "out"
            argv = [str(topics_file), "--out", str(out), "--concurrency", str(args.concurrency)]
            argv += ["--agents", "1", "--iterations", "1"]
            started = time.monotonic()
            job = asyncio.create_task(asyncio.to_thread(research_batch.main, argv))
            while done_count(out) < args.kill_after and not job.done():
                await asyncio.sleep(0.5)
            deadline = time.monotonic() + 60  # then wait for topics in flight to have actors on a worker node
            while not job.done() and time.monotonic() < deadline:
                if (await asyncio.to_thread(busiest_worker, cluster))[1]:
                    break
                await asyncio.sleep(0.2)
            killed_at, done_before = time.monotonic(), done_count(out)
            node = await asyncio.to_thread(remove_busiest_worker, cluster)
            exit_code = await job
            ended = time.monotonic()
            summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
            retried = 0
            for marker in out.glob("*/report.json"):
                report = json.loads(marker.read_text(encoding="utf-8"))
                retried += sum(bool(it.get("retried")) for it in report.get("iterations", []))
            before = (killed_at - started) / max(1, done_before)
            after = (ended - killed_at) / max(1, args.topics - done_before)
            return {
                "topics": args.topics,
                "concurrency": args.concurrency,
                "exit_code": exit_code,
                "node_kill": node | {"after_topics_done": done_before, "at_s": round(killed_at - started, 1)},
                "done": summary["done"],
                "failed": summary["failed"],
                "redone": summary["redone"],
                "redone_topics": [t["id"] for t in summary["topics"] if t["attempts"] > 1],
                "iterations_retried": retried,
                "seconds": round(ended - started, 1),
                "seconds_per_topic_before_loss": round(before, 2),
                "seconds_per_topic_after_loss": round(after, 2),
                "after_over_before": round(after / before, 2) if before else None,
            }
        finally:
            with contextlib.suppress(Exception):
                ray.shutdown()
            if cluster is not None:
                cluster.shutdown()  # type: ignore[no-untyped-call]
            postgres.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=52, help="topics in the batch (50+)")
    parser.add_argument("--concurrency", type=int, default=2, help="topics researched at once")
    parser.add_argument("--kill-after", type=int, default=8, help="topics done before the node goes")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    print(json.dumps(asyncio.run(run(args)), ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
