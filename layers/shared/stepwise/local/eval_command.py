"""`stepwise eval SUITE`: run a suite's cases through the real state machine (locally, or through a deployed
stack's API with `--against`), print the verdicts, write JUnit XML and JSON, exit 0/1/2.

With `--from-runs` it writes SUITE instead, from stored runs (see `stepwise.evals.from_runs`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from stepwise.errors import ConfigError, UsageError
from stepwise.evals.checks import CheckResult
from stepwise.evals.from_runs import suite_from_runs, write_suite
from stepwise.evals.judge import grade
from stepwise.evals.outcome import RunOutcome, outcome_from_store
from stepwise.evals.report import print_table, write_json, write_junit
from stepwise.evals.runner import DEFAULT_PARALLEL, CaseNotRun, GradeRubric, RunAttempt, planned_attempts, run_suite
from stepwise.evals.suite import Case, Suite, SuiteError, load_suite
from stepwise.local.command_stack import add_config_arguments, config_path, local_stack
from stepwise.local.defaults import PROJECT_ROOT
from stepwise.local.environment import LocalEnvironment
from stepwise.local.store_options import add_store_arguments
from stepwise.local.whole_numbers import whole_number
from stepwise.models.run import TERMINAL_STATUSES, RunMeta, RunOptions, RunStatus
from stepwise.steps.api.problems import ApiError
from stepwise.steps.replays import ReplayRefused, prepare_replay
from stepwise.store.run_filters import RunFilter

KEY_VARIABLE = "STEPWISE_API_KEY"
LOCAL_OWNER = "local"


def add_eval_command(subparsers: Any) -> None:
    """Register `stepwise eval` on the CLI's subcommands."""
    parser = subparsers.add_parser("eval", help="run an eval suite through the state machine and report its checks")
    parser.add_argument("suite", type=Path, help="the suite file (YAML, or JSONL); with --from-runs, the file to write")
    add_config_arguments(parser, PROJECT_ROOT / "config" / "stepwise.yaml")
    parser.add_argument("--profile", default=None, help="the profile of every case that names none")
    parser.add_argument(
        "--runs", type=whole_number(1), default=None, metavar="K", help="run every case K times (pass@K, pass^K)"
    )
    parser.add_argument("--junit", type=Path, default=None, metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the JSON report here")
    parser.add_argument("--against", default=None, metavar="URL", help="run through this deployed API instead")
    parser.add_argument("--key", default=None, help=f"the API key for --against (default ${KEY_VARIABLE})")
    parser.add_argument("--parallel", type=whole_number(1), default=DEFAULT_PARALLEL, help="runs at once (default 4)")
    parser.add_argument(
        "--require",
        choices=["all", "any"],
        default="all",
        help="a case passes when all its runs pass (pass^k, the default) or any does (pass@k)",
    )
    parser.add_argument(
        "--judge", default=None, help="the configuration's model that grades rubrics (over the suite's)"
    )
    parser.add_argument(
        "--from-runs",
        nargs="*",
        default=None,
        metavar="RUN_ID",
        help="write SUITE from these stored runs, or from the runs --status/--session-id/--limit select",
    )
    parser.add_argument(
        "--status", choices=sorted(TERMINAL_STATUSES), default=None, help="with --from-runs: only runs of this status"
    )
    parser.add_argument("--session-id", default=None, help="with --from-runs: only the runs of this session")
    parser.add_argument("--limit", type=whole_number(1), default=20, help="with --from-runs: at most this many runs")
    parser.add_argument("--owner", default=LOCAL_OWNER, help="with --from-runs: whose runs (default local)")
    parser.add_argument(
        "--compare", choices=["exact", "rubric"], default="exact", help="with --from-runs: how answers are compared"
    )
    add_store_arguments(parser)
    parser.set_defaults(handler=command_eval)


class LocalAttempts:
    """Runs attempts in the local engine, each an ordinary run accepted as `POST /v1/runs` would accept it."""

    def __init__(self, environment: LocalEnvironment, *, profile: str | None) -> None:
        self._environment = environment
        self._profile = profile

    def _ask(self, question: str, case: Case, tags: dict[str, str], session_id: str | None) -> RunMeta:
        assert case.input is not None
        schema = case.input.response_schema
        try:
            meta = self._environment.accept_question(
                question,
                profile=case.input.profile or self._profile,
                owner=LOCAL_OWNER,
                session_id=session_id,
                metadata=tags,
                options=RunOptions(response_schema=schema) if schema is not None else None,
            )
        except ApiError as exc:
            raise CaseNotRun(exc.message) from None
        if not meta.is_terminal:  # a guardrail that blocked the input ended it as it was created
            self._environment.execute(meta.run_id)
        return meta

    def _replay(self, case: Case, tags: dict[str, str]) -> RunMeta:
        assert case.replay is not None
        store = self._environment.runtime.store
        original = store.get_run(case.replay.run_id)
        if original is None:
            raise CaseNotRun(f"no run {case.replay.run_id} in the store")
        try:
            meta = prepare_replay(
                self._environment.runtime,
                original,
                owner=original.owner,
                profile=case.replay.profile or self._profile,
                from_iteration=case.replay.from_iteration,
                metadata=tags,
            )
        except ReplayRefused as exc:
            raise CaseNotRun(str(exc)) from None
        self._environment.execute(meta.run_id, from_iteration=case.replay.from_iteration)
        return meta

    def __call__(self, case: Case, number: int, tags: dict[str, str]) -> RunOutcome:
        """Run attempt `number` of `case` and read its outcome from the store."""
        started = time.perf_counter()
        if case.replay is not None:
            meta = self._replay(case, tags)
        else:
            assert case.input is not None
            session_id = f"eval-{uuid.uuid4().hex}" if case.input.session else None
            for earlier in case.input.session:
                self._ask(earlier, case, tags, session_id)
            meta = self._ask(case.input.question, case, tags, session_id)
        store = self._environment.runtime.store
        return outcome_from_store(
            store.require_run(meta.run_id), store.list_steps(meta.run_id), seconds=time.perf_counter() - started
        )


def _judge(suite: Suite, args: argparse.Namespace, path: Path) -> GradeRubric | None:
    """The rubric grader: the judge model named by --judge or the suite, built from the configuration."""
    if not suite.has_rubrics:
        return None
    name = args.judge or suite.judge
    if name is None:
        raise UsageError(f"{args.suite}: a case has a rubric; name the model that grades it (judge: or --judge)")
    from stepwise.config.credentials import SecretResolver
    from stepwise.config.loading import read_config_file
    from stepwise.llm import build_chat_model

    try:
        config = read_config_file(path).config
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if name not in config.models:
        raise UsageError(f"judge: no model {name!r} in {path}; its models are {', '.join(sorted(config.models))}")
    # its key may be a secret reference (`ssm:`, `secretsmanager:`), as any model's may
    model = build_chat_model(config.models[name], config_dir=path.parent, secret_resolver=SecretResolver().resolve)

    def graded(rubric: str, question: str, answer: str) -> CheckResult:
        return grade(model, rubric, question, answer)

    return graded


@contextmanager
def _progress(total: int) -> Iterator[Callable[[], None]]:
    """A progress bar on stderr when it is a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.progress import Progress

    with Progress(transient=True) as progress:
        task = progress.add_task("eval", total=total)
        yield lambda: progress.advance(task)


def _report(
    suite: Suite, args: argparse.Namespace, run_attempt: RunAttempt, grader: GradeRubric | None, out: TextIO
) -> int:
    with _progress(planned_attempts(suite, args.runs)) as advance:
        report = run_suite(
            suite,
            run_attempt,
            runs=args.runs,
            parallel=args.parallel,
            grade=grader,
            require=args.require,
            on_attempt=advance,
        )
    print_table(report, out)
    if args.junit is not None:
        write_junit(report, args.junit)
    if args.json is not None:
        write_json(report, args.json)
    return 0 if report.passed else 1


def _writable(path: Path | None, option: str) -> None:
    if path is not None and not path.parent.is_dir():
        raise UsageError(f"{option} {path}: no such folder")


def command_eval(args: argparse.Namespace, out: TextIO) -> int:
    """Run the suite (or write it, with --from-runs); 0 when every case passed, 1 when one failed."""
    path = config_path(args)
    if args.from_runs is not None:
        if args.against is not None:
            raise UsageError("--from-runs reads the local store (--data-dir, --dynamodb-endpoint); drop --against")
        return _write_from_runs(args, path, out)
    try:
        suite = load_suite(args.suite)
    except SuiteError as exc:
        raise UsageError(str(exc)) from None
    _writable(args.junit, "--junit")
    _writable(args.json, "--json")
    grader = _judge(suite, args, path)
    if args.against is not None:
        from stepwise.evals.api_endpoint import ApiEndpoint
        from stepwise.evals.http_runs import ApiAttempts

        key = args.key or os.environ.get(KEY_VARIABLE)
        if not key:
            raise UsageError(f"--against needs the API key: --key or ${KEY_VARIABLE}")
        endpoint = ApiEndpoint(args.against, key)
        warning = endpoint.plain_http_warning()
        if warning is not None:
            print(f"stepwise eval: warning: {warning}", file=sys.stderr, flush=True)
        try:
            return _report(suite, args, ApiAttempts(endpoint, profile=args.profile), grader, out)
        finally:
            endpoint.close()
    _check_models(suite, args, path)
    with local_stack(args, path) as environment:
        return _report(suite, args, LocalAttempts(environment, profile=args.profile), grader, out)


def _check_models(suite: Suite, args: argparse.Namespace, path: Path) -> None:
    """Before the store starts: the models the suite's cases will use (their profiles, the profiles a case
    without one may be routed to, the judge) must work here; a profile no case uses is not checked. A
    replay case without a profile runs under its original's, read only as it runs."""
    from stepwise.config.loading import read_config_file
    from stepwise.config.model_reach import preflight, require

    try:
        config = read_config_file(path).config
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    asked = [case.input.profile or args.profile for case in suite.cases if case.input is not None]
    replayed = [case.replay.profile or args.profile for case in suite.cases if case.replay is not None]
    judge = (args.judge or suite.judge) if suite.has_rubrics else None
    require(
        preflight(config, profiles=[*asked, *replayed], routed=None in asked, models=[judge] if judge else []),
        "eval",
    )


def _write_from_runs(args: argparse.Namespace, path: Path, out: TextIO) -> int:
    """Write SUITE from the stored runs named, or those the filter selects."""
    _writable(args.suite, "suite")
    with local_stack(args, path) as environment:
        store = environment.runtime.store
        if args.from_runs:
            runs = [store.get_run(run_id) for run_id in args.from_runs]
            missing = [run_id for run_id, meta in zip(args.from_runs, runs, strict=True) if meta is None]
            if missing:
                raise UsageError(f"--from-runs: no run {', '.join(missing)} in the store")
            metas = [meta for meta in runs if meta is not None]
        else:
            status: RunStatus | None = args.status
            page = store.directory.list_runs(
                args.owner,
                limit=args.limit,
                session_id=args.session_id,
                filters=RunFilter(status=status),
            )
            metas = [meta for summary in page.runs if (meta := store.get_run(summary.run_id)) is not None]
    judge = args.judge if args.compare == "rubric" else None
    document = suite_from_runs(args.suite.stem, metas, args.compare, judge)
    write_suite(document, args.suite)
    print(f"wrote {len(document['cases'])} case(s) to {args.suite}", file=out)
    return 0
