"""`slurm2kf validate FILE.yaml... [--crd CRD.yaml] [--runtimes PATH]... [--json]`."""

from __future__ import annotations

import json
import os
import sys

import click

from translator.cli.common import echo_user
from translator.cli.trainer_version import trainer_version_option


MAX_YAML_BYTES = 64 << 20  # a TrainJob file is kilobytes; a folder of 10,000 of them is ~30 MB


def _read(path: str):
    """(text, error message) of a file or '-' (stdin), through the shared guard: only a regular file
    (a FIFO or device is refused without reading), at most MAX_YAML_BYTES."""
    from translator.fsio import UserFileError, read_stream, read_user_file

    try:
        if path == "-":
            data = read_stream(sys.stdin.buffer, "standard input", MAX_YAML_BYTES)
        else:
            data = read_user_file(path, MAX_YAML_BYTES)
    except UserFileError as exc:
        return None, exc.message
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start})"


def _runtime_files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):  # links to folders are not walked
                dirs.sort()
                for f in sorted(files):
                    full = os.path.join(root, f)
                    if f.endswith((".yaml", ".yml", ".json")) and not os.path.islink(full):
                        yield full
        else:
            yield p


def _load_runtimes(paths):
    """name -> RuntimeInfo from (Cluster)TrainingRuntime manifests; raises click.UsageError."""
    from translator.validate.documents import DecodeError, load_documents
    from translator.validate.runtimes import runtime_from_manifest

    out = {}
    for f in _runtime_files(paths):
        text, err = _read(f)
        if err:
            raise click.UsageError(f"--runtimes {f}: {err}")
        try:
            docs = load_documents(text)
        except DecodeError as exc:
            raise click.UsageError(f"--runtimes {f}: {exc.message}")
        for d in docs:
            info = runtime_from_manifest(d.data)
            if info is not None and info.name:
                out[info.name] = info
    return out


def _server_results(cluster, text, crd, path, runtimes, namespace, cannot_tell: dict, version):
    """Offline results of one file with the server's verdict merged in; (results, unusable). A result the
    server did not judge (forbidden, ...) goes into ``cannot_tell`` (id(result) -> reason)."""
    from translator.cluster import ClusterError
    from translator.cluster.server_validate import judge, merge
    from translator.validate.documents import DecodeError, load_documents
    from translator.validate.validator import _expand_lists, validate_documents, validate_text

    try:
        docs = _expand_lists(load_documents(text))
    except DecodeError:
        return validate_text(text, crd, file=path, runtimes=runtimes, trainer_version=version), False
    results = validate_documents(docs, crd, file=path, runtimes=runtimes, trainer_version=version)
    by_index = {d.index: d for d in docs}
    unusable = False
    for r in results:
        doc = by_index.get(r.index) if r.index is not None else None
        if r.skipped or doc is None or not isinstance(doc.data, dict):
            continue
        try:
            verdict = judge(cluster, doc, r, namespace)
        except ClusterError as exc:
            from translator.cli.cluster_common import exit_on

            exit_on("validate", exc)
        unusable = unusable or verdict.unusable
        if verdict.cannot_tell:
            cannot_tell[id(r)] = verdict.cannot_tell
        merge(r, verdict)
    if not any(not r.skipped for r in results):
        from translator.validate.validator import Problem, Result

        results.append(
            Result(
                path,
                None,
                None,
                problems=[Problem("V703", "error", "<file>", None, "no TrainJob document in this file")],
            )
        )
    return results, unusable


@click.command("validate")
@click.argument("files", nargs=-1, required=True, metavar="FILE.yaml...")
@click.option(
    "--crd",
    "crd_path",
    metavar="CRD.yaml",
    help="TrainJob CustomResourceDefinition to validate against (default: the bundled Kubeflow Trainer "
    "CRD, as the --trainer-version release has it).",
)
@click.option(
    "--runtimes",
    "runtime_paths",
    multiple=True,
    metavar="PATH",
    help="(Cluster)TrainingRuntime manifests (file or folder) for runtime-aware checks; "
    "the shipped runtimes are always known.",
)
@trainer_version_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per TrainJob on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="Only print problems and the summary.")
@click.option(
    "--server",
    is_flag=True,
    help="Let the cluster's API server judge each TrainJob (server-side dry run) and report where "
    "it disagrees with the offline checks (docs/cluster.md).",
)
@click.option("--kubeconfig", metavar="FILE", help="With --server: kubeconfig (default: $KUBECONFIG).")
@click.option("--context", metavar="NAME", help="With --server: kubeconfig context.")
@click.option("-n", "--namespace", metavar="NS", help="With --server: namespace for TrainJobs that name none.")
@click.option(
    "--request-timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="With --server: give up on a server request not answered in full after this long (default 60).",
)
def command(
    files,
    crd_path,
    runtime_paths,
    trainer_version,
    as_json,
    quiet,
    server,
    kubeconfig,
    context,
    namespace,
    request_timeout,
):
    """Check TrainJob YAML against a TrainJob CRD: the OpenAPI schema with unknown fields as errors,
    defaults, list keys, the CEL rules that apply at create, and the Kubeflow Trainer webhook rules.

    Exit status: 0 all TrainJobs valid, 1 some invalid, 2 a file or the CRD could not be read (with
    --server: or the cluster could not be used, or it judged a TrainJob not at all: `cannot tell`).
    """
    from translator.validate.crd import CRDError, load_crd
    from translator.validate.validator import validate_text
    from translator.validate.versions import check, crd_for

    version = check(trainer_version)
    try:
        crd = load_crd(crd_path)
        if not crd_path:  # the bundled CRD, as the chosen release has it; a given CRD is taken as it is
            crd = crd_for(crd, version)
    except CRDError as exc:
        echo_user(f"slurm2kf validate: error V700 {exc}", err=True)
        sys.exit(2)
    runtimes = _load_runtimes(runtime_paths)

    if not server and (kubeconfig or context or namespace or request_timeout):
        raise click.UsageError("--kubeconfig, --context, --namespace and --request-timeout need --server")
    cluster = None
    if server:
        from translator.cli.cluster_common import connect_or_exit

        cluster = connect_or_exit("validate", kubeconfig, context, namespace, request_timeout)

    unreadable = False
    results = []
    cannot_tell: dict[int, str] = {}  # id(result) -> why the server judged nothing (K921): no verdict
    for path in files:
        text, err = _read(path)
        if err is not None:
            unreadable = True
            from translator.validate.validator import Problem, Result

            results.append(Result(path, None, None, problems=[Problem("V701", "error", "<file>", None, err)]))
            continue
        if cluster is not None:
            file_results, unusable = _server_results(
                cluster, text, crd, path, runtimes, namespace, cannot_tell, version
            )
            unreadable = unreadable or unusable
        else:
            file_results = validate_text(text, crd, file=path, runtimes=runtimes, trainer_version=version)
        if any(p.code == "V701" for r in file_results for p in r.problems):
            unreadable = True
        results.extend(file_results)

    verdicts = [r for r in results if not r.skipped]
    if as_json:
        for r in verdicts:
            row = r.to_json()
            if id(r) in cannot_tell:
                row.update(valid=None, cannot_tell=cannot_tell[id(r)])
            click.echo(json.dumps(row, ensure_ascii=True))
    else:
        for r in results:
            where_doc = f" (document {r.index + 1})" if r.index is not None else ""
            for p in sorted(r.problems, key=lambda x: x.line or 0):
                loc = f"{r.file}:{p.line}" if p.line is not None else r.file
                echo_user(f"{loc}: {p.severity} {p.code} {p.message}{where_doc}")
            if not quiet and not r.skipped and r.index is not None:
                state = "valid" if r.valid else "INVALID"
                if id(r) in cannot_tell:
                    state = f"cannot tell: {cannot_tell[id(r)]}"
                how = (
                    f"server-side dry run on {cluster.server}, context {cluster.context}"
                    if cluster is not None
                    else f"CEL rules evaluated {r.cel_evaluated}, transition rules skipped {r.cel_skipped_transition}"
                )
                echo_user(f"{r.file}{where_doc}: {r.name or '<no name>'}: {state} ({how})")
    n_valid = sum(1 for r in verdicts if r.valid)
    unknown = sum(1 for r in verdicts if id(r) in cannot_tell)
    click.echo(f"valid: {n_valid}/{len(verdicts)}" + (f", cannot tell: {unknown}" if unknown else ""), err=as_json)
    if unreadable:
        sys.exit(2)
    sys.exit(0 if n_valid == len(verdicts) else 1)
