"""TrainJob YAML: one document per plan, ``---`` between them (a batch-mode plan's TrainingRuntime first).

Safe by construction: the object is plain dicts/lists/str/int (:mod:`translator.emit.trainjob`) and
is written as PyYAML's safe dumper writes it, so every string is a scalar that loads back to itself
(`dump`: a direct writer for the TrainJob shape, PyYAML itself for anything that writer cannot prove
it renders byte for byte the same; see "The direct writer" below).  On top of
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

from translator.emit.trainjob import API_VERSION, KIND, SDK_PATCH_MANAGER, plan_parts, trainjob_dict
from translator.tables import keep

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
                    keep(resolved, value, tag, 65536)
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


_FINDING_TEXTS: list = [(None, [])]  # [(the findings tuple last asked about, their texts)], read at once


def finding_texts(findings) -> list[str]:
    """One comment line per finding (``P405 info line 8: message (fix: suggestion)``), sanitized. Both
    emitters write them, one after the other for the same plan: the texts of the last tuple are kept."""
    last, last_texts = _FINDING_TEXTS[0]
    if last is findings and type(findings) is tuple:
        return last_texts
    texts = []
    for f in findings:
        line = f.line
        suggestion = f.suggestion
        if line is not None:
            if suggestion:
                texts.append(f"{f.code} {f.severity} line {line}: {f.message} (fix: {suggestion})")
            else:
                texts.append(f"{f.code} {f.severity} line {line}: {f.message}")
        elif suggestion:
            texts.append(f"{f.code} {f.severity} script: {f.message} (fix: {suggestion})")
        else:
            texts.append(f"{f.code} {f.severity} script: {f.message}")
    if not " ".join(texts).isprintable():  # one test for all (the space is printable)
        texts = [sanitize_comment(text) for text in texts]
    _FINDING_TEXTS[0] = (findings, texts)
    return texts


def findings_comment_lines(plan) -> list:
    if not plan.findings:
        return []
    lines = [sanitize_comment(f"slurm2kf findings for {plan.source_path}:")]
    lines += finding_texts(plan.findings)
    return ["# " + line if line else "#" for line in lines]


def _findings_comment(plan) -> str:
    """``"\\n".join(findings_comment_lines(plan)) + "\\n"`` for a plan with findings: no line is empty
    (the first names the script, each finding's starts with its code and holds `: `)."""
    head = sanitize_comment(f"slurm2kf findings for {plan.source_path}:")
    return "# " + head + "\n# " + "\n# ".join(finding_texts(plan.findings)) + "\n"


def pyyaml_dump(obj) -> str:
    """``obj`` as PyYAML writes it with the Dumper above: the reference :func:`dump` must match."""
    import yaml

    options: dict[str, Any] = dict(sort_keys=False, default_flow_style=False, allow_unicode=True, width=100)
    try:
        return yaml.dump(obj, Dumper=_dumper(True), **options)
    except UnicodeEncodeError:
        return yaml.dump(obj, Dumper=_dumper(False), **options)


# --- The direct writer -------------------------------------------------------------------------------
# A TrainJob is a block mapping of str keys whose values are str/int/bool/None scalars, mappings and
# sequences of mappings or scalars. For that shape, with every string in printable ASCII (plus line
# breaks in literal blocks), the bytes PyYAML/libyaml write follow from a few rules, applied below:
#
# * a mapping's keys start at its indent; a nested mapping is indented by 2; a sequence in a mapping is
#   not indented (`- ` at the key's column); a mapping in a sequence starts on the `- ` line; empty
#   collections are `{}` / `[]`;
# * a string is plain unless YAML gives it another meaning (the resolver reads it as a bool, number,
#   null..., it starts with an indicator, has `: ` or ` #`, ends with `:` or a space, starts with a
#   space); then single-quoted (`'` doubled). `_str_style` adds the Go-numberish strings;
# * plain and single-quoted scalars are folded at a lone space (not the first or the last character)
#   once the column before it passes the width (100); the continuation is indented by 2 from the node;
# * a multi-line string is a literal block (`|`, `|-` when it has no final line break), its lines
#   indented by 2 from the node, empty lines left empty.
#
# Anything else (other characters, keys that are not simple, `|+`/indentation indicators, sequences
# in sequences, other types) raises _Fallback and the whole document goes through PyYAML.
# tests/test_emit_yaml_direct.py compares the two writers byte for byte.

_WIDTH = 100


class _Fallback(Exception):
    """The direct writer cannot prove it writes this document as PyYAML does."""


_SPACE_RUN = re.compile(" +")
# first characters that make a string non-plain in block context (PyYAML `analyze_scalar`)
_INDICATOR_FIRST = frozenset("#,[]{}&*!|>'\"%@`")
_RESOLVED: dict[str, bool] = {}  # string -> read back as a str when written plain (resolver result)
_RESOLVER: list = []  # [(PyYAML's Resolver, the first characters it has implicit resolvers for)]


def _resolver():
    if not _RESOLVER:
        from yaml.resolver import Resolver

        _RESOLVER.append((Resolver(), frozenset(k for k in Resolver.yaml_implicit_resolvers if k)))
    return _RESOLVER[0]


def _plain_is_str(value: str) -> bool:
    """Whether the plain scalar ``value`` reads back as a string (YAML 1.1 implicit resolvers)."""
    ok = _RESOLVED.get(value)
    if ok is None:
        from yaml.nodes import ScalarNode

        ok = _resolver()[0].resolve(ScalarNode, value, (True, False)) == _STR
        keep(_RESOLVED, value, ok, 65536)
    return ok


def _quoted(value: str) -> bool:
    """For a non-empty single-line printable-ASCII string: True when it must be single-quoted."""
    first = value[0]
    if first in _INDICATOR_FIRST or first == " " or value[-1] in ": " or ": " in value or " #" in value:
        return True
    if first in "-?:" and (len(value) == 1 or value[1] == " "):
        return True
    if first in "-." and (value.startswith("---") or value.startswith("...")):
        return True
    if first in _RESOLVER[0][1] and not _plain_is_str(value):
        return True
    return bool(first in "-+0123456789._yYnN" and (_GO_NUMBERISH.match(value) or value in _GO_BOOLISH))


def _fold(text: str, col: int, indent: int) -> str:
    """``text`` (already quoted/escaped) starting at column ``col``, folded as PyYAML folds it."""
    n = len(text)
    if col + n <= _WIDTH + 1:
        return text
    pieces = []
    seg = 0
    for m in _SPACE_RUN.finditer(text):
        st, en = m.span()
        if en - st == 1 and col + st - seg > _WIDTH and st and en != n:
            pieces.append(text[seg:st])
            seg = en
            col = indent
    if not pieces:
        return text
    pieces.append(text[seg:])
    return ("\n" + " " * indent).join(pieces)


_KEYS: dict[str, str] = {}


def _key(key) -> str:
    """A mapping key as written (a simple key: plain or single-quoted, never folded)."""
    out = _KEYS.get(key)
    if out is None:
        if type(key) is not str or not key or len(key) > 100 or not (key.isascii() and key.isprintable()):
            raise _Fallback
        out = "'" + key.replace("'", "''") + "'" if _quoted(key) else key
        keep(_KEYS, key, out, 4096)
    return out


_SCALARS: dict[str, str] = {}  # string -> ` value` unfolded (valid where it fits on the line)


def _string(value: str, col: int, indent: int) -> str:
    """`` value`` (with its leading space) as the scalar after a `key:` or `-` ending at column ``col``;
    ``indent``: the column of continuation lines."""
    if not value:
        return " ''"
    if value.isascii() and value.isprintable():
        if _quoted(value):
            text = value.replace("'", "''")
            out = " '" + _fold(text, col + 2, indent) + "'"
            short = len(text) + 3
        else:
            out = " " + _fold(value, col + 1, indent)
            short = len(value) + 1
        if short == len(out) and short <= 60:  # not folded: the same text wherever it fits
            keep(_SCALARS, value, out, 65536)
        return out
    return _literal(value, indent)


def _scalar(value, col: int, indent: int) -> str:
    """`` value`` for an int/bool/None/str (see `_string`)."""
    t = type(value)
    if t is str:
        out = _SCALARS.get(value)
        if out is not None and col + len(out) <= _WIDTH + 1:
            return out
        return _string(value, col, indent)
    if t is int:
        return " " + str(value)
    if t is bool:
        return " true" if value else " false"
    if value is None:
        return " null"
    raise _Fallback


_ASCII_PRINTABLE_NL = bytes(range(0x20, 0x7F)) + b"\n"


_LAST_LINES: list = ["", True]  # [the last long text checked, its answer]: both emitters check the same script


def ascii_printable_lines(text: str) -> bool:
    """Whether ``text`` is printable ASCII and line feeds only: ``text.isascii() and
    text.replace("\\n", "").isprintable()``, by deleting those bytes (several times faster on a script)."""
    last, answer = _LAST_LINES  # read at once
    if text is last:
        return answer
    answer = text.isascii() and not text.encode("ascii").translate(None, _ASCII_PRINTABLE_NL)
    if len(text) > 256:
        _LAST_LINES[:] = [text, answer]
    return answer


def _literal(value: str, indent: int) -> str:
    """A multi-line printable-ASCII string as a literal block (`|` or `|-`)."""
    if "\n" not in value or not ascii_printable_lines(value):
        raise _Fallback
    if value[0] in " \n" or value[-1] == " " or value.endswith("\n\n") or " \n" in value:
        raise _Fallback  # an indentation indicator, `|+`, or no block allowed: PyYAML decides
    if value[-1] == "\n":
        head, value = " |", value[:-1]
    else:
        head = " |-"
    pad = "\n" + " " * indent
    if "\n\n" not in value:  # no empty line: every line is indented
        return head + pad + value.replace("\n", pad)
    return head + "".join([pad + line if line else "\n" for line in value.split("\n")])


def _mapping(d: dict, indent: int, out: list, first: str) -> None:
    """The entries of a non-empty mapping at ``indent``; ``first``: the text before its first key."""
    pad = " " * indent
    for k, v in d.items():
        head = first + (_KEYS.get(k) or _key(k)) + ":"
        first = pad
        t = type(v)
        if t is str:
            r = _SCALARS.get(v)
            if r is None or len(head) + len(r) > _WIDTH + 1:
                r = _string(v, len(head), indent + 2)
            out.append(head + r + "\n")
        elif t is dict:
            if v:
                out.append(head + "\n")
                _mapping(v, indent + 2, out, pad + "  ")
            else:
                out.append(head + " {}\n")
        elif t is list:
            if v:
                out.append(head + "\n")
                _sequence(v, indent, out)
            else:
                out.append(head + " []\n")
        else:
            out.append(head + _scalar(v, len(head), indent + 2) + "\n")


def _sequence(items: list, indent: int, out: list) -> None:
    """A non-empty block sequence with its `-` at column ``indent``."""
    dash = " " * indent + "-"
    for v in items:
        t = type(v)
        if t is dict:
            if v:
                _mapping(v, indent + 2, out, dash + " ")
            else:
                out.append(dash + " {}\n")
        elif t is list:
            if v:
                raise _Fallback  # a sequence in a sequence
            out.append(dash + " []\n")
        else:
            out.append(dash + _scalar(v, indent + 1, indent + 2) + "\n")


def dump(obj) -> str:
    """One TrainJob document: what :func:`pyyaml_dump` writes, by the direct writer when it can."""
    if type(obj) is dict and obj:
        if not _RESOLVER:
            _resolver()
        out: list[str] = []
        try:
            _mapping(obj, 0, out, "")
        except _Fallback:
            pass
        else:
            return "".join(out)
    return pyyaml_dump(obj)


# --- The TrainJob's fixed frame ----------------------------------------------------------------------
# `plan_text` writes what `dump(trainjob_dict(plan))` writes without building the object: every key of
# the TrainJob shape and its indentation are constants here (the lines below), only the values and the
# user's keys (labels, annotations, resource names, pod patches) go through the direct writer's scalar
# and mapping functions. tests/test_emit_yaml_direct.py compares it with `dump(trainjob_dict(plan))`.


def _value(head: str, value: str, indent: int) -> str:
    """``head`` (``key:`` with its indentation) and the string ``value``, one line (or folded)."""
    r = _SCALARS.get(value)
    if r is None or len(head) + len(r) > _WIDTH + 1:
        r = _string(value, len(head), indent)
    return head + r + "\n"


_HEAD = f"apiVersion: {API_VERSION}\nkind: {KIND}\nmetadata:\n"
_PATCH_HEAD = (
    "  runtimePatches:\n"
    f"  - manager: {SDK_PATCH_MANAGER}\n"
    "    trainingRuntimeSpec:\n"
    "      template:\n"
    "        spec:\n"
    "          replicatedJobs:\n"
)
_JOB_FRAME = "\n            template:\n              spec:\n                template:\n                  spec:\n"
_POD_SPEC = " " * 20


def _plan_text(plan) -> str:
    """`plan_text` for the direct writer; raises _Fallback where it cannot prove the bytes."""
    if any(getattr(p, "annotations", None) for p in plan.patches):
        raise _Fallback  # pod template metadata (Kueue topology, translator/plan/topology.py): PyYAML writes it
    out = [_HEAD, _value("  name:", str(plan.name), 4)]
    if plan.namespace:
        out.append(_value("  namespace:", str(plan.namespace), 4))
    if plan.labels:
        labels = {str(k): str(v) for k, v in plan.labels}
        out.append("  labels:\n")
        _mapping(labels, 4, out, "    ")
    if plan.annotations:
        annotations = {str(k): str(v) for k, v in plan.annotations}
        out.append("  annotations:\n")
        _mapping(annotations, 4, out, "    ")
    out.append("spec:\n  runtimeRef:\n")
    out.append(_value("    name:", str(plan.runtime), 6))
    out.append(_value("    kind:", str(plan.runtime_kind), 6))
    # spec.trainer: its entries in trainer_dict's order, the key only when one of them is written
    at = len(out)
    if plan.image:
        out.append(_value("    image:", str(plan.image), 6))
    command, args, env, res, jobs, patch_key = plan_parts(plan)
    if command:
        out.append("    command:\n")
        for v in command:
            out.append(_value("    -", v, 6))
    if args:
        out.append("    args:\n")
        for v in args:
            out.append(_value("    -", v, 6))
    if env:
        out.append("    env:\n")
        get = _SCALARS.get
        for name, var in env.items():  # as env_entries writes them
            r = get(name)
            if r is None or len(r) > _WIDTH + 1 - 11:
                r = _string(name, 11, 8)
            secret = getattr(var, "secret_name", None)
            if secret:
                out.append("    - name:" + r + "\n      valueFrom:\n        secretKeyRef:\n")
                out.append(_value("          name:", str(secret), 12))
                out.append(_value("          key:", str(var.secret_key), 12))
            else:
                value = str(var.value)
                q = get(value)
                if q is None or len(q) > _WIDTH + 1 - 12:
                    q = _string(value, 12, 8)
                out.append("    - name:" + r + "\n      value:" + q + "\n")
    if plan.num_nodes:
        out.append(f"    numNodes: {int(plan.num_nodes)}\n")
    if res:
        per_node: list[str] = []
        _mapping(res, 8, per_node, " " * 8)
        body = "".join(per_node)  # requests and limits are the same map at the same indent
        out.append("    resourcesPerNode:\n      requests:\n" + body + "      limits:\n" + body)
    if len(out) > at:
        out.insert(at, "  trainer:\n")
    if plan.active_deadline_seconds:
        out.append(f"  activeDeadlineSeconds: {int(plan.active_deadline_seconds)}\n")
    if jobs:
        text = _PATCH_TEXTS.get(patch_key) if patch_key is not None else None
        if text is None:
            text = _patches_text(jobs)
            if patch_key is not None:
                keep(_PATCH_TEXTS, patch_key, text, 256)
        out.append(text)
    return "".join(out)


_PATCH_TEXTS: dict[tuple, str] = {}  # trainjob.patches_key -> spec.runtimePatches as written


def _patches_text(jobs: dict) -> str:
    """spec.runtimePatches: one RuntimePatch holding every replicated job's PodSpecPatch."""
    out = [_PATCH_HEAD]
    for job, spec in jobs.items():
        r = _SCALARS.get(job)
        if r is None or len(r) > _WIDTH + 1 - 17:
            r = _string(job, 17, 14)
        out.append("          - name:" + r + _JOB_FRAME)
        _mapping(spec, 20, out, _POD_SPEC)  # never empty (patches_by_job leaves those out)
    return "".join(out)


def plan_text(plan) -> str:
    """The TrainJob YAML document of ``plan``: ``dump(trainjob_dict(plan))``, written from the plan."""
    if not _RESOLVER:
        _resolver()
    try:
        return _plan_text(plan)
    except _Fallback:
        return dump(trainjob_dict(plan))


def render(plans: Sequence, *, findings_comment: bool = False) -> str:
    """Multi-document TrainJob YAML for ``plans`` (each with its findings as comments if asked)."""
    docs = []
    for plan in plans:
        text = plan_text(plan)
        if plan.runtime_document is not None:  # batch mode: its TrainingRuntime, created first (`kubectl apply`)
            text = dump(plan.runtime_document) + "---\n" + text
        if findings_comment and plan.findings:
            text = _findings_comment(plan) + text
        docs.append(text)
    return "---\n".join(docs)
