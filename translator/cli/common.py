"""What several commands share: sbatch options after `--`, and `--sbatch-env KEY=VALUE` items."""

from __future__ import annotations


import click

USAGE_ERROR = 2


class SbatchArgsCommand(click.Command):
    """Splits the raw arguments at the first `--`: what follows are sbatch options, kept verbatim
    (in `ctx.meta["slurm2kf.sbatch_args"]`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args = list(args)
        if "--" in args:
            i = args.index("--")
            ctx.meta["slurm2kf.sbatch_args"] = args[i + 1 :]
            args = args[:i]
        return super().parse_args(ctx, args)


class TableChoice(click.Choice):
    """A choice among the names of a registry table (a dict), read when the option is parsed, so an
    entry added to the table after this module was imported is offered too."""

    def __init__(self, table: dict) -> None:
        self.table = table
        super().__init__(tuple(table))

    @property
    def choices(self):
        return tuple(self.table)

    @choices.setter
    def choices(self, _value) -> None:  # click.Choice.__init__ assigns it; the table is the truth
        pass


def parse_env_items(items) -> dict[str, str]:
    """`--sbatch-env KEY=VALUE` items -> dict (a later item wins); a usage error otherwise."""
    env: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise click.UsageError(f"--sbatch-env expects KEY=VALUE, got {item!r}")
        env[key] = value
    return env


def echo_user(text: str, err: bool = False, nl: bool = True) -> None:
    """Print text that holds user data (file names, script lines, messages quoting them) with every
    terminal control sequence made inert (ESC, OSC, C1 controls, bidi overrides: see fsio.terminal_safe)."""
    from translator.fsio import terminal_safe
    from translator.plan.redact import redact

    click.echo(terminal_safe(redact(text)), err=err, nl=nl)  # no token-shaped text or URL password in clear


def check_kube_options(namespace, gpu_resource) -> None:
    """`--namespace` and `--gpu-resource` must be values `slurm2kf validate` (and the API server)
    accept, else a usage error (exit 2): an invalid TrainJob is never written with exit 0."""
    from translator.validate.rules import namespace_problem, resource_name_problem

    if namespace:
        p = namespace_problem(namespace)
        if p:
            raise click.UsageError(f"--namespace {p} (V730)")
    if gpu_resource:
        p = resource_name_problem(gpu_resource)
        if p:
            raise click.UsageError(f"--gpu-resource: {p} (V743)")


def script_args_option(f):
    """`--script-args 'A B'`: the arguments sbatch gives the batch script (`sbatch job.sh A B`)."""
    return click.option(
        "--script-args",
        "script_args",
        metavar="'ARG ...'",
        default=None,
        help="Arguments given to the script after its name on the sbatch command line "
        "(split like a shell does); they replace $1, $@ ... in the converted command.",
    )(f)


def parse_script_args(text):
    """`--script-args` text -> tuple of words (shell quoting), None when the option is not given."""
    if text is None:
        return None
    import shlex

    try:
        return tuple(shlex.split(text))
    except ValueError as exc:
        raise click.UsageError(f"--script-args: {exc}")


def conversion_options(profile_help: str):
    """The conversion options every converting command takes (`convert`, `submit`, `migrate`, `report`):
    --runtime, --image, --gpu-resource, --array-mode, --profile (its help says where each command looks for
    the default profile) and --sbatch-env."""
    opts = [
        click.option("--runtime", metavar="NAME", help="Runtime name (overrides the launcher's choice)."),
        click.option("--image", metavar="IMG", help="Container image (overrides the runtime's image and wrappers)."),
        click.option(
            "--gpu-resource",
            default="nvidia.com/gpu",
            show_default=True,
            metavar="NAME",
            help="Kubernetes resource name for GPUs.",
        ),
        click.option(
            "--array-mode",
            type=click.Choice(["finding", "expand"]),
            default="finding",
            show_default=True,
            help="Job arrays: one TrainJob and a finding, or one TrainJob per index.",
        ),
        click.option("--profile", "profile_path", metavar="FILE", help=profile_help),
        click.option(
            "--sbatch-env",
            "sbatch_env",
            multiple=True,
            metavar="KEY=VALUE",
            help="An SBATCH_* input variable as if set when sbatch runs (repeatable).",
        ),
    ]

    def apply(f):
        for o in reversed(opts):
            f = o(f)
        return f

    return apply
