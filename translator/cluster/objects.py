"""What `submit` sends: TrainJobs converted from sbatch scripts, or read from TrainJob YAML files.

Each object gets the labels and annotations that tie it to its source, so `slurm2kf jobs` finds it:

  label      app.kubernetes.io/managed-by: slurm2kf   (the selector `jobs` lists by)
  label      slurm2kf.io/source-hash: first 12 hex digits of the submitted file's SHA-256
  label      slurm2kf.io/script: the file name, made a valid label value (<= 63 characters)
  annotation slurm2kf.io/source: the absolute path of the script (the emitters' relative one otherwise)
  annotation slurm2kf.io/source-sha256, slurm2kf.io/version

The emitters already write slurm2kf.io/job-name and slurm2kf.io/source; converted YAML keeps those.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

from translator import __version__
from translator.cluster import (
    ANNOTATION_HASH,
    ANNOTATION_VERSION,
    KIND,
    LABEL_HASH,
    LABEL_MANAGED_BY,
    LABEL_SCRIPT,
    MANAGED_BY,
    GROUP,
)
from translator.jsondata import as_dict
from translator.naming import ANNOTATION_SOURCE

YAML_SUFFIXES = (".yaml", ".yml", ".json")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass
class Item:
    """One TrainJob to send, with what is needed to map the server's answer back to its source."""

    source: str  # the path as the user gave it
    body: dict  # the TrainJob object
    locate: Callable  # field -> (line, note)
    kind: str = "script"  # "script" | "yaml"
    doc_index: int | None = None  # YAML document index
    plan: Any = None  # TrainerPlan (scripts)
    runtime: dict | None = None  # the TrainingRuntime to create first (batch mode writes one beside the TrainJob)

    @property
    def name(self) -> str | None:
        meta = as_dict(self.body.get("metadata"))
        n = meta.get("name")
        return n if isinstance(n, str) else None

    @property
    def namespace(self) -> str | None:
        meta = as_dict(self.body.get("metadata"))
        n = meta.get("namespace")
        return n if isinstance(n, str) and n else None


@dataclass
class Prepared:
    """Everything read from the inputs: the items, and what to tell the user before sending."""

    items: list[Item] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # diagnostics/findings lines (stderr)
    refused: list[str] = field(default_factory=list)  # sources not sent (errors, without --force)
    unreadable: bool = False


def label_value(text: str) -> str:
    """A valid label value (<= 63, alphanumeric at both ends, [-_.A-Za-z0-9] inside) for ``text``."""
    s = re.sub(r"[^-A-Za-z0-9_.]+", "_", text)[:63]
    s = re.sub(r"^[^A-Za-z0-9]+", "", s)
    s = re.sub(r"[^A-Za-z0-9]+$", "", s)
    return s if _LABEL_VALUE.match(s) else ""


def tag(body: dict, *, source_path: str, digest: str, keep_source: bool) -> dict:
    """Add the labels/annotations that tie ``body`` to its source file (in place; returns it)."""
    meta = body.setdefault("metadata", {})
    if not isinstance(meta, dict):
        return body
    labels = as_dict(meta.get("labels"))
    labels = dict(labels)
    labels[LABEL_MANAGED_BY] = MANAGED_BY
    labels[LABEL_HASH] = digest[:12]
    script = label_value(os.path.basename(source_path))
    if script:
        labels[LABEL_SCRIPT] = script
    meta["labels"] = labels
    ann = as_dict(meta.get("annotations"))
    ann = dict(ann)
    if not (keep_source and isinstance(ann.get(ANNOTATION_SOURCE), str)):
        ann[ANNOTATION_SOURCE] = "<stdin>" if source_path == "-" else os.path.abspath(source_path)
    ann[ANNOTATION_HASH] = digest
    ann[ANNOTATION_VERSION] = __version__
    meta["annotations"] = ann
    return body


def is_yaml(path: str) -> bool:
    return path.lower().endswith(YAML_SUFFIXES)


def _read_bytes(path: str) -> tuple[bytes | None, str | None]:
    try:
        with open(path, "rb") as fh:
            return fh.read(), None
    except OSError as exc:
        return None, exc.strerror or str(exc)


def from_script(path: str, settings, *, force: bool, out: Prepared) -> None:
    """Convert one sbatch script (like `convert`) and add its TrainJob(s) to ``out``."""
    from translator.pipeline import convert

    if path == "-":  # the script on stdin, as `sbatch` reads it
        import sys

        data, err = sys.stdin.buffer.read(), None
    else:
        data, err = _read_bytes(path)
    conv = convert(path, data=data, settings=settings) if data is not None else convert(path, settings=settings)
    if conv.file_error is not None:
        out.messages.append(conv.file_error.format(path))
        out.unreadable = True
        return
    for d in conv.diagnostics:
        if d.severity in ("error", "warning"):
            out.messages.append(d.format(path))
    for f in conv.findings:
        if f.severity in ("error", "warning"):
            out.messages.append(f.format(path))
    refused = conv.job is not None and not conv.job.sbatch_accepts
    errors = refused or any(not p.can_run for p in conv.plans)
    if errors and not force:
        why = "sbatch would refuse it" if refused else "its conversion has error findings"
        out.messages.append(
            f"{path}: error K911 not submitted: {why} (see above); fix the script, or pass --force to submit anyway"
        )
        out.refused.append(path)
        return
    out.items.extend(items_from_plans(path, data or b"", conv.plans))


def items_from_plans(path: str, data: bytes, plans) -> list[Item]:
    """The TrainJobs of converted plans, tagged with their source; each maps server errors back to the
    script lines through its plan's source map."""
    from translator.cluster.errors import script_locator
    from translator.emit.trainjob import trainjob_dict

    digest = hashlib.sha256(data).hexdigest()
    return [
        Item(
            path,
            tag(trainjob_dict(plan), source_path=path, digest=digest, keep_source=False),
            script_locator(plan.source_map),
            "script",
            None,
            plan,
            plan.runtime_document,
        )
        for plan in plans
    ]


def from_yaml(path: str, *, out: Prepared) -> None:
    """Read TrainJob documents from a YAML file and add them to ``out`` (other kinds are skipped)."""
    from translator.cluster.errors import yaml_locator
    from translator.validate.documents import DecodeError, load_documents
    from translator.validate.validator import _expand_lists

    data, err = _read_bytes(path)
    if data is None:
        out.messages.append(f"{path}: error V701 cannot read: {err}")
        out.unreadable = True
        return
    try:
        text = data.decode("utf-8-sig")
        docs = _expand_lists(load_documents(text))  # `kind: List` (kubectl get -o yaml): its items
    except UnicodeDecodeError as exc:
        out.messages.append(f"{path}: error V701 not UTF-8 text (byte {exc.start})")
        out.unreadable = True
        return
    except DecodeError as exc:
        where = f"{path}:{exc.line}" if exc.line else path
        out.messages.append(f"{where}: error V701 {exc.message}")
        out.unreadable = True
        return
    digest = hashlib.sha256(data).hexdigest()
    found = 0
    runtimes = _training_runtimes(docs)
    used: set[str] = set()
    for doc in docs:
        d = doc.data
        if _is_training_runtime(d) and _runtime_referenced(d, docs):
            continue  # created before the TrainJob that refers to it (below)
        if not isinstance(d, dict) or d.get("kind") != KIND or not str(d.get("apiVersion", "")).startswith(GROUP + "/"):
            where = f"{path}:{doc.start_line}" if doc.start_line else path
            kind = d.get("kind") if isinstance(d, dict) else type(d).__name__
            out.messages.append(
                f"{where}: warning K915 document {doc.index + 1} is not a TrainJob (kind {kind!r}); skipped"
            )
            continue
        for code, _path, line, message in doc.problems:  # duplicate keys: kubectl refuses them too
            out.messages.append(f"{path}:{line}: error {code} {message}")
            out.unreadable = True
        found += 1
        body = tag(copy.deepcopy(d), source_path=path, digest=digest, keep_source=True)
        runtime = runtimes.get(_runtime_ref(d)) if _runtime_ref(d) not in used else None
        if runtime is not None:
            used.add(_runtime_ref(d))
        out.items.append(Item(path, body, yaml_locator(doc), "yaml", doc.index, runtime=runtime))
    if not found and not out.unreadable:
        out.messages.append(f"{path}: error V703 no TrainJob document in this file")
        out.unreadable = True


def _is_training_runtime(d) -> bool:
    return isinstance(d, dict) and d.get("kind") == "TrainingRuntime" and str(d.get("apiVersion", "")).startswith(GROUP)


def _runtime_ref(d) -> str:
    """The name of the namespaced TrainingRuntime a TrainJob refers to ("" for a ClusterTrainingRuntime)."""
    ref = as_dict(as_dict(d.get("spec")).get("runtimeRef")) if isinstance(d, dict) else {}
    return str(ref.get("name") or "") if ref.get("kind") == "TrainingRuntime" else ""


def _training_runtimes(docs) -> dict[str, dict]:
    """The file's TrainingRuntimes by name (batch mode writes the runtime of a TrainJob before it)."""
    out: dict[str, dict] = {}
    for doc in docs:
        d = doc.data
        name = as_dict(d.get("metadata")).get("name") if _is_training_runtime(d) else None
        if isinstance(name, str) and name:
            out[name] = copy.deepcopy(d)
    return out


def _runtime_referenced(d, docs) -> bool:
    name = as_dict(d.get("metadata")).get("name")
    return any(_runtime_ref(doc.data) == name for doc in docs if isinstance(doc.data, dict))


def prepare(paths, settings_for: Callable, *, force: bool = False) -> Prepared:
    """Read every path: YAML files (.yaml/.yml/.json) as TrainJobs, anything else as an sbatch script
    converted with ``settings_for(path)`` (ConvertSettings)."""
    out = Prepared()
    for path in paths:
        if is_yaml(path):
            from_yaml(path, out=out)
        else:
            from_script(path, settings_for(path), force=force, out=out)
    return out
