"""Size limits the API server enforces on a TrainJob: a plan over them gets an error finding.

A fallback conversion puts the whole batch script into one container argument (`bash -c SCRIPT`), so a
large script gives a TrainJob that the API server refuses; it must never be written silently as valid.
The limits, from the TrainJob CRD of Kubeflow Trainer v2 (`trainer.kubeflow.org_trainjobs.yaml`,
`spec.trainer.command` and `spec.trainer.args`) and from Kubernetes' storage:

* every item of `command` and `args` has `maxLength: 1048576`; the API server counts characters (runes),
  not bytes (kube-openapi's validate.MaxLength uses utf8.RuneCountInString);
* `command` and `args` have `maxItems: 128` each;
* the whole object must fit etcd's request limit (`--max-request-bytes`, 1.5 MiB by default; "etcdserver:
  request is too large" otherwise). The JSON that is stored is estimated from the TrainJob object as
  emitted (the server adds some metadata: a margin is kept).

L378 is the CRD's per-field limit, L379 the object size. `check` is called once per job, at the end of
planning, on the plans as the emitters will write them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from translator.diagnostics import ERROR, Finding

MAX_ITEM_CHARS = 1_048_576  # CRD: spec.trainer.{command,args}.items.maxLength
MAX_ITEMS = 128  # CRD: spec.trainer.{command,args}.maxItems
ETCD_MAX_REQUEST_BYTES = 1_572_864  # etcd --max-request-bytes default (1.5 MiB)
OBJECT_MARGIN_BYTES = 16_384  # what the API server adds (managedFields, uid, timestamps...)
_CHEAP_BOUND = 512 * 1024  # below this many characters of command, args and env, no object is measured


def check(plans: tuple, script=None) -> tuple:
    """`plans` with an L378/L379 error finding added to each plan that is over a limit (the same
    tuple, untouched, when none is: the common case costs a few len() calls). The finding's line is the
    first line the command comes from, else the first line of the script's body."""
    out = []
    changed = False
    for plan in plans:
        found = problems(plan, getattr(script, "body_start_line", None))
        if found:
            changed = True
            out.append(_with_findings(plan, found))
        else:
            out.append(plan)
    return tuple(out) if changed else plans


def problems(plan, body_line: int | None = None) -> list[Finding]:
    """The L378/L379 findings of one plan (none in the common case, found with a few len() calls)."""
    command, args = _container(plan)
    over: list[tuple[str, str, str]] = []  # (code, message, fix)
    for field, words in (("command", command), ("args", args)):
        if len(words) > MAX_ITEMS:
            over.append(
                (
                    "L378",
                    f"the TrainJob's spec.trainer.{field} has {len(words)} items; the TrainJob CRD allows at most "
                    f"{MAX_ITEMS} (maxItems), so the API server would refuse it",
                    "pass the arguments in a file (a config or an arguments file the program reads)",
                )
            )
        if max(map(len, words), default=0) > MAX_ITEM_CHARS:
            longest = max(range(len(words)), key=lambda i: len(words[i]))
            over.append(
                (
                    "L378",
                    f"the TrainJob's spec.trainer.{field}[{longest}] is {len(words[longest]):,} characters; the "
                    f"TrainJob CRD allows at most {MAX_ITEM_CHARS:,} (maxLength), so the API server would refuse it",
                    "move the script body into the image or a ConfigMap volume and run it from there",
                )
            )
    size = _object_size(plan, command, args)
    if size is not None and size > ETCD_MAX_REQUEST_BYTES - OBJECT_MARGIN_BYTES:
        over.append(
            (
                "L379",
                f"the TrainJob is about {size:,} bytes as stored; etcd refuses objects over "
                f"{ETCD_MAX_REQUEST_BYTES:,} bytes (1.5 MiB, --max-request-bytes), so it could not be created",
                "make the command line and environment smaller: move large values into a file, the image or a "
                "ConfigMap volume",
            )
        )
    if not over:
        return []
    line = _first_line(plan) or body_line
    return [Finding(ERROR, code, message, line, fix) for code, message, fix in over]


def _container(plan) -> tuple[Sequence[str], Sequence[str]]:
    """The container's command and args as the emitters write them (emit.command.container_command)."""
    if not plan.packages:
        return plan.command, plan.args  # (the plan's words are strings)
    from translator.emit.command import container_command

    return container_command(plan)


def _object_size(plan, command: Sequence[str], args: Sequence[str]) -> int | None:
    """Bytes of the TrainJob as JSON, when its large parts could come near the limit (else None)."""
    rough = sum(map(len, command)) + sum(map(len, args)) + sum(len(str(e.value)) for e in plan.env)
    if rough < _CHEAP_BOUND:
        return None
    from translator.emit.trainjob import trainjob_dict

    return len(json.dumps(trainjob_dict(plan), ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _first_line(plan) -> int | None:
    """The first source line the container command or arguments come from (the plan's source map)."""
    lines = [
        n for m in plan.source_map if m.field.startswith(("spec.trainer.command", "spec.trainer.args")) for n in m.lines
    ]
    return min(lines) if lines else None


def _with_findings(plan, found: list[Finding]):
    import dataclasses

    return dataclasses.replace(plan, findings=tuple(plan.findings) + tuple(found))
