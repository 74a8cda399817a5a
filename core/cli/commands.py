"""The ``rsigym`` command line.

Every error a user can cause (a bad scenario, an unknown name, a missing folder) prints one line
to stderr and exits with status 2, without a traceback. Environment variables are read here and
nowhere below.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import logging
import os
import sys
from pathlib import Path
from typing import Any, NoReturn, Sequence

from ..errors import UserError

__all__ = ["main"]

EXIT_USER_ERROR = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a process killed by it


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, naming the command and its --help
        command = self.prog.removeprefix("rsigym").strip()
        where = f"{command}: " if command else ""
        raise UserError(f"{where}{message}; see {self.prog} --help")


def _version() -> str:
    from .. import __version__

    return f"rsigym {__version__}"


def _needs_family_commands(argv: Sequence[str]) -> bool:
    """Whether ``argv`` may name a command a family adds: not for a built-in command, nor for
    ``--version``. Their modules belong to the families (the forecast one pulls in torch through
    its package), and ``rsigym --version`` or ``rsigym run ...`` must not pay for them."""
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    if command is None:
        return "--version" not in argv
    return command not in _COMMANDS


def _build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    parser = _Parser(prog="rsigym", description="Simulation environments for research agents.")
    parser.add_argument("--version", action="version", version=_version(), help="print the version and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    importing = _Parser(add_help=False)
    importing.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                           help="import MODULE first, here and in every worker: your conditions, graders, "
                           "agents, analyses, LiteLLM handlers (repeatable; the current folder is on the path)")

    run = commands.add_parser("run", parents=[importing], help="run a scenario battery (resumes where it stopped)")
    run.add_argument("scenario", help="scenario YAML file, or the name of a bundled scenario (rsigym list scenarios)")
    run.add_argument("--out", type=Path, help="output folder (default runs/<scenario name>)")
    run.add_argument("--force-new", action="store_true",
                     help="start a new run folder (OUT-2, OUT-3, ...) when OUT already holds a run")
    run.add_argument("--backend", choices=["local", "ray"], help="default: the scenario's, else local")
    run.add_argument("--address", help="Ray cluster address HOST:PORT, as `ray start --head` printed it "
                     "(default: start a Ray on this machine)")
    run.add_argument("--workers", type=int, help="worker processes (0: in this process; default: the scenario's "
                     "runner.workers, else up to 4); with --backend ray, runner actors per CPU of each node "
                     "(default 1: a node with 8 CPUs gets 8 runners, --workers 2 gives it 16)")
    run.add_argument("--model", help="LiteLLM model string for every agent of the scenario that uses a model "
                     "(kind llm, and any agent that names a model, e.g. oneshot_llm, evoalloc)")
    run.add_argument("--api-base", help="base URL of an OpenAI-compatible server for the same agents as --model")
    run.add_argument("--user-model", help="LiteLLM model string for the simulated user (env.kwargs.user, "
                     "e.g. of ToolUse-v0), which becomes an LLM user")
    run.add_argument("--judge-model", help="LiteLLM model string for every grader of the scenario that uses a "
                     "model (e.g. llm_judge)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override a scenario key, VALUE read as YAML: max_steps=5, env.kwargs.sandbox=local, "
                     "agents[0].model=rsigym/random (repeatable)")
    run.add_argument("--tasks", action="append", metavar="ID[,ID...]",
                     help="run only these task ids of the scenario (repeatable)")
    run.add_argument("--limit", type=int, metavar="N", help="run only the first N tasks (after --tasks)")
    run.add_argument("--dry-run", action="store_true",
                     help="check everything, print the episode plan and known costs, run nothing")
    run.add_argument("--max-infra-errors", type=int, default=0, metavar="N",
                     help="exit with status 1 when more than N episodes of this run end in infra_error (default 0)")
    run.add_argument("--keep-infra-errors", action="store_true",
                     help="do not run episodes recorded as infra_error again (by default they are retried, "
                     "their old records kept in infra_errors.jsonl)")
    run.add_argument("--no-progress", action="store_true",
                     help="no progress output (default: a bar in a terminal, a line every 5%% elsewhere)")
    run.add_argument("--cost-limit", type=float, metavar="USD",
                     help="start no episode that could take the spending of this run past USD (LiteLLM's "
                     "prices; each episode reserves the dearest episode cost seen so far); running ones "
                     "finish and are recorded, exit status 3, run again to resume; free episodes (scripted "
                     "agents, offline models) always run")
    run.add_argument("--episode-timeout", type=float, metavar="S",
                     help="wall-clock seconds per episode, counted once its env is made and reset (any "
                     "concurrency, any backend); one past it is stopped and recorded as infra_error with "
                     "the cause 'timeout'. Default: 900 for an episode that calls a hosted model, none for "
                     "offline models and scripted agents; 0: none")
    run.add_argument("--no-endpoint-check", action="store_true",
                     help="skip the one call per model endpoint made before the first episode")
    run.add_argument("--max-consecutive-errors", type=int, default=5, metavar="N",
                     help="stop the run (exit 1) after N consecutive episodes fail with the same error that "
                     "retrying cannot fix (bad key, unknown model, rejected request); 0: never (default 5)")
    run.add_argument("--concurrency", type=int, help="episodes in flight per worker (default: the scenario's "
                     "runner.concurrency, else 16 when it calls a hosted model, else 1; always 1 for envs "
                     "that declare CPU-heavy steps)")
    run.add_argument("--max-connections", type=int, help="LLM calls in flight per provider and worker, or for "
                     "the whole cluster with --backend ray (a cap "
                     "that halves on 429 and recovers; default: the episodes in flight)")

    report = commands.add_parser("report", parents=[importing], help="write report.md for a run folder")
    report.add_argument("run_dir", type=Path, help="run folder (holds records.jsonl)")

    regrade = commands.add_parser("regrade", parents=[importing],
                                  help="grade fixed trajectories again with a grader (into a new run folder)")
    regrade.add_argument("run_dir", type=Path, help="run folder whose records to regrade")
    regrade.add_argument("--grader", required=True, help="grader name (see rsigym list graders)")
    regrade.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                         help="grader parameter; VALUE is read as YAML (repeatable)")
    regrade.add_argument("--out", type=Path, help="new run folder for the regraded records and their report "
                         "(default RUN_DIR-regrade-GRADER)")
    regrade.add_argument("--in-place", action="store_true",
                         help="add the grades to RUN_DIR's own records instead (atomic rewrite)")

    view = commands.add_parser("view", parents=[importing], help="write one static, offline HTML file to look at a run folder")
    view.add_argument("run_dir", type=Path, help="a run folder (holds records.jsonl)")
    view.add_argument("--out", type=Path, help="HTML file to write (default RUN_DIR/view.html)")

    export = commands.add_parser("export", parents=[importing], help="export a run folder's records as parquet, JSONL or inspect_ai logs")
    export.add_argument("run_dir", type=Path, help="a run folder (holds records.jsonl)")
    export.add_argument("--format", required=True, choices=["parquet", "jsonl", "inspect"],
                        help="parquet: one row per (episode, grade), needs the 'export' extra; jsonl: full "
                        "records, references resolved; inspect: a folder of inspect_ai eval logs, one per agent x condition, needs the 'inspect' extra")
    export.add_argument("--out", type=Path, help="file to write (default RUN_DIR/export.<ext>; for inspect a folder, default RUN_DIR/export_inspect)")

    lister = commands.add_parser("list", parents=[importing], help="list what is installed, each with one line about it")
    lister.add_argument("what", nargs="?", choices=[*LIST_KINDS, "offline-policies"],
                        help="one kind (default: all)")

    new = commands.add_parser("new", help="write a working skeleton to start from (rsigym new family NAME)")
    new_commands = new.add_subparsers(dest="new_command", metavar="WHAT", parser_class=_Parser)
    new_commands.required = True
    family = new_commands.add_parser("family", help="an env family as its own package: env, tasks, agent, grader, "
                                     "analysis with a control, scenario, tests (rsigym.testing.check_family)")
    family.add_argument("name", help="the package name: lowercase letters, digits and _")
    family.add_argument("--out", type=Path, default=Path("."), help="parent folder (default: the current one)")

    sandbox = commands.add_parser("sandbox", help="build, check or clean the Docker sandbox")
    sandbox_commands = sandbox.add_subparsers(dest="sandbox_command", metavar="ACTION", parser_class=_Parser)
    sandbox_commands.required = True
    build = sandbox_commands.add_parser("build", help="build the sandbox image offline (debootstrap)")
    build.add_argument("--force", action="store_true", help="rebuild even if the image exists")
    build.add_argument("--mirror", help="Debian mirror (default $RSIGYM_DEBIAN_MIRROR or deb.debian.org)")
    sandbox_commands.add_parser("check", help="say what works and what does not")
    clean = sandbox_commands.add_parser("clean", help="remove rsigym sandbox containers")
    clean.add_argument("--orphans", action="store_true", help="only those whose owner process is gone")

    from ..serve.cli import add_serve_parser  # argparse only; the server stack loads when it runs
    add_serve_parser(commands, [importing])

    if argv is not None and not _needs_family_commands(argv):
        return parser
    from ..registry import COMMANDS  # sub-commands families add through the entry-point group rsigym.commands
    for name in COMMANDS:
        command = COMMANDS[name]
        sub = commands.add_parser(name, help=getattr(command, "HELP", None))
        command.configure(sub)
    return parser


def _register_secrets(environ: Any) -> None:
    """Values of secret-named variables (``*_API_KEY``, ``*_TOKEN``, ...) never reach the output."""
    from ..records.redact import is_secret_key, register_secret

    for name, value in environ.items():
        if is_secret_key(name):
            register_secret(value)


def _print_error(exc: UserError) -> None:
    from ..records.redact import redact_text

    lines = redact_text(str(exc)).splitlines() or ["(no message)"]
    if hasattr(exc, "problems"):  # a preflight: every line is one problem
        for line in lines:
            print(f"rsigym: error: {line}", file=sys.stderr)
        return
    print(f"rsigym: error: {lines[0]}", file=sys.stderr)
    for line in lines[1:]:
        print(line, file=sys.stderr)


def _quiet_broken_pipe() -> int:
    """The reader left (``rsigym ... | head -1``): stop writing, exit without a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
    except OSError:
        pass
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rsigym`` command with ``argv`` (default: the process's); returns the exit status.

    Run as the program (``argv`` None), a Ctrl-C ends the process within ``EXIT_GRACE_S`` seconds
    with status 130, even when a thread (an episode in flight, a plug-in's) would hold it open.
    """
    try:
        return _main(argv)
    finally:
        if argv is None:  # the process ends next: its last collection need not walk every object
            gc.freeze()   # of the imports (about 1 s of CPU with LiteLLM loaded); refcounting still frees


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = _build_parser(arguments)
        args = parser.parse_args(arguments)
        if args.command is None:
            parser.print_usage(sys.stderr)
            raise UserError(f"choose a command: {', '.join(_COMMANDS)} (rsigym --help says more)")
        logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                            format="%(levelname)s %(name)s: %(message)s")
        _register_secrets(os.environ)
        _import_user_modules(getattr(args, "imports", []))
        return _dispatch(args)
    except UserError as exc:
        _print_error(exc)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("rsigym: interrupted; finished episodes are on disk, run again to resume", file=sys.stderr)
        if argv is None:  # run as the program, not called from Python: the process is ours to end
            _exit_soon(130)
        return 130
    except BrokenPipeError:
        return _quiet_broken_pipe()


EXIT_GRACE_S = 10.0


def _exit_soon(status: int, grace_s: float = EXIT_GRACE_S) -> None:
    """After a Ctrl-C, make sure the process ends: if the interpreter's own shutdown (joining
    episode threads, executor threads, a plugin's thread) has not ended it ``grace_s`` seconds
    from now, end it with ``status``. Records are fsynced as they arrive and the run folder's lock
    is an flock, so nothing is lost by not waiting."""
    import threading

    def force() -> None:
        sys.stderr.flush()
        os._exit(status)

    timer = threading.Timer(grace_s, force)
    timer.daemon = True
    timer.start()


def _import_user_modules(modules: list[str]) -> None:
    if not modules:
        return
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as ``python -m`` does; spawned workers inherit sys.path
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except UserError:
            raise
        except Exception as exc:  # the user's module: its failure is theirs to fix, in one line
            raise UserError(f"--import {name}: {type(exc).__name__}: {exc}".splitlines()[0]) from exc


_COMMANDS = ("run", "report", "regrade", "list", "sandbox", "view", "export", "new", "serve")


def _dispatch(args: argparse.Namespace) -> int:
    from .regrade_command import regrade_command
    from .run_command import run_command

    if args.command == "run":
        return run_command(args)
    if args.command == "regrade":
        return regrade_command(args, _records_or_error)
    from ..serve.cli import serve_command

    handlers = {"report": _report, "list": _list, "sandbox": _sandbox, "view": _view, "export": _export,
                "new": _new, "serve": serve_command}
    if args.command not in handlers:  # a command a family registers (entry points, rsigym.commands)
        from ..registry import COMMANDS

        return int(COMMANDS[args.command].main(args))
    return handlers[args.command](args)


def _records_or_error(run_dir: Path, *, rewriting: bool = False) -> tuple[Path, Any]:
    """The path and ``ReadResult`` of a run folder's records. Unreadable lines are moved to
    ``records.jsonl.bad`` (said on stderr); while a run is writing they are only skipped, unless
    the caller is about to rewrite the file (regrade), which then fails with a clear line instead."""
    from ..records.jsonl import move_bad_lines, read_records, remove_stale_temporaries
    from ..runner import RECORDS_FILE

    path = run_dir / RECORDS_FILE
    if not path.exists():
        raise UserError(f"no {RECORDS_FILE} in {run_dir}; is it a run folder?")
    remove_stale_temporaries(path)
    result = read_records(path)
    unreadable = len(result.bad_lines) + result.torn_tail
    if unreadable:
        try:
            moved = move_bad_lines(path)
            print(f"rsigym: moved {moved} unreadable lines of {path} to {path.name}.bad (with their line "
                  "numbers)", file=sys.stderr)
            result = read_records(path)  # the file as it is now, for a rewrite's size check
        except UserError:
            if rewriting:
                raise
            print(f"rsigym: warning: {unreadable} unreadable lines in {path} skipped (not moved: another "
                  "rsigym process is using the file)", file=sys.stderr)
    if result.duplicate_keys:
        print(f"rsigym: warning: {result.duplicate_keys} records repeat an earlier record's episode key",
              file=sys.stderr)
    return path, result


def _report(args: argparse.Namespace) -> int:
    from ..report.report import write_report
    from ..scenario.safe_yaml import load_yaml
    from ..scenario.spec import NamedSpec

    records = _records_or_error(args.run_dir)[1].records
    analyses: list[Any] = ["summary"]
    scenario_file = args.run_dir / "scenario.yaml"
    if scenario_file.exists():
        raw = load_yaml(scenario_file.read_text(), str(scenario_file)) or {}
        analyses = [NamedSpec.parse(a) for a in raw.get("analyses") or ["summary"]]
    path = write_report(args.run_dir, records, analyses, title=f"rsigym report: {args.run_dir.name}")
    print(f"report: {path}")
    return 0


def _view(args: argparse.Namespace) -> int:
    from ..viewer import write_view

    print(f"view: {write_view(args.run_dir, args.out)}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from ..report.export import export_run

    print(f"export: {export_run(args.run_dir, args.format, args.out)}")
    return 0


def _new(args: argparse.Namespace) -> int:
    from ..scaffold import new_family

    root = new_family(args.name, args.out)
    print(f"new family: {root}\nnext: pip install -e {root} && python -m pytest {root / 'tests'} && "
          f"rsigym run {root / 'scenarios' / (args.name + '.yaml')}")
    return 0


LIST_KINDS = ("envs", "agents", "graders", "analyses", "conditions", "offline_policies", "scenarios")


def _list(args: argparse.Namespace) -> int:
    from ..registry import REGISTRIES, Registry, describe, register_gym_envs

    kinds = [args.what.replace("-", "_")] if args.what else list(LIST_KINDS)
    register_gym_envs()
    for kind in kinds:
        if len(kinds) > 1:
            print(f"{kind}:")
        indent = "  " if len(kinds) > 1 else ""
        if kind == "scenarios":
            from rsigym.scenarios import bundled_scenarios

            from ..scenario.safe_yaml import load_yaml

            for name, path in bundled_scenarios().items():
                raw = load_yaml(path.read_text(), str(path)) or {}
                print(f"{indent}{name:30} {str(raw.get('description') or '').strip()}")
            continue
        registry: Registry[object] = REGISTRIES[kind]
        for name in registry:
            try:
                obj = registry[name]
            except UserError as exc:  # a broken plug-in: say so, list the rest
                print(f"{indent}{name:30} (cannot load: {exc})")
                continue
            version = getattr(obj, "version", None) if kind == "graders" else None
            line = (f"v{version}  " if version else "") + describe(obj)
            print(f"{indent}{name:30} {line}".rstrip())
    return 0


def _sandbox(args: argparse.Namespace) -> int:
    from ..errors import SandboxError

    try:
        return _sandbox_action(args)
    except SandboxError as exc:  # no engine, no debootstrap: one line, not a traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"sandbox {args.sandbox_command}: {first[:300]}; `rsigym sandbox check` says what "
                        "works") from exc


def _sandbox_action(args: argparse.Namespace) -> int:
    from .. import sandbox

    if args.sandbox_command == "build":
        mirror = args.mirror or os.environ.get("RSIGYM_DEBIAN_MIRROR") or None
        tag = sandbox.build_image(force=args.force, log=print, **({"mirror": mirror} if mirror else {}))
        print(f"sandbox image ready: {tag}")
        return 0
    if args.sandbox_command == "check":
        results = sandbox.check_sandbox()
        width = max(len(name) for name, _, _ in results)
        for name, ok, detail in results:
            print(f"{'ok ' if ok else 'NO '} {name:{width}}  {detail}")
        return 0 if all(ok for _, ok, _ in results) else 1
    removed = sandbox.clean_containers(orphans_only=args.orphans)
    print(f"removed {removed} sandbox container{'s' if removed != 1 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
