"""kubeconfig -> one `kubernetes` ApiClient, raw JSON requests, and transport errors as one line.

One client per command: every request of a batch shares its connection pool (the client's urllib3
pool manager; the client's own request code is not used, so each answer can be bounded: wire.py).
Timeouts are short (connect 5 s, each read 30 s, the whole request 60 s by default) and urllib3 never
retries, so a dead server is reported at once. A request that names what it expects (answers.Expect)
gets that object, an HttpError carrying the server's Status, or a ClusterError (K919: the answer is
not an API object; K920: larger than the cap).
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import ssl
import threading
from dataclasses import dataclass, field
from typing import Any

from translator.cluster import GROUP, PLURAL, VERSION, ClusterError
from translator.cluster.answers import Expect, describe, is_status, parse, shape_problem
from translator.cluster.wire import (
    MAX_ANSWER_BYTES,
    REQUEST_DEADLINE,
    AnswerTooLarge,
    DeadlinePassed,
    exchange,
    install,
)

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0


@dataclass
class Response:
    status: int
    body: Any  # parsed JSON (dict) or None
    warnings: list[str] = field(default_factory=list)  # `Warning:` headers from the server


@dataclass
class HttpError(Exception):
    """The server answered with an error status (the body is usually a metav1.Status)."""

    status: int
    body: Any
    text: str = ""

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.text[:200]}"


def kubeconfig_path(explicit: str | None) -> str:
    """--kubeconfig, else $KUBECONFIG (may list several files), else ~/.kube/config (as kubectl)."""
    if explicit:
        return explicit
    env = os.environ.get("KUBECONFIG", "")
    if env.strip():
        return env
    return os.path.join(os.path.expanduser("~"), ".kube", "config")


@dataclass
class Cluster:
    api: Any  # kubernetes.client.ApiClient
    context: str
    user: str
    namespace: str
    server: str
    timeout: tuple[float, float] = (CONNECT_TIMEOUT, READ_TIMEOUT)
    deadline: float = REQUEST_DEADLINE  # seconds for a whole request (wire.py)
    max_answer: int = MAX_ANSWER_BYTES
    inflight: threading.local = field(default_factory=threading.local)  # the request each thread sends

    @property
    def where(self) -> str:
        return f"{self.server} (context {self.context!r})"

    # ---- paths
    def trainjobs_path(self, namespace: str | None, name: str | None = None) -> str:
        """The URL path; namespace and name are percent-encoded (a name from a file such as `../x`
        stays one path segment, so it can never address another resource)."""
        base = f"/apis/{GROUP}/{VERSION}"
        path = f"{base}/namespaces/{_seg(namespace)}/{PLURAL}" if namespace else f"{base}/{PLURAL}"
        return f"{path}/{_seg(name)}" if name else path

    # ---- one request
    def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        expect: Expect | None = None,
    ) -> Response:
        """Send one request; returns a Response (2xx), raises HttpError (an answer with an error
        status) or ClusterError (no usable answer: connection, TLS, credentials, deadline, size, and
        with ``expect`` an answer that is not that object or a Status)."""
        from urllib.parse import urlencode

        headers = dict(getattr(self.api, "default_headers", {}) or {})
        headers.update({"Accept": "application/json", "Content-Type": content_type, "Accept-Encoding": "identity"})
        queries = list(query or [])
        try:
            self.api.update_params_for_auth(headers, queries, ["BearerToken"])
        except Exception as exc:  # noqa: BLE001 - a credential plugin that fails on refresh
            raise ClusterError(
                "K900", f"the credentials of user {self.user!r} (context {self.context!r}) cannot be obtained: {exc}"
            ) from None
        url = self.server.rstrip("/") + path + ("?" + urlencode(queries) if queries else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        try:
            answer = exchange(
                self.api.rest_client.pool_manager,
                self.inflight,
                method,
                url,
                body=data,
                headers=headers,
                timeout=self.timeout,
                deadline=self.deadline,
                cap=self.max_answer,
            )
        except DeadlinePassed:
            raise ClusterError(
                "K909",
                f"{self.where} did not answer {method} {path} in full within {self.deadline:g} s "
                "(the whole request: --request-timeout)",
            ) from None
        except AnswerTooLarge as exc:
            size = f" ({exc.declared:,} bytes announced)" if exc.declared else ""
            raise ClusterError(
                "K920",
                f"{self.where} answered {method} {path} with more than {self.max_answer >> 20} MiB{size}; "
                "slurm2kf reads at most that much per answer",
            ) from None
        except Exception as exc:  # noqa: BLE001 - urllib3/ssl/socket errors: one line, no traceback
            raise transport_error(exc, self) from None
        return self._judge(method, path, answer, expect)

    def _judge(self, method: str, path: str, answer, expect: Expect | None) -> Response:
        """The answer as a Response, an HttpError (a Status) or a ClusterError (K903, K919)."""
        parsed = parse(answer.data)
        status = answer.status
        ok = 200 <= status < 300
        if expect is not None and (shape_problem(expect, parsed) if ok else not is_status(parsed)):
            wanted = f"{expect.what} ({shape_problem(expect, parsed)})" if ok else "a Status (the API's error object)"
            raise ClusterError(
                "K919",
                f"{self.where} answered {method} {path} with {describe(status, answer.headers, answer.data, parsed)}, "
                f"not {wanted}: not an answer of the Kubernetes API (is this the API server's "
                "address, or is a login page or proxy in between?)",
            )
        if ok:
            return Response(status, parsed, _warnings(answer.headers))
        if status == 401:
            raise ClusterError(
                "K903",
                f"the server {self.server} rejected the credentials of user "
                f"{self.user!r} (context {self.context!r}): token invalid or "
                "expired; log in again or fix the kubeconfig",
            )
        raise HttpError(status, parsed, answer.data[:4096].decode("utf-8", "replace"))


def _seg(text: str) -> str:
    from urllib.parse import quote

    seg = quote(str(text), safe="")
    return seg.replace(".", "%2E") if seg in (".", "..") else seg


def _warnings(headers) -> list[str]:
    out = []
    try:
        values = headers.getlist("Warning") if hasattr(headers, "getlist") else [headers.get("Warning")]
    except Exception:  # noqa: BLE001
        values = []
    for v in values or ():
        if not v:
            continue
        out.append(_warning_text(v))
    return out


def _warning_text(value: str) -> str:
    """`299 - "text with \\"quotes\\""` (RFC 7234 warn-code, agent, quoted-string) -> the text."""
    m = re.match(r'\s*\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"', value)
    if not m:
        return value.strip()
    return re.sub(r"\\(.)", r"\1", m.group(1))


def _chain(exc: BaseException):
    seen = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo.extend(
            [
                getattr(e, "reason", None) if isinstance(getattr(e, "reason", None), BaseException) else None,
                e.__cause__,
                e.__context__,
            ]
        )
        todo.extend(a for a in getattr(e, "args", ()) if isinstance(a, BaseException))


def transport_error(exc: BaseException, cluster: Cluster) -> ClusterError:
    """urllib3/ssl/socket exception -> one ClusterError line naming server and context."""
    where = f"{cluster.server} (context {cluster.context!r})"
    chain = list(_chain(exc))
    names = {type(e).__name__ for e in chain}
    text = " ".join(str(e) for e in chain)
    if any(isinstance(e, ssl.SSLCertVerificationError) for e in chain) or "CERTIFICATE_VERIFY_FAILED" in text:
        reason = next(
            (
                e.verify_message
                for e in chain
                if isinstance(e, ssl.SSLCertVerificationError) and getattr(e, "verify_message", None)
            ),
            "certificate verify failed",
        )
        return ClusterError(
            "K902",
            f"TLS verification of {where} failed: {reason}; the server's "
            "certificate is not signed by the kubeconfig's certificate-authority",
        )
    if any(isinstance(e, ssl.SSLError) for e in chain) or "SSLError" in names:
        return ClusterError("K902", f"TLS handshake with {where} failed: {_short(chain, ssl.SSLError)}")
    if (
        "ReadTimeoutError" in names
        or "ConnectTimeoutError" in names
        or any(isinstance(e, (socket.timeout, TimeoutError)) for e in chain)
    ):
        return ClusterError(
            "K909", f"{where} did not answer within {cluster.timeout[0]:g}/{cluster.timeout[1]:g} s (connect/read)"
        )
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "Connection refused" in text:
        return ClusterError(
            "K901",
            f"cannot connect to {where}: connection refused (is the API server "
            "running, and is this the right context?)",
        )
    if any(isinstance(e, socket.gaierror) for e in chain) or "NameResolutionError" in names:
        return ClusterError("K901", f"cannot connect to {where}: host name not found")
    if any(isinstance(e, OSError) for e in chain) or "ProtocolError" in names or "NewConnectionError" in names:
        return ClusterError("K901", f"cannot connect to {where}: {_short(chain, OSError)}")
    return ClusterError("K901", f"request to {where} failed: {type(exc).__name__}: {str(exc)[:200]}")


def _short(chain, kind) -> str:
    for e in chain:
        if isinstance(e, kind):
            msg = getattr(e, "strerror", None) or str(e)
            return str(msg)[:200]
    return str(chain[0])[:200]


def connect(
    kubeconfig: str | None = None,
    context: str | None = None,
    namespace: str | None = None,
    *,
    timeout: tuple[float, float] = (CONNECT_TIMEOUT, READ_TIMEOUT),
    deadline: float | None = None,
    pool_size: int = 16,
) -> Cluster:
    """Load the kubeconfig (like kubectl: --kubeconfig, $KUBECONFIG, ~/.kube/config) and build one client.

    Raises ClusterError K900 when the kubeconfig or the context cannot be used. Sends no request.
    """
    try:
        from kubernetes import client as kclient
        from kubernetes import config as kconfig
        from kubernetes.config.config_exception import ConfigException
    except ImportError as exc:  # a broken install
        raise ClusterError("K900", f"the `kubernetes` Python package is not installed ({exc.name})") from None

    path = kubeconfig_path(kubeconfig)
    if kubeconfig and not os.path.exists(kubeconfig):
        raise ClusterError("K900", f"kubeconfig {kubeconfig}: no such file")
    try:
        contexts, active = kconfig.list_kube_config_contexts(config_file=path)
    except ConfigException as exc:
        raise ClusterError("K900", f"kubeconfig {path}: {_config_reason(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - malformed YAML and the like
        raise ClusterError(
            "K900", f"kubeconfig {path}: cannot be read ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None
    chosen = None
    if context:
        chosen = next((c for c in contexts or () if c.get("name") == context), None)
        if chosen is None:
            known = ", ".join(sorted(str(c.get("name")) for c in contexts or ())) or "none"
            raise ClusterError("K900", f"kubeconfig {path}: no context named {context!r} (contexts: {known})")
    else:
        chosen = active
        if not chosen:
            raise ClusterError("K900", f"kubeconfig {path}: no current-context; pass --context")
    ctx = chosen.get("context") or {}
    cfg = kclient.Configuration()
    logged = _LogCatcher()
    root = logging.getLogger()
    root.addHandler(logged)
    try:
        kconfig.load_kube_config(
            config_file=path, context=chosen.get("name"), client_configuration=cfg, persist_config=False
        )
    except ConfigException as exc:
        raise ClusterError(
            "K900", f"kubeconfig {path}, context {chosen.get('name')!r}: {_config_reason(exc)}"
        ) from None
    except Exception as exc:  # noqa: BLE001
        raise ClusterError(
            "K900",
            f"kubeconfig {path}, context {chosen.get('name')!r}: cannot be used "
            f"({type(exc).__name__}: {str(exc)[:200]})",
        ) from None
    finally:
        root.removeHandler(logged)
    if logged.errors:  # the client logs a failed exec credential plugin and goes on without credentials
        raise ClusterError(
            "K900",
            f"kubeconfig {path}, context {chosen.get('name')!r}: the credentials of user "
            f"{ctx.get('user')!r} cannot be obtained: {logged.errors[0]}",
        )
    if not cfg.verify_ssl:  # insecure-skip-tls-verify: the user chose it; no warning per request
        import urllib3

        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    cfg.retries = False  # one attempt: a dead server is reported at once
    cfg.connection_pool_maxsize = pool_size
    api = kclient.ApiClient(configuration=cfg)
    ns = namespace or ctx.get("namespace") or "default"
    cluster = Cluster(
        api=api,
        context=str(chosen.get("name")),
        user=str(ctx.get("user") or "?"),
        namespace=ns,
        server=str(cfg.host),
        timeout=timeout,
        deadline=deadline or REQUEST_DEADLINE,
    )
    install(api.rest_client.pool_manager, cluster.inflight)
    return cluster


class _LogCatcher(logging.Handler):
    """Collects the error records the kubernetes client logs while it loads a kubeconfig (and keeps
    them off stderr: the command reports them as one K900 line)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.errors: list[str] = []

    def emit(self, record) -> None:
        self.errors.append(record.getMessage())


def _config_reason(exc) -> str:
    text = str(exc).strip() or type(exc).__name__
    if "No configuration found" in text:
        return "no such file or no configuration in it (set --kubeconfig or KUBECONFIG)"
    return text[:300]
