"""The profile schema as small validators over PyYAML nodes, so every error names its key path and line.

A validator is called with a composed YAML node and its key path; it records problems in a `Checker`
and returns a plain value (`Obj`/`Entries`/`Items` keep the line of each key for the profile's
findings). `None` from a YAML `null` means "not filled in" everywhere except the required keys.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from translator.diagnostics import ERROR, Diagnostic
from translator.profile import kube_names
from translator.profile.patterns import PatternError, compile_pattern

# Load-time codes (documented in docs/codes.md, codes-F).
F_SYNTAX = "F550"  # not YAML / not one document / unreadable
F_UNKNOWN_KEY = "F551"
F_TYPE = "F552"
F_PATTERN = "F553"
F_NAME = "F554"  # a Kubernetes name or key that the API server would reject
F_QUANTITY = "F555"
F_REQUIRED = "F556"
F_VERSION = "F557"  # apiVersion / kind
F_VALUE = "F558"  # a value outside its allowed set, or keys that conflict
F_DUPLICATE = "F559"
F_NOT_FOUND = "F560"

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"

INVALID = object()  # returned by a validator after it reported a problem


def _line(node) -> int:
    return node.start_mark.line + 1


def _describe(node) -> str:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    kind = {_STR: "string", _INT: "integer", _FLOAT: "number", _BOOL: "boolean", _NULL: "null"}.get(node.tag, "value")
    text = node.value if len(node.value) <= 40 else node.value[:37] + "..."
    return f"{kind} `{text}`" if node.tag != _NULL else "null"


def child_path(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_-]+", key):
        return f"{path}.{key}" if path else key
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'{path}["{escaped}"]'


class Checker:
    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def error(self, code: str, path: str, node_or_line, message: str, suggestion: str | None = None):
        line = node_or_line if isinstance(node_or_line, int) or node_or_line is None else _line(node_or_line)
        where = f"{path}: " if path else "top level: "
        self.diagnostics.append(Diagnostic(ERROR, code, where + message, line, suggestion))
        return INVALID


class Obj(dict):
    """A validated mapping with the line of the mapping and of each key."""

    def __init__(self, line: int, path: str):
        super().__init__()
        self.line = line
        self.path = path
        self.key_lines: dict[str, int] = {}


@dataclass
class Entry:
    key: str
    value: Any
    line: int
    path: str


@dataclass
class Item:
    value: Any
    line: int
    path: str


Validator = Callable[[Any, str, Checker], Any]


def _is_null(node) -> bool:
    import yaml

    return isinstance(node, yaml.ScalarNode) and node.tag == _NULL


def _scalar(node, path, chk, tags, expected) -> Any:
    import yaml

    if not isinstance(node, yaml.ScalarNode) or node.tag not in tags:
        hint = ""
        if expected == "a string" and isinstance(node, yaml.ScalarNode) and node.tag in (_INT, _FLOAT, _BOOL):
            hint = f' (quote it: "{node.value}")'
        return chk.error(F_TYPE, path, node, f"expected {expected}, got {_describe(node)}{hint}")
    return node.value


def string(check: Callable[[str], str | None] | None = None, code: str = F_NAME) -> Validator:
    def validate(node, path, chk):
        if _is_null(node):
            return None
        value = _scalar(node, path, chk, (_STR,), "a string")
        if value is INVALID:
            return INVALID
        if check is not None:
            problem = check(value)
            if problem:
                return chk.error(code, path, node, problem)
        return value

    return validate


def one_of(*choices: str) -> Validator:
    def validate(node, path, chk):
        if _is_null(node):
            return None
        value = _scalar(node, path, chk, (_STR,), "a string")
        if value is INVALID:
            return INVALID
        if value not in choices:
            close = difflib.get_close_matches(value, choices, n=1)
            sugg = f"did you mean `{close[0]}`?" if close else None
            return chk.error(F_VALUE, path, node, f"`{value}` is not one of: {', '.join(choices)}", sugg)
        return value

    return validate


def integer(minimum: int | None = None, maximum: int | None = None) -> Validator:
    def validate(node, path, chk):
        if _is_null(node):
            return None
        value = _scalar(node, path, chk, (_INT,), "an integer")
        if value is INVALID:
            return INVALID
        try:
            number = int(value.replace("_", ""), 0)
        except ValueError:
            return chk.error(F_TYPE, path, node, f"expected an integer, got `{value}`")
        if minimum is not None and number < minimum:
            return chk.error(F_VALUE, path, node, f"must be at least {minimum}, got {number}")
        if maximum is not None and number > maximum:
            return chk.error(F_VALUE, path, node, f"must be at most {maximum}, got {number}")
        return number

    return validate


def boolean() -> Validator:
    def validate(node, path, chk):
        if _is_null(node):
            return None
        value = _scalar(node, path, chk, (_BOOL,), "true or false")
        if value is INVALID:
            return INVALID
        return value.lower() in ("true", "yes", "on", "y")

    return validate


def quantity() -> Validator:
    """A Kubernetes quantity; unquoted integers are accepted and kept as strings."""

    def validate(node, path, chk):
        import yaml

        if _is_null(node):
            return None
        if not isinstance(node, yaml.ScalarNode) or node.tag not in (_STR, _INT, _FLOAT):
            return chk.error(F_TYPE, path, node, f"expected a quantity such as `64` or `512Gi`, got {_describe(node)}")
        text = node.value.strip()
        problem = kube_names.quantity_problem(text)
        if problem:
            return chk.error(F_QUANTITY, path, node, problem)
        return text

    return validate


def pattern() -> Validator:
    def validate(node, path, chk):
        value = _scalar(node, path, chk, (_STR,), "a name or pattern (string)")
        if value is INVALID:
            return INVALID
        try:
            return compile_pattern(value)
        except PatternError as exc:
            return chk.error(F_PATTERN, path, node, f"pattern `{value}`: {exc}")

    return validate


def patterns() -> Validator:
    """One pattern or a list of them."""
    single = pattern()

    def validate(node, path, chk):
        import yaml

        if _is_null(node):
            return None
        if isinstance(node, yaml.SequenceNode):
            out = []
            for i, item in enumerate(node.value):
                value = single(item, f"{path}[{i}]", chk)
                if value is not INVALID:
                    out.append(value)
            return tuple(out)
        value = single(node, path, chk)
        return INVALID if value is INVALID else (value,)

    return validate


def list_of(item: Validator, max_items: int | None = None) -> Validator:
    def validate(node, path, chk):
        import yaml

        if _is_null(node):
            return None
        if not isinstance(node, yaml.SequenceNode):
            return chk.error(F_TYPE, path, node, f"expected a list, got {_describe(node)}")
        if max_items is not None and len(node.value) > max_items:
            chk.error(F_VALUE, path, node, f"at most {max_items} items are allowed, got {len(node.value)}")
        out = []
        for i, sub in enumerate(node.value):
            value = item(sub, f"{path}[{i}]", chk)
            if value is not INVALID:
                out.append(Item(value, _line(sub), f"{path}[{i}]"))
        return out

    return validate


def mapping_of(key: Validator, value: Validator, key_is_pattern: bool = False) -> Validator:
    """A mapping with free keys; returns a list of Entry in file order (later duplicates are errors)."""

    def validate(node, path, chk):
        import yaml

        if _is_null(node):
            return None
        if not isinstance(node, yaml.MappingNode):
            return chk.error(F_TYPE, path, node, f"expected a mapping, got {_describe(node)}")
        out: list[Entry] = []
        seen: dict[str, int] = {}  # key -> line it is first written on
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode) or knode.tag == _NULL:
                chk.error(F_TYPE, path, knode, f"a key must be a string, got {_describe(knode)}")
                continue
            kpath = child_path(path, knode.value)
            if knode.value in seen:
                chk.error(F_DUPLICATE, kpath, knode, f"duplicate key (first written on line {seen[knode.value]})")
                continue
            seen[knode.value] = _line(knode)
            if knode.tag != _STR and not key_is_pattern:
                chk.error(F_TYPE, kpath, knode, f"a key must be a string, got {_describe(knode)} (quote it)")
                continue
            kval = key(_as_str_node(knode), kpath, chk)
            vval = value(vnode, kpath, chk)
            if kval is not INVALID and vval is not INVALID:
                out.append(Entry(kval, vval, _line(knode), kpath))
        return out

    return validate


def _as_str_node(node):
    """Partition names such as `2024` or `true` are names: treat any scalar key as a string."""
    import yaml

    if node.tag == _STR:
        return node
    return yaml.ScalarNode(_STR, node.value, node.start_mark, node.end_mark)


@dataclass
class Field:
    validator: Validator
    required: bool = False
    doc: str = ""


def obj(fields: dict[str, Field], check: Callable[[Obj, Checker], None] | None = None) -> Validator:
    def validate(node, path, chk):
        import yaml

        if _is_null(node):
            return None
        if not isinstance(node, yaml.MappingNode):
            return chk.error(F_TYPE, path, node, f"expected a mapping, got {_describe(node)}")
        out = Obj(_line(node), path)
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode) or knode.tag == _NULL:
                chk.error(F_TYPE, path, knode, f"a key must be a string, got {_describe(knode)}")
                continue
            name = knode.value
            kpath = child_path(path, name)
            if name in out.key_lines:
                chk.error(F_DUPLICATE, kpath, knode, f"duplicate key (first written on line {out.key_lines[name]})")
                continue
            out.key_lines[name] = _line(knode)
            spec = fields.get(name)
            if spec is None:
                close = difflib.get_close_matches(name, list(fields), n=1)
                sugg = f"did you mean `{close[0]}`?" if close else None
                chk.error(
                    F_UNKNOWN_KEY, kpath, knode, f"unknown key `{name}` (allowed here: {', '.join(fields)})", sugg
                )
                continue
            value = spec.validator(vnode, kpath, chk)
            if value is not INVALID:
                out[name] = value
        for name, spec in fields.items():
            if spec.required and name not in out.key_lines:
                chk.error(F_REQUIRED, child_path(path, name), node, "required key is missing")
            elif spec.required and out.get(name) is None and name in out.key_lines and name in out:
                chk.error(F_REQUIRED, child_path(path, name), out.key_lines[name], "must not be null")
        if check is not None:
            check(out, chk)
        return out

    return validate


def plain(value):
    """Strip the line bookkeeping (Obj/Entry/Item) from a validated value: dicts/lists in API form."""
    if isinstance(value, Obj):
        return {k: plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        out = []
        for v in value:
            if isinstance(v, Item):
                out.append(plain(v.value))
            elif isinstance(v, Entry):
                out.append((v.key, plain(v.value)))
            else:
                out.append(plain(v))
        return out
    return value
