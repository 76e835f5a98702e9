"""`slurm2kf jobs [-n NS | -A] [--json]`: the `squeue` of TrainJobs that slurm2kf submitted.

Exit status: 0 listed (also when there are none); 1 the server refused the list (e.g. forbidden) or
the namespace does not exist (K905); 2 the cluster cannot be used.
"""

from __future__ import annotations

import json
import sys

import click

from translator.cli.cluster_common import cluster_options, connect_or_exit, exit_on
from translator.cli.common import echo_user


@click.command("jobs")
@click.argument("sources", nargs=-1, metavar="[SCRIPT|FILE.yaml...]")
@cluster_options
@click.option("-A", "--all-namespaces", "all_namespaces", is_flag=True, help="TrainJobs of every namespace.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per TrainJob on stdout.")
def command(sources, kubeconfig, context, namespace, request_timeout, all_namespaces, as_json) -> None:
    """List the TrainJobs slurm2kf created: state (from status.conditions), nodes, GPUs, runtime, age,
    source script. With files: only the TrainJobs submitted from them (same content or same path).

    Exit status: 0 listed; 1 the server refused the list or the namespace does not exist; 2 the
    cluster cannot be used.
    """
    from translator.cluster import ClusterError
    from translator.cluster.jobs import ListError, from_sources, list_jobs, table

    cluster = connect_or_exit("jobs", kubeconfig, context, namespace, request_timeout)
    try:
        rows = list_jobs(cluster, namespace, all_namespaces=all_namespaces)
    except ClusterError as exc:
        exit_on("jobs", exc)
    except ListError as exc:
        echo_user(f"slurm2kf jobs: error {exc.rejection.code} {exc.rejection.message}", err=True)
        sys.exit(1)
    if sources:
        rows = from_sources(rows, sources)
    if as_json:
        for r in rows:
            click.echo(json.dumps(r.to_json(), ensure_ascii=True))
        return
    click.echo(table(rows, all_namespaces=all_namespaces), nl=False)
