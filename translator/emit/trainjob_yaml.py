"""TrainJob YAML: one document per plan, ``---`` between them.

Safe by construction: the object is plain dicts/lists/str/int (:mod:`translator.emit.trainjob`) and
is written by PyYAML's safe dumper, so every string is a scalar that loads back to itself.  On top of
PyYAML's own quoting, strings that a Kubernetes YAML decoder (sigs.k8s.io/yaml, YAML 1.1 rules plus
Go's number syntax) would not read as strings are single-quoted: ``y``/``n``, ``0o17``, ``1_000``,
``.5``... Multi-line strings (the package-install script) are written as literal blocks when YAML
allows it, so they stay readable.

The optional findings block is a run of ``#`` comment lines; every character that could end a
comment line (any line break YAML 1.1 knows, other control characters) is replaced first.
"""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Sequence

from translator.emit.trainjob import trainjob_dict

# Strings a Go YAML decoder may read as a number or bool although PyYAML (YAML 1.1) does not.
_GO_NUMBERISH = re.compile(r"^[-+]?(0[xXoObB][0-9a-fA-F_.pP+-]*|[0-9_]*\.?[0-9_]+([eE][-+]?[0-9_]+)?|[0-9_]+\.)$")
_GO_BOOLISH = {"y", "Y", "n", "N"}
# YAML 1.1 line breaks besides \n and \r, and the BOM: only safe inside double quotes (escaped)
_YAML_SPECIAL_BREAKS = "\x85\u2028\u2029\ufeff\r"


_DUMPERS: dict[bool, type] = {}
_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_INT, _BOOL, _NULL = "tag:yaml.org,2002:int", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"


def _str_style(value: str):
    """The scalar style of a string (None: PyYAML chooses plain or quoted)."""
    # Every character of _YAML_SPECIAL_BREAKS is non-printable, so "a non-printable character other
    # than \n" covers them too; str.isprintable() runs in C over the whole string.
    if not value.isprintable() and not value.replace("\n", "").isprintable():
        return '"'  # escapes everything; PyYAML would write NEL/LS/PS raw in other styles
    if "\n" in value:
        return "|"  # PyYAML falls back to double quotes when a block cannot hold it
    if _GO_NUMBERISH.match(value) or value in _GO_BOOLISH:
        return "'"
    return None


def _dumper(fast: bool = True):
    """The Dumper class, built once per process. fast: libyaml's emitter when PyYAML has it (about 5x
    faster, same output: the representer below decides every string's style); it cannot write lone
    surrogates, for which `dump` falls back to the pure-Python emitter (which escapes them)."""
    if fast in _DUMPERS:
        return _DUMPERS[fast]
    import yaml

    base = getattr(yaml, "CSafeDumper", yaml.SafeDumper) if fast else yaml.SafeDumper

    from yaml.nodes import MappingNode, ScalarNode, SequenceNode

    resolved: dict[str, str] = {}  # plain scalar -> implicit tag: the resolver's regexps, once per value
    assert not base.yaml_path_resolvers, "the resolver shortcuts below assume no path resolvers"

    class Dumper(base):  # type: ignore[valid-type,misc]  # base chosen at run time (libyaml's or PyYAML's)
        def ignore_aliases(self, data):  # never emit &id001 anchors for shared dicts
            return True

        def represent_data(self, data):
            """The nodes SafeRepresenter builds for str/dict/list/int/bool/None (no aliases, block
            style: `default_flow_style=False`), without its per-object type dispatch; anything
            else goes the usual way."""
            t = type(data)
            if t is str:
                return ScalarNode(_STR, data, style=_str_style(data))
            if t is dict:
                rep = self.represent_data
                return MappingNode(_MAP, [(rep(k), rep(v)) for k, v in data.items()], flow_style=False)
            if t is list:
                rep = self.represent_data
                return SequenceNode(_SEQ, [rep(x) for x in data], flow_style=False)
            if t is int:
                return ScalarNode(_INT, str(data))
            if t is bool:
                return ScalarNode(_BOOL, "true" if data else "false")
            if data is None:
                return ScalarNode(_NULL, "null")
            return super().represent_data(data)

        def resolve(self, kind, value, implicit):
            # BaseResolver.resolve without path resolvers (the safe dumper has none): a scalar's
            # implicit tag depends on its text only, every other node gets the default tag
            if kind is ScalarNode:
                if not implicit[0]:
                    return self.DEFAULT_SCALAR_TAG
                tag = resolved.get(value)
                if tag is None:
                    tag = super().resolve(kind, value, implicit)
                    if len(resolved) > 65536:
                        resolved.clear()
                    resolved[value] = tag
                return tag
            return self.DEFAULT_SEQUENCE_TAG if kind is SequenceNode else self.DEFAULT_MAPPING_TAG

        def descend_resolver(self, current_node, current_index):
            return None  # path resolvers only

        def ascend_resolver(self):
            return None

    def represent_str(dumper, value):
        return dumper.represent_scalar(_STR, value, style=_str_style(value))

    Dumper.add_representer(str, represent_str)
    _DUMPERS[fast] = Dumper
    return Dumper


def sanitize_comment(text: str) -> str:
    """One comment line's text: every non-printable character (line breaks included) becomes a space."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if (ch.isprintable() or ch == "\t") else " " for ch in text).replace("\t", " ")


def findings_comment_lines(plan) -> list:
    lines = []
    if plan.findings:
        lines.append(sanitize_comment(f"slurm2kf findings for {plan.source_path}:"))
    for f in plan.findings:
        where = f"line {f.line}" if f.line is not None else "script"
        text = f"{f.code} {f.severity} {where}: {f.message}"
        if f.suggestion:
            text += f" (fix: {f.suggestion})"
        lines.append(sanitize_comment(text))
    return ["# " + line if line else "#" for line in lines]


def dump(obj) -> str:
    import yaml

    options: dict[str, Any] = dict(sort_keys=False, default_flow_style=False, allow_unicode=True, width=100)
    try:
        return yaml.dump(obj, Dumper=_dumper(True), **options)
    except UnicodeEncodeError:
        return yaml.dump(obj, Dumper=_dumper(False), **options)


def render(plans: Sequence, *, findings_comment: bool = False) -> str:
    """Multi-document TrainJob YAML for ``plans`` (each with its findings as comments if asked)."""
    docs = []
    for plan in plans:
        text = dump(trainjob_dict(plan))
        if findings_comment:
            comment = findings_comment_lines(plan)
            if comment:
                text = "\n".join(comment) + "\n" + text
        docs.append(text)
    return "---\n".join(docs)
