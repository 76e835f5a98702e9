"""Server answers -> K9xx messages; a 422's causes -> the TrainJob field, the rule's message, the source line.

The API server answers a rejected request with a metav1.Status: `reason` (Invalid, Forbidden,
AlreadyExists, NotFound, Conflict, BadRequest), `message`, and for 422 `details.causes[]` with
`field` (e.g. `spec.trainer.env`, `<nil>` for a rule on the root object) and `message`
(`Invalid value: 0: numProcPerNode must be greater than or equal to 1`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections.abc import Callable

from translator.cluster import GROUP, PLURAL
from translator.jsondata import as_dict

RESOURCE = f"{PLURAL}.{GROUP}"
# the apiserver adds this cause when CEL rules were skipped because of schema errors (noise next to them)
_NOT_CHECKED = "some validation rules were not checked because the object was invalid"
_UNKNOWN_FIELD = re.compile(r'(unknown|duplicate) field "([^"]+)"')
_MENTIONED_PATH = re.compile(r"\b((?:metadata|spec)\.[A-Za-z0-9_.\[\]/-]*[A-Za-z0-9\]])")


@dataclass
class Cause:
    field: str | None  # TrainJob field as the server names it (None: the whole object)
    message: str  # the rule's / schema's message as the server words it
    line: int | None = None  # the source line (script or YAML) that produced the field
    note: str = ""  # e.g. "from #SBATCH line 4 (and 2 more)"


@dataclass
class Rejection:
    code: str  # K904..K914
    status: int
    message: str  # one line
    causes: list[Cause] = field(default_factory=list)


Locate = Callable[[str | None], tuple[int | None, str]]


def _status_parts(body) -> tuple[str, str, dict]:
    if not isinstance(body, dict):
        return "", "", {}
    details = as_dict(body.get("details"))
    return str(body.get("reason") or ""), str(body.get("message") or ""), details


def rejection(
    err, *, verb: str, namespace: str | None, name: str | None, cluster, locate: Locate | None = None
) -> Rejection:
    """An HttpError of one request -> a Rejection (code, one-line message, mapped causes)."""
    status = err.status
    reason, message, details = _status_parts(err.body)
    if not message:
        message = (err.text or "").strip().splitlines()[0][:300] if (err.text or "").strip() else f"HTTP {status}"
    obj = f"TrainJob {namespace}/{name}" if name else "TrainJobs"
    if status == 403:
        m = re.search(r'User "([^"]*)"', message)
        user = m.group(1) if m else cluster.user
        where = f'in namespace "{namespace}"' if namespace else "in any namespace (cluster scope)"
        return Rejection(
            "K904",
            status,
            f'forbidden: user "{user}" (context {cluster.context!r}) may not '
            f"{verb} {RESOURCE} {where}; ask a cluster admin for a Role "
            f"granting {verb} on {PLURAL}",
        )
    if status == 404:
        if details.get("kind") == "namespaces":
            return Rejection(
                "K905",
                status,
                f'namespace "{details.get("name") or namespace}" does not exist '
                f"on {cluster.server} (create it, or pass --namespace)",
            )
        if "could not find the requested resource" in message:  # no such API at all
            return Rejection(
                "K910",
                status,
                f"the server has no {RESOURCE} API ({message}); the Kubeflow "
                "Trainer CRDs are not installed on this cluster",
            )
        return Rejection("K914", status, f"{obj} not found")
    if status == 409:
        if reason == "AlreadyExists":
            return Rejection(
                "K906",
                status,
                f"{obj} already exists; submit with --generate-name for a unique "
                "name (like a new sbatch job id), or with --apply to update it",
            )
        return Rejection("K908", status, f"{obj}: conflict: {message}")
    if status == 422 or (status == 400 and _UNKNOWN_FIELD.search(message)):
        causes = _causes(status, message, details, locate)
        return Rejection(
            "K907",
            status,
            f"{obj} rejected by the server: "
            + "; ".join((f"{c.field}: {c.message}" if c.field else c.message) for c in causes),
            causes,
        )
    return Rejection("K913", status, f"{obj}: the server answered HTTP {status} {reason}: {message}".rstrip(": "))


def _causes(status, message, details, locate) -> list[Cause]:
    raw = []
    if status == 400:
        for m in _UNKNOWN_FIELD.finditer(message):
            raw.append(
                (
                    m.group(2),
                    f"{m.group(1)} field (the server decodes strictly: it would be dropped or is written twice)",
                )
            )
    else:
        for c in details.get("causes") or ():
            if not isinstance(c, dict):
                continue
            raw.append((str(c.get("field") or ""), str(c.get("message") or "")))
        if not raw:
            raw.append(("", message))
    meaningful = [r for r in raw if _NOT_CHECKED not in r[1]]
    raw = meaningful or raw
    out = []
    for fld, msg in raw:
        fld = None if fld in ("", "<nil>") else fld
        if fld is None:  # a rule on the whole object: point at the field its message names
            mentioned = _MENTIONED_PATH.search(msg)
            fld = mentioned.group(1) if mentioned else None
        line, note = locate(fld) if locate else (None, "")
        if "field is immutable" in msg:  # a CEL transition rule (self == oldSelf) on update
            note = "; ".join(
                x
                for x in (note, "a stored TrainJob cannot change this: cancel it first, or submit with --generate-name")
                if x
            )
        out.append(Cause(fld, msg, line, note))
    return out


def path_segment_problem(name: str) -> str | None:
    """Why ``name`` cannot be an object name in a URL (apimachinery IsValidPathSegmentName), or None."""
    if name in (".", ".."):
        return f"may not be {name!r}"
    for ch in ("/", "%"):
        if ch in name:
            return f"may not contain {ch!r}"
    return None


def normalize_field(path: str) -> str:
    """`spec.trainer.env[3].name` -> `spec.trainer.env.name`; map keys in brackets become segments;
    `resourcesPerNode.requests.X` / `.limits.X` -> `resourcesPerNode.X` (how the source map names them)."""
    out = re.sub(r"\[([^\]]*)\]", lambda m: "" if m.group(1).isdigit() else "." + m.group(1).strip("'\""), path)
    return re.sub(r"\.resourcesPerNode\.(requests|limits)(?=\.|$)", ".resourcesPerNode", out)


def field_tuple(path: str) -> tuple:
    """`spec.trainer.env[3].name` -> ('spec', 'trainer', 'env', 3, 'name') (a YAML document's path)."""
    parts: list = []
    for m in re.finditer(r"([^.\[\]]+)|\[([^\]]*)\]", path):
        if m.group(1) is not None:
            parts.append(m.group(1))
        else:
            key = m.group(2).strip("'\"")
            parts.append(int(key) if key.isdigit() else key)
    return tuple(parts)


_ALIASES = {"spec.trainer.args": "spec.trainer.command"}


def script_locator(source_map) -> Locate:
    """Locate for a converted script: the plan's source map (field -> script lines)."""
    entries = [(sm.field, tuple(sm.lines)) for sm in source_map or () if not sm.field.startswith("(")]

    def locate(fld: str | None) -> tuple[int | None, str]:
        if not fld:
            return None, ""
        norm = normalize_field(fld)
        for alias, target in _ALIASES.items():
            if norm == alias or norm.startswith(alias + "."):
                norm = target + norm[len(alias) :]
        best: tuple[int, tuple[int, ...]] = (-1, ())
        for f, lines in entries:
            if lines and (norm == f or norm.startswith(f + ".")) and len(f) > best[0]:
                best = (len(f), lines)
        lines = best[1]
        if not lines:  # the server names a parent (spec.trainer.resourcesPerNode): all its children
            lines = tuple(sorted({ln for f, ls in entries if f.startswith(norm + ".") for ln in ls}))
        if not lines:
            return None, "no script line produced it (a converter default)"
        if len(lines) == 1:
            return lines[0], f"from script line {lines[0]}"
        shown = ", ".join(str(x) for x in lines[:6]) + (", ..." if len(lines) > 6 else "")
        return lines[0], f"from script lines {shown}: {len(lines)} lines"

    return locate


def yaml_locator(document) -> Locate:
    """Locate for a TrainJob read from YAML: the document's own line of that field."""

    def locate(fld: str | None) -> tuple[int | None, str]:
        if document is None:
            return None, ""
        line = document.line_of(field_tuple(fld)) if fld else document.start_line
        return line, ""

    return locate
