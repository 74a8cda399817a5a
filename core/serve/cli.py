"""``rsigym serve ENV_ID``: the command's arguments and what it does.

Importing this module is cheap (argparse only): the server stack loads when the command runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from rsigym.errors import UserError

__all__ = ["add_serve_parser", "serve_command", "DOCKERFILE"]

DOCKERFILE = """\
# rsigym serve in a container: build with `docker build -t rsigym-serve .` from a checkout of rsigym,
# run with `docker run --rm -p 127.0.0.1:8000:8000 -v $PWD/runs:/runs rsigym-serve rsigym/Probe-v0`.
# Families that execute code keep their own sandbox: give the container the Docker socket
# (-v /var/run/docker.sock:/var/run/docker.sock) so they get the hardened Docker sandbox, not local.
FROM python:3.11-slim
WORKDIR /opt/rsigym
COPY . .
RUN pip install --no-cache-dir ".[serve]" && useradd --create-home rsigym && mkdir /runs && chown rsigym /runs
USER rsigym
EXPOSE 8000
# 0.0.0.0 inside the container only: publish the port to the host's loopback (-p 127.0.0.1:8000:8000)
# unless the env is meant to be reachable from other machines.
ENTRYPOINT ["rsigym", "serve", "--host", "0.0.0.0", "--port", "8000", "--out", "/runs/serve"]
CMD ["rsigym/Probe-v0"]
"""


def add_serve_parser(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``serve`` to the ``rsigym`` sub-commands."""
    from rsigym.serve.config import (DEFAULT_BODY_TIMEOUT_S, DEFAULT_HEADER_TIMEOUT_S, DEFAULT_HOST,
                                     DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
                                     DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_STEPS,
                                     TOKEN_ENV_VAR)

    serve = commands.add_parser("serve", parents=parents, help="serve an env id over OpenEnv's HTTP/WebSocket "
                                "contract; each served episode is recorded in the run folder (needs the 'serve' extra)")
    serve.add_argument("env_id", nargs="?", help="a registered env id (rsigym list envs), e.g. rsigym/Probe-v0")
    serve.add_argument("--out", type=Path, help="run folder for the served episodes' records "
                       "(default runs/serve-ENVNAME); one server per folder, and only a folder of this "
                       "env's served records or a new one (never a battery's run folder)")
    serve.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="an env kwarg, VALUE read as YAML (repeatable), e.g. --set sandbox=docker")
    serve.add_argument("--condition", help="a condition of the env's family applied to every session")
    serve.add_argument("--condition-param", action="append", default=[], metavar="KEY=VALUE",
                       help="a parameter of --condition, VALUE read as YAML (repeatable)")
    serve.add_argument("--grader", action="append", default=[], metavar="NAME",
                       help="grade each finished episode live with this grader (repeatable)")
    serve.add_argument("--max-steps", type=int, help="step cap per episode (truncation, termination max_steps), as a "
                       f"scenario's max_steps (default: the env spec's own, else {DEFAULT_MAX_STEPS})")
    serve.add_argument("--token", help=f"require 'Authorization: Bearer TOKEN' on every endpoint but /health "
                       f"(401 otherwise); default: ${TOKEN_ENV_VAR}, which other users cannot read in ps")
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST}: this "
                       "machine only; a served env runs actions for whoever connects)")
    serve.add_argument("--port", type=int, default=8000, help="TCP port (default 8000; 0: a free one)")
    serve.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS,
                       help=f"envs at once, however made (sessions, stateless resets); more are refused "
                       f"(default {DEFAULT_MAX_SESSIONS})")
    serve.add_argument("--idle-timeout-s", type=float, default=DEFAULT_IDLE_TIMEOUT_S,
                       help=f"close a session idle this long, freeing its env (default {DEFAULT_IDLE_TIMEOUT_S:g})")
    serve.add_argument("--header-timeout-s", type=float, default=DEFAULT_HEADER_TIMEOUT_S,
                       help=f"cut a connection whose request headers take longer (default {DEFAULT_HEADER_TIMEOUT_S:g})")
    serve.add_argument("--body-timeout-s", type=float, default=DEFAULT_BODY_TIMEOUT_S,
                       help=f"answer 408 to a request body not received in this long (default {DEFAULT_BODY_TIMEOUT_S:g})")
    serve.add_argument("--max-connections-per-client", type=int, default=DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
                       help="open connections from one client address; the next is refused with a 503 "
                       f"(default {DEFAULT_MAX_CONNECTIONS_PER_CLIENT})")
    serve.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES,
                       help=f"largest request or WebSocket message (default {DEFAULT_MAX_MESSAGE_BYTES})")
    serve.add_argument("--dockerfile", action="store_true",
                       help="print a Dockerfile that serves an env id from a container (FROM python:3.11-slim: needs "
                       "a registry), and exit")
    serve.add_argument("--build-image", action="store_true",
                       help="build an image that serves an env id with no image registry (the sandbox image as base, "
                       "rsigym's wheels from pip), and exit; run it with docker run -p 127.0.0.1:8000:8000 TAG ENV_ID")
    serve.add_argument("--image-tag", default="rsigym-serve:latest", help="tag of --build-image's image")


def _pairs(items: list[str], flag: str) -> dict[str, Any]:
    from rsigym.scenario.safe_yaml import load_yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"{flag} expects KEY=VALUE, got {item!r}")
        out[key] = load_yaml(value, f"{flag} {key}")
    return out


def serve_command(args: argparse.Namespace) -> int:
    if args.dockerfile:
        sys.stdout.write(DOCKERFILE)
        return 0
    if args.build_image:
        from rsigym.errors import SandboxError

        from .image import build_serve_image

        try:
            build_serve_image(args.image_tag)
        except SandboxError as exc:
            raise UserError(f"serve --build-image: {exc}") from exc
        return 0
    if not args.env_id:
        raise UserError("serve: name an env id (rsigym list envs), e.g. rsigym serve rsigym/Probe-v0")
    try:
        from . import openenv_server  # noqa: F401 - OpenEnv, without the Gradio it does not need
    except ImportError:
        raise UserError("serve needs the 'serve' extra: pip install 'rsigym[serve]'") from None
    import gymnasium as gym

    from rsigym.grader import get_grader
    from rsigym.registry import register_gym_envs
    from rsigym.scenario import NamedSpec

    from .config import ServeConfig
    from .server import serve

    register_gym_envs()
    if args.env_id not in gym.registry:
        from rsigym.scenario.preflight import did_you_mean

        raise UserError(f"serve: unknown env id {args.env_id!r}"
                        f"{did_you_mean(args.env_id, [k for k in gym.registry if k.startswith('rsigym/')])}")
    graders = [NamedSpec(name) for name in args.grader]
    for spec in graders:
        get_grader(spec.name)  # an unknown grader is a mistake found before serving
    condition = ({"name": args.condition, "params": _pairs(args.condition_param, "--condition-param")}
                 if args.condition else None)
    out = args.out or Path("runs") / f"serve-{args.env_id.split('/')[-1]}"
    from .config import TOKEN_ENV_VAR
    from .recorder import check_owned

    check_owned(out, args.env_id)  # a battery's folder is refused before the env is even made
    token = args.token if args.token is not None else (os.environ.get(TOKEN_ENV_VAR) or None)
    try:
        config = ServeConfig(args.env_id, _pairs(args.set, "--set"), condition=condition, max_steps=args.max_steps,
                             graders=graders, run_dir=out, host=args.host, port=args.port,
                             max_sessions=args.max_sessions, idle_timeout_s=args.idle_timeout_s,
                             max_message_bytes=args.max_message_bytes, header_timeout_s=args.header_timeout_s,
                             body_timeout_s=args.body_timeout_s,
                             max_connections_per_client=args.max_connections_per_client, token=token)
    except ValueError as exc:
        raise UserError(f"serve: {exc}") from exc
    try:
        config.make_env().close()  # a bad kwarg or condition is one line now, not a failed first session
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - the env's own message names the bad value
        raise UserError(f"serve: cannot make {args.env_id} with {config.env_kwargs}: "
                        f"{type(exc).__name__}: {exc}".splitlines()[0]) from exc

    def ready(url: str) -> None:
        print(f"serving {args.env_id} at {url} (WebSocket sessions at {url.replace('http', 'ws', 1)}/ws, "
              f"at most {config.max_sessions}{', token required' if token else ''}); records in {config.run_dir}",
              flush=True)

    try:
        written = serve(config, on_ready=ready)
    except OSError as exc:  # the port is taken, the address is not ours
        raise UserError(f"serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from exc
    print(f"served: {written} episode records in {config.run_dir / 'records.jsonl'}")
    return 0
