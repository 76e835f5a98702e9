"""What a Kubernetes API server answers, and whether an answer is that.

A request that names what it expects (an `Expect`) gets either that object or an error: the API
server answers a success with the object asked for (its `apiVersion` and `kind`; a created or stored
TrainJob carries `metadata.name` and a `uid` or `resourceVersion`) and an error with a `Status`
(apiVersion v1, kind Status). Anything else (an SSO login page answered with 200, a proxy's HTML
error, a JSON document of another kind) did not come from the API server's handlers, so nothing in it
can be believed: the request is reported as K919, never as a success or as a TrainJob rejection.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from translator.cluster import GROUP, KIND, VERSION

TRAINJOB_API = f"{GROUP}/{VERSION}"


@dataclass(frozen=True)
class Expect:
    api_version: str
    kind: str
    stored: bool = False  # metadata.name and a uid or resourceVersion (what the server stored)
    or_status: bool = False  # a Status of success is an answer too (DELETE)
    list_of: str = ""  # a list: the kind its items have

    @property
    def what(self) -> str:
        return f"a {self.kind}" + (" or a Status" if self.or_status else "")


TRAINJOB = Expect(TRAINJOB_API, KIND, stored=True)
TRAINJOB_LIST = Expect(TRAINJOB_API, KIND + "List", list_of=KIND)
TRAINJOB_DELETED = Expect(TRAINJOB_API, KIND, or_status=True)
NAMESPACE = Expect("v1", "Namespace")
TRAINING_RUNTIME = Expect(TRAINJOB_API, "TrainingRuntime", stored=True)


def parse(data: bytes) -> Any:
    """The JSON of an answer, or None when it is not JSON (HTML, text, binary, nested too deeply)."""
    if not data:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None


def is_status(body: Any) -> bool:
    return isinstance(body, dict) and body.get("kind") == "Status" and body.get("apiVersion") == "v1"


def _shown(value: Any) -> str:
    """A value of the server's, quoted and cut short for a one-line message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind_problem(body: Any, api_version: str, kind: str) -> str | None:
    if not isinstance(body, dict):
        return "not a JSON object"
    if body.get("apiVersion") != api_version or body.get("kind") != kind:
        return f"apiVersion {_shown(body.get('apiVersion'))}, kind {_shown(body.get('kind'))}"
    if not isinstance(body.get("metadata"), dict):
        return "no metadata"
    return None


def _object_problem(body: Any, expect: Expect) -> str | None:
    problem = _kind_problem(body, expect.api_version, expect.kind)
    if problem:
        return problem
    meta = body["metadata"]
    if not (isinstance(meta.get("name"), str) and meta["name"]):
        return "no metadata.name"
    if expect.stored and not any(isinstance(meta.get(k), str) and meta[k] for k in ("uid", "resourceVersion")):
        return "neither metadata.uid nor metadata.resourceVersion: not an object the server stored"
    return None


def shape_problem(expect: Expect, body: Any) -> str | None:
    """Why a success answer ``body`` is not what ``expect`` names (None: it is)."""
    if expect.or_status and is_status(body):
        return None if body.get("status") == "Success" else f"a Status of {_shown(body.get('status'))}"
    if not expect.list_of:
        return _object_problem(body, expect)
    problem = _kind_problem(body, expect.api_version, expect.kind)
    if problem:
        return problem
    items = body.get("items")
    if not isinstance(items, list):
        return "no items list"
    if not isinstance(body["metadata"].get("continue", ""), str):
        return "metadata.continue is not a string"
    item_expect = Expect(expect.api_version, expect.list_of)
    for n, item in enumerate(items):
        if isinstance(item, dict) and "kind" not in item and "apiVersion" not in item:
            item = dict(item, apiVersion=expect.api_version, kind=expect.list_of)  # typed lists leave them out
        problem = _object_problem(item, item_expect)
        if problem:
            return f"items[{n}]: {problem}"
    return None


def describe(status: int, headers: Any, data: bytes, body: Any) -> str:
    """A few words about an answer that is not an API object: status, media type, size, its start."""
    ctype = str(headers.get("Content-Type") or "no Content-Type").split(";")[0].strip()
    ctype = "".join(ch if " " <= ch <= "~" else "?" for ch in ctype)  # printable ASCII only
    size = f"{len(data):,} bytes" if data else "empty"
    if isinstance(body, dict):
        return f"HTTP {status} {ctype[:60]}, {size}: a JSON object with apiVersion {_shown(body.get('apiVersion'))}, kind {_shown(body.get('kind'))}"
    if body is not None:
        return f"HTTP {status} {ctype[:60]}, {size}: JSON {type(body).__name__}"
    start = " ".join(data[:160].decode("utf-8", "replace").split())[:80]
    return f"HTTP {status} {ctype[:60]}, {size}" + (f": {start!r}" if start else "")
