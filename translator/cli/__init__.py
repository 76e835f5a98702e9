"""slurm2kf command line. Thin: argument handling and exit codes only; each command in its own module.

Exit codes everywhere: 0 ok, 1 the input has errors (sbatch would refuse it / an error finding),
2 usage error or unreadable input, 70 internal error (a bug), 130 interrupted (Ctrl-C).
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

    for name in ("inspect", "convert", "validate", "profile", "migrate", "report", "submit", "jobs", "cancel", "simulate"):
        try:
            mod = importlib.import_module(f"translator.cli.{name}_cmd")
        except ModuleNotFoundError as exc:  # a command whose module is not written yet
            if exc.name != f"translator.cli.{name}_cmd":
                raise
            continue
        cli.add_command(mod.command)


_register()


INTERRUPTED = 130        # 128 + SIGINT, as shells report a job stopped by Ctrl-C
INTERNAL_ERROR = 70      # EX_SOFTWARE (sysexits.h): a bug in slurm2kf, never "the script has errors"


def main() -> None:
    """The console script: click's handling plus two statuses of our own, so exit 1 keeps meaning
    "a script has errors": Ctrl-C exits 130 and an unexpected exception exits 70 with one line on
    stderr instead of a traceback (set SLURM2KF_TRACEBACK=1 to see it)."""
    import os

    try:
        rv = cli.main(standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("slurm2kf: interrupted", err=True)
        sys.exit(INTERRUPTED)
    except click.exceptions.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except BrokenPipeError:
        sys.exit(2)
    except Exception as exc:     # a bug: one line, distinct status
        if os.environ.get("SLURM2KF_TRACEBACK"):
            raise
        from translator.fsio import terminal_safe

        click.echo(terminal_safe(f"slurm2kf: internal error ({type(exc).__name__}: {exc}); please report it "
                                 "with the command line and input (SLURM2KF_TRACEBACK=1 shows the traceback)"),
                   err=True)
        sys.exit(INTERNAL_ERROR)
    sys.exit(rv if isinstance(rv, int) else 0)
