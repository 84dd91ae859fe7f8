"""``magi serve``: run the HTTP apps (Ray Serve) on a local or attached Ray until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import Any

from cli.common import settings_from
from deployments import proxy
from deployments.apps import SERVE_CONFIG, load_serve_config
from deployments.security import exposed_without_keys

UNGUARDED_WARNING = (
    "WARNING: the Ray cluster's HTTP proxy does not run this project's proxy guard: odd header bytes answer "
    "500, any X-Request-ID is logged as sent and /-/routes is open. Start the cluster's Ray with "
    "{env}={callback} in its environment (docs/operations/serving.md).\n"
)
OPEN_WARNING = (
    "\n" + "!" * 78 + "\n"
    "WARNING: magi serve listens on {host}, beyond this machine, and no API keys are set:\n"
    "anyone who reaches this port can start runs and read every result. Set MAGI_API_KEYS\n"
    "(comma-separated keys; clients send 'Authorization: Bearer <key>') or use --host 127.0.0.1.\n" + "!" * 78 + "\n\n"
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], shared: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "serve",
        parents=[shared],
        help="serve the HTTP apps of deployments/serve.yaml with Ray Serve",
        description=f"Deploy the HTTP apps listed in {SERVE_CONFIG} on Ray Serve and block until Ctrl-C.",
    )
    parser.add_argument("--address", help="Ray cluster address (default: $RAY_ADDRESS, else a local Ray)")
    parser.add_argument("--host", help="HTTP host (default: http_options.host of serve.yaml, 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, metavar="N", help="HTTP port (default: http_options.port of serve.yaml, 8000)"
    )
    parser.set_defaults(handler=run)


class Stopped(Exception):
    """SIGTERM arrived: leave the serving loop and shut down as on Ctrl-C."""


def _stop(signum: int, frame: object) -> None:
    raise Stopped()


def run(args: argparse.Namespace) -> int:
    import ray
    from ray import serve

    from core.errors import RuntimeSetupError
    from core.masking import masked
    from core.runtime import start_ray, stop_ray
    from core.store import configured_url

    settings = settings_from(args)
    config = load_serve_config()
    host = args.host or config.http_options.get("host", "127.0.0.1")
    port = args.port or config.http_options.get("port", 8000)
    if exposed_without_keys(str(host), settings):
        sys.stderr.write(OPEN_WARNING.format(host=host))
    # each builder reads the settings itself (serve.yaml's args over magi.yaml and MAGI_*), as under `serve run`
    overrides: dict[str, Any] = {"config": args.config} if getattr(args, "config", None) else {}
    apps = [(app, app.builder()) for app in config.applications]  # import errors before Ray starts
    owned = not ray.is_initialized() and not (args.address or settings.ray.address)
    proxy.install()  # the Serve proxy this Ray starts runs the proxy guard (deployments/proxy.py)
    start_ray(settings, address=args.address, serve=True)
    # a service manager's stop (SIGTERM): the same clean shutdown as Ctrl-C, also while the apps start
    # (set after Ray starts: Ray's own handler would print a stack dump and leave Serve running)
    signal.signal(signal.SIGTERM, _stop)
    try:
        try:
            proxy.start_serve(str(host), int(port))
            for app, builder in apps:
                serve.run(builder({**app.args, **overrides}), name=app.name, route_prefix=app.route_prefix)
            url = f"http://{host}:{port}"
            if not proxy.guarded(f"http://{_loopback(str(host))}:{port}"):
                sys.stderr.write(UNGUARDED_WARNING.format(env=proxy.CALLBACK_ENV, callback=proxy.CALLBACK))
            store = masked(configured_url(settings))
            sys.stdout.write(
                f"serving {', '.join(app.name for app, _ in apps)} at {url} (store: {store}); "
                f"try: curl -X POST {url}/research -H 'content-type: application/json' "
                '-d \'{"topic": "中小企業の価格転嫁"}\'\nCtrl-C to stop\n'
            )
            sys.stdout.flush()
            while True:
                time.sleep(1)
        except RuntimeError as exc:  # e.g. the port is taken, or a Serve with other HTTP options runs
            raise RuntimeSetupError(f"could not start Ray Serve on {host}:{port}: {exc}") from exc
        except (KeyboardInterrupt, Stopped):
            sys.stderr.write("magi serve: stopping\n")
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if owned:
            serve.shutdown()  # type: ignore[no-untyped-call]
            stop_ray()
        else:  # someone else's cluster: remove only our apps
            for app, _ in apps:
                serve.delete(app.name)
    return 0


def _loopback(host: str) -> str:
    """Where this machine reaches a server listening on ``host`` (all interfaces: loopback)."""
    return "127.0.0.1" if host in ("", "0.0.0.0") else ("[::1]" if host == "::" else host)


__all__ = [
    "OPEN_WARNING",
    "UNGUARDED_WARNING",
    "Stopped",
    "register",
    "run",
]
