"""`--trainer-version 2.3|2.4`: the Kubeflow Trainer release the output must suit (convert, migrate,
validate, submit). The site profile may set it (`defaults.trainerVersion`); the option wins."""

from __future__ import annotations

import sys

import click

from translator.validate.versions import DEFAULT, VERSIONS


def trainer_version_option(f):
    return click.option(
        "--trainer-version",
        "trainer_version",
        type=click.Choice(VERSIONS),
        default=None,
        help=f"Kubeflow Trainer release of the cluster: its rules, findings and reserved names "
        f"(default: the profile's defaults.trainerVersion, else {DEFAULT}).",
    )(f)


def resolve(option: str | None, profile=None, command: str = "convert") -> str:
    """The version (option, else the profile's, else the default). A profile runtime whose
    replicatedJob names that version refuses is a usage error (P465 at the profile's line, exit 2)."""
    from translator.cli.common import USAGE_ERROR, echo_user
    from translator.plan.trainer_version import profile_findings

    defaults = getattr(profile, "defaults", None)
    version = option or getattr(defaults, "trainer_version", None) or DEFAULT
    problems = [f for f, _ in profile_findings(profile, version)] if profile is not None else []
    for f in problems:
        echo_user(f.format(profile.path), err=True)
    if problems:
        click.echo(f"slurm2kf {command}: the profile does not suit Trainer {version}", err=True)
        sys.exit(USAGE_ERROR)
    return version
