"""`validate --server`: the API server judges each TrainJob through a server-side dry run (schema with
strict decoding, CEL rules, ObjectMeta rules), next to the offline validator's verdict.

What the server checks and what it does not:
  * decoding (V701/V702/V703) and duplicate keys (V713) are judged before anything is sent;
  * the layers the server runs (V710-V712, V720, V730) are replaced by the server's answer (K907);
  * the Trainer webhook rules (V740-V747, V799) are not on a bare API server (no webhook runs there),
    so the offline findings of that layer are kept as they are.
  * a dry run never reaches storage, so `metadata.resourceVersion` on create (V730; storage refuses it)
    is kept from the offline checks too.
Where the offline server-layer verdict and the server's differ, a K912 line says so: that is a bug in
the offline validator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from translator.cluster.answers import TRAINJOB
from translator.cluster.client import Cluster, HttpError
from translator.cluster.errors import rejection, yaml_locator
from translator.cluster.submit import generate_name_base
from translator.jsondata import as_dict


def dry_run_blind(problem) -> bool:
    """Offline problems a server-side dry run cannot see (checked by storage, which a dry run skips)."""
    return problem.code == "V730" and "resourceVersion" in (problem.path or "")


# a rejection that is no verdict on the TrainJob -> the reason `validate --server` cannot tell (K921)
CANNOT_TELL = {
    "K904": "forbidden",
    "K905": "the namespace does not exist",
    "K906": "the name is taken",
    "K908": "conflict",
    "K910": "the server has no TrainJob API",
    "K914": "not found",
}

SERVER_LAYER = ("V710", "V711", "V712", "V714", "V715", "V720", "V721", "V730")
KEPT_OFFLINE = (
    *("V701", "V702", "V703", "V713", "V740", "V741", "V742", "V743", "V744", "V745", "V746", "V747", "V799"),
    *("V748", "V749", "V750"),  # JobSet's pod names and the runtime's job names: checked by webhooks, not here
)


@dataclass
class ServerVerdict:
    accepted: bool | None  # None: could not be judged (forbidden, no namespace...)
    problems: list = field(default_factory=list)  # translator.validate.validator.Problem
    disagreement: str | None = None  # K912 text
    unusable: bool = False  # a non-validation rejection (exit 2)
    cannot_tell: str = ""  # why the server judged nothing (K921: `forbidden`, ...); the verdict is unknown


def judge(cluster: Cluster, doc, result, namespace: str | None) -> ServerVerdict:
    """Dry-run create ``doc`` (a validate.documents.Document) and compare with offline ``result``."""
    from translator.validate.validator import Problem

    data = doc.data
    meta = as_dict(data.get("metadata"))
    ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) and meta.get("namespace") else None
    ns = ns or namespace or cluster.namespace
    name = meta.get("name") if isinstance(meta.get("name"), str) else None
    query = [("dryRun", "All"), ("fieldValidation", "Strict"), ("fieldManager", "slurm2kf")]
    verdict = ServerVerdict(accepted=None)
    body = data
    for attempt in range(2):
        try:
            resp = cluster.request("POST", cluster.trainjobs_path(ns), query=query, body=body, expect=TRAINJOB)
            verdict.accepted = True
            for w in resp.warnings:
                verdict.problems.append(Problem("K917", "warning", "", doc.start_line, f"the server warns: {w}"))
            break
        except HttpError as err:
            rej = rejection(err, verb="create", namespace=ns, name=name, cluster=cluster, locate=yaml_locator(doc))
            if rej.code == "K906" and attempt == 0 and name:
                # the name is taken on this cluster: judge the same object under a generated name
                body = dict(data, metadata=dict(meta, generateName=generate_name_base(name)))
                body["metadata"].pop("name", None)
                continue
            if rej.code == "K907":
                verdict.accepted = False
                for c in rej.causes:
                    msg = f"{c.field}: {c.message}" if c.field else c.message
                    verdict.problems.append(
                        Problem("K907", "error", c.field or "", c.line, f"rejected by the server: {msg}")
                    )
            else:  # the server judged nothing: the verdict is unknown, not INVALID
                verdict.unusable = True
                verdict.cannot_tell = CANNOT_TELL.get(rej.code, f"the server answered HTTP {rej.status}")
                verdict.problems.append(Problem(rej.code, "error", "", doc.start_line, rej.message))
                verdict.problems.append(
                    Problem(
                        "K921",
                        "error",
                        "",
                        doc.start_line,
                        f"cannot tell whether this TrainJob is valid: {verdict.cannot_tell} (the server judged nothing)",
                    )
                )
            break
    if verdict.accepted is not None:
        offline_errors = [
            p for p in result.problems if p.severity == "error" and p.code in SERVER_LAYER and not dry_run_blind(p)
        ]
        if offline_errors and verdict.accepted:
            verdict.disagreement = "offline validate rejects what the server accepts: " + "; ".join(
                f"{p.code} {p.message}" for p in offline_errors[:3]
            )
        elif not offline_errors and not verdict.accepted:
            verdict.disagreement = (
                "the server rejects what offline validate accepts: "
                + "; ".join(p.message for p in verdict.problems if p.code == "K907")[:400]
            )
    return verdict


def merge(result, verdict: ServerVerdict):
    """The Result as `validate --server` reports it: offline problems the server cannot judge, plus the
    server's problems, plus the disagreement (K912, a warning: the verdict is the server's)."""
    from translator.validate.validator import Problem

    kept = [p for p in result.problems if p.code in KEPT_OFFLINE or dry_run_blind(p)]
    result.problems = kept + verdict.problems

    if verdict.disagreement:
        result.problems.append(Problem("K912", "warning", "", None, verdict.disagreement))
    return result
