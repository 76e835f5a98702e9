"""`slurm2kf migrate SRC -o OUT`: convert a script repository into a reviewed TrainJob tree."""
from __future__ import annotations

import sys

import click

from translator.cli import report_cmd as _shared


@click.command("migrate")
@click.argument("src", type=click.Path(file_okay=False, dir_okay=True, exists=False))
@click.option("-o", "--output", "out", required=True, type=click.Path(file_okay=False),
              help="Output folder: a mirror of SRC with TrainJob YAML, SDK Python, kustomizations and reports.")
@click.option("-j", "--jobs", type=click.IntRange(0, 512), default=0, show_default="all cores",
              help="Worker processes.")
@click.option("--include", multiple=True, metavar="GLOB",
              help="Only files whose relative path or name matches (repeatable).")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Skip files and folders whose relative path or name matches (repeatable).")
@click.option("--force", is_flag=True, help="Write into an existing folder that slurm2kf did not create.")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 when any output would change or any script has an error (for CI).")
@click.option("--max-size", type=click.IntRange(1, None), default=1 << 20, show_default=True, metavar="BYTES",
              help="Skip (and report) files larger than this.")
@click.option("--follow-symlinks", is_flag=True,
              help="Follow symbolic links that lead out of SRC (each folder and file once; loops and the "
                   "kernel's /proc, /sys, /dev are never walked). Default: reported (M619), not followed.")
@click.option("--timeout", type=click.FloatRange(0, None), default=60.0, show_default=True, metavar="SECONDS",
              help="Stop converting a script after this long and record it (M615); 0 = no limit.")
@_shared.convert_options
def command(src, out, jobs, include, exclude, force, check, max_size, follow_symlinks, timeout,
            **convert_opts) -> None:
    """Convert every Slurm job script under SRC (found by content) into OUT.

    Exit status: 0 all scripts converted, 1 some scripts have errors (or, with --check, some output
    would change), 2 usage or I/O failure.
    """
    from translator.cli.common import echo_user
    from translator.migrate import files as F
    from translator.migrate.run import MigrateError, MigrateOptions, migrate

    settings = _shared.settings_from(convert_opts)
    try:
        res = migrate(MigrateOptions(src=src, out=out, settings=settings, jobs=jobs, include=include,
                                     exclude=exclude, force=force, check=check, max_size=max_size,
                                     timeout=timeout, follow_symlinks=follow_symlinks))
    except MigrateError as exc:
        echo_user(f"slurm2kf migrate: error {exc.code} {exc.message}", err=True)
        sys.exit(2)
    oc = res.outcomes
    verb = "would write" if check else "written"
    click.echo(
        f"{res.scripts} scripts ({oc.get('clean', 0)} clean, {oc.get('warnings', 0)} with warnings, "
        f"{oc.get('errors', 0)} with errors) from {res.files_examined} files; "
        f"{len(res.written)} files {verb}, {res.unchanged} unchanged"
        + (f", {len(res.removed)} stale {'to remove' if check else 'removed'}" if res.removed else "")
        + (f", {len(res.skipped)} files skipped" if res.skipped else "")
        + f" in {res.seconds:.1f}s", err=True)
    if check:
        for p in res.written[:50]:
            echo_user(f"would change: {p}", err=True)
        for p in res.removed[:50]:
            echo_user(f"would remove: {p}", err=True)
    for p in res.kept_stale:
        echo_user(f"{p}: warning M608 output of a removed script was edited by hand; kept", err=True)
    for p in res.manifest_rejected[:50]:
        echo_user(f"{F.MANIFEST_NAME}: warning M620 {p}; not written or removed", err=True)
    if not check:
        echo_user(f"review: {out}/slurm2kf-report.html (also .md, .json); apply: kubectl apply -k {out}", err=True)
    sys.exit(res.exit_code)
