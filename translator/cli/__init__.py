"""slurm2kf command line. Thin: argument handling and exit codes only; each command in its own module.

Exit codes everywhere: 0 ok, 1 the input has errors (sbatch would refuse it / an error finding),
2 usage error or unreadable input.
"""
from __future__ import annotations

import sys

import click

from translator import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="slurm2kf")
def cli() -> None:
    """Read Slurm sbatch scripts exactly as Slurm does and turn them into Kubeflow Trainer TrainJobs."""


def _register() -> None:
    import importlib

    for name in ("inspect", "convert", "validate", "profile", "migrate", "report", "simulate"):
        try:
            mod = importlib.import_module(f"translator.cli.{name}_cmd")
        except ModuleNotFoundError as exc:  # a command whose module is not written yet
            if exc.name != f"translator.cli.{name}_cmd":
                raise
            continue
        cli.add_command(mod.command)


_register()


def main() -> None:
    try:
        cli.main(standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
