"""`slurm2kf simulate`: the processes a job starts on Slurm and on Kubeflow Trainer, side by side.

Exit status: 0 every script is equivalent; 1 at least one differs; 3 none differs but at least one is
inconclusive or refused; 2 usage error or unreadable input (before the others), or simulate refuses to run
because it cannot isolate the scripts (S820); 128+N when stopped by signal N (SIGINT, SIGTERM, SIGHUP: every
sandbox is ended and its temporary files removed first).
"""

from __future__ import annotations

import json
import signal
import sys
from contextlib import contextmanager

import click

from translator.cli.common import (
    USAGE_ERROR,
    SbatchArgsCommand,
    echo_user,
    parse_env_items,
    parse_script_args,
    script_args_option,
)
from translator.profile.lookup import PROFILE_ENV
from translator.plan.redact import path_secrets, redact_data as hide_secrets


def process_json(p) -> dict:
    return {
        "node": p.node,
        "host": p.host,
        "interpreter": p.interpreter,
        "program": p.program,
        "argv": list(p.argv),
        "launcher": p.launcher,
        "rank": p.rank,
        "local_rank": p.local_rank,
        "world_size": p.world_size,
        "master_addr": p.master_addr,
        "master_port": p.master_port,
        "gpus": p.gpus,
        "cwd": p.cwd,
        "env": dict(p.env),
    }


NOT_PROVEN = 3  # inconclusive or refused: neither proved equivalent nor shown to differ


def exit_status(verdicts) -> int:
    """0 all equivalent; 1 some differs; 3 none differs, some inconclusive or refused."""
    kinds = {v.verdict for v in verdicts}
    return 1 if "differs" in kinds else NOT_PROVEN if kinds - {"equivalent"} else 0


def reason_json(r) -> dict | None:
    return None if r is None else {"code": r.code, "text": r.text, "side": r.side, "where": r.where}


def verdict_json(v) -> dict:
    return {
        "path": v.path,
        "verdict": v.verdict,
        "reason": reason_json(v.reason),
        "differences": list(v.differences),
        "shared_failures": list(v.shared),
        "slurm": [process_json(p) for p in v.slurm.processes],
        "kubeflow": [process_json(p) for p in v.kubeflow.processes],
        "failures": {
            s.side: [{"node": f.node, "command": f.command, "reason": f.reason} for f in s.failures]
            for s in (v.slurm, v.kubeflow)
        },
        "notes": {s.side: list(s.notes) for s in (v.slurm, v.kubeflow)},
    }


def render_human(v, verbose: bool = False) -> str:
    from translator.simulate.table import HEADER, process_rows

    lines = [f"{v.path}: {v.verdict}"]
    if v.reason is not None:
        where = f" ({v.reason.where})" if v.reason.where else ""
        lines.append(f"  reason: {v.reason.code} {v.reason.text}{where}")
    rows = [HEADER, *process_rows(v)]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        lines.append("  " + " | ".join(r[i].ljust(widths[i]) for i in range(4)).rstrip())
    if v.differences:
        lines.append("  differences:")
        lines.extend(f"    - {d}" for d in v.differences)
    if v.shared:
        lines.append("  fails the same way on both sides:")
        lines.extend(f"    - {d}" for d in v.shared)
    notes = [
        f"{s.side}: {n}" for s in (v.slurm, v.kubeflow) for n in s.notes if verbose or not n.startswith("isolation:")
    ]
    iso = next((n for n in v.slurm.notes if n.startswith("isolation:")), None)
    if iso:
        notes.insert(0, iso)
    if notes:
        lines.append("  notes:")
        lines.extend(f"    {n}" for n in notes)
    if verbose:
        for side in (v.slurm, v.kubeflow):
            lines.append(f"  {side.side} processes:")
            for p in side.processes:
                lines.append(
                    f"    node {p.node} ({p.host}) rank {p.rank} local {p.local_rank} world {p.world_size} "
                    f"gpus {p.gpus} master {p.master_addr}:{p.master_port} [{p.launcher}] "
                    f"{p.interpreter} {p.program} {' '.join(p.argv)}"
                )
    return "\n".join(lines) + "\n"


class _Stopped(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _stop_on_signals():
    """SIGINT, SIGTERM and SIGHUP end every running sandbox at once (its processes die with its pid
    namespace) and unwind the run, so that each sandbox's temporary directory is removed; the caller
    then exits with 128+N. The previous handlers come back afterwards."""
    from translator.simulate import sandbox

    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def stop(signum, _frame):
        for s in sigs:  # a second signal must not interrupt the clean-up
            signal.signal(s, signal.SIG_IGN)
        sandbox.stop_all()
        raise _Stopped(signum)

    try:
        old = {s: signal.signal(s, stop) for s in sigs}
    except ValueError:  # not the main thread: no handlers (the parent-death signal still applies)
        old = {}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@click.command(name="simulate", cls=SbatchArgsCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("scripts", nargs=-1, metavar="SCRIPT...")
@click.option(
    "--trainjob",
    "trainjob",
    metavar="FILE.yaml",
    help="Compare an existing TrainJob file with its script (--script, or its slurm2kf.io/source annotation).",
)
@click.option("--script", "script_opt", metavar="FILE", help="With --trainjob: the Slurm script it came from.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per script per line.")
@click.option("--verbose", "-v", is_flag=True, help="Also list every process and all notes.")
@click.option("--runtime", metavar="NAME", help="Runtime name (as for convert).")
@click.option("--image", metavar="IMG", help="Container image (as for convert).")
@click.option(
    "--profile",
    "profile_path",
    metavar="FILE",
    help=f"Site profile (default: ${PROFILE_ENV}, else slurm2kf.yaml found upward from SCRIPT).",
)
@click.option(
    "--sbatch-env",
    "sbatch_env",
    multiple=True,
    metavar="KEY=VALUE",
    help="An SBATCH_* input variable as if set when sbatch runs (repeatable).",
)
@script_args_option
@click.option(
    "--array-index",
    "array_index",
    type=int,
    default=None,
    metavar="N",
    help="Array element to simulate (default: the first index).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0.5, 60),
    default=5.0,
    show_default=True,
    help="Seconds each node's or pod's command may run.",
)
@click.option(
    "--deadline",
    type=click.FloatRange(1, 3600),
    default=60.0,
    show_default=True,
    help="Seconds one script's whole simulation (both sides, every node and pod) may take.",
)
@click.option(
    "--runtimes",
    "runtime_files",
    multiple=True,
    metavar="FILE|DIR",
    help="(Cluster)TrainingRuntime YAML of the site, instead of the runtimes Trainer v2.3 ships (repeatable).",
)
@click.option(
    "--image-provides",
    "image_provides",
    multiple=True,
    metavar="TOOL[,TOOL]",
    help="Site tools the TrainJob's image has (conda, apptainer, module, ...); others are absent in pods.",
)
@click.pass_context
def command(ctx, **opts) -> None:
    """Run SCRIPT as a Slurm batch job and as the converted TrainJob, with stub commands (nothing of the
    program runs), and compare the training processes. Options after `--` are sbatch options."""
    from translator.simulate import sandbox

    if opts["trainjob"] and opts["scripts"]:
        raise click.UsageError("give either SCRIPT... or --trainjob FILE (with --script)")
    if not opts["trainjob"] and not opts["scripts"]:
        raise click.UsageError("missing SCRIPT (or --trainjob FILE)")
    if opts["script_opt"] and not opts["trainjob"]:
        raise click.UsageError("--script goes with --trainjob")
    try:
        sandbox.check_isolation()
        with _stop_on_signals():
            status = _run(ctx, **opts)
    except sandbox.SandboxUnavailable as exc:
        echo_user(str(exc), err=True)
        sys.exit(USAGE_ERROR)
    except _Stopped as exc:
        echo_user(f"simulate: stopped by {signal.Signals(exc.signum).name}; every sandbox was ended", err=True)
        sys.exit(128 + exc.signum)
    sys.exit(status)


def _run(
    ctx,
    scripts,
    trainjob,
    script_opt,
    as_json,
    verbose,
    runtime,
    image,
    profile_path,
    sbatch_env,
    script_args,
    array_index,
    timeout,
    deadline,
    runtime_files,
    image_provides,
) -> int:
    """Simulate each script (or the --trainjob file); the exit status. SandboxUnavailable propagates."""
    from translator.cli.convert_cmd import _load_profile
    from translator.pipeline import ConvertSettings
    from translator.simulate import SimulateError, simulate_script, simulate_trainjob
    from translator.simulate.sandbox import SandboxUnavailable

    args = parse_script_args(script_args) or ()
    env = parse_env_items(sbatch_env)
    runtimes = None
    if runtime_files:
        from translator.simulate.kubeflow_pods import TrainJobError, load_runtimes

        try:
            runtimes = load_runtimes(list(runtime_files))
        except TrainJobError as exc:
            echo_user(f"error: {exc}", err=True)
            return USAGE_ERROR
    sbatch_args = tuple(ctx.meta.get("slurm2kf.sbatch_args", ()))
    status = 0
    provides = tuple(t.strip() for item in image_provides for t in item.split(",") if t.strip())
    verdicts_all: list = []

    def settings_for(path):
        profile, _ = _load_profile(profile_path, path)
        return ConvertSettings(
            runtime=runtime or None,
            image=image or None,
            sbatch_env=tuple(env.items()),
            sbatch_args=sbatch_args,
            profile=profile,
            script_args=args or None,
        )

    def emit(v):
        v = hide_secrets(v, path_secrets(v.path, script_opt))  # translator/plan/redact.py: as the YAML hides them
        if as_json:
            click.echo(json.dumps(verdict_json(v), sort_keys=False))  # (JSON escapes every control character)
        else:
            echo_user(render_human(v, verbose), nl=False)

    jobs = [trainjob] if trainjob else list(scripts)
    for path in jobs:
        try:
            if trainjob:
                src = script_opt
                verdicts = simulate_trainjob(
                    path, src, settings_for(src or path), args, array_index, timeout, runtimes, provides, deadline
                )
            else:
                verdicts = [
                    simulate_script(path, settings_for(path), args, array_index, timeout, runtimes, provides, deadline)
                ]
        except SandboxUnavailable:
            raise
        except SimulateError as exc:
            echo_user(str(exc), err=True)
            status = USAGE_ERROR
            continue
        for v in verdicts:
            emit(v)
        verdicts_all.extend(verdicts)
    return status or exit_status(verdicts_all)
