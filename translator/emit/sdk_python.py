"""Python for the released Kubeflow SDK (``kubeflow==0.5.0``) that submits the same TrainJob as the YAML.

One ``client.train(...)`` call per plan, with ``CustomTrainerContainer`` and options
(``Name``, ``Labels``, ``Annotations``, ``TrainerCommand``, ``TrainerArgs``, ``ActiveDeadlineSeconds``,
one ``RuntimePatch``).  All values come from :mod:`translator.emit.trainjob`, the same functions the
YAML emitter uses, so the two outputs cannot drift.

Injection safety: every value from the script is written with :func:`repr` of a ``str``/``int`` (or
of a dict/list of them), which Python reads back as exactly that constant; comments are single lines
with every non-printable character replaced.  Pitfalls of SDK 0.5 avoided here: quantities are
strings (numbers would become floats), env values are strings, options that the SDK drops when
empty are not written, dicts inside patches use the API's camelCase keys (the SDK's pydantic
round-trip drops snake_case keys), and all patches share ONE ``RuntimePatch`` (each gets the SDK's
fixed manager, two would collide).  The code does not wait for the job (``wait_for_job_status``
needs a live cluster); it prints the job name.
"""

from __future__ import annotations

import pprint
import re
from bisect import bisect_left
from collections.abc import Sequence

from translator.emit.trainjob import patch_job_order, plan_parts, pod_metadata_by_job, resource_name
from translator.emit.trainjob_yaml import ascii_printable_lines, finding_texts, sanitize_comment
from translator.tables import keep

_INDENT = "    "


def _lit(value) -> str:
    """A Python literal for a str/int/bool/None or a dict/list of them, one line."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:  # exact types: repr is the literal
        return repr(value)
    if t is list:
        return "[" + ", ".join([repr(v) if type(v) is str else _lit(v) for v in value]) + "]"
    if t is dict:
        if _plain_tree(value):  # then the literal is the dict's repr
            return repr(value)
        return "{" + ", ".join([_key_lit(k) + ": " + _lit(v) for k, v in value.items()]) + "}"
    return _lit_any(value)


def _plain_tree(value) -> bool:
    """Whether ``value`` is made of dicts with str keys, lists, and exact str/int/bool/None only: then
    ``repr(value)`` is what `_lit` writes (same brackets, `: ` and `, ` separators, str/int repr)."""
    t = type(value)
    if t is dict:
        for k, v in value.items():
            if type(k) is not str or not (type(v) is str or _plain_tree(v)):
                return False
        return True
    if t is list:
        for v in value:
            if not (type(v) is str or _plain_tree(v)):
                return False
        return True
    return t is str or t is int or t is bool or value is None


def _key_lit(key) -> str:
    return repr(key) if type(key) is str else _lit(str(key))


def _lit_any(value) -> str:
    """`_lit` for any value: subclasses (enums, str subclasses) are written as their base type."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, str):
        return repr(str(value))
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_lit(str(k))}: {_lit(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_lit(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(float(value))
    return repr(str(value))


def _comment(text: str) -> str:
    return "# " + sanitize_comment(text)


def _comment_lines(text: str, width: int = 96) -> list[str]:
    """A long comment wrapped into several ``#`` lines (continuations indented)."""
    return ["# " + line for line in _wrap(sanitize_comment(text), width, "  ") or [""]]


def _comment_text(text: str, depth: int, clean: bool = False) -> str:
    """`_comment_lines(text)` at ``depth``, as one text (``clean``: ``text`` is sanitized already)."""
    prefix = _INDENT * depth + "# "
    return prefix + ("\n" + prefix).join(_wrap(text if clean else sanitize_comment(text), 96, "  ") or [""])


def _finding_block(text: str) -> str:
    """`_comment_text` of a sanitized finding text inside main()."""
    n = len(text)
    if n and text[-1] != " ":
        if n <= 96:
            return _FINDING_PREFIX + text
        if text[0] != " " and "  " not in text:
            cut = text.rfind(" ", 0, 97)
            if cut > 0 and n - cut <= 95:  # two lines (the most common length)
                return _FINDING_PREFIX + text[:cut] + _FINDING_SEP + text[cut + 1 :]
            return _FINDING_PREFIX + _FINDING_SEP.join(_word_lines(text))
    return _comment_text(text, 1, clean=True)


_FINDING_PREFIX = _INDENT + "# "  # a finding's first line in main(); the next ones start with _FINDING_SEP
_FINDING_SEP = "\n" + _FINDING_PREFIX + "  "


def _word_lines(text: str, width: int = 96, room: int = 94) -> list[str]:
    """`_wrap_words(text, width, indent)` without the indent (``room``: ``width - len(indent)``)."""
    n = len(text)
    if n <= width:
        return [text]
    cut = text.rfind(" ", 0, width + 1)
    if cut < 0:  # the first word alone is longer than the line
        cut = text.find(" ", width)
        if cut < 0:
            return [text]
    lines = [text[:cut]]
    pos = cut + 1
    while n - pos > room:
        cut = text.rfind(" ", pos, pos + room + 1)
        if cut < 0:
            cut = text.find(" ", pos + room)
            if cut < 0:
                break
        lines.append(text[pos:cut])
        pos = cut + 1
    lines.append(text[pos:])
    return lines


def _wrap(text: str, width: int, indent: str) -> list[str]:
    """Greedy word wrap of a sanitized comment (its only blank is the space), as
    `textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False,
    break_on_hyphens=False)` does it, with string searches instead of a list of chunks.

    Chunks are runs of spaces and runs of other characters. A line takes as many whole chunks as
    fit; a chunk longer than the line goes alone on its line when nothing else is there; the space
    run ending a line is dropped, and so is the one starting any line but the first."""
    n = len(text)
    if n <= width and (not n or text[-1] != " "):
        return [text] if text else []
    if text[0] != " " and text[-1] != " " and "  " not in text:
        return _wrap_words(text, width, indent)
    lines: list[str] = []
    pos = 0
    while pos < n:
        if lines and text[pos] == " ":  # a line never starts with the space run
            pos = n - len(text[pos:].lstrip(" "))
            if pos >= n:
                break
        room = width - (len(indent) if lines else 0)
        lim = pos + room
        if lim >= n:
            end = n
        elif (text[lim - 1] == " ") != (text[lim] == " "):  # a chunk boundary right at the limit
            end = lim
        elif text[lim - 1] == " ":  # inside a space run: back to its start
            end = len(text[pos:lim].rstrip(" ")) + pos
        else:  # inside a word: back to its start
            end = text.rfind(" ", pos, lim) + 1 or pos
        if end == pos:  # the next chunk alone is longer than the line
            if text[pos] == " ":
                end = n - len(text[pos:].lstrip(" "))
            else:
                k = text.find(" ", pos)
                end = n if k < 0 else k
        line_end = end
        if text[line_end - 1] == " ":  # drop the space run that ends the line
            line_end = len(text[pos:line_end].rstrip(" ")) + pos
        if line_end > pos:
            lines.append((indent if lines else "") + text[pos:line_end])
        pos = end
    return lines


def _wrap_words(text: str, width: int, indent: str) -> list[str]:
    """`_wrap` of a text of words between single spaces (no space at either end): each line ends at
    the last space that keeps it within the width, or after its first word when that alone is longer."""
    n = len(text)
    lines: list[str] = []
    pos = 0
    room = width
    while n - pos > room:
        cut = text.rfind(" ", pos, pos + room + 1)
        if cut < 0:  # the word alone is longer than the line
            cut = text.find(" ", pos + room)
            if cut < 0:
                break
        lines.append(indent + text[pos:cut] if lines else text[pos:cut])
        pos = cut + 1
        room = width - len(indent)
    lines.append(indent + text[pos:] if lines else text[pos:])
    return lines


_FIELD_LINES: list = [None, None, ()]  # [plan, {field: its entries' line tuples}, the fields sorted]


def _lines_of(plan, field: str) -> tuple:
    """All source lines recorded for ``field`` or for its sub-fields (``field.x``: the parents of a field
    are its prefixes up to a dot that is not its first character)."""
    last, groups, names = _FIELD_LINES  # read at once
    if last is not plan:  # group the source map once per plan, not once per field
        groups = {}
        for sm in getattr(plan, "source_map", ()) or ():
            got = groups.get(sm.field)
            if got is None:
                groups[sm.field] = [sm.lines]
            else:
                got.append(sm.lines)
        names = sorted(groups)
        _FIELD_LINES[:] = [plan, groups, names]
    own = groups.get(field)
    found = list(own) if own else []
    if field:
        prefix = field + "."
        i = bisect_left(names, prefix)  # the sub-fields sort together, right after `prefix`
        while i < len(names) and names[i].startswith(prefix):
            found += groups[names[i]]
            i += 1
    if len(found) == 1:
        [lines] = found
        if type(lines) is tuple and len(lines) == 1 and type(lines[0]) is int:  # one entry, one line: common
            return lines
    if not found:
        return ()
    nums = set().union(*found)
    for n in nums:
        if type(n) is not int:  # recorded lines are ints; anything else is left out, as ever
            nums = {int(n) for n in nums if isinstance(n, int)}
            break
    return tuple(sorted(nums))


def _where(plan, field: str) -> str:
    lines = _lines_of(plan, field)
    if not lines:
        return ""
    if len(lines) == 1:
        return f"  # line {lines[0]}"
    return "  # lines " + ", ".join(map(str, lines))


_PAD = tuple(_INDENT * depth for depth in range(32))  # the indentation of each depth, built once


class _Writer:
    """The lines of the file; an entry may hold several lines (the text is the entries joined by `\\n`)."""

    __slots__ = ("lines",)

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, depth: int, text: str) -> None:
        self.lines.append(((_PAD[depth] if depth < 32 else _INDENT * depth) + text) if text else "")


# a str item of a list longer than this and holding a line break is written one line per literal
_SCRIPT_ITEM = 60
_LINE_PIECES = re.compile(r"[^\n]*\n|[^\n]+")  # split after `\n` only, as bash reads lines


def _list_block(w: _Writer, depth: int, head: str, items: Sequence, tail: str = ",") -> None:
    """``head[...]tail`` on one line when it fits, else one item per line."""
    if type(items) is list and all(type(x) is str for x in items):
        _str_list_block(w, depth, head, items, tail)
        return
    pad = _PAD[depth] if depth < 32 else _INDENT * depth
    lits = None
    # a literal is at least as long as its strings: a longer list never fits, skip writing it out
    if sum(len(x) for x in items if isinstance(x, str)) <= 100:
        lits = [_lit(x) for x in items]  # each item's literal: `_lit` of the list joins them
        one_line = head + "[" + ", ".join(lits) + "]"
        cut = tail.find("  #")
        shown = tail if cut < 0 else tail[:cut]  # the line's length is checked without its comment
        if len(pad) + len(one_line) + len(shown) <= 100 and "\n" not in one_line and "\n" not in shown:
            w.lines.append(pad + one_line + tail)
            return
    inner = pad + _INDENT
    out = [pad + head + "["]
    for i, item in enumerate(items):
        if isinstance(item, str) and "\n" in item and len(item) > _SCRIPT_ITEM:
            # a script: one literal per line, joined by Python's implicit concatenation
            out.append(inner + "(")
            out.extend([inner + _INDENT + _lit(piece) for piece in _LINE_PIECES.findall(item)])
            out.append(inner + "),")
        else:
            out.append(inner + (lits[i] if lits is not None else _lit(item)) + ",")
    out.append(pad + "]" + tail)
    w.lines.append("\n".join(out))


def _line_literals(text: str, sep: str) -> str:
    """``repr`` of each line of ``text`` (each piece of `_LINE_PIECES`, its `\\n` included), joined by
    ``sep``. In a printable text, the repr of a line without `'` is the line in single quotes with its
    backslashes doubled: a run of such lines is written in one step; each line with a `'` goes through
    repr (which picks its quotes)."""
    if not (ascii_printable_lines(text) or text.replace("\n", "").isprintable()):
        return sep.join([repr(piece) for piece in _LINE_PIECES.findall(text)])
    inner = "\\n'" + sep + "'"
    out = []
    n = len(text)
    pos = 0
    quote = text.find("'")
    while quote >= 0:
        start = text.rfind("\n", pos, quote) + 1 or pos  # the line holding it
        end = text.find("\n", quote) + 1 or n
        if start > pos:  # whole lines before it, each ending with `\n`
            out.append("'" + text[pos : start - 1].replace("\\", "\\\\").replace("\n", inner) + "\\n'")
        out.append(repr(text[start:end]))
        pos = end
        quote = text.find("'", pos)
    if pos < n:
        rest = text[pos:].replace("\\", "\\\\")
        if rest[-1] == "\n":
            out.append("'" + rest[:-1].replace("\n", inner) + "\\n'")
        else:
            out.append("'" + rest.replace("\n", inner) + "'")
    return sep.join(out)


def _str_list_block(w: _Writer, depth: int, head: str, items: list[str], tail: str) -> None:
    """`_list_block` for a list of exact strs."""
    pad = _PAD[depth] if depth < 32 else _INDENT * depth
    if sum(map(len, items)) <= 100:
        lit = "[" + ", ".join([repr(x) for x in items]) + "]"
        cut = tail.find("  #")
        shown = tail if cut < 0 else tail[:cut]  # the line's length is checked without its comment
        if len(pad) + len(head) + len(lit) + len(shown) <= 100 and "\n" not in head and "\n" not in shown:
            w.lines.append(pad + head + lit + tail)
            return
    inner = pad + _INDENT
    out = [pad + head + "["]
    for item in items:
        if len(item) > _SCRIPT_ITEM and "\n" in item:
            piece_pad = "\n" + inner + _INDENT
            out.append(inner + "(" + piece_pad + _line_literals(item, piece_pad))
            out.append(inner + "),")
        else:
            out.append(inner + repr(item) + ",")
    out.append(pad + "]" + tail)
    w.lines.append("\n".join(out))


def _dict_call(w: _Writer, depth: int, func: str, mapping: dict[str, str]) -> None:
    one_line = f"{func}({_lit(mapping)}),"
    if len(_INDENT * depth + one_line) <= 100 and "\n" not in one_line:
        w.add(depth, one_line)
        return
    w.add(depth, f"{func}({{")
    for k, v in mapping.items():
        w.add(depth + 1, f"{_lit(k)}: {_lit(v)},")
    w.add(depth, "}),")


_PATCH_FRAMES: dict[int, tuple[str, str, str, str, str]] = {}


def _patch_frame(d: int) -> tuple[str, str, str, str, str]:
    """The fixed lines of a RuntimePatch at depth ``d``: (its opening, a job's first line, the lines between
    a job's name and its PodSpecPatch fields, a job's closing, the patch's closing), each built once."""
    frame = _PATCH_FRAMES.get(d)
    if frame is None:

        def block(*lines: tuple[int, str]) -> str:
            return "\n".join(_INDENT * depth + text for depth, text in lines)

        b = d + 5
        frame = (
            block(
                (d, "RuntimePatch("),
                (d + 1, "training_runtime_spec=TrainingRuntimeSpecPatch("),
                (d + 2, "template=JobSetTemplatePatch("),
                (d + 3, "spec=JobSetSpecPatch("),
                (d + 4, "replicated_jobs=["),
            ),
            block((b, "ReplicatedJobPatch(")),
            block(
                (b + 1, "template=JobTemplatePatch("),
                (b + 2, "spec=JobSpecPatch("),
                (b + 3, "template=PodTemplatePatch("),
                (b + 4, "spec=PodSpecPatch("),
            ),
            block((b + 4, "),"), (b + 3, "),"), (b + 2, "),"), (b + 1, "),"), (b, "),")),
            block((d + 4, "],"), (d + 3, "),"), (d + 2, "),"), (d + 1, "),"), (d, "),")),
        )
        _PATCH_FRAMES[d] = frame
    return frame


def _runtime_patch(w: _Writer, depth: int, jobs: dict[str, dict], used: set, meta: dict | None = None) -> None:
    """One RuntimePatch option: every job's PodSpecPatch and, in ``meta``, its pod template metadata (the
    order of trainjob.patch_job_order; an empty PodSpecPatch() is dropped by the SDK as the YAML leaves it out)."""
    used.update(_PATCH_CLASSES)
    d = depth
    opening, job_head, job_body, job_tail, closing = _patch_frame(d)
    lines = w.lines
    add = lines.append
    b = d + 5
    s = b + 5
    name_pad = _pad(b + 1)
    pad, pad1, pad2 = _pad(s), _pad(s + 1), _pad(s + 2)
    add(opening)
    meta = meta or {}
    cut = job_body.rindex("\n") + 1  # before `spec=PodSpecPatch(`
    for job in patch_job_order(jobs, meta) if meta else jobs:
        spec = jobs.get(job, {})
        body = job_body
        if job in meta:
            body = job_body[:cut] + _pad(b + 4) + "metadata=" + _lit(meta[job]) + ",\n" + job_body[cut:]
        add(job_head + "\n" + name_pad + "name=" + _lit(job) + ",\n" + body)
        if "serviceAccountName" in spec:
            add(f"{pad}service_account_name={_lit(spec['serviceAccountName'])},")
        if "volumes" in spec:
            _list_block(w, s, "volumes=", spec["volumes"])
        if "containers" in spec:
            used.add("ContainerPatch")
            add(pad + "containers=[")
            for c in spec["containers"]:
                add(f"{pad1}ContainerPatch(\n{pad2}name={_lit(c['name'])},")
                _list_block(w, s + 2, "volume_mounts=", c["volumeMounts"])
                add(pad1 + "),")
            add(pad + "],")
        if "imagePullSecrets" in spec:
            add(f"{pad}image_pull_secrets={_lit(spec['imagePullSecrets'])},")
        if "nodeSelector" in spec:
            add(f"{pad}node_selector={_lit(spec['nodeSelector'])},")
        if "affinity" in spec:
            add(f"{pad}affinity={_lit(spec['affinity'])},")
        if "tolerations" in spec:
            _list_block(w, s, "tolerations=", spec["tolerations"])
        add(job_tail)
    add(closing)


def _pad(depth: int) -> str:
    return _PAD[depth] if depth < 32 else _INDENT * depth


_CALL_END = "\n".join([_PAD[2] + "],", _PAD[1] + ")", _PAD[1] + 'print(f"submitted TrainJob {job_name}")'])
# inside main(): the call at depth 1, its keywords at 2, CustomTrainerContainer's and the options at 3
_P1, _P2, _P3, _P4 = _PAD[1:5]
_CALL_HEAD = f"{_P1}job_name = client.train(\n{_P2}runtime="
_TRAINER_HEAD = f",\n{_P2}trainer=CustomTrainerContainer(\n{_P3}image="
_OPTIONS_HEAD = f"{_P2}),\n{_P2}options=[\n{_P3}Name("


def _train_call(w: _Writer, plan, index: int, total: int, used: set, own_client: bool) -> None:
    # d = 1: inside main(); _CALL_END and _finding_block are written for this depth
    lines = w.lines
    add = lines.append
    title = f"TrainJob {index + 1} of {total}" if total > 1 else "The TrainJob"
    src = sanitize_comment(plan.source_path)
    if plan.array_index is not None:
        title += f" (array index {plan.array_index})"
    add(_P1 + _comment(f"{title}, converted from {src}"))
    if plan.findings:
        add(_P1 + "# Findings (review these before submitting):")
        lines.extend([_finding_block(text) for text in finding_texts(plan.findings)])
    if own_client:  # the plans target different namespaces: one client each
        if plan.namespace:
            used.add("KubernetesBackendConfig")
            add(f"{_P1}client = TrainerClient(KubernetesBackendConfig(namespace={_lit(str(plan.namespace))}))")
        else:
            add(_P1 + "client = TrainerClient()")
    command, args, env, res, jobs, patch_key = plan_parts(plan)
    if plan.runtime_document is not None:
        used.add("_ensure_runtime")
        add(_P1 + "# Batch mode: the TrainJob runs on a TrainingRuntime of its own (the YAML output's first document)")
        namespace = _lit(str(plan.namespace)) if plan.namespace else "None"
        runtime = pprint.pformat(_plain_copy(plan.runtime_document), width=100, sort_dicts=False)
        add(f"{_P1}_ensure_runtime(\n{_P2}" + runtime.replace("\n", "\n" + _P2) + f",\n{_P2}{namespace},\n{_P1})")
    image = _lit(str(plan.image)) if plan.image else "None"
    add(f"{_CALL_HEAD}{_lit(str(plan.runtime))}{_TRAINER_HEAD}{image},{_where(plan, 'spec.trainer.image')}")
    if plan.num_nodes:
        add(f"{_P3}num_nodes={int(plan.num_nodes)},{_where(plan, 'spec.trainer.numNodes')}")
    if len(res) == 1:
        [(key, qty)] = res.items()
        add(f"{_P3}resources_per_node={{{_lit(key)}: {_lit(qty)}}},{_where(plan, 'spec.trainer.resourcesPerNode')}")
    elif res:
        source_key = {resource_name(str(k)): str(k) for k, _ in plan.resources_per_node}
        add(_P3 + "resources_per_node={")
        for key, qty in res.items():
            add(f"{_P4}{_lit(key)}: {_lit(qty)},{_where(plan, 'spec.trainer.resourcesPerNode.' + source_key[key])}")
        add(_P3 + "},")
    if env:
        entries = [_P3 + "env={"]
        for k, var in env.items():  # as env_entries writes them; the line of the last export
            line = var.line
            where = f"  # line {line}" if line is not None else ""
            secret = getattr(var, "secret_name", None)
            if secret:
                used.add("_from_submit_env")
                entries.append(f"{_P4}{_lit(k)}: _from_submit_env({_lit(k)}, {_lit(str(secret))}),{where}")
            else:
                entries.append(f"{_P4}{_lit(k)}: {_lit(str(var.value))},{where}")
        entries.append(_P3 + "},")
        add("\n".join(entries))
    used.add("Name")
    add(f"{_OPTIONS_HEAD}{_lit(str(plan.name))}),{_where(plan, 'metadata.name')}")
    o = 3
    if plan.labels:
        used.add("Labels")
        _dict_call(w, o, "Labels", {str(k): str(v) for k, v in plan.labels})
    if plan.annotations:
        used.add("Annotations")
        _dict_call(w, o, "Annotations", {str(k): str(v) for k, v in plan.annotations})
    if command:
        used.add("TrainerCommand")
        if plan.packages:
            pip_lines = _lines_of(plan, "packages")
            origin = f" (pip install on line {', '.join(map(str, pip_lines))})" if pip_lines else ""
            add(_P3 + _comment(f"pip packages{origin} are installed by a bash wrapper that then execs the launcher"))
        _list_block(w, o, "TrainerCommand(", command, tail=f"),{_where(plan, 'spec.trainer.command')}")
    if args:
        used.add("TrainerArgs")
        _list_block(w, o, "TrainerArgs(", args, tail=f"),{_where(plan, 'spec.trainer.args')}")
    if plan.active_deadline_seconds:
        used.add("ActiveDeadlineSeconds")
        seconds = int(plan.active_deadline_seconds)
        add(f"{_P3}ActiveDeadlineSeconds({seconds}),{_where(plan, 'spec.activeDeadlineSeconds')}")
    meta = pod_metadata_by_job(plan) if any(getattr(p, "annotations", None) for p in plan.patches) else None
    if jobs or meta:
        got = _PATCH_BLOCKS.get(patch_key) if patch_key is not None else None
        if got is None:
            patch = _Writer()
            names: set[str] = set()
            _runtime_patch(patch, o, jobs, names, meta)
            got = ("\n".join(patch.lines), frozenset(names))
            if patch_key is not None:
                keep(_PATCH_BLOCKS, patch_key, got, 256)
        add(got[0])
        used.update(got[1])
    add(_CALL_END)


_PATCH_BLOCKS: dict[tuple, tuple[str, frozenset]] = {}  # trainjob.patches_key -> (RuntimePatch option, names)


# Secrets: the YAML refers to a Secret key (valueFrom.secretKeyRef). SDK 0.5 cannot: CustomTrainerContainer's
# env is dict[str, str], and the Trainer webhook rejects env in a runtime patch of the `node` container.
# So the value comes from the environment of whoever runs this file, never from the file itself.
_FROM_SUBMIT_ENV = [
    "def _from_submit_env(name: str, secret: str) -> str:",
    '    """A secret variable, taken from this process\'s environment at submission (SDK 0.5 has no',
    '    secretKeyRef): the TrainJob object then holds the value. The YAML output reads it from the Secret."""',
    "    value = os.environ.get(name)",
    "    if value is None:",
    '        raise SystemExit(f"export {name} first (the value Secret {secret} holds in the YAML output)")',
    "    return value",
]

# SDK 0.5 reads namespaced TrainingRuntimes (get_runtime prefers them) but cannot create one: batch mode's
# runtime is created here with the Kubernetes client the SDK itself uses, in the namespace the SDK submits to.
_ENSURE_RUNTIME = [
    "def _ensure_runtime(runtime: dict, namespace: str | None) -> None:",
    '    """Create the TrainingRuntime ``runtime`` unless the namespace already has one of that name."""',
    "    namespace = namespace or get_default_target_namespace()",
    "    api = k8s.CustomObjectsApi()",
    '    where = ("trainer.kubeflow.org", "v1alpha1", namespace, "trainingruntimes")',
    "    try:",
    '        api.get_namespaced_custom_object(*where, runtime["metadata"]["name"])',
    "    except k8s.ApiException as exc:",
    "        if exc.status != 404:",
    "            raise",
    "        api.create_namespaced_custom_object(*where, runtime)",
    "        print(f\"created TrainingRuntime {runtime['metadata']['name']}\")",
]


def _plain_copy(value):
    """``value`` as plain dicts, lists, str, int and bool (what pprint writes as Python literals)."""
    if isinstance(value, dict):
        return {str(k): _plain_copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_copy(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    return str(value)


_OPTION_ORDER = (
    "Name",
    "Labels",
    "Annotations",
    "TrainerCommand",
    "TrainerArgs",
    "ActiveDeadlineSeconds",
    "RuntimePatch",
    "TrainingRuntimeSpecPatch",
    "JobSetTemplatePatch",
    "JobSetSpecPatch",
    "ReplicatedJobPatch",
    "JobTemplatePatch",
    "JobSpecPatch",
    "PodTemplatePatch",
    "PodSpecPatch",
    "ContainerPatch",
)
# the classes a runtime patch nests, RuntimePatch down to PodSpecPatch (ContainerPatch is not used)
_PATCH_CLASSES = frozenset(_OPTION_ORDER[_OPTION_ORDER.index("RuntimePatch") : _OPTION_ORDER.index("ContainerPatch")])


_IMPORTS: dict[tuple, str] = {}


def _imports(top: tuple[str, ...], opts: tuple[str, ...]) -> str:
    """The import lines (and the two blank lines after them), built once per set of names."""
    key = (top, opts)
    text = _IMPORTS.get(key)
    if text is None:
        lines = [f"from kubeflow.trainer import {', '.join(top)}"]
        if opts:
            lines.append("from kubeflow.trainer.options import (")
            lines.extend(f"{_INDENT}{name}," for name in opts)
            lines.append(")")
        lines += ["", ""]
        text = keep(_IMPORTS, key, "\n".join(lines), 256)
    return text


_HEADER = (
    "# Generated by slurm2kf: submits the converted TrainJob(s) with the Kubeflow SDK.\n"
    "# Needs: pip install 'kubeflow==0.5.0'. Uses the cluster of the current kubeconfig context."
)
_FOOTER = '\n\nif __name__ == "__main__":\n' + _INDENT + "main()\n"


def render(plans: Sequence) -> str:
    """A runnable Python file submitting one TrainJob per plan with ``kubeflow==0.5.0``."""
    plans = list(plans)
    body = _Writer()
    used: set = set()
    namespaces = {p.namespace for p in plans}
    shared_client = len(namespaces) <= 1
    namespace: str | None = plans[0].namespace if plans and shared_client else None
    for i, plan in enumerate(plans):
        if i:
            body.add(0, "")
        _train_call(body, plan, i, len(plans), used, own_client=not shared_client)

    out = _Writer()
    sources = sorted({sanitize_comment(p.source_path) for p in plans})
    # Lines 1-2 hold no user text: Python reads an encoding declaration ("coding: utf-7") there.
    out.lines.append(_HEADER)
    out.lines.append(_comment_text("Converted from " + ", ".join(sources), 0))
    top = ["CustomTrainerContainer", "TrainerClient"]
    if namespace or "KubernetesBackendConfig" in used:
        top.insert(1, "KubernetesBackendConfig")
    if "_from_submit_env" in used:
        out.add(0, "import os")
        out.add(0, "")
    if "_ensure_runtime" in used:
        out.add(0, "from kubeflow.common.utils import get_default_target_namespace")
    out.lines.append(_imports(tuple(top), tuple(name for name in _OPTION_ORDER if name in used)))
    if "_ensure_runtime" in used:
        out.lines[-1] = out.lines[-1].rstrip("\n") + "\nfrom kubernetes import client as k8s\n\n"
        out.lines.extend(_ENSURE_RUNTIME)
        out.add(0, "")
        out.add(0, "")
    if "_from_submit_env" in used:
        out.lines.extend(_FROM_SUBMIT_ENV)
        out.add(0, "")
        out.add(0, "")
    out.add(0, "def main() -> None:")
    if namespace:
        out.add(1, f"client = TrainerClient(KubernetesBackendConfig(namespace={_lit(str(namespace))}))")
    elif shared_client:
        out.add(1, "client = TrainerClient()")
    out.lines.extend(body.lines)
    out.lines.append(_FOOTER)
    return "\n".join(out.lines)
