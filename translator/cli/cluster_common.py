"""Options and output shared by the commands that talk to a cluster (submit, jobs, cancel,
validate --server, migrate --server-dry-run/--apply)."""

from __future__ import annotations

import sys

import click


def cluster_options(f):
    """--kubeconfig, --context, --namespace/-n (like kubectl)."""
    opts = [
        click.option(
            "--kubeconfig", metavar="FILE", help="kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)."
        ),
        click.option("--context", metavar="NAME", help="kubeconfig context (default: the current context)."),
        click.option(
            "-n",
            "--namespace",
            metavar="NS",
            help="Namespace (default: the TrainJob's own, else the context's, else `default`).",
        ),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def connect_or_exit(command: str, kubeconfig, context, namespace):
    """A Cluster, or the K900 line on stderr and exit 2."""
    from translator.cluster import ClusterError
    from translator.cluster.client import connect

    try:
        return connect(kubeconfig, context, namespace)
    except ClusterError as exc:
        click.echo(exc.format(command), err=True)
        sys.exit(exc.exit_code)


def echo_rejection(source: str, outcome_name: str, rej) -> None:
    """`path:line: error K907 TrainJob ns/name: field: message (from script line N)` lines on stderr."""
    if rej.causes:
        for c in rej.causes:
            where = f"{source}:{c.line}" if c.line else source
            what = f"{c.field}: {c.message}" if c.field else c.message
            note = f" ({c.note})" if c.note else ""
            by = "rejected by the server" if rej.status else "refused (the server would reject it)"
            click.echo(f"{where}: error {rej.code} {outcome_name} {by}: {what}{note}", err=True)
    else:
        click.echo(f"{source}: error {rej.code} {rej.message}", err=True)
