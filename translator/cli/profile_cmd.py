"""`slurm2kf profile init DIR` and `slurm2kf profile check FILE`."""

from __future__ import annotations

import os
import sys

import click

from translator.cli.common import echo_user


@click.group("profile")
def command() -> None:
    """Site profiles: map a cluster's partitions, QoS, accounts, modules and file systems to Kubernetes."""


@command.command("check")
@click.argument("file", metavar="FILE")
def check(file: str) -> None:
    """Validate a site profile. Exit 0 when it is usable, 2 when it is not (each problem names its key and line)."""
    from translator.profile.load import ProfileError, load_profile

    try:
        profile = load_profile(file)
    except ProfileError as exc:
        for diag in exc.diagnostics:
            echo_user(diag.format(file), err=True)
        n = len(exc.diagnostics)
        echo_user(f"{file}: {n} problem{'s' if n != 1 else ''}; the profile cannot be used", err=True)
        sys.exit(2)
    from translator.profile.lint import lint_profile

    for diag in lint_profile(profile):
        echo_user(diag.format(file), err=True)
    counts = [
        (len(profile.partitions), "partition"),
        (len(profile.qos), "qos"),
        (len(profile.accounts), "account"),
        (len(profile.gpu_types), "GPU type"),
        (len(profile.constraints), "constraint"),
        (len(profile.image_rules), "image rule"),
        (len(profile.filesystems), "file system"),
        (len(profile.runtimes), "runtime"),
    ]
    summary = ", ".join(f"{n} {what}{'s' if n != 1 and not what.endswith('s') else ''}" for n, what in counts)
    label = f"profile `{profile.name}`" if profile.name else "profile"
    echo_user(f"{file}: ok ({label}: {summary})")


@command.command("init")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, dir_okay=True))
@click.option(
    "-o", "--output", "output", metavar="FILE", default="-", help="Write the skeleton to FILE (default: stdout)."
)
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
def init(directory: str, output: str, force: bool) -> None:
    """Survey the job scripts under DIR and write a commented profile skeleton to fill in."""
    from translator.profile.scan import F_UNREADABLE_FILE, survey
    from translator.profile.skeleton import render_skeleton

    if not os.path.isdir(directory):
        echo_user(f"{directory}: not a directory", err=True)
        sys.exit(2)
    usage = survey(directory)
    text = render_skeleton(usage, directory)
    if output == "-":
        click.echo(text, nl=False)
    else:
        from translator.fsio import OutputRefused, looks_like_job_script, write_output

        if os.path.lexists(output) and not force:
            echo_user(f"{output}: exists; use --force to overwrite it", err=True)
            sys.exit(2)
        try:
            # even with --force: never over a link, device, FIFO or folder, nor over a job script of DIR
            write_output(output, text.encode("utf-8"), input_trees=[directory], is_input=looks_like_job_script)
        except OutputRefused as exc:
            echo_user(f"slurm2kf profile init: error: {exc.message}", err=True)
            sys.exit(2)
        except OSError as exc:
            echo_user(f"{output}: cannot write: {exc.strerror or exc}", err=True)
            sys.exit(2)
    echo_user(
        f"surveyed {usage.scripts} job script{'s' if usage.scripts != 1 else ''} under {directory}: "
        f"{len(usage.partitions)} partitions, {len(usage.qos)} qos, {len(usage.accounts)} accounts, "
        f"{len(usage.gpu_types)} GPU types, {len(usage.environments)} environments, "
        f"{len(usage.paths)} path prefixes" + ("" if output == "-" else f"; wrote {output}"),
        err=True,
    )
    for rel, why in usage.unreadable_files[:50]:
        echo_user(
            f"{os.path.join(directory, rel)}: warning {F_UNREADABLE_FILE} cannot be read, not surveyed ({why})",
            err=True,
        )
    if len(usage.unreadable_files) > 50:
        echo_user(f"... and {len(usage.unreadable_files) - 50} more unreadable files", err=True)
    if usage.scripts == 0:
        echo_user(f"{directory}: no job scripts found (a job script starts with `#!` and has #SBATCH lines)", err=True)
