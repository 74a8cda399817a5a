"""The ``rsigym`` command line.

Every error a user can cause (a bad scenario, an unknown name, a missing folder) prints one line
to stderr and exits with status 2, without a traceback. Environment variables are read here and
nowhere below.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from pathlib import Path
from typing import Any, NoReturn, Sequence

from .errors import UserError

__all__ = ["main"]

EXIT_USER_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + message
        raise UserError(f"{self.prog}: {message}")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rsigym", description="Simulation environments for research agents.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("run", help="run a scenario battery (resumes where it stopped)")
    run.add_argument("scenario", help="scenario YAML file, or the name of a bundled scenario")
    run.add_argument("--out", type=Path, help="output folder (default runs/<scenario name>)")
    run.add_argument("--backend", choices=["local", "ray"], help="default: the scenario's, else local")
    run.add_argument("--address", help="Ray cluster address (default: start a local Ray)")
    run.add_argument("--workers", type=int, help="parallel episodes (0: in this process)")
    run.add_argument("--model", help="LiteLLM model string for every agent of the scenario that uses a model "
                     "(kind llm, and any agent that names a model, e.g. oneshot_llm, evoalloc)")
    run.add_argument("--api-base", help="base URL of an OpenAI-compatible server for the same agents as --model")
    run.add_argument("--user-model", help="LiteLLM model string for the simulated user (env.kwargs.user, "
                     "e.g. of ToolUse-v0), which becomes an LLM user")
    run.add_argument("--judge-model", help="LiteLLM model string for every grader of the scenario that uses a "
                     "model (e.g. llm_judge)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--retry-infra-errors", action="store_true",
                     help="run episodes recorded as infra_error again (old records kept aside)")

    report = commands.add_parser("report", help="write report.md for a run folder")
    report.add_argument("run_dir", type=Path)

    regrade = commands.add_parser("regrade", help="grade fixed trajectories again with a grader")
    regrade.add_argument("run_dir", type=Path)
    regrade.add_argument("--grader", required=True, help="grader name (see rsigym list graders)")
    regrade.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                         help="grader parameter; VALUE is read as YAML (repeatable)")

    lister = commands.add_parser("list", help="list what is installed, each with one line about it")
    lister.add_argument("what", nargs="?", choices=[*LIST_KINDS, "offline-policies"],
                        help="one kind (default: all)")

    sandbox = commands.add_parser("sandbox", help="build, check or clean the Docker sandbox")
    sandbox_commands = sandbox.add_subparsers(dest="sandbox_command", required=True, parser_class=_Parser)
    build = sandbox_commands.add_parser("build", help="build the sandbox image offline (debootstrap)")
    build.add_argument("--force", action="store_true", help="rebuild even if the image exists")
    build.add_argument("--mirror", help="Debian mirror (default $RSIGYM_DEBIAN_MIRROR or deb.debian.org)")
    sandbox_commands.add_parser("check", help="say what works and what does not")
    clean = sandbox_commands.add_parser("clean", help="remove rsigym sandbox containers")
    clean.add_argument("--orphans", action="store_true", help="only those whose owner process is gone")

    from .registry import COMMANDS   # sub-commands families add through the entry-point group rsigym.commands
    for name in COMMANDS:
        command = COMMANDS[name]
        sub = commands.add_parser(name, help=getattr(command, "HELP", None))
        command.configure(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _build_parser().parse_args(argv)
        logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                            format="%(levelname)s %(name)s: %(message)s")
        return _dispatch(args)
    except UserError as exc:
        print(f"rsigym: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("rsigym: interrupted; finished episodes are on disk, run again to resume", file=sys.stderr)
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    handlers = {"run": _run, "report": _report, "regrade": _regrade, "list": _list, "sandbox": _sandbox}
    if args.command not in handlers:
        from .registry import COMMANDS
        return int(COMMANDS[args.command].main(args))
    return handlers[args.command](args)


def _run(args: argparse.Namespace) -> int:
    from .runner import run_scenario
    from .scenario import load_scenario

    scenario = _override_llm_agents(load_scenario(args.scenario), args.model, args.api_base)
    scenario = _override_user_model(scenario, args.user_model)
    scenario = _override_judge_model(scenario, args.judge_model)
    backend = args.backend or scenario.runner.get("backend", "local")
    workers = args.workers if args.workers is not None else scenario.runner.get("workers", min(4, os.cpu_count() or 1))
    if workers < 0:
        raise UserError(f"--workers must be >= 0, got {workers}")
    out_dir = args.out or Path("runs") / scenario.name
    summary = run_scenario(scenario, out_dir, backend=backend, workers=workers, address=args.address,
                           progress=not args.no_progress and sys.stderr.isatty(),
                           retry_infra_errors=args.retry_infra_errors)
    if summary.bad_lines_moved:
        print(f"rsigym: moved {summary.bad_lines_moved} unreadable lines of records.jsonl to "
              "records.jsonl.bad (with their line numbers)", file=sys.stderr)
    if summary.duplicate_keys:
        print(f"rsigym: warning: {summary.duplicate_keys} records repeat an earlier record's episode key",
              file=sys.stderr)
    print(f"{summary.total} episodes: {summary.skipped} already recorded, {summary.ran} run now, "
          f"{summary.infra_errors} infra errors; records in {summary.out_dir / 'records.jsonl'}")
    if summary.report:
        print(f"report: {summary.report}")
    return 0


def _override_llm_agents(scenario: Any, model: str | None, api_base: str | None) -> Any:
    """Apply --model and --api-base to every agent that uses a model (kind ``llm``, or any agent
    entry that names a ``model``, such as ``oneshot_llm`` and ``evoalloc``), in the scenario and in
    its saved copy."""
    if model is None and api_base is None:
        return scenario

    def uses_model(entry: dict[str, Any]) -> bool:
        return entry["kind"] == "llm" or "model" in entry

    if not any(uses_model(a) for a in scenario.raw["agents"]):
        flag = "--model" if model is not None else "--api-base"
        raise UserError(f"{flag}: scenario {scenario.name!r} has no agent that uses a model")

    def override(entry: dict[str, Any]) -> dict[str, Any]:
        if not uses_model(entry):
            return entry
        entry = dict(entry, params=dict(entry.get("params") or {}))
        if model is not None:
            entry["model"] = model
        if api_base is not None:
            entry["params"]["api_base"] = api_base
        return entry

    from .scenario import parse_scenario

    raw = dict(scenario.raw, agents=[override(a) for a in scenario.raw["agents"]])
    return parse_scenario(raw, scenario.source)


def _override_user_model(scenario: Any, model: str | None) -> Any:
    """Apply --user-model: the env's simulated user (``env.kwargs.user``) becomes an LLM user."""
    if model is None:
        return scenario
    kwargs = dict(scenario.raw["env"].get("kwargs") or {})
    if "user" not in kwargs:
        raise UserError(f"--user-model: scenario {scenario.name!r} names no simulated user (env.kwargs.user)")
    user = kwargs["user"]
    if isinstance(user, dict) and user.get("kind") == "llm":
        kwargs["user"] = dict(user, model=model)
    else:  # a scripted user: keep what an LLM user also takes
        kept = {k: v for k, v in user.items() if k == "max_replies"} if isinstance(user, dict) else {}
        kwargs["user"] = {"kind": "llm", "model": model, **kept}
    from .scenario import parse_scenario

    return parse_scenario(dict(scenario.raw, env=dict(scenario.raw["env"], kwargs=kwargs)), scenario.source)


def _override_judge_model(scenario: Any, model: str | None) -> Any:
    """Apply --judge-model to every grader of the scenario that has a ``model`` (an LLM judge)."""
    if model is None:
        return scenario
    from .grader import get_grader
    from .scenario import NamedSpec, parse_scenario

    graders, judges = [], 0
    for entry in scenario.raw.get("graders") or []:
        spec = NamedSpec.parse(entry)
        try:
            judge = hasattr(get_grader(spec.name, **spec.params), "model")
        except Exception:  # a bad grader entry: the scenario check names it
            judge = False
        judges += judge
        graders.append({"name": spec.name, "params": dict(spec.params, model=model)} if judge else entry)
    if not judges:
        raise UserError(f"--judge-model: scenario {scenario.name!r} has no grader that uses a model (e.g. llm_judge)")
    return parse_scenario(dict(scenario.raw, graders=graders), scenario.source)


def _records_or_error(run_dir: Path, *, rewriting: bool = False) -> tuple[Path, Any]:
    """The path and ``ReadResult`` of a run folder's records. Unreadable lines are moved to
    ``records.jsonl.bad`` (said on stderr); while a run is writing they are only skipped, unless
    the caller is about to rewrite the file (regrade), which then fails with a clear line instead."""
    from .jsonl import move_bad_lines, read_records, remove_stale_temporaries
    from .runner import RECORDS_FILE

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
    import yaml

    from .report import write_report
    from .scenario import NamedSpec

    records = _records_or_error(args.run_dir)[1].records
    analyses: list[Any] = ["summary"]
    scenario_file = args.run_dir / "scenario.yaml"
    if scenario_file.exists():
        raw = yaml.safe_load(scenario_file.read_text()) or {}
        analyses = [NamedSpec.parse(a) for a in raw.get("analyses") or ["summary"]]
    path = write_report(args.run_dir, records, analyses, title=f"rsigym report: {args.run_dir.name}")
    print(f"report: {path}")
    return 0


def _regrade(args: argparse.Namespace) -> int:
    import yaml

    from .grader import get_grader
    from .jsonl import rewrite_records
    from .regrade import regrade

    params = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--param expects KEY=VALUE, got {item!r}")
        params[key] = yaml.safe_load(value)
    grader = get_grader(args.grader, **params)
    path, result = _records_or_error(args.run_dir, rewriting=True)
    graded = regrade(result.records, grader)
    rewrite_records(path, graded, expected_size=result.size_bytes)
    scores = [r.grades[-1].score for r in graded]
    valid = [s for s in scores if s is not None]
    mean = f"{sum(valid) / len(valid):.3f}" if valid else "n/a"
    print(f"regraded {len(graded)} records with {grader.name} v{grader.version}: mean {mean}, "
          f"{len(scores) - len(valid)} grader errors; original grades kept")
    return 0


LIST_KINDS = ("envs", "agents", "graders", "analyses", "conditions", "offline_policies", "scenarios")


def _list(args: argparse.Namespace) -> int:
    from .registry import REGISTRIES, Registry, describe, register_gym_envs

    kinds = [args.what.replace("-", "_")] if args.what else list(LIST_KINDS)
    register_gym_envs()
    for kind in kinds:
        if len(kinds) > 1:
            print(f"{kind}:")
        indent = "  " if len(kinds) > 1 else ""
        if kind == "scenarios":
            import yaml

            from rsigym.scenarios import bundled_scenarios

            for name, path in bundled_scenarios().items():
                raw = yaml.safe_load(path.read_text()) or {}
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
    from . import sandbox

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
