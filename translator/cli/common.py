"""What several commands share: sbatch options after `--`, and `--sbatch-env KEY=VALUE` items."""
from __future__ import annotations

from typing import Dict, List

import click

USAGE_ERROR = 2


class SbatchArgsCommand(click.Command):
    """Splits the raw arguments at the first `--`: what follows are sbatch options, kept verbatim
    (in `ctx.meta["slurm2kf.sbatch_args"]`)."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        args = list(args)
        if "--" in args:
            i = args.index("--")
            ctx.meta["slurm2kf.sbatch_args"] = args[i + 1:]
            args = args[:i]
        return super().parse_args(ctx, args)


def parse_env_items(items) -> Dict[str, str]:
    """`--sbatch-env KEY=VALUE` items -> dict (a later item wins); a usage error otherwise."""
    env: Dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise click.UsageError(f"--sbatch-env expects KEY=VALUE, got {item!r}")
        env[key] = value
    return env


def script_args_option(f):
    """`--script-args 'A B'`: the arguments sbatch gives the batch script (`sbatch job.sh A B`)."""
    return click.option("--script-args", "script_args", metavar="'ARG ...'", default=None,
                        help="Arguments given to the script after its name on the sbatch command line "
                             "(split like a shell does); they replace $1, $@ ... in the converted command.")(f)


def parse_script_args(text):
    """`--script-args` text -> tuple of words (shell quoting), None when the option is not given."""
    if text is None:
        return None
    import shlex
    try:
        return tuple(shlex.split(text))
    except ValueError as exc:
        raise click.UsageError(f"--script-args: {exc}")
