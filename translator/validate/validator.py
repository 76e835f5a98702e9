"""Validate TrainJob documents the way a Kubeflow Trainer cluster would judge them on create.

Layers, in apiserver order: YAML decoding (duplicate keys) -> ObjectMeta -> CRD defaults ->
OpenAPI schema (unknown fields are errors) -> list-map keys -> CEL rules that apply at create ->
Trainer webhook rules (and the pod rules that decide whether the TrainJob can ever start).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Sequence

from translator.jsondata import as_dict
from translator.validate.crd import _RFC3339
from translator.validate.documents import DecodeError, Document, json_path, load_documents
from translator.validate.rules import (
    check_metadata,
    check_patches,
    check_pod_names,
    check_runtime_ref,
    check_runtime_version,
    check_trainer,
)
from translator.validate.runtimes import SHIPPED, RuntimeInfo, runtime_from_manifest

_QUANTITY_PATTERN_START = "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)"


@dataclass(frozen=True)
class Problem:
    code: str
    severity: str  # "error" | "warning"
    path: str  # JSON path inside the document
    line: int | None  # 1-based line in the file, when known
    message: str

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "message": self.message,
        }


@dataclass
class Result:
    file: str
    index: int | None  # document index in the file (0-based); None: whole file
    name: str | None
    problems: list[Problem] = field(default_factory=list)
    cel_evaluated: int = 0
    cel_skipped_transition: int = 0
    skipped: bool = False  # not a TrainJob (a note, not a verdict)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "error"]

    @property
    def valid(self) -> bool:
        return not self.errors

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "index": self.index,
            "name": self.name,
            "valid": self.valid,
            "errors": [p.to_json() for p in self.errors],
            "warnings": [p.to_json() for p in self.warnings],
            "cel": {"evaluated": self.cel_evaluated, "skipped_transition": self.cel_skipped_transition},
        }


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_JSON_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


def _schema_problems(data: dict, crd, version: str) -> list[tuple[str, str, tuple, str]]:
    out = []
    validator = crd.validator(version)
    for err in validator.iter_errors(data):
        path = tuple(err.absolute_path)
        where = json_path(path)
        kind = err.validator
        if kind == "additionalProperties" and isinstance(err.instance, dict):
            known = set((err.schema.get("properties") or {}).keys())
            for key in err.instance:
                if key not in known:
                    out.append(
                        (
                            "V710",
                            "error",
                            path + (key,),
                            f"unknown field {json_path(path + (key,))}: the API server would silently drop it",
                        )
                    )
            continue
        if kind == "type":
            want = err.validator_value
            wants = want if isinstance(want, list) else [want]
            text = " or ".join(_JSON_TYPES.get(str(w), str(w)) for w in wants)
            hint = " (quote it)" if "string" in wants and isinstance(err.instance, (int, float, bool)) else ""
            msg = f"{where} must be {text}, not {_describe(err.instance)}{hint}"
        elif kind == "pattern" and str(err.validator_value).startswith(_QUANTITY_PATTERN_START):
            msg = f"{where}: {_describe(err.instance)} is not a Kubernetes quantity (e.g. 4, 500m, 64Gi)"
        elif kind == "pattern" and err.validator_value == _RFC3339:
            msg = f"{where}: {_describe(err.instance)} is not an RFC 3339 date-time (e.g. 2026-01-02T03:04:05Z)"
        elif kind == "anyOf":
            msg = f"{where} must be an integer or a string, not {_describe(err.instance)}"
        elif kind == "required":
            msg = f"{where or 'document'}: {err.message}"
        elif kind in (
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "minLength",
            "maxLength",
            "maxItems",
            "minItems",
            "minProperties",
            "maxProperties",
            "enum",
            "pattern",
            "const",
        ):
            msg = f"{where}: {_describe(err.instance)} violates {kind} {_describe(err.validator_value)}"
        else:
            msg = f"{where}: {err.message}"
        out.append(("V711", "error", path, msg))
    return out


def _runtime_for(spec: dict, runtimes: dict[str, RuntimeInfo]) -> RuntimeInfo | None:
    ref = as_dict(spec.get("runtimeRef"))
    name = ref.get("name")
    return runtimes.get(name) if isinstance(name, str) else None


def validate_documents(
    docs: Sequence,
    crd=None,
    *,
    file: str = "-",
    runtimes: dict[str, RuntimeInfo] | None = None,
    trainer_version: str = "2.3",
) -> list[Result]:
    """One Result per TrainJob document (plus a skipped Result per other document).

    ``docs``: :class:`Document` objects (from :func:`load_documents`, with lines) or plain dicts.
    ``crd``: a loaded :class:`translator.validate.crd.CRD` (default: the bundled TrainJob CRD as the
    release ``trainer_version`` has it, see translator/validate/versions.py).
    ``runtimes``: runtime name -> RuntimeInfo; the shipped runtimes are always known, and
    (Cluster)TrainingRuntime documents among ``docs`` are added.
    """
    from translator.validate.crd import apply_defaults, drop_nulls, evaluate_cel, list_key_problems, load_crd

    from translator.validate.versions import crd_for

    crd = crd or crd_for(load_crd(), trainer_version)
    documents = [d if isinstance(d, Document) else Document(index=i, data=d) for i, d in enumerate(docs)]
    known = dict(SHIPPED)
    known.update(runtimes or {})
    for d in documents:
        info = runtime_from_manifest(d.data)
        if info is not None and info.name:
            known[info.name] = info

    results: list[Result] = []
    for doc in documents:
        data = doc.data
        api = data.get("apiVersion") if isinstance(data, dict) else None
        kind = data.get("kind") if isinstance(data, dict) else None
        if isinstance(data, dict) and kind in ("ClusterTrainingRuntime", "TrainingRuntime"):
            results.append(Result(file, doc.index, None, skipped=True))
            continue
        name = None
        if isinstance(data, dict) and isinstance(data.get("metadata"), dict):
            n = data["metadata"].get("name")
            name = n if isinstance(n, str) else None
        result = Result(file, doc.index, name)
        results.append(result)

        def add(code, severity, path, message, result=result, doc=doc):  # this document's result and lines
            result.problems.append(Problem(code, severity, json_path(path), doc.line_of(path), message))

        for code, path, line, message in doc.problems:
            result.problems.append(Problem(code, "error", json_path(path), line, message))
        if not isinstance(data, dict):
            add("V702", "error", (), f"document is {type(data).__name__}, not a TrainJob mapping")
            continue
        group, _, version = str(api or "").rpartition("/")
        if kind != crd.kind or group != crd.group:
            result.skipped = True
            add(
                "V702",
                "warning",
                (),
                f"not a {crd.kind} ({crd.group}) document: apiVersion {api!r}, kind {kind!r}; skipped",
            )
            continue
        schema = crd.schema(version)
        if schema is None:
            add(
                "V711",
                "error",
                ("apiVersion",),
                f"version {version!r} is not served by this CRD (served: {', '.join(crd.versions)})",
            )
            continue

        # ObjectMeta (the CRD schema only says `type: object`)
        for code, sev, path, msg in check_metadata(data.get("metadata")):
            add(code, sev, path, msg)
        if "status" in data:
            add("V714", "warning", ("status",), "status is ignored on create (the API server resets it)")

        # nulls pruned, defaults applied, then the schema on the result (metadata is checked above)
        pruned, nulls = drop_nulls(data, schema)
        for path in nulls:
            add("V715", "warning", path, f"{json_path(path)} is null; the API server drops it")
        if "spec" not in pruned:
            # the CRD does not require spec (the API server stores a TrainJob without one); the
            # Trainer webhook rejects it: no runtimeRef, no runtime
            add(
                "V744",
                "error",
                ("spec",),
                "spec is missing: the API server stores it, but the Trainer "
                "webhook rejects a TrainJob without spec.runtimeRef (the runtime)",
            )
        defaulted = apply_defaults(pruned, schema)
        defaulted.pop("status", None)
        for code, sev, path, msg in _schema_problems(defaulted, crd, version):
            add(code, sev, path, msg)
        for path, msg in list_key_problems(defaulted, schema):
            add("V712", "error", path, msg)

        # CEL rules that run on create
        meta = as_dict(defaulted.get("metadata"))
        cel_subject = defaulted
        if not isinstance(meta.get("name"), str):
            gen = meta.get("generateName")
            if isinstance(gen, str):  # the apiserver generates the name before validating
                cel_subject = dict(defaulted)
                cel_subject["metadata"] = dict(meta, name=gen[:58] + "abcde")
        if isinstance(cel_subject.get("metadata"), dict) and isinstance(cel_subject["metadata"].get("name"), str):
            outcomes, evaluated, skipped = evaluate_cel(cel_subject, schema)
            result.cel_evaluated, result.cel_skipped_transition = evaluated, skipped
            for o in outcomes:
                if o.path == () and "metadata.name" in o.rule:
                    o.path = ("metadata", "name")  # root rules about the name: point at it
                if o.passed is False:
                    add("V720", "error", o.path, f"{json_path(o.path)}: {o.message} (CEL: {o.rule})")
                elif o.passed is None:
                    add(
                        "V721",
                        "warning",
                        o.path,
                        f"{json_path(o.path)}: CEL rule could not be evaluated ({o.error}): {o.rule}",
                    )

        # webhook (needs the runtime's shape)
        spec = as_dict(defaulted.get("spec"))
        runtime = _runtime_for(spec, known)
        ref = as_dict(spec.get("runtimeRef"))
        if runtime is None and isinstance(ref.get("name"), str):
            add(
                "V745",
                "warning",
                ("spec", "runtimeRef", "name"),
                f"runtime {ref.get('name')!r} is not a shipped runtime and no manifest for it was given "
                "(--runtimes); runtime-specific checks were relaxed",
            )
        for check, args in (
            (check_runtime_ref, (spec,)),
            (check_trainer, (spec, runtime, trainer_version)),
            (check_patches, (spec, runtime)),
            (check_pod_names, (as_dict(data.get("metadata")), spec, runtime)),
            (check_runtime_version, (spec, runtime, trainer_version)),
        ):
            try:
                found = check(*args)
            except Exception as exc:  # noqa: BLE001 - a malformed shape the schema errors already name
                if not result.errors:
                    add(
                        "V799",
                        "error",
                        ("spec",),
                        f"internal error in {check.__name__} on this document "
                        f"({type(exc).__name__}: {exc}); please report it",
                    )
                continue
            for code, sev, path, msg in found:
                add(code, sev, path, msg)
    return results


def _expand_lists(docs: list[Document]) -> list[Document]:
    """``kind: List`` documents (``kubectl get -o yaml``) become one document per item, lines kept."""
    out: list[Document] = []
    for doc in docs:
        data = doc.data
        if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
            for i, item in enumerate(data["items"]):
                prefix = ("items", i)
                lines = {path[2:]: line for path, line in doc.lines.items() if path[:2] == prefix}
                problems = [(c, p[2:], ln, m) for c, p, ln, m in doc.problems if p[:2] == prefix]
                out.append(
                    Document(index=len(out), data=item, lines=lines, start_line=lines.get(()), problems=problems)
                )
        else:
            doc.index = len(out)
            out.append(doc)
    return out


def validate_text(
    text: str,
    crd=None,
    *,
    file: str = "-",
    runtimes: dict[str, RuntimeInfo] | None = None,
    trainer_version: str = "2.3",
) -> list[Result]:
    """Validate YAML/JSON text; a file that does not decode gives one invalid Result (V701)."""
    try:
        docs = load_documents(text)
    except DecodeError as exc:
        return [Result(file, None, None, problems=[Problem("V701", "error", "<file>", exc.line, exc.message)])]
    results = validate_documents(
        _expand_lists(docs), crd, file=file, runtimes=runtimes, trainer_version=trainer_version
    )
    if not any(not r.skipped for r in results):
        results.append(
            Result(
                file,
                None,
                None,
                problems=[Problem("V703", "error", "<file>", None, "no TrainJob document in this file")],
            )
        )
    return results
