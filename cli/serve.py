"""``magi serve``: run the HTTP apps (Ray Serve) on a local or attached Ray until Ctrl-C."""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from typing import Any

from cli.common import settings_from

# (app name, route prefix, builder taking Settings); keep in sync with serve.yaml.
APPS: tuple[tuple[str, str, str], ...] = (
    ("research", "/", "deployments.research:build_app"),
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             shared: argparse.ArgumentParser) -> None:
    parser = commands.add_parser("serve", parents=[shared], help="serve the HTTP apps (research) with Ray Serve",
                                 description="Deploy the HTTP apps on Ray Serve and block until Ctrl-C.")
    parser.add_argument("--address", help="Ray cluster address (default: $RAY_ADDRESS, else a local Ray)")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP host (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, metavar="N", help="HTTP port (default 8000)")
    parser.set_defaults(handler=run)


def _builder(spec: str) -> Any:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def run(args: argparse.Namespace) -> int:
    import ray
    from ray import serve

    from core.errors import RuntimeSetupError
    from core.runtime import start_ray, stop_ray
    from core.store import configured_url, masked

    settings = settings_from(args)
    owned = not ray.is_initialized() and not (args.address or settings.ray_address)
    start_ray(settings, address=args.address)
    try:
        try:
            serve.start(http_options={"host": args.host, "port": args.port})
            for name, prefix, builder in APPS:
                serve.run(_builder(builder)(settings), name=name, route_prefix=prefix)
        except RuntimeError as exc:  # e.g. the port is taken, or a Serve with other HTTP options runs
            raise RuntimeSetupError(f"could not start Ray Serve on {args.host}:{args.port}: {exc}") from exc
        url = f"http://{args.host}:{args.port}"
        store = masked(configured_url(settings))
        sys.stdout.write(f"serving {', '.join(n for n, _, _ in APPS)} at {url} (store: {store}); "
                         f"try: curl -X POST {url}/research -H 'content-type: application/json' "
                         "-d '{\"topic\": \"中小企業の価格転嫁\"}'\nCtrl-C to stop\n")
        sys.stdout.flush()
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            sys.stderr.write("magi serve: stopping\n")
    finally:
        if owned:
            serve.shutdown()  # type: ignore[no-untyped-call]
            stop_ray()
        else:  # someone else's cluster: remove only our apps
            for name, _, _ in APPS:
                serve.delete(name)
    return 0
