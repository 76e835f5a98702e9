"""`slurm2kf cancel NAME... [-y]`: the `scancel` of TrainJobs (deletes them, pods included).

Asks for confirmation unless `-y`. Exit status: 0 all cancelled; 1 one was not found / not allowed,
or the answer was no; 2 the cluster cannot be used.
"""

from __future__ import annotations

import sys

import click

from translator.cli.cluster_common import cluster_options, connect_or_exit


@click.command("cancel")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@cluster_options
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def command(names, kubeconfig, context, namespace, yes) -> None:
    """Delete TrainJob(s) NAME (and their pods) after a confirmation.

    Exit status: 0 all cancelled; 1 not found, not allowed or not confirmed; 2 the cluster cannot be used.
    """
    from translator.cluster import ClusterError
    from translator.cluster.jobs import cancel, get_job, row_of

    cluster = connect_or_exit("cancel", kubeconfig, context, namespace)
    ns = namespace or cluster.namespace
    failed = 0
    try:
        for name in names:
            obj, rej = get_job(cluster, ns, name)
            if rej is not None:
                click.echo(f"slurm2kf cancel: error {rej.code} {rej.message}", err=True)
                failed += 1
                continue
            row = row_of(obj)
            if not yes:
                prompt = f"Cancel TrainJob {ns}/{name} ({row.state}, from {row.script or 'unknown source'})?"
                if not click.confirm(prompt, default=False, err=True):
                    click.echo(f"TrainJob {ns}/{name} kept", err=True)
                    failed += 1
                    continue
            rej = cancel(cluster, ns, name)
            if rej is not None:
                click.echo(f"slurm2kf cancel: error {rej.code} {rej.message}", err=True)
                failed += 1
                continue
            click.echo(f"Cancelled TrainJob {ns}/{name}")
    except ClusterError as exc:
        click.echo(exc.format("cancel"), err=True)
        sys.exit(exc.exit_code)
    sys.exit(1 if failed else 0)
