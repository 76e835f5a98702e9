"""`slurm2kf simulate`: the processes a job starts on Slurm and on Kubeflow Trainer, side by side.

Exit status: 0 every script is equivalent; 1 at least one differs; 2 usage error or unreadable input.
"""

from __future__ import annotations

import json
import sys
from collections import OrderedDict

import click

from translator.cli.common import USAGE_ERROR, SbatchArgsCommand, parse_env_items, parse_script_args, script_args_option
from translator.profile.lookup import PROFILE_ENV
from translator.redact import path_secrets, redact_data as hide_secrets


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


def verdict_json(v) -> dict:
    return {
        "path": v.path,
        "verdict": v.verdict,
        "differences": list(v.differences),
        "slurm": [process_json(p) for p in v.slurm.processes],
        "kubeflow": [process_json(p) for p in v.kubeflow.processes],
        "failures": {
            s.side: [{"node": f.node, "command": f.command, "reason": f.reason} for f in s.failures]
            for s in (v.slurm, v.kubeflow)
        },
        "notes": {s.side: list(s.notes) for s in (v.slurm, v.kubeflow)},
    }


def _ranks(ranks: list) -> str:
    rs = sorted(r for r in ranks if r is not None)
    if not rs:
        return "-"
    if rs == list(range(rs[0], rs[-1] + 1)):
        return str(rs[0]) if len(rs) == 1 else f"{rs[0]}-{rs[-1]}"
    return ",".join(map(str, rs[:6])) + ("…" if len(rs) > 6 else "")


def _groups(procs):
    from translator.simulate.verdict import command_of

    out: OrderedDict[tuple, list] = OrderedDict()  # (node, command) -> its processes
    for p in procs:
        out.setdefault((p.node, command_of(p)), []).append(p)
    return out


def _cell(ps, side) -> str:
    if not ps:
        return "-"
    from translator.simulate.verdict import endpoint_node, _hosts_index

    worlds = sorted({str(p.world_size) if p.world_size is not None else "-" for p in ps})
    gpus = sorted({str(p.gpus) for p in ps})
    eps = sorted({endpoint_node(p.master_addr, p, _hosts_index(side)) or "-" for p in ps})
    return (
        f"{len(ps)} proc  ranks {_ranks([p.rank for p in ps])}  world {','.join(worlds)}  "
        f"gpu {','.join(gpus)}  master {','.join(eps)}"
    )


def render_human(v, verbose: bool = False) -> str:
    from translator.simulate.verdict import normalized

    lines = [f"{v.path}: {v.verdict}"]
    sg, kg = _groups(normalized(v.slurm).processes), _groups(normalized(v.kubeflow).processes)
    keys = list(OrderedDict.fromkeys(list(sg) + list(kg)))
    keys.sort(key=lambda k: (k[0], k[1]))
    rows = [("node", "command", "Slurm", "Kubeflow")]
    for node, cmd in keys:
        rows.append(
            (
                str(node),
                cmd if len(cmd) <= 60 else cmd[:57] + "...",
                _cell(sg.get((node, cmd), []), v.slurm),
                _cell(kg.get((node, cmd), []), v.kubeflow),
            )
        )
    if len(rows) == 1:
        rows.append(("-", "(no training process on either side)", "-", "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        lines.append("  " + " | ".join(r[i].ljust(widths[i]) for i in range(4)).rstrip())
    if v.differences:
        lines.append("  differences:")
        lines.extend(f"    - {d}" for d in v.differences)
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
    "--timeout", type=click.FloatRange(0.5, 60), default=5.0, show_default=True, help="Seconds each side may run."
)
@click.option(
    "--runtimes",
    "runtime_files",
    multiple=True,
    metavar="FILE|DIR",
    help="(Cluster)TrainingRuntime YAML of the site, instead of the runtimes Trainer v2.3 ships (repeatable).",
)
@click.pass_context
def command(
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
    runtime_files,
) -> None:
    """Run SCRIPT as a Slurm batch job and as the converted TrainJob, with stub commands (nothing of the
    program runs), and compare the training processes. Options after `--` are sbatch options."""
    from translator.cli.convert_cmd import _load_profile
    from translator.pipeline import ConvertSettings
    from translator.simulate import SimulateError, simulate_script, simulate_trainjob

    if trainjob and scripts:
        raise click.UsageError("give either SCRIPT... or --trainjob FILE (with --script)")
    if not trainjob and not scripts:
        raise click.UsageError("missing SCRIPT (or --trainjob FILE)")
    if script_opt and not trainjob:
        raise click.UsageError("--script goes with --trainjob")
    args = parse_script_args(script_args) or ()
    env = parse_env_items(sbatch_env)
    runtimes = None
    if runtime_files:
        from translator.simulate.kubeflow_pods import TrainJobError, load_runtimes

        try:
            runtimes = load_runtimes(list(runtime_files))
        except TrainJobError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(USAGE_ERROR)
    sbatch_args = tuple(ctx.meta.get("slurm2kf.sbatch_args", ()))
    status = 0

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
        v = hide_secrets(v, path_secrets(v.path, script_opt))  # translator/redact.py: as the YAML hides them
        if as_json:
            click.echo(json.dumps(verdict_json(v), sort_keys=False))
        else:
            click.echo(render_human(v, verbose), nl=False)

    jobs = [trainjob] if trainjob else list(scripts)
    for path in jobs:
        try:
            if trainjob:
                src = script_opt
                verdicts = simulate_trainjob(path, src, settings_for(src or path), args, array_index, timeout, runtimes)
            else:
                verdicts = [simulate_script(path, settings_for(path), args, array_index, timeout, runtimes)]
        except SimulateError as exc:
            click.echo(str(exc), err=True)
            status = USAGE_ERROR
            continue
        for v in verdicts:
            emit(v)
            if v.verdict != "equivalent" and status == 0:
                status = 1
    sys.exit(status)
