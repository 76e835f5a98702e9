"""`slurm2kf cancel NAME... [-y]`: the `scancel` of TrainJobs (deletes them, pods included).

Asks for confirmation unless `-y`: the question goes to stderr, the answer is one line of standard
input (`y`/`yes` cancels, anything else keeps the job). Standard input closed or at its end (no
terminal, `</dev/null`, a finished pipe) is no answer: K922, exit 2, that job and the ones after it
are kept. Exit status: 0 all cancelled; 1 one was not found / not allowed, or the answer was no;
2 the cluster cannot be used, or no answer could be read.
"""

from __future__ import annotations

import sys

import click

from translator.cli.cluster_common import cluster_options, connect_or_exit, exit_on
from translator.cli.common import echo_user


def _answer(prompt: str) -> bool | None:
    """Ask on stderr (terminal-safe: the job's state and source come from the server); True for
    y/yes, False for anything else, None when standard input is closed or at its end."""
    echo_user(f"{prompt} [y/N]: ", err=True, nl=False)
    try:
        line = sys.stdin.readline() if sys.stdin is not None else ""
    except (OSError, ValueError, AttributeError):  # no stdin at all (fd 0 closed), or a closed file
        line = ""
    if not line:
        click.echo("", err=True)
        return None
    return line.strip().lower() in ("y", "yes")


@click.command("cancel")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@cluster_options
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def command(names, kubeconfig, context, namespace, request_timeout, yes) -> None:
    """Delete TrainJob(s) NAME (and their pods) after a confirmation.

    Exit status: 0 all cancelled; 1 not found, not allowed or not confirmed; 2 the cluster cannot be
    used, or standard input is closed so no confirmation can be read (pass --yes).
    """
    from translator.cluster import ClusterError
    from translator.cluster.jobs import cancel, get_job, row_of

    cluster = connect_or_exit("cancel", kubeconfig, context, namespace, request_timeout)
    ns = namespace or cluster.namespace
    failed = 0
    try:
        for name in names:
            obj, rej = get_job(cluster, ns, name)
            if rej is not None:
                echo_user(f"slurm2kf cancel: error {rej.code} {rej.message}", err=True)
                failed += 1
                continue
            row = row_of(obj)
            if not yes:
                answer = _answer(f"Cancel TrainJob {ns}/{name} ({row.state}, from {row.script or 'unknown source'})?")
                if answer is None:
                    echo_user(
                        f"slurm2kf cancel: error K922 no answer: standard input is closed (no terminal), so "
                        f"TrainJob {ns}/{name} is kept; pass --yes to cancel without asking",
                        err=True,
                    )
                    sys.exit(2)
                if not answer:
                    echo_user(f"TrainJob {ns}/{name} kept", err=True)
                    failed += 1
                    continue
            rej = cancel(cluster, ns, name)
            if rej is not None:
                echo_user(f"slurm2kf cancel: error {rej.code} {rej.message}", err=True)
                failed += 1
                continue
            echo_user(f"Cancelled TrainJob {ns}/{name}")
    except ClusterError as exc:
        exit_on("cancel", exc)
    sys.exit(1 if failed else 0)
