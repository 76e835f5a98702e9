"""A TrainJob CRD turned into checks: strict JSON Schema, defaults, list-map keys, CEL rules.

The apiserver handles a custom resource on create as: prune unknown fields -> apply defaults ->
validate the OpenAPI schema -> evaluate ``x-kubernetes-validations`` (CEL).  Pruning is silent on a
real cluster (the SDK sends no ``fieldValidation``), which is exactly how a translator bug hides, so
here an unknown field is an error: ``additionalProperties: false`` is added to every object schema
that lists ``properties`` and does not carry ``x-kubernetes-preserve-unknown-fields``.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterator

from translator.jsondata import as_dict

BUNDLED_CRD = os.path.join(os.path.dirname(__file__), "data", "trainer.kubeflow.org_trainjobs.yaml")

_RFC3339 = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class CRDError(Exception):
    pass


@dataclass
class CRD:
    group: str
    kind: str
    versions: dict[str, dict]  # version name -> openAPIV3Schema
    source: str = ""
    _strict: dict[str, dict] = field(default_factory=dict)
    _validators: dict[str, Any] = field(default_factory=dict)

    def schema(self, version: str) -> dict | None:
        return self.versions.get(version)

    def validator(self, version: str):
        """A jsonschema validator of the strict schema of ``version`` (built once)."""
        if version not in self._validators:
            from jsonschema import Draft202012Validator

            strict = strict_schema(self.versions[version])
            self._strict[version] = strict
            self._validators[version] = Draft202012Validator(strict)
        return self._validators[version]


MAX_CRD_BYTES = 16 << 20  # the Trainer's TrainJob CRD is ~1 MB


def load_crd(path: str | None = None) -> CRD:
    """Read a CustomResourceDefinition manifest (the first CRD document of the file)."""
    import yaml

    from translator.fsio import UserFileError, read_user_file

    path = path or BUNDLED_CRD
    try:
        # the shared guard: a FIFO or device is refused before a byte is read, and at most MAX_CRD_BYTES
        text = read_user_file(path, MAX_CRD_BYTES).decode("utf-8")
        docs = list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except UserFileError as exc:
        raise CRDError(f"cannot read CRD {exc.message}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CRDError(f"cannot read CRD {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except yaml.YAMLError as exc:
        raise CRDError(f"CRD {path} is not valid YAML: {exc}") from None
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
            spec = doc.get("spec") or {}
            versions = {}
            for v in spec.get("versions") or []:
                schema = (v.get("schema") or {}).get("openAPIV3Schema")
                if isinstance(schema, dict):
                    versions[str(v.get("name"))] = schema
            if not versions:
                raise CRDError(f"CRD {path} has no openAPIV3Schema")
            return CRD(
                group=str(spec.get("group", "")),
                kind=str((spec.get("names") or {}).get("kind", "")),
                versions=versions,
                source=path,
            )
    raise CRDError(f"{path} holds no CustomResourceDefinition")


def strict_schema(node: dict) -> dict:
    """The OpenAPI v3 (structural) schema as JSON Schema, with unknown fields forbidden."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("description", "default", "example", "nullable", "externalDocs") or key.startswith("x-kubernetes-"):
            continue
        if key == "properties":
            out[key] = {k: strict_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = strict_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [strict_schema(v) for v in value]
        elif key == "format":
            if value in _INT_RANGES:
                lo, hi = _INT_RANGES[value]
                out.setdefault("minimum", lo)
                out.setdefault("maximum", hi)
                out["minimum"] = max(out["minimum"], node.get("minimum", lo))
                out["maximum"] = min(out["maximum"], node.get("maximum", hi))
            elif value == "date-time" and "pattern" not in node:
                out["pattern"] = _RFC3339
            # other formats are annotations here
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable"):
        t = out.get("type")
        if isinstance(t, str):
            out["type"] = [t, "null"]
    if (
        "properties" in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
        and "additionalProperties" not in node
    ):
        out["additionalProperties"] = False
    return out


# --- walking the schema alongside a value ---------------------------------------------------------


def _child_schema(schema: dict, key) -> dict | None:
    if isinstance(key, int):
        items = schema.get("items")
        return items if isinstance(items, dict) else None
    props = schema.get("properties") or {}
    if key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def apply_defaults(value: Any, schema: dict) -> Any:
    """A copy of ``value`` with the schema's defaults filled in, and integral floats made ints where
    the schema says integer (as the apiserver's decoder does)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            sub = _child_schema(schema, k)
            out[k] = apply_defaults(v, sub) if sub else copy.deepcopy(v)
        for k, sub in (schema.get("properties") or {}).items():
            if k not in out and isinstance(sub, dict) and "default" in sub:
                out[k] = apply_defaults(copy.deepcopy(sub["default"]), sub)
        return out
    if isinstance(value, list):
        sub = schema.get("items") if isinstance(schema.get("items"), dict) else None
        return [apply_defaults(v, sub) if sub else copy.deepcopy(v) for v in value]
    if (
        isinstance(value, float)
        and not isinstance(value, bool)
        and value.is_integer()
        and (schema.get("type") == "integer" or schema.get("x-kubernetes-int-or-string"))
    ):
        return int(value)
    return value


def drop_nulls(value: Any, schema: dict, path: tuple = (), dropped: list[tuple] | None = None):
    """A copy of ``value`` without ``null`` values of non-nullable fields (the apiserver prunes them),
    and the list of their paths."""
    if dropped is None:
        dropped = []
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            sub = _child_schema(schema, k) if isinstance(schema, dict) else None
            if v is None and isinstance(sub, dict) and not sub.get("nullable"):
                dropped.append(path + (k,))
                continue
            out[k] = drop_nulls(v, sub, path + (k,), dropped)[0] if isinstance(sub, dict) else v
        return out, dropped
    if isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        return [drop_nulls(v, schema["items"], path + (i,), dropped)[0] for i, v in enumerate(value)], dropped
    return value, dropped


def walk(value: Any, schema: dict, path: tuple = ()) -> Iterator[tuple[tuple, Any, dict]]:
    """(path, value, schema) for every value that has a schema, parents first."""
    if not isinstance(schema, dict):
        return
    yield path, value, schema
    if isinstance(value, dict):
        for k, v in value.items():
            sub = _child_schema(schema, k)
            if sub is not None:
                yield from walk(v, sub, path + (k,))
    elif isinstance(value, list):
        sub = schema.get("items")
        if isinstance(sub, dict):
            for i, v in enumerate(value):
                yield from walk(v, sub, path + (i,))


def list_key_problems(value: Any, schema: dict) -> list[tuple[tuple, str]]:
    """Duplicate keys in ``x-kubernetes-list-type: map`` lists and duplicates in ``set`` lists."""
    out = []
    for path, v, s in walk(value, schema):
        kind = s.get("x-kubernetes-list-type")
        if not isinstance(v, list) or kind not in ("map", "set"):
            continue
        seen: dict[Any, int] = {}
        for i, item in enumerate(v):
            if kind == "map":
                keys = s.get("x-kubernetes-list-map-keys") or []
                if not isinstance(item, dict):
                    continue
                key = tuple(_hashable(item.get(k)) for k in keys)
                shown = ", ".join(f"{k}={item.get(k)!r}" for k in keys)
            else:
                key = _hashable(item)
                shown = repr(item)
            if key in seen:
                out.append(
                    (
                        path + (i,),
                        f"duplicate entry {shown} (also item {seen[key]}); this list is keyed, entries must be unique",
                    )
                )
            else:
                seen[key] = i
    return out


def _hashable(v):
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    return (type(v).__name__, v)


# --- CEL --------------------------------------------------------------------------------------------

_PROGRAMS: dict[str, Any] = {}


def _program(rule: str):
    if rule not in _PROGRAMS:
        import celpy

        env = celpy.Environment()
        _PROGRAMS[rule] = env.program(env.compile(rule))
    return _PROGRAMS[rule]


@dataclass
class CelOutcome:
    path: tuple
    rule: str
    message: str
    passed: bool | None  # None: could not be evaluated
    error: str = ""


def evaluate_cel(value: Any, schema: dict) -> tuple[list[CelOutcome], int, int]:
    """Evaluate every create-time ``x-kubernetes-validations`` rule on the defaulted ``value``.

    Returns (outcomes, evaluated, skipped_transition).  Rules mentioning ``oldSelf`` are
    transition rules (update only) and are skipped.  At the root, ``self.metadata`` holds only
    ``name`` and ``generateName``, as the apiserver exposes it to CEL.
    """
    import celpy

    outcomes: list[CelOutcome] = []
    evaluated = skipped = 0
    for path, v, s in walk(value, schema):
        rules = s.get("x-kubernetes-validations") or []
        if not rules:
            continue
        subject = v
        if path == () and isinstance(v, dict):
            meta = as_dict(v.get("metadata"))
            subject = dict(v)
            subject["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
        for rule in rules:
            text = str(rule.get("rule", ""))
            message = str(rule.get("message") or f"failed rule: {text}")
            if "oldSelf" in text:
                skipped += 1
                continue
            evaluated += 1
            try:
                result = _program(text).evaluate({"self": celpy.json_to_cel(subject)})
            except Exception as exc:  # noqa: BLE001 - cel-python raises many types
                outcomes.append(CelOutcome(path, text, message, None, f"{type(exc).__name__}: {exc}"))
                continue
            if isinstance(result, bool) or type(result).__name__ == "BoolType":
                outcomes.append(CelOutcome(path, text, message, bool(result)))
            else:
                outcomes.append(CelOutcome(path, text, message, None, str(result)))
    return outcomes, evaluated, skipped
