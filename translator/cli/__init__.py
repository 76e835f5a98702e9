"""slurm2kf command line. Thin: argument handling and exit codes only; each command in its own module.

Exit codes everywhere: 0 ok, 1 the input has errors (sbatch would refuse it / an error finding),
2 usage error or unreadable input, 70 internal error (a bug), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import sys

import click

from translator import __version__


# Every command, in its own module `translator.cli.<module>` exposing `command`. A command's module
# (and whatever it imports) is loaded only when that command runs, or when `--help` lists the
# commands: start-up pays for click and the command being run, not for the other nine.
COMMANDS = {
    "inspect": "inspect_cmd",
    "convert": "convert_cmd",
    "validate": "validate_cmd",
    "profile": "profile_cmd",
    "migrate": "migrate_cmd",
    "report": "report_cmd",
    "submit": "submit_cmd",
    "jobs": "jobs_cmd",
    "cancel": "cancel_cmd",
    "logs": "logs_cmd",
    "simulate": "simulate_cmd",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use (click's "lazy loading" pattern)."""

    def __init__(self, *args, lazy_commands=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context):
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_commands))

    def get_command(self, ctx: click.Context, cmd_name: str):
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            self.add_command(self._load(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def _load(self, cmd_name: str) -> click.Command:
        import importlib

        module = importlib.import_module(f"{__name__}.{self.lazy_commands[cmd_name]}")
        command = module.command
        if not isinstance(command, click.Command):
            raise TypeError(f"{module.__name__}.command is not a click command")
        return command


@click.group(cls=LazyGroup, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="slurm2kf")
def cli() -> None:
    """Read Slurm sbatch scripts exactly as Slurm does and turn them into Kubeflow Trainer TrainJobs."""


INTERRUPTED = 130  # 128 + SIGINT, as shells report a job stopped by Ctrl-C
INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h): a bug in slurm2kf, never "the script has errors"


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
    except Exception as exc:  # a bug: one line, distinct status
        if os.environ.get("SLURM2KF_TRACEBACK"):
            raise
        from translator.fsio import terminal_safe

        click.echo(
            terminal_safe(
                f"slurm2kf: internal error ({type(exc).__name__}: {exc}); please report it "
                "with the command line and input (SLURM2KF_TRACEBACK=1 shows the traceback)"
            ),
            err=True,
        )
        sys.exit(INTERNAL_ERROR)
    sys.exit(rv if isinstance(rv, int) else 0)
