"""`slurm2kf migrate SRC -o OUT`: convert a script repository into a reviewed TrainJob tree."""

from __future__ import annotations

import sys

import click

from translator.cli import report_cmd as _shared
from translator.cli.trainer_version import trainer_version_option


@click.command("migrate")
@click.argument("src", type=click.Path(file_okay=False, dir_okay=True, exists=False))
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(file_okay=False),
    help="Output folder: a mirror of SRC with TrainJob YAML, SDK Python, kustomizations and reports.",
)
@click.option(
    "-j", "--jobs", type=click.IntRange(0, 512), default=0, show_default="all cores", help="Worker processes."
)
@click.option(
    "--include", multiple=True, metavar="GLOB", help="Only files whose relative path or name matches (repeatable)."
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Skip files and folders whose relative path or name matches (repeatable).",
)
@click.option("--force", is_flag=True, help="Write into an existing folder that slurm2kf did not create.")
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 when any output would change or any script has an error (for CI).",
)
@click.option(
    "--max-size",
    type=click.IntRange(1, None),
    default=1 << 20,
    show_default=True,
    metavar="BYTES",
    help="Skip (and report) files larger than this.",
)
@click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Follow symbolic links that lead out of SRC (each folder and file once; loops and the "
    "kernel's /proc, /sys, /dev are never walked). Default: reported (M619), not followed.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0, None),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="Stop converting a script after this long and record it (M615); 0 = no limit.",
)
@click.option(
    "--server-dry-run",
    is_flag=True,
    help="Then send the apply set to the cluster as a server-side dry run (nothing stored).",
)
@click.option(
    "--apply",
    "apply_",
    is_flag=True,
    help="Then create/update the apply set on the cluster with server-side apply (field manager "
    "slurm2kf), as `kubectl apply --server-side -k OUT` would.",
)
@click.option("--kubeconfig", metavar="FILE", help="With --apply/--server-dry-run: kubeconfig file.")
@click.option("--context", metavar="NAME", help="With --apply/--server-dry-run: kubeconfig context.")
@_shared.convert_options
@trainer_version_option
def command(
    src,
    out,
    jobs,
    include,
    exclude,
    force,
    check,
    max_size,
    follow_symlinks,
    timeout,
    server_dry_run,
    apply_,
    kubeconfig,
    context,
    trainer_version,
    **convert_opts,
) -> None:
    """Convert every Slurm job script under SRC (found by content) into OUT.

    Exit status: 0 all scripts converted, 1 some scripts have errors (or, with --check, some output
    would change), 2 usage or I/O failure.
    """
    from translator.cli.common import echo_user
    from translator.migrate import files as F
    from translator.migrate.run import MigrateError, MigrateOptions, migrate
    from translator.report import REPORT_WRITERS

    if check and (server_dry_run or apply_):
        raise click.UsageError("--check writes nothing: it cannot be combined with --apply/--server-dry-run")
    if (kubeconfig or context) and not (server_dry_run or apply_):
        raise click.UsageError("--kubeconfig and --context need --apply or --server-dry-run")
    settings = _shared.settings_from(convert_opts)
    from dataclasses import replace

    from translator.cli.trainer_version import resolve

    if trainer_version or settings.profile is not None:  # else each script's own profile decides
        settings = replace(settings, trainer_version=resolve(trainer_version, settings.profile, "migrate"))
    try:
        res = migrate(
            MigrateOptions(
                src=src,
                out=out,
                settings=settings,
                jobs=jobs,
                include=include,
                exclude=exclude,
                force=force,
                check=check,
                max_size=max_size,
                timeout=timeout,
                follow_symlinks=follow_symlinks,
            )
        )
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
        + f" in {res.seconds:.1f}s",
        err=True,
    )
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
        also = ", ".join(f".{w.extension}" for w in REPORT_WRITERS.values() if w.name != "html")
        echo_user(f"review: {out}/{F.REPORT_BASENAME}.html (also {also}); apply: kubectl apply -k {out}", err=True)
    code = res.exit_code
    if server_dry_run or apply_:
        code = max(code, _send_apply_set(out, kubeconfig, context, dry_run=server_dry_run))
    sys.exit(code)


def _send_apply_set(out, kubeconfig, context, *, dry_run: bool) -> int:
    """Server-side apply (or its dry run) of the tree's apply set; prints a summary; exit status."""
    from collections import Counter

    from translator.cli.cluster_common import connect_or_exit, echo_rejection
    from translator.cluster import ClusterError
    from translator.cluster.apply_set import ApplySetError, apply_set
    from translator.cluster.objects import Prepared, from_yaml
    from translator.cluster.submit import submit_all

    try:
        files = apply_set(out)
    except ApplySetError as exc:
        click.echo(f"slurm2kf migrate: error K918 {exc}", err=True)
        return 2
    prepared = Prepared()
    for f in files:
        from_yaml(f, out=prepared)
    for line in prepared.messages:
        click.echo(line, err=True)
    outcomes = []
    if prepared.items:
        cluster = connect_or_exit("migrate", kubeconfig, context, None)
        try:
            outcomes = submit_all(cluster, prepared.items, dry_run=dry_run, apply=True)
        except ClusterError as exc:
            click.echo(exc.format("migrate"), err=True)
            return exc.exit_code
    counts: Counter[str] = Counter()
    for o in outcomes:
        if o.ok:
            counts[o.action] += 1
        else:
            counts["rejected"] += 1
            echo_rejection(o.item.source, f"TrainJob {o.namespace}/{o.item.name}", o.rejection)
    parts = ", ".join(
        f"{counts[k]} {k}" for k in ("created", "configured", "unchanged", "validated", "rejected") if counts[k]
    )
    how = "server-side dry run" if dry_run else "server-side apply"
    click.echo(f"{how}: {len(outcomes)} TrainJobs from {len(files)} files" + (f" ({parts})" if parts else ""), err=True)
    if prepared.unreadable:
        return 2
    return 1 if counts["rejected"] else 0
