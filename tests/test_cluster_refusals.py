"""What the real kube-apiserver answers when it judges nothing, and what slurm2kf then says.

- RBAC: context `alice` of shared/kube-apiserver has no role binding, so every request of hers is
  403 Forbidden (a Status with reason Forbidden). A server-side dry run needs the same permission as
  the create it simulates (Kubernetes docs, "Dry-run authorization"), so for alice the server has
  judged nothing: `validate --server` must say "cannot tell: forbidden" (exit 2), never INVALID.
- Listing a namespaced resource in a namespace that does not exist answers 200 with an empty list
  (the apiserver does not check the namespace on list), while GET /api/v1/namespaces/NAME answers
  404 NotFound (details.kind `namespaces`): `jobs -n <missing>` must say the namespace is missing.
- `cancel` asks before deleting; with standard input closed there is no answer: exit 2, nothing
  deleted (scancel itself never asks, so `--yes` is the way to cancel without a terminal).
- Annotation values are arbitrary strings (apimachinery ValidateAnnotations checks only keys and
  total size), so a TrainJob can carry escape sequences in its source annotation: `jobs` and the
  `cancel` prompt must not send them to the terminal.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from kube_cluster import get_trainjob, new_namespace
from oracles import slurm2kf_argv

pytestmark = pytest.mark.cluster

GOOD = (
    "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: good-one\n"
    "spec:\n  runtimeRef:\n    name: torch-distributed\n"
)
# OSC 52 (write the clipboard), OSC 0 (window title), a CSI colour, BEL, a right-to-left override
HOSTILE_SOURCE = "/jobs/\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\x1b[31mred\u202eevil.sbatch"
RAW = ("\x1b", "\x07", "\u202e")


def _submit_yaml(cli, kube, ns, path: Path, text: str):
    path.write_text(text, encoding="utf-8")
    r = cli("submit", "--kubeconfig", kube.kubeconfig, "-n", ns, path)
    assert r.exit_code == 0, r.stderr
    return r


def test_validate_server_as_a_forbidden_user_cannot_tell(cli, kube, tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    r = cli("validate", "--server", "--kubeconfig", kube.kubeconfig, "--context", "alice", "-n", kube.ns, good)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "INVALID" not in r.stdout and ": valid (" not in r.stdout
    assert f"{good} (document 1): good-one: cannot tell: forbidden (server-side dry run" in r.stdout
    assert "error K904 forbidden: user \"alice\" (context 'alice') may not create" in r.stdout
    assert "error K921 cannot tell whether this TrainJob is valid: forbidden" in r.stdout
    assert "valid: 0/1, cannot tell: 1" in r.stdout + r.stderr
    j = cli("validate", "--server", "--json", "--kubeconfig", kube.kubeconfig, "--context", "alice", good)
    rec = json.loads(j.stdout.splitlines()[0])
    assert j.exit_code == 2 and rec["valid"] is None and rec["cannot_tell"] == "forbidden"
    # the same file, judged by a user who may create: valid (so the verdict above was not about the file)
    ok = cli("validate", "--server", "--kubeconfig", kube.kubeconfig, "-n", kube.ns, good)
    assert ok.exit_code == 0 and ": good-one: valid (server-side dry run" in ok.stdout


def test_validate_server_into_a_missing_namespace_cannot_tell(cli, kube, tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    missing = kube.ns + "-missing"
    r = cli("validate", "--server", "--kubeconfig", kube.kubeconfig, "-n", missing, good)
    assert r.exit_code == 2 and "INVALID" not in r.stdout
    assert f'error K905 namespace "{missing}" does not exist' in r.stdout
    assert ": good-one: cannot tell: the namespace does not exist (" in r.stdout


def test_jobs_in_a_missing_namespace_says_so(cli, kube):
    missing = kube.ns + "-nope"
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-n", missing)
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.startswith(f'slurm2kf jobs: error K905 namespace "{missing}" does not exist on https://')
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-n", missing, "--json")
    assert r.exit_code == 1 and r.stdout == "" and "K905" in r.stderr
    # an existing namespace without TrainJobs is an empty table, exit 0
    empty = new_namespace(kube)
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-n", empty)
    assert r.exit_code == 0 and r.stdout.splitlines() == ["NAME  STATE  NODES  GPUS  RUNTIME  AGE  SCRIPT  REASON"]
    # a name that cannot be a namespace at all (it would not even be one URL path segment)
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-n", "../default")
    assert r.exit_code == 1 and "error K905 namespace '../default' does not exist" in r.stderr


def test_cancel_in_a_missing_namespace_says_so(cli, kube):
    missing = kube.ns + "-gone"
    r = cli("cancel", "--kubeconfig", kube.kubeconfig, "-n", missing, "-y", "llama")
    assert r.exit_code == 1 and f'error K905 namespace "{missing}" does not exist' in r.stderr


def test_cancel_with_standard_input_closed_is_an_error_and_deletes_nothing(cli, kube, tmp_path):
    ns = new_namespace(kube)
    _submit_yaml(cli, kube, ns, tmp_path / "t.yaml", GOOD)
    base = ["cancel", "--kubeconfig", kube.kubeconfig, "-n", ns, "good-one"]
    r = cli(*base, input="")  # standard input at its end at once (</dev/null)
    assert r.exit_code == 2
    assert "error K922 no answer: standard input is closed" in r.stderr and "pass --yes" in r.stderr
    assert r.stdout == "" and get_trainjob(kube, ns, "good-one") is not None
    # a child process: stdin /dev/null, then file descriptor 0 closed altogether
    argv = slurm2kf_argv() + [str(a) for a in base]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "K922" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run(
        ["bash", "-c", 'exec 0<&-; exec "$@"', "bash", *argv], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 2 and "K922" in p.stderr and "Traceback" not in p.stderr
    assert get_trainjob(kube, ns, "good-one") is not None
    r = cli(*base, input="y\n")
    assert r.exit_code == 0 and get_trainjob(kube, ns, "good-one") is None


def test_control_sequences_from_the_server_never_reach_the_terminal(cli, kube, tmp_path):
    ns = new_namespace(kube)
    doc = GOOD.replace("  name: good-one\n", "  name: good-one\n  annotations:\n    slurm2kf.io/source: SRC\n")
    doc = doc.replace("SRC", json.dumps(HOSTILE_SOURCE))  # a JSON string is a YAML double-quoted scalar
    _submit_yaml(cli, kube, ns, tmp_path / "evil.yaml", doc)
    stored = get_trainjob(kube, ns, "good-one")
    assert stored["metadata"]["annotations"]["slurm2kf.io/source"] == HOSTILE_SOURCE  # the server keeps them
    r = cli("jobs", "--kubeconfig", kube.kubeconfig, "-n", ns)
    assert r.exit_code == 0
    assert not any(ch in r.stdout for ch in RAW), repr(r.stdout)
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in r.stdout and "evil.sbatch" in r.stdout
    j = cli("jobs", "--kubeconfig", kube.kubeconfig, "-n", ns, "--json")
    assert not any(ch in j.stdout for ch in RAW) and json.loads(j.stdout)["script"] == HOSTILE_SOURCE
    c = cli("cancel", "--kubeconfig", kube.kubeconfig, "-n", ns, "good-one", input="n\n")
    assert c.exit_code == 1 and "Cancel TrainJob" in c.stderr and "evil.sbatch" in c.stderr
    assert not any(ch in c.stderr for ch in RAW), repr(c.stderr)


def _one_connection_proxy(target_port: int):
    """A TCP forwarder to the API server that passes its first connection through and closes every
    later one at once (a load balancer losing its backend mid-batch). Returns (port, stop)."""
    import socket
    import threading

    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    lsock.settimeout(0.2)
    stop = threading.Event()

    def pipe(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def serve():
        first = True
        while not stop.is_set():
            try:
                client, _ = lsock.accept()
            except OSError:
                continue
            if not first:
                client.close()
                continue
            first = False
            upstream = socket.create_connection(("127.0.0.1", target_port))
            threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
        lsock.close()

    threading.Thread(target=serve, daemon=True).start()
    return lsock.getsockname()[1], stop


def test_a_batch_cut_short_reports_exactly_what_the_server_stored(cli, kube, tmp_path):
    """The first request goes alone over the one connection that works; the others fail: every
    TrainJob the real server stored gets its `Submitted` line, no other does, then the error, exit 2."""
    from urllib.parse import urlparse

    from kube_cluster import list_trainjobs, variant_kubeconfig

    ns = new_namespace(kube)
    port, stop = _one_connection_proxy(urlparse(kube.cluster.server).port)
    try:
        kc = variant_kubeconfig(kube, tmp_path, server=f"https://127.0.0.1:{port}")
        docs = [GOOD.replace("good-one", f"job-{i}") for i in range(6)]
        yml = tmp_path / "six.yaml"
        yml.write_text("---\n".join(docs))
        r = cli("submit", "--kubeconfig", kc, "-n", ns, yml)
    finally:
        stop.set()
    assert r.exit_code == 2, (r.stdout, r.stderr)
    # the later connections close during the TLS handshake: K902 (or K901, reset, when the close wins)
    assert re.match(r"slurm2kf submit: error K90[12] ", r.stderr) and r.stderr.count("\n") == 1, r.stderr
    stored = {o["metadata"]["name"] for o in list_trainjobs(kube, ns)}
    reported = {ln.split("/")[-1] for ln in r.stdout.splitlines() if ln.startswith(f"Submitted TrainJob {ns}/")}
    assert "job-0" in stored and stored == reported and len(stored) < 6
