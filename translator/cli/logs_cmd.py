"""`slurm2kf logs NAME [-f] [--node N | --all-nodes] [--tail N] [--since 15m]`: what `slurm-<id>.out`
was to an sbatch user, for a TrainJob: the output of its pods, through the API server.

Exit status: 0 the logs were shown (also while following, until the pods end or Ctrl-C); 1 the TrainJob
does not exist, has no pods yet (one line says why), or the server could not give the logs; 2 usage
error, or the cluster cannot be used.
"""

from __future__ import annotations

import sys

import click

from translator.cli.cluster_common import cluster_options, connect_or_exit


@click.command("logs")
@click.argument("name")
@cluster_options
@click.option("-f", "--follow", is_flag=True, help="Keep streaming new output (like tail -f).")
@click.option("--node", "node", type=click.IntRange(min=0), metavar="N", help="The pod of node N (0 = rank 0).")
@click.option("--all-nodes", is_flag=True, help="Every pod of the TrainJob, each line prefixed [job-index].")
@click.option("--tail", type=click.IntRange(min=0), metavar="N", help="Only the last N lines of each pod.")
@click.option("--since", metavar="DURATION", help="Only output newer than this (30s, 15m, 2h, 1d).")
def command(name, kubeconfig, context, namespace, request_timeout, follow, node, all_nodes, tail, since) -> None:
    """Print the logs of a TrainJob's pods: the launcher on MPI runtimes, else node 0 (--node N, --all-nodes).

    Exit status: 0 shown; 1 no such TrainJob, no pods yet (the reason is printed) or the logs cannot be
    read; 2 usage error or the cluster cannot be used.
    """
    from translator.cluster import ClusterError
    from translator.cluster.client import HttpError
    from translator.cluster.jobs import get_job
    from translator.cluster.logs import LogRequest, LogsError, choose, list_pods, parse_since, pod_view, reason_of
    from translator.cli.common import echo_user

    if node is not None and all_nodes:
        raise click.UsageError("--node and --all-nodes exclude each other")
    try:
        since_s = parse_since(since)
    except ValueError as exc:
        raise click.UsageError(str(exc))
    cluster = connect_or_exit("logs", kubeconfig, context, namespace, request_timeout)
    ns = namespace or cluster.namespace
    try:
        obj, rej = get_job(cluster, ns, name)
        if rej is not None:
            echo_user(f"slurm2kf logs: error {rej.code} {rej.message}", err=True)
            sys.exit(1)
        try:
            pods = [pod_view(p) for p in list_pods(cluster, ns, name)]
        except HttpError as err:
            what = (
                f'forbidden: user "{cluster.user}" (context {cluster.context!r}) may not list pods in namespace "{ns}"'
                if err.status == 403
                else f"the server answered HTTP {err.status}: {err.text[:200]}"
            )
            echo_user(f"slurm2kf logs: error {'K904' if err.status == 403 else 'K913'} {what}", err=True)
            sys.exit(1)
        if not pods:
            why = reason_of(obj, pods) or "the JobSet exists but its Jobs have not created pods yet"
            if why.startswith(("Kueue", "suspended")):
                from translator.cluster.logs import kueue_detail

                detail = kueue_detail(cluster, obj)
                why = f"{why} ({detail})" if detail else why
            echo_user(f"slurm2kf logs: K930 TrainJob {ns}/{name} has no pods yet: {why}", err=True)
            sys.exit(1)
        try:
            chosen = choose(pods, node, all_nodes)
        except LogsError as exc:
            echo_user(f"slurm2kf logs: error {exc.code} TrainJob {ns}/{name}: {exc.message}", err=True)
            sys.exit(exc.exit_code)
        req = LogRequest(ns, follow=follow, tail=tail, since=since_s, prefix=all_nodes or len(chosen) > 1)
        errors = _stream(cluster, chosen, req)
    except ClusterError as exc:
        click.echo(exc.format("logs"), err=True)
        sys.exit(exc.exit_code)
    for e in errors:
        echo_user(f"slurm2kf logs: {'' if e.code == 'K930' else 'error '}{e.code} {e.message}", err=True)
    sys.exit(1 if errors and len(errors) == len(chosen) else 0)


def _stream(cluster, chosen, req):
    from translator.cluster.logs import stream
    from translator.fsio import terminal_safe

    return stream(cluster, chosen, req, lambda text: click.echo(terminal_safe(text)))
