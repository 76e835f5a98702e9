"""One HTTP exchange with the API server, bounded in time and in size.

urllib3's read timeout is per socket read: a server that trickles one byte every few seconds never
trips it, in the status line, the headers or the body. So each request here also has a total
deadline (REQUEST_DEADLINE by default, `--request-timeout`): a timer that shuts the connection's
socket down when it passes, which ends whatever read is waiting. Each answer is read in chunks up to
a size cap (MAX_ANSWER_BYTES); a larger one is dropped with its connection, never held in memory.

The connections of the client's pool register with the request in flight on their thread (the pool
classes are subclassed per client in `install`), so the timer knows which socket to shut.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from typing import Any

REQUEST_DEADLINE = 60.0  # seconds for a whole request: connect, send, status line, headers, body
MAX_ANSWER_BYTES = 16 << 20  # 16 MiB: a TrainJob is a few KiB, a page of 500 of them a few MiB
_CHUNK = 64 << 10


class DeadlinePassed(Exception):
    """The whole request took longer than its deadline."""


class AnswerTooLarge(Exception):
    def __init__(self, declared: int | None) -> None:
        super().__init__(declared)
        self.declared = declared  # the Content-Length when the server announced it, else None


@dataclass
class Answer:
    status: int
    headers: Any  # urllib3 HTTPHeaderDict
    data: bytes


class Deadline:
    """The deadline of one request: when it passes, every connection the request used is shut down."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._done = False
        self._conns: list[Any] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._done = True
            self._conns.clear()
        self._timer.cancel()

    def watch(self, conn) -> None:
        with self._lock:
            if self._done:
                return
            self._conns.append(conn)
            expired = self.expired
        if expired:
            _shut(conn)

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            conns = list(self._conns)
        for conn in conns:
            _shut(conn)


def _shut(conn) -> None:
    """End the connection's pending reads: its socket's own shutdown, below any TLS layer. During the
    TLS handshake `conn.sock` is the plain socket whose descriptor the TLS socket has taken over, so
    the handshake's own descriptor (a duplicate kept while `connect` runs) is shut instead."""
    for sock in (getattr(conn, "_handshake_sock", None), getattr(conn, "sock", None)):
        if sock is None:
            continue
        try:
            if isinstance(sock, socket.socket):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            else:  # a TLS-in-TLS transport (HTTPS proxy): its own shutdown
                sock.shutdown(socket.SHUT_RDWR)
        except (OSError, ValueError, AttributeError):
            pass


def install(pool_manager, inflight: threading.local) -> None:
    """Make the pool's connections register with the request in flight on their thread
    (``inflight.deadline``) when they connect and when they send a request."""
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class Watched:
        """Mixed into urllib3's connection classes (the methods below run before theirs)."""

        def _register(self) -> None:
            deadline = getattr(inflight, "deadline", None)
            if deadline is not None:
                deadline.watch(self)

        def _new_conn(self):
            sock = super()._new_conn()  # type: ignore[misc]
            self._handshake_sock = sock.dup()  # the same socket under a descriptor of our own
            return sock

        def connect(self) -> None:
            self._register()
            try:
                super().connect()  # type: ignore[misc]
            finally:
                dup = self.__dict__.pop("_handshake_sock", None)
                if dup is not None:
                    dup.close()

        def request(self, *args, **kwargs) -> None:
            self._register()
            super().request(*args, **kwargs)  # type: ignore[misc]

    class WatchedHTTPConnection(Watched, HTTPConnection):
        pass

    class WatchedHTTPSConnection(Watched, HTTPSConnection):
        pass

    class WatchedHTTPPool(HTTPConnectionPool):
        ConnectionCls = WatchedHTTPConnection

    class WatchedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = WatchedHTTPSConnection

    pool_manager.pool_classes_by_scheme = {"http": WatchedHTTPPool, "https": WatchedHTTPSPool}


def exchange(
    pool_manager,
    inflight: threading.local,
    method: str,
    url: str,
    *,
    body: bytes | None,
    headers: dict,
    timeout: tuple[float, float],
    deadline: float,
    cap: int = MAX_ANSWER_BYTES,
) -> Answer:
    """Send one request and read its whole answer. Raises DeadlinePassed, AnswerTooLarge, or what
    urllib3 raises (connection, TLS, per-read timeout)."""
    import urllib3

    with Deadline(deadline) as watch:
        inflight.deadline = watch
        try:
            resp = pool_manager.request(
                method,
                url,
                body=body,
                headers=headers,
                preload_content=False,
                timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
                retries=False,
                redirect=False,
            )
            try:
                data = _read_capped(resp, cap)
            except BaseException:
                resp.close()  # never back into the pool: the rest of the answer is still on the wire
                raise
        except AnswerTooLarge:
            raise
        except Exception as exc:
            if watch.expired:
                raise DeadlinePassed() from exc
            raise
        finally:
            inflight.deadline = None
    # back into the pool only now that no timer can shut it (one that fired at the very end did: close it)
    if watch.expired:
        resp.close()
    else:
        resp.release_conn()
    return Answer(resp.status, resp.headers, data)


def _read_capped(resp, cap: int) -> bytes:
    declared = str(resp.headers.get("Content-Length") or "").strip()
    if declared.isdigit() and int(declared) > cap:
        raise AnswerTooLarge(int(declared))
    buf = bytearray()
    while True:
        chunk = resp.read(_CHUNK, decode_content=False)  # a compressed answer stays compressed: not JSON
        if not chunk:
            return bytes(buf)
        buf += chunk
        if len(buf) > cap:
            raise AnswerTooLarge(None)
