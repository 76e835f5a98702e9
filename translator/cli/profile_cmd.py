"""`slurm2kf profile init DIR` and `slurm2kf profile check FILE`."""
from __future__ import annotations

import os
import sys

import click


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
            click.echo(diag.format(file), err=True)
        n = len(exc.diagnostics)
        click.echo(f"{file}: {n} problem{'s' if n != 1 else ''}; the profile cannot be used", err=True)
        sys.exit(2)
    from translator.profile.lint import lint_profile

    for diag in lint_profile(profile):
        click.echo(diag.format(file), err=True)
    counts = [(len(profile.partitions), "partition"), (len(profile.qos), "qos"), (len(profile.accounts), "account"),
              (len(profile.gpu_types), "GPU type"), (len(profile.constraints), "constraint"),
              (len(profile.image_rules), "image rule"), (len(profile.filesystems), "file system"),
              (len(profile.runtimes), "runtime")]
    summary = ", ".join(f"{n} {what}{'s' if n != 1 and not what.endswith('s') else ''}" for n, what in counts)
    label = f"profile `{profile.name}`" if profile.name else "profile"
    click.echo(f"{file}: ok ({label}: {summary})")


@command.command("init")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, dir_okay=True))
@click.option("-o", "--output", "output", metavar="FILE", default="-",
              help="Write the skeleton to FILE (default: stdout).")
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
def init(directory: str, output: str, force: bool) -> None:
    """Survey the job scripts under DIR and write a commented profile skeleton to fill in."""
    from translator.profile.scan import survey
    from translator.profile.skeleton import render_skeleton

    if not os.path.isdir(directory):
        click.echo(f"{directory}: not a directory", err=True)
        sys.exit(2)
    usage = survey(directory)
    text = render_skeleton(usage, directory)
    if output == "-":
        click.echo(text, nl=False)
    else:
        if os.path.exists(output) and not force:
            click.echo(f"{output}: exists; use --force to overwrite it", err=True)
            sys.exit(2)
        tmp = f"{output}.tmp{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, output)
        except OSError as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            click.echo(f"{output}: cannot write: {exc.strerror or exc}", err=True)
            sys.exit(2)
    click.echo(f"surveyed {usage.scripts} job script{'s' if usage.scripts != 1 else ''} under {directory}: "
               f"{len(usage.partitions)} partitions, {len(usage.qos)} qos, {len(usage.accounts)} accounts, "
               f"{len(usage.gpu_types)} GPU types, {len(usage.environments)} environments, "
               f"{len(usage.paths)} path prefixes" + ("" if output == "-" else f"; wrote {output}"), err=True)
    if usage.scripts == 0:
        click.echo(f"{directory}: no job scripts found (a job script starts with `#!` and has #SBATCH lines)",
                   err=True)
