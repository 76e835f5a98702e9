"""`slurm2kf convert`: one sbatch script -> TrainJob YAML (default), SDK 0.5 Python, or plan JSON.

Findings go to stderr as `path:line: severity CODE message (fix: …)`.
Exit status: 0 converted; 1 sbatch would refuse the script, or an error-level finding means the job
cannot run as converted (the output is still written); 2 usage error or unreadable file.
"""

from __future__ import annotations

import os
import sys

import click

from translator.cli.common import (
    USAGE_ERROR,
    SbatchArgsCommand,
    TableChoice,
    check_kube_options,
    conversion_options,
    echo_user,
    parse_env_items,
    parse_script_args,
    script_args_option,
)
from translator.cli.trainer_version import resolve as resolve_version, trainer_version_option
from translator.emit import DEFAULT as DEFAULT_FORMAT, WRITERS
from translator.profile.lookup import PROFILE_ENV


def _load_profile(option_path, script_path):
    """--profile FILE, else $SLURM2KF_PROFILE, else ./slurm2kf.yaml found upward from the script."""
    from translator.profile.lookup import find_profile

    path = find_profile(script_path, option_path)
    if not path:
        return None, None
    from translator.profile import load as profile_load  # only when a profile applies (start-up time)

    try:
        return profile_load.load_profile(path), path
    except profile_load.ProfileError as exc:  # line-numbered problems, no traceback
        echo_user(exc.format(), err=True)
        raise SystemExit(USAGE_ERROR)


def _read_stdin(label: str) -> bytes:
    """Standard input with the reader's size cap (R103): an endless pipe is refused, not buffered."""
    from translator.diagnostics import Diagnostic, ERROR
    from translator.fsio import TOO_LARGE, UserFileError, read_stream
    from translator.read import MAX_FILE_BYTES, R102_UNREADABLE, R103_TOO_LARGE

    try:
        return read_stream(sys.stdin.buffer, "standard input", MAX_FILE_BYTES)
    except UserFileError as exc:
        code = R103_TOO_LARGE if exc.kind == TOO_LARGE else R102_UNREADABLE
        echo_user(Diagnostic(ERROR, code, exc.message).format(label), err=True)
        raise SystemExit(USAGE_ERROR)


def _to_help() -> str:
    """`--to` help from the WRITERS table: "Output: TrainJob YAML, Python for ..., or the plan as JSON."."""
    names = [w.help for w in WRITERS.values()]
    return "Output: " + (", ".join(names[:-1]) + ", or " + names[-1] if len(names) > 1 else names[0]) + "."


@click.command(name="convert", cls=SbatchArgsCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("script", metavar="SCRIPT|-")
@click.option("--to", "to", type=TableChoice(WRITERS), default=DEFAULT_FORMAT, show_default=True, help=_to_help())
@click.option("-o", "--output", "output", default="-", metavar="FILE|-", help="Where to write (default stdout).")
@conversion_options(f"Site profile (default: ${PROFILE_ENV}, else slurm2kf.yaml found upward from SCRIPT).")
@click.option("--namespace", metavar="NS", help="metadata.namespace of the TrainJob.")
@trainer_version_option
@click.option("--findings-comment", is_flag=True, help="Also write the findings as a comment block (YAML).")
@click.option(
    "--simulate",
    "simulate",
    is_flag=True,
    help="Also run both sides with stub commands and report whether they launch the same training "
    '(S8xx findings; a "simulation" object in --to json).',
)
@script_args_option
@click.pass_context
def command(
    ctx: click.Context,
    script: str,
    to: str,
    output: str,
    runtime,
    image,
    namespace,
    trainer_version,
    gpu_resource,
    array_mode,
    profile_path,
    findings_comment,
    sbatch_env,
    simulate,
    script_args,
) -> None:
    """Convert SCRIPT into a Kubeflow Trainer TrainJob. Options after `--` are sbatch options."""
    from translator.pipeline import ConvertSettings, convert

    sbatch_args = tuple(ctx.meta.get("slurm2kf.sbatch_args", ()))
    env = parse_env_items(sbatch_env)
    if not gpu_resource.strip():
        raise click.UsageError("--gpu-resource must not be empty")
    check_kube_options(namespace, gpu_resource.strip())
    data = None
    if script == "-":  # read the script from stdin, as `sbatch` does
        data = _read_stdin(script)
    profile, profile_file = _load_profile(profile_path, script if script != "-" else os.path.join(os.getcwd(), "-"))
    settings = ConvertSettings(
        runtime=runtime or None,
        image=image or None,
        namespace=namespace or None,
        array_mode=array_mode,
        gpu_resource=gpu_resource.strip(),
        sbatch_env=tuple(env.items()),
        sbatch_args=sbatch_args,
        profile=profile,
        script_args=parse_script_args(script_args),
        trainer_version=resolve_version(trainer_version, profile, "convert"),
    )
    conv = convert(script, data=data, settings=settings)
    if conv.file_error is not None:
        echo_user(conv.file_error.format(script), err=True)
        sys.exit(USAGE_ERROR)
    for d in conv.diagnostics:
        if d.severity in ("error", "warning"):
            echo_user(d.format(script), err=True)
    simulation = None
    if simulate:
        from dataclasses import replace as _replace
        from translator.simulate import SimulateError, simulate_script
        from translator.simulate.findings import findings_of, not_simulated
        from translator.plan.redact import redact_data as hide_secrets, script_secrets

        if script == "-":
            extra = [not_simulated("the script was read from standard input; give a file")]
        else:
            try:
                simulation = hide_secrets(
                    simulate_script(script, settings, settings.script_args or ()), script_secrets(conv.script)
                )
                extra = findings_of(simulation)
            except SimulateError as exc:
                extra = [not_simulated(str(exc))]
        if conv.plans:
            conv = _replace(
                conv, plans=tuple(_replace(p, findings=tuple(p.findings) + tuple(extra)) for p in conv.plans)
            )
        else:
            for f in extra:
                echo_user(f.format(script), err=True)
    for f in conv.findings:
        echo_user(f.format(script), err=True)
    from translator.emit import render

    text = render(conv.plans, to, findings_comment=findings_comment, simulation=simulation)
    if output == "-":
        click.echo(text, nl=False)
    else:
        # never over a link, device, FIFO or folder, nor over the script or the profile; a temporary
        # file in the target's folder renamed over it; like `>`, no folders are made
        from translator.fsio import OutputRefused, write_output

        try:
            write_output(output, text.encode("utf-8"), inputs=[script, profile_file or ""])
        except OutputRefused as exc:
            echo_user(f"slurm2kf convert: error: {exc.message}", err=True)
            sys.exit(USAGE_ERROR)
        except OSError as exc:
            echo_user(f"{output}: error: cannot write: {exc.strerror or exc}", err=True)
            sys.exit(USAGE_ERROR)
    from translator.plan.build import accepted_with_plugins

    refused = conv.job is not None and not accepted_with_plugins(conv.job)
    if refused or any(not p.can_run for p in conv.plans):
        sys.exit(1)
