"""`slurm2kf submit SCRIPT|TRAINJOB.yaml... [-- SBATCH OPTIONS]`: the `sbatch` of TrainJobs.

Converts each script (like `convert`; YAML files are sent as they are) and creates the TrainJob(s) on
the cluster of the kubeconfig's current context. Prints `Submitted TrainJob NAMESPACE/NAME` per job.
Exit status: 0 all submitted; 1 a script was refused (error findings, without --force) or the server
rejected a TrainJob; 2 usage error, unreadable input, or the cluster cannot be used.
"""

from __future__ import annotations

import sys

import click

from translator.cli.cluster_common import cluster_options, connect_or_exit, echo_rejection, exit_on
from translator.cli.common import echo_user
from translator.cli.common import SbatchArgsCommand, conversion_options, parse_env_items
from translator.cli.trainer_version import resolve as resolve_version, trainer_version_option
from translator.profile.lookup import PROFILE_ENV


@click.command(name="submit", cls=SbatchArgsCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("files", nargs=-1, required=True, metavar="SCRIPT|TRAINJOB.yaml...")
@cluster_options
@click.option(
    "--dry-run",
    is_flag=True,
    help="Server-side dry run: the server's full validation (schema, CEL rules, RBAC), nothing stored.",
)
@click.option(
    "--apply",
    "apply_",
    is_flag=True,
    help="Server-side apply (field manager slurm2kf): create, or update the TrainJob of the same "
    "name; re-submitting an unchanged file changes nothing.",
)
@click.option(
    "--generate-name",
    is_flag=True,
    help="Let the server add a unique 5-character suffix to each name (like a new sbatch job id).",
)
@click.option("--force", is_flag=True, help="Submit even when the conversion has error findings.")
@conversion_options(f"Site profile (default: ${PROFILE_ENV}, else slurm2kf.yaml found upward from SCRIPT).")
@trainer_version_option
@click.option("-q", "--quiet", is_flag=True, help="Print only problems (no `Submitted` lines).")
@click.pass_context
def command(
    ctx: click.Context,
    files,
    kubeconfig,
    context,
    namespace,
    request_timeout,
    dry_run,
    apply_,
    generate_name,
    force,
    runtime,
    image,
    gpu_resource,
    array_mode,
    profile_path,
    sbatch_env,
    trainer_version,
    quiet,
) -> None:
    """Convert and submit sbatch scripts (or TrainJob YAML) to the cluster. Options after `--` are
    sbatch options, as for `convert`.

    Exit status: 0 all submitted; 1 a script was refused or the server rejected a TrainJob; 2 usage
    error, unreadable input, or the cluster cannot be used.
    """
    from translator.cli.convert_cmd import _load_profile
    from translator.cluster import ClusterError
    from translator.cluster.objects import prepare
    from translator.cluster.submit import submit_all
    from translator.pipeline import ConvertSettings

    if apply_ and generate_name:
        raise click.UsageError("--apply needs a fixed name: it cannot be combined with --generate-name")
    if not gpu_resource.strip():
        raise click.UsageError("--gpu-resource must not be empty")
    sbatch_args = tuple(ctx.meta.get("slurm2kf.sbatch_args", ()))
    env = tuple(parse_env_items(sbatch_env).items())

    def settings_for(path):
        profile, _ = _load_profile(profile_path, path)
        return ConvertSettings(
            runtime=runtime or None,
            image=image or None,
            namespace=namespace or None,
            array_mode=array_mode,
            gpu_resource=gpu_resource.strip(),
            sbatch_env=env,
            sbatch_args=sbatch_args,
            profile=profile,
            trainer_version=resolve_version(trainer_version, profile, "submit"),
        )

    prepared = prepare(files, settings_for, force=force)
    for line in prepared.messages:
        echo_user(line, err=True)
    outcomes: list = []
    error = None
    if prepared.items:
        cluster = connect_or_exit("submit", kubeconfig, context, namespace, request_timeout)
        try:
            submit_all(
                cluster,
                prepared.items,
                dry_run=dry_run,
                apply=apply_,
                generate_name=generate_name,
                namespace=namespace,
                done=outcomes,
            )
        except ClusterError as exc:
            error = exc  # the jobs the server did answer are still reported, then this line
    rejected = _report(outcomes, dry_run=dry_run, apply_=apply_, quiet=quiet)
    if error is not None:
        exit_on("submit", error)
    if prepared.unreadable:
        sys.exit(2)
    sys.exit(1 if (rejected or prepared.refused) else 0)


def _report(outcomes, *, dry_run: bool, apply_: bool, quiet: bool) -> int:
    """One line per outcome (stdout: `Submitted ...`; stderr: warnings, rejections); the rejected count."""
    rejected = 0
    for o in outcomes:
        label = f"TrainJob {o.namespace}/{o.name or o.item.name}"
        for w in o.warnings:
            echo_user(f"{o.item.source}: warning K917 {label}: the server warns: {w}", err=True)
        if not o.ok:
            rejected += 1
            echo_rejection(o.item.source, label, o.rejection)
            continue
        if quiet:
            continue
        suffix = ""
        if dry_run:
            suffix = " (dry run: accepted by the server, not stored)"
        elif apply_ and o.action != "created":
            suffix = f" ({o.action})"
        # o.name is the name in the server's answer (a stored TrainJob: answers.TRAINJOB)
        echo_user(f"Submitted TrainJob {o.namespace}/{o.name}{suffix}")
    return rejected
