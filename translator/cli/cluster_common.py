"""Options and output shared by the commands that talk to a cluster (submit, jobs, cancel,
validate --server, migrate --server-dry-run/--apply)."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from translator.cli.common import echo_user
from translator.cluster.wire import REQUEST_DEADLINE

REQUEST_TIMEOUT_OPTION = click.option(
    "--request-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=REQUEST_DEADLINE,
    show_default=True,
    metavar="SECONDS",
    help="Give up on a server request that has not been answered in full after this long (connect, "
    "send, and the whole answer; each socket read also times out after 30 s).",
)


def cluster_options(f):
    """--kubeconfig, --context, --namespace/-n (like kubectl), --request-timeout."""
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
        REQUEST_TIMEOUT_OPTION,
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def connect_or_exit(command: str, kubeconfig, context, namespace, request_timeout: float | None = None):
    """A Cluster, or the K900 line on stderr and exit 2."""
    from translator.cluster import ClusterError
    from translator.cluster.client import connect

    try:
        return connect(kubeconfig, context, namespace, deadline=request_timeout)
    except ClusterError as exc:
        exit_on(command, exc)


def exit_on(command: str, exc) -> NoReturn:
    """A ClusterError: its one line on stderr (made terminal-safe: it may quote the server), then exit."""
    echo_user(exc.format(command), err=True)
    sys.exit(exc.exit_code)


def echo_rejection(source: str, outcome_name: str, rej) -> None:
    """`path:line: error K907 TrainJob ns/name: field: message (from script line N)` lines on stderr
    (terminal-safe: the messages are the server's)."""
    if rej.causes:
        for c in rej.causes:
            where = f"{source}:{c.line}" if c.line else source
            what = f"{c.field}: {c.message}" if c.field else c.message
            note = f" ({c.note})" if c.note else ""
            by = "rejected by the server" if rej.status else "refused (the server would reject it)"
            echo_user(f"{where}: error {rej.code} {outcome_name} {by}: {what}{note}", err=True)
    else:
        echo_user(f"{source}: error {rej.code} {rej.message}", err=True)
