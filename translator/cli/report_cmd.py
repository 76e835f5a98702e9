"""`slurm2kf report SRC|OUT`: the review report of a script folder, or of a migrate output."""

from __future__ import annotations

import os
import sys

import click

from translator.cli.common import TableChoice, conversion_options, echo_user
from translator.report import REPORT_WRITERS


def convert_options(f):
    """The conversion options `migrate` and `report` share with `convert`."""
    opts = [
        conversion_options(
            "Site profile for every script (default: $SLURM2KF_PROFILE, else the nearest slurm2kf.yaml above "
            "each script)."
        ),
        click.option("--namespace", default=None, help="Namespace of the TrainJobs."),
        click.option(
            "--simulate",
            "simulate",
            is_flag=True,
            help="Also run each script and its TrainJob with stub commands and report whether they "
            "launch the same training (S8xx; see docs/simulate.md).",
        ),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def settings_from(opts: dict):
    """ConvertSettings from the shared options; an explicit --profile must load (exit 2 otherwise)."""
    from translator.pipeline import ConvertSettings

    profile = None
    if opts.get("profile_path"):
        from translator.profile.load import ProfileError, load_profile

        try:
            profile = load_profile(opts["profile_path"])
        except ProfileError as exc:
            echo_user(exc.format(), err=True)
            sys.exit(2)
    gpu_resource = (opts.get("gpu_resource") or "nvidia.com/gpu").strip()
    if not gpu_resource:
        raise click.UsageError("--gpu-resource must not be empty")
    from translator.cli.common import check_kube_options

    check_kube_options(opts.get("namespace") or None, gpu_resource)
    env = []
    for item in opts.get("sbatch_env") or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.UsageError(f"--sbatch-env expects KEY=VALUE, got {item!r}")
        env.append((key, value))
    return ConvertSettings(
        runtime=opts.get("runtime") or None,
        image=opts.get("image") or None,
        namespace=opts.get("namespace") or None,
        gpu_resource=gpu_resource,
        array_mode=opts.get("array_mode") or "finding",
        sbatch_env=tuple(env),
        profile=profile,
        simulate=bool(opts.get("simulate")),
    )


class _Utf8Sink:
    """A text stream for the report writers that hands UTF-8 bytes to `put`."""

    def __init__(self, put) -> None:
        self.put = put

    def write(self, s: str) -> int:
        self.put(s.encode("utf-8", "backslashreplace"))  # always valid UTF-8
        return len(s)


def _format_help() -> str:
    """`--format` help from the REPORT_WRITERS table: "md, html or json (default: ...)"."""
    names = list(REPORT_WRITERS)
    listed = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
    return f"{listed} (default: from the output file's extension, else {names[0]})."


@click.command("report")
@click.argument("source", type=click.Path(exists=True, file_okay=True, dir_okay=True))
@click.option("-o", "--output", "output", default="-", metavar="FILE|-", help="Report file (default: stdout).")
@click.option("--format", "fmt", type=TableChoice(REPORT_WRITERS), default=None, help=_format_help())
@click.option("-j", "--jobs", type=click.IntRange(0, 512), default=0, show_default="all cores")
@click.option("--include", multiple=True, metavar="GLOB")
@click.option("--exclude", multiple=True, metavar="GLOB")
@click.option("--max-size", type=click.IntRange(1, None), default=1 << 20, show_default=True, metavar="BYTES")
@click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Follow symbolic links that lead out of SOURCE (as `migrate --follow-symlinks`).",
)
@convert_options
def command(source, output, fmt, jobs, include, exclude, max_size, follow_symlinks, **convert_opts) -> None:
    """Write the review report of SOURCE: a folder of scripts (converted now), a single script,
    or a `slurm2kf migrate` output folder (read from its slurm2kf-report.json).

    Exit status: 0 no script has errors, 1 some scripts have errors, 2 usage or I/O failure.
    """
    from translator.migrate.files import MANIFEST_NAME, REPORT_BASENAME
    from translator.report import for_extension, report_writer

    if fmt is None:  # the output's extension, else the table's first format
        ext = os.path.splitext(output)[1].lstrip(".") if output != "-" else ""
        chosen = for_extension(ext) or next(iter(REPORT_WRITERS.values()))
    else:
        chosen = report_writer(fmt)
    write = chosen.load()

    def emit(report) -> None:
        from translator.fsio import OutputRefused, write_output

        try:
            if output == "-":
                write(report, sys.stdout)
            else:
                # never over a link, device, FIFO or folder, nor over an input (the script, a file of
                # the scanned folder, the saved report); written through a temporary file and a rename
                from translator.fsio import looks_like_job_script

                write_output(
                    output,
                    lambda put: write(report, _Utf8Sink(put)),
                    inputs=inputs,
                    input_trees=input_trees,
                    is_input=looks_like_job_script,
                )
        except OutputRefused as exc:
            echo_user(f"slurm2kf report: error M618 {exc.message}", err=True)
            sys.exit(2)
        except OSError as exc:
            echo_user(f"slurm2kf report: error M610 cannot write {output}: {exc.strerror or exc}", err=True)
            sys.exit(2)
        errors = report.summary.outcome("errors") + sum(1 for f in report.skipped if f.severity == "error")
        result[0] = 1 if errors else 0

    result = [0]
    saved = os.path.join(source, REPORT_BASENAME + ".json")
    if os.path.isdir(source) and os.path.isfile(os.path.join(source, MANIFEST_NAME)):
        from translator.migrate.files import out_read
        from translator.report.json_report import MAX_REPORT_BYTES, ReportFormatError, load

        inputs = [saved, os.path.join(source, MANIFEST_NAME)]
        input_trees: list[str] = []
        try:
            # inside OUT: never through a link, only a regular file, at most MAX_REPORT_BYTES
            data = out_read(source, REPORT_BASENAME + ".json", MAX_REPORT_BYTES)
            if data is None:
                raise ReportFormatError("missing, or larger than the size limit")
            report = load(saved, data)
        except (OSError, ReportFormatError) as exc:
            echo_user(
                f"slurm2kf report: error M614 cannot read {saved}: {getattr(exc, 'strerror', None) or exc}", err=True
            )
            sys.exit(2)
        emit(report)
    else:
        inputs, input_trees = ([source], []) if not os.path.isdir(source) else ([], [source])
        _convert_and_report(source, jobs, include, exclude, max_size, convert_opts, emit, follow_symlinks)
    sys.exit(result[0])


def _convert_and_report(source, jobs, include, exclude, max_size, convert_opts, emit, follow_symlinks=False) -> None:
    from translator.migrate.run import MigrateError, MigrateOptions, migrate

    settings = settings_from(convert_opts)
    if os.path.isfile(source):
        from translator.pipeline import convert
        from translator.report.build import script_report
        from translator.report.model import Report

        conv = convert(source, settings=settings)
        yaml_text = ""
        if conv.plans:
            from translator.emit import render

            yaml_text = render(conv.plans, "yaml", findings_comment=True)
        from translator.fsio import display_name

        name = display_name(os.path.basename(source))  # bytes that are not UTF-8 shown as \xNN
        sr = script_report(conv, name, yaml_text, settings=settings)
        if settings.simulate:
            from translator.report.build import with_simulation

            sr = with_simulation(sr, source, settings)
        emit(Report.from_scripts("slurm2kf review: " + name, display_name(source), [sr]))
        return
    try:
        migrate(
            MigrateOptions(
                src=source,
                out=None,
                settings=settings,
                jobs=jobs,
                include=include,
                exclude=exclude,
                max_size=max_size,
                progress=False,
                echo=lambda s: None,
                follow_symlinks=follow_symlinks,
                report_sink=emit,
            )
        )
    except MigrateError as exc:
        echo_user(f"slurm2kf report: error {exc.code} {exc.message}", err=True)
        sys.exit(2)
