"""The cluster commands against servers that are not a Kubernetes API server, as an attacker (or a
misrouted proxy) would answer: small HTTP servers on 127.0.0.1 in threads of this test.

What a real API server answers comes from the Kubernetes API conventions
(https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md):
a create returns the stored object (`metadata.name`, `uid`, `resourceVersion` set by the server), a
list returns `<Kind>List` with `items`, and every error is a `Status` object (apiVersion v1, kind
Status). So an HTML page, a redirect to a login page, an echo of the request, or an HTML 403 is no
answer of the API: slurm2kf must say so (K919, exit 2) and never print `Submitted TrainJob`, a valid
or INVALID verdict, or an (empty) table. A request has a total deadline (K909) and an answer a size
cap of 16 MiB (K920), whatever the server does.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parent / "fixtures" / "convert"
RDZV = FIX / "torchrun" / "multinode_rdzv.sbatch"  # job-name llama-pretrain
REPO = Path(__file__).resolve().parent / "fixtures" / "repo"
TRAINJOB_YAML = (
    "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: t1\n"
    "spec:\n  runtimeRef:\n    name: torch-distributed\n"
)
API = "trainer.kubeflow.org/v1alpha1"
HTML = b"<!DOCTYPE html><html><head><title>Sign in - Example SSO</title></head><body>Sign in</body></html>"


class Hostile(BaseHTTPRequestHandler):
    """Answers every request the way ``self.server.mode`` says."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK wait per answer

    def log_message(self, *args) -> None:  # quiet
        pass

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _send(self, status: int, ctype: str, data: bytes, extra: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _any(self) -> None:
        body = self._body()
        getattr(self, "mode_" + self.server.mode)(body)  # type: ignore[attr-defined]

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _any

    # ---- an SSO portal / misrouted proxy: 200 with a web page for everything
    def mode_html(self, body: bytes) -> None:
        self._send(200, "text/html; charset=utf-8", HTML)

    # ---- a login redirect (kubectl would not follow it either)
    def mode_redirect(self, body: bytes) -> None:
        self._send(302, "text/html", HTML, {"Location": "https://sso.example/login"})

    # ---- echoes the request (a debugging proxy): JSON, even a TrainJob, but nothing was stored
    def mode_echo(self, body: bytes) -> None:
        self._send(201 if self.command == "POST" else 200, "application/json", body or b"{}")

    # ---- a WAF that blocks writes with its own page (not a Status); reads get a 404 page
    def mode_forbid_writes(self, body: bytes) -> None:
        if self.command in ("POST", "PATCH", "DELETE"):
            self._send(403, "text/html", b"<h1>403 Forbidden</h1>Request blocked by policy")
        else:
            self._send(404, "text/html", b"<h1>Not Found</h1>")

    # ---- a TrainJobList whose first item has a metadata that is a string
    def mode_bad_item(self, body: bytes) -> None:
        doc = {"apiVersion": API, "kind": "TrainJobList", "metadata": {}, "items": [{"metadata": "x"}]}
        self._send(200, "application/json", json.dumps(doc).encode())

    # ---- one byte every TRICKLE seconds, from the status line on (or after the headers)
    def _trickle(self, data: bytes) -> None:
        stop = time.monotonic() + 20  # bounded, so a client without a deadline still ends the test
        for i in range(len(data)):
            if self.server.stop.is_set() or time.monotonic() > stop:  # type: ignore[attr-defined]
                return
            try:
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
            except OSError:
                return
            time.sleep(self.server.trickle)  # type: ignore[attr-defined]

    def mode_trickle_head(self, body: bytes) -> None:
        data = b'{"apiVersion":"%s","kind":"TrainJobList","metadata":{},"items":[]}' % API.encode()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data)
        self._trickle(head + data)

    def mode_trickle_body(self, body: bytes) -> None:
        data = b'{"apiVersion":"%s","kind":"TrainJobList","metadata":{},"items":[]}' % API.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.flush()
        self._trickle(data)

    # ---- an endless TrainJobList (no Content-Length, connection closed at the end, never reached)
    def mode_endless(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        item = json.dumps({"apiVersion": API, "kind": "TrainJob", "metadata": {"name": "x" * 50}}).encode() + b","
        chunk = item * (65536 // len(item))
        head = b'{"apiVersion":"%s","kind":"TrainJobList","metadata":{},"items":[' % API.encode()
        try:
            self.wfile.write(head)
            while self.server.sent < (256 << 20) and not self.server.stop.is_set():  # type: ignore[attr-defined]
                self.wfile.write(chunk)
                self.server.sent += len(chunk)  # type: ignore[attr-defined]
        except OSError:
            pass
        self.close_connection = True

    # ---- a list that never ends: every page empty, with a continue token (fresh, or always the same)
    def _page(self, token: str) -> None:
        doc = {"apiVersion": API, "kind": "TrainJobList", "metadata": {"continue": token}, "items": []}
        self._send(200, "application/json", json.dumps(doc).encode())

    def mode_pages_fresh(self, body: bytes) -> None:
        self.server.sent += 1  # type: ignore[attr-defined]
        self._page(f"page-{self.server.sent}")  # type: ignore[attr-defined]

    def mode_pages_same(self, body: bytes) -> None:
        self.server.sent += 1  # type: ignore[attr-defined]
        self._page("again")

    # ---- announces 10 GiB
    def mode_huge(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(10 << 30))
        self.end_headers()
        try:
            self.wfile.write(b'{"apiVersion":"%s"' % API.encode())
        except OSError:
            pass
        self.close_connection = True


@pytest.fixture
def hostile(tmp_path):
    """``hostile(mode, trickle=1.0)`` -> a kubeconfig whose current context points at that server."""
    servers = []

    def start(mode: str, trickle: float = 1.0) -> str:
        srv = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
        srv.daemon_threads = True
        srv.mode = mode  # type: ignore[attr-defined]
        srv.trickle = trickle  # type: ignore[attr-defined]
        srv.sent = 0  # type: ignore[attr-defined]
        srv.stop = threading.Event()  # type: ignore[attr-defined]
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(srv)
        kc = tmp_path / f"{mode}.kubeconfig"
        kc.write_text(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:%d'}\n"
            "users:\n- {name: u, user: {token: t0k3n}}\ncontexts:\n"
            "- {name: x, context: {cluster: c, user: u, namespace: ns1}}\ncurrent-context: x\n" % srv.server_address[1]
        )
        start.server = srv  # type: ignore[attr-defined]
        return str(kc)

    yield start
    for srv in servers:
        srv.stop.set()  # type: ignore[attr-defined]
        srv.shutdown()
        srv.server_close()


def _commands(kc: str, tmp_path) -> dict[str, list]:
    yml = tmp_path / "t1.yaml"
    yml.write_text(TRAINJOB_YAML)
    return {
        "submit": ["submit", "--kubeconfig", kc, RDZV],
        "submit --dry-run": ["submit", "--kubeconfig", kc, "--dry-run", RDZV],
        "submit --apply": ["submit", "--kubeconfig", kc, "--apply", RDZV],
        "submit --generate-name": ["submit", "--kubeconfig", kc, "--generate-name", yml],
        "jobs": ["jobs", "--kubeconfig", kc],
        "cancel": ["cancel", "--kubeconfig", kc, "-y", "llama-pretrain"],
        "validate --server": ["validate", "--server", "--kubeconfig", kc, yml],
        "migrate --apply": ["migrate", REPO, "-o", tmp_path / "out", "-j", "1", "--kubeconfig", kc, "--apply"],
    }


def _assert_no_answer(r, what: str) -> None:
    """Exit 2 with one K919 line; nothing claimed: no `Submitted`, no verdict, no table, no crash."""
    assert r.exit_code == 2, (what, r.exit_code, r.stdout, r.stderr)
    k919 = [ln for ln in r.stderr.splitlines() if "error K919" in ln]
    assert len(k919) == 1, (what, r.stderr)
    assert "not an answer of the Kubernetes API" in k919[0]
    assert "Submitted" not in r.stdout and "Cancelled" not in r.stdout
    assert "INVALID" not in r.stdout and ": valid (" not in r.stdout and "NAME" not in r.stdout
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr


COMMANDS = [
    "submit",
    "submit --dry-run",
    "submit --apply",
    "submit --generate-name",
    "jobs",
    "cancel",
    "validate --server",
    "migrate --apply",
]
# every command against the web page; the redirect and the echo against one command of each kind
CASES = [("html", w) for w in COMMANDS] + [
    (m, w) for m in ("redirect", "echo") for w in ("submit", "submit --dry-run", "jobs", "cancel", "validate --server")
]


@pytest.mark.parametrize("mode, what", CASES)
def test_an_answer_that_is_not_an_api_object_is_k919(cli, hostile, tmp_path, mode, what):
    kc = hostile(mode)
    r = cli(*_commands(kc, tmp_path)[what])
    _assert_no_answer(r, f"{mode}: {what}")


def test_the_k919_line_names_what_came_back(cli, hostile, tmp_path):
    kc = hostile("html")
    r = cli(*_commands(kc, tmp_path)["submit"])
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("slurm2kf submit: error K919 http://127.0.0.1:")
    assert "POST /apis/trainer.kubeflow.org/v1alpha1/namespaces/ns1/trainjobs" in line
    assert "HTTP 200 text/html" in line and "Sign in - Example SSO" in line and "not a TrainJob" in line


def test_an_echoed_trainjob_is_not_a_stored_one(cli, hostile, tmp_path):
    """The echo server returns the very TrainJob sent, with 201: no uid, no resourceVersion, so the
    server stored nothing (API conventions: both are set by the server on create)."""
    kc = hostile("echo")
    r = cli(*_commands(kc, tmp_path)["submit"])
    assert r.exit_code == 2 and "neither metadata.uid nor metadata.resourceVersion" in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("what", ["submit", "submit --dry-run", "validate --server", "cancel"])
def test_an_html_403_from_a_proxy_is_not_a_forbidden_verdict(cli, hostile, tmp_path, what):
    """A 403 without a Status did not come from the API server's authorizer: not K904, not INVALID."""
    kc = hostile("forbid_writes")
    r = cli(*_commands(kc, tmp_path)[what])
    _assert_no_answer(r, what)
    assert "K904" not in r.stderr and "K921" not in r.stdout
    assert "not a Status" in r.stderr


def test_a_list_item_of_the_wrong_shape_is_k919(cli, hostile):
    kc = hostile("bad_item")
    r = cli("jobs", "--kubeconfig", kc)
    _assert_no_answer(r, "jobs")
    assert "items[0]: no metadata" in r.stderr


@pytest.mark.parametrize("mode", ["trickle_head", "trickle_body"])
@pytest.mark.parametrize("what", ["jobs", "submit"])
def test_a_trickling_server_meets_the_total_deadline(cli, hostile, tmp_path, mode, what):
    """One byte a second never trips the 30 s per-read timeout; the 2 s total deadline ends it."""
    kc = hostile(mode, trickle=1.0)
    args = _commands(kc, tmp_path)[what] + ["--request-timeout", "2"]
    t0 = time.monotonic()
    r = cli(*args)
    elapsed = time.monotonic() - t0
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert "error K909" in r.stderr and "in full within 2 s" in r.stderr, r.stderr
    assert elapsed < 8, elapsed  # 2 s, plus the conversion of the script for submit
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_the_deadline_of_the_client_itself(hostile):
    """The library: Cluster.request with a 1 s deadline against a server that trickles its status line."""
    from translator.cluster import ClusterError
    from translator.cluster.client import connect

    cluster = connect(hostile("trickle_head", trickle=0.5), deadline=1.0)
    t0 = time.monotonic()
    with pytest.raises(ClusterError) as info:
        cluster.request("GET", "/apis")
    assert info.value.code == "K909"
    assert 0.9 < time.monotonic() - t0 < 4


def test_an_endless_list_stops_at_the_cap(cli, hostile):
    kc = hostile("endless")
    t0 = time.monotonic()
    r = cli("jobs", "--kubeconfig", kc)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "error K920" in r.stderr and "more than 16 MiB" in r.stderr
    assert r.stdout == ""
    assert time.monotonic() - t0 < 20
    time.sleep(0.2)
    # the client hung up soon after 16 MiB: what the server got out is the cap plus socket buffers
    assert hostile.server.sent < (40 << 20), hostile.server.sent  # type: ignore[attr-defined]


def test_an_announced_huge_answer_is_refused_before_reading(cli, hostile):
    kc = hostile("huge")
    r = cli("jobs", "--kubeconfig", kc)
    assert r.exit_code == 2 and "error K920" in r.stderr and "10,737,418,240 bytes announced" in r.stderr


def test_the_deadline_covers_a_tls_handshake_that_never_ends(tmp_path):
    """An https server that accepts and then says nothing: each read would wait 30 s, the whole
    request ends at its 1 s deadline (the socket is shut under the TLS handshake)."""
    import socket

    from translator.cluster import ClusterError
    from translator.cluster.client import connect

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    kc = tmp_path / "kc"
    kc.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:%d', "
        "insecure-skip-tls-verify: true}\nusers:\n- {name: u, user: {token: t}}\ncontexts:\n"
        "- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n" % srv.getsockname()[1]
    )
    try:
        cluster = connect(str(kc), deadline=1.0)
        assert cluster.timeout == (5.0, 30.0)
        t0 = time.monotonic()
        with pytest.raises(ClusterError) as info:
            cluster.request("GET", "/apis")
        assert info.value.code == "K909" and "in full within 1 s" in info.value.message
        assert time.monotonic() - t0 < 4
    finally:
        srv.close()


def test_a_list_that_never_ends_is_refused(cli, hostile):
    """Kubernetes lists in pages (`limit`, `continue`); an empty page with a token is legal (a label
    selector can filter a whole page out), so only the count of pages bounds a server whose tokens
    never run out: 1,000 pages of 500. A token that comes back is no API server's (K919)."""
    kc = hostile("pages_fresh")
    r = cli("jobs", "--kubeconfig", kc)
    assert r.exit_code == 2 and "error K920" in r.stderr and "did not end after 1,000 pages" in r.stderr
    assert hostile.server.sent == 1000 and r.stdout == ""  # type: ignore[attr-defined]
    kc = hostile("pages_same")
    r = cli("jobs", "--kubeconfig", kc)
    assert r.exit_code == 2 and "error K919" in r.stderr and "continue token repeats" in r.stderr
    assert hostile.server.sent == 2  # type: ignore[attr-defined]
