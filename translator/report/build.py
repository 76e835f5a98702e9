"""Conversion -> ScriptReport: the side-by-side rows, totals and open decisions for one script.

Reads only the pipeline's data (Script, SlurmJob, TrainerPlan.source_map/findings); never re-parses
the script text except to show its lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from collections.abc import Sequence

from translator.diagnostics import Diagnostic
from translator.report.model import (
    APPROXIMATED,
    CLEAN,
    DROPPED,
    ERRORS,
    IGNORED,
    UNSUPPORTED,
    WARNINGS,
    FieldRef,
    Issue,
    LineRow,
    ScriptReport,
    field_ref,
    new_issue,
    new_row,
    worst_status,
)

if TYPE_CHECKING:
    from translator.read.ast import IgnoredLine

_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def _issue(d) -> Issue:
    return Issue(
        severity=str(getattr(d, "severity", "info")),
        code=str(getattr(d, "code", "")),
        message=str(getattr(d, "message", "")),
        line=getattr(d, "line", None),
        suggestion=getattr(d, "suggestion", None),
    )


def _issues(raw) -> list[Issue]:
    """The distinct issues of these diagnostics/findings (first occurrence kept), sorted by `_issue_key`;
    deduplicated and sorted as tuples, the same order as `sorted(dict.fromkeys(map(_issue, raw)), key=_issue_key)`."""
    seen: dict[tuple, None] = {}
    for d in raw:
        if type(d) is Diagnostic:
            seen[(str(d.severity), str(d.code), str(d.message), d.line, d.suggestion)] = None
        else:
            i = _issue(d)
            seen[(i.severity, i.code, i.message, i.line, i.suggestion)] = None
    order = _SEVERITY_ORDER
    keyed = sorted(seen, key=lambda t: (t[3] if t[3] is not None else 0, order.get(t[0], 3), t[1], t[2]))
    return [new_issue(*t) for t in keyed]


def _issue_key(i: Issue):
    return (i.line if i.line is not None else 0, _SEVERITY_ORDER.get(i.severity, 3), i.code, i.message)


def outcome_of(issues: Sequence[Issue], sbatch_accepts: bool, converted: bool) -> str:
    if not sbatch_accepts or not converted or any(i.severity == "error" for i in issues):
        return ERRORS
    if any(i.severity == "warning" for i in issues):
        return WARNINGS
    return CLEAN


def _gpus_per_node(plan) -> int:
    total = 0
    for name, qty in getattr(plan, "resources_per_node", ()) or ():
        if "gpu" in str(name).lower():
            try:
                total += int(str(qty))
            except ValueError:
                continue
    return total


def _env_covered(kind: str, name: str, profile) -> bool:
    """A profile image rule (with an image) or `images.provided` accounts for this environment item."""
    if profile is None:
        return False
    for rule in getattr(profile, "image_rules", ()) or ():
        if rule.image and any(k == kind and p.matches(name) for k, p in rule.matchers):
            return True
    return any(k == kind and p.matches(name) for k, p in getattr(profile, "images_provided", ()) or ())


def _mount_paths(plans) -> list[str]:
    out = []
    for plan in plans:
        for patch in getattr(plan, "patches", ()) or ():
            for m in getattr(patch, "volume_mounts", ()) or ():
                mp = m.get("mountPath") if isinstance(m, dict) else None
                if mp:
                    out.append(str(mp).rstrip("/") or "/")
    return out


def environment_needs(script, job, plans, profile=None, image_chosen: bool = False):
    """Modules, environments and path prefixes the script relies on that nothing provides yet.

    Uses the same scanner as the site profile (translator/profile/usage.py), so what the report lists
    is exactly what a `slurm2kf.yaml` can map: environment items not covered by the profile's image
    rules or `images.provided` (all are covered when --image chose the image), and top-level path
    prefixes (`/scratch`, `$SCRATCH`) that no profile file system or plan volume mounts.
    """
    from translator.profile.usage import SYSTEM_DIRS, assigned_names, needs_scan, path_tops, variable_names

    items, text = needs_scan(script, job)  # the items of `environment_items`, the texts with a `/` joined
    modules: list[str] = []
    envs: list[str] = []
    for item in items:
        if image_chosen or _env_covered(item.kind, item.name, profile):
            continue
        if item.kind == "module":
            modules.append(item.name)
        else:
            envs.append(f"{item.kind}:{item.name}")
    paths: list[str] = []
    if text:
        covered = set()
        for fs in getattr(profile, "filesystems", ()) or ():
            covered.add(fs.path if fs.path.startswith("$") else "/" + fs.path.strip("/").split("/")[0])
        mounts = _mount_paths(plans)
        for top in path_tops(text):
            if top in SYSTEM_DIRS or top in covered or any(m == top or m.startswith(top + "/") for m in mounts):
                continue
            paths.append(top)
        names = variable_names(text)
        if names:
            names.difference_update(assigned_names(script))  # the script's own variables
            for name in names:
                var = "$" + name
                if var not in covered and var != "$HOME":
                    paths.append(var)
    return tuple(dict.fromkeys(modules)), tuple(dict.fromkeys(envs)), tuple(sorted(set(paths)))


def _rows(script, job, plans, issues: Sequence[Issue]) -> tuple[LineRow, ...]:
    """The side-by-side rows: the header lines, and every line a field, finding or diagnostic points at.
    `issues` are distinct (script_report dedupes them); the tests' reference takes any list."""
    text = getattr(script, "text", "")
    lines = text.split("\n") if text else []  # `\n` only, as sbatch and bash
    nlines = len(lines)

    fields: dict[int, dict[tuple[str, str], FieldRef]] = {}  # line -> distinct refs, first seen first
    for plan in plans:
        for sm in getattr(plan, "source_map", ()) or ():
            if not sm.lines:
                continue
            key = (str(sm.field), str(sm.status))
            ref = None
            for ln in sm.lines:
                ln = int(ln)
                at = fields.get(ln)
                if at is None:
                    at = fields[ln] = {}
                elif key in at:
                    continue
                at[key] = ref or (ref := field_ref(*key))
    notes: dict[int, list[Issue]] = {}
    for i in issues:
        if i.line is not None:
            ln = int(i.line)
            at_line = notes.get(ln)
            if at_line is None:
                notes[ln] = [i]
            else:
                at_line.append(i)

    kinds: dict[int, str] = {}
    if getattr(script, "shebang", None) is not None:
        kinds[1] = "shebang"
    for d in getattr(script, "directives", ()) or ():
        kinds[d.line] = "directive"
    ignored: dict[int, IgnoredLine] = {}
    for ig in getattr(script, "ignored", ()) or ():
        kinds[ig.line] = "ignored"
        ignored[ig.line] = ig
    for fd in getattr(script, "foreign", ()) or ():
        kinds.setdefault(fd.line, "directive")

    rows = []
    for n in sorted({*kinds, *fields, *notes}):
        status: str | None
        kind = kinds.get(n, "body")
        at = fields.get(n)
        f = tuple(at.values()) if at else ()
        ns = notes.get(n) or ()
        if kind == "ignored":
            ig = ignored[n]
            status = IGNORED
            expl = Issue("info", str(ig.reason), str(ig.explanation), n, None)
            if not any(x.code == expl.code for x in ns):
                ns = [expl, *ns]
        elif f:
            status = f[0].status if len(f) == 1 else worst_status(x.status for x in f)
        elif kind == "directive":
            status = UNSUPPORTED if any(x.severity == "error" for x in ns) else DROPPED
        elif any(x.severity == "error" for x in ns):
            status = UNSUPPORTED
        else:
            status = None
        rows.append(new_row(n, lines[n - 1] if 0 < n <= nlines else "", kind, status, f, tuple(ns)))
    return tuple(rows)


def _decisions(issues: Sequence[Issue], rows: Sequence[LineRow], modules, envs, paths, image) -> tuple[str, ...]:
    out: list[str] = []
    seen = set()

    def add(s: str) -> None:
        if s not in seen:
            seen.add(s)
            out.append(s)

    for i in issues:
        if i.severity in ("error", "warning"):
            where = f"line {i.line}: " if i.line is not None else ""
            add(f"{where}{i.code} {i.suggestion or i.message}")
    if modules or envs:
        need = ", ".join(list(modules) + list(envs))
        add(f"choose a container image that provides {need} (or pass --image / a profile)")
    if paths:
        add("mount or replace these paths (volumes in a profile): " + ", ".join(paths))
    approx = [f"{f.field} (line {r.line})" for r in rows for f in r.fields if f.status == APPROXIMATED]
    if approx:
        add("check the approximated fields: " + ", ".join(dict.fromkeys(approx)))
    return tuple(out)


def simulation_record(v) -> dict:
    """A verdict as the report record keeps it: the verdict, its reason, the differences and failures shared by
    both sides, the process counts and, for `differs`, the side-by-side process table (rows `[node, command,
    Slurm, Kubeflow]`, as `slurm2kf simulate` prints it)."""
    from translator.report.simulation import process_table

    r = v.reason
    sim: dict = {
        "verdict": v.verdict,
        "differences": list(v.differences),
        "slurm_processes": len(v.slurm.processes),
        "kubeflow_processes": len(v.kubeflow.processes),
        "reason": None if r is None else {"code": r.code, "text": r.text, "side": r.side, "where": r.where},
        "shared_failures": list(v.shared),
    }
    if v.verdict == "differs":
        rows, more = process_table(v)
        sim["process_table"] = rows
        if more:
            sim["process_table_more"] = more
    return sim


def with_simulation(sr: ScriptReport, path: str, settings) -> ScriptReport:
    """`--simulate`: the launch comparison of `slurm2kf simulate` as S8xx issues and a summary record."""
    import dataclasses

    from translator.simulate import SimulateError, simulate_script
    from translator.simulate.findings import findings_of, not_simulated

    try:
        v = _redacted(simulate_script(path, dataclasses.replace(settings, simulate=False)), path)
        found = findings_of(v)
        sim = simulation_record(v)
    except SimulateError as exc:
        found = [not_simulated(str(exc))]
        sim = {"verdict": "not simulated", "differences": [str(exc)], "slurm_processes": 0, "kubeflow_processes": 0}
    issues = list(sr.issues) + [i for i in (_issue(f) for f in found) if i not in sr.issues]
    issues.sort(key=_issue_key)
    outcome = outcome_of(issues, sr.sbatch_accepts, bool(sr.names))
    if sr.outcome == "errors":
        outcome = "errors"
    return dataclasses.replace(sr, issues=tuple(issues), outcome=outcome, simulation=sim)


def script_report(conv, rel_path: str, yaml_text: str = "", outputs: Sequence[str] = (), settings=None) -> ScriptReport:
    """Build the report record of one Conversion (`settings`: the ConvertSettings it was made with); the
    script's secrets are hidden in every string of it (translator/plan/redact.py)."""
    record = _script_report(conv, rel_path, yaml_text, outputs, settings)
    return _redacted(record, getattr(conv, "script", None))


def _redacted(record, source):
    """`record` with the secrets of `source` (a Script, or the path of one) hidden in every string:
    translator/plan/redact.py; a script without any secret-like text is left as it is."""
    from translator.plan import redact

    if isinstance(source, str):
        return redact.redact_data(record, redact.path_secrets(source))
    text = getattr(source, "text", "") or ""
    values = redact.script_secrets(source)
    if redact.needs_redaction(text, values):
        return redact.redact_data(record, values)
    return record


def _script_report(conv, rel_path: str, yaml_text: str, outputs: Sequence[str], settings) -> ScriptReport:
    """The report record of one Conversion, as the conversion has it."""
    raw: list = []
    if getattr(conv, "file_error", None) is not None:
        raw.append(conv.file_error)
    job = getattr(conv, "job", None)
    script = getattr(conv, "script", None)
    if job is not None:
        raw.extend(job.diagnostics)
    elif script is not None:
        raw.extend(getattr(script, "diagnostics", ()))
    plans = tuple(getattr(conv, "plans", ()) or ())
    for p in plans:
        raw.extend(p.findings)
    issues = _issues(raw)
    sbatch_accepts = bool(job.sbatch_accepts) if job is not None else False
    if script is not None and getattr(script, "sbatch_refuses", False):
        sbatch_accepts = False

    nodes = gpus = 0
    node_hours = gpu_hours = 0.0
    limit = None
    if job is not None:
        limit = job.fields.time_limit_seconds
    for p in plans:
        n = int(getattr(p, "num_nodes", 1) or 0)
        g = _gpus_per_node(p) * n
        nodes += n
        gpus += g
        secs = getattr(p, "active_deadline_seconds", None) or limit
        if secs:
            node_hours += n * secs / 3600.0
            gpu_hours += g * secs / 3600.0
    if script is not None:
        modules, envs, paths = environment_needs(
            script,
            job,
            plans,
            profile=getattr(settings, "profile", None),
            image_chosen=bool(getattr(settings, "image", None)),
        )
        rows = _rows(script, job, plans, issues)
    else:
        modules = envs = paths = ()
        rows = ()
    first = plans[0] if plans else None
    image = getattr(first, "image", None) if first is not None else None
    return ScriptReport(
        path=rel_path,
        outcome=outcome_of(issues, sbatch_accepts, bool(plans)),
        sbatch_accepts=sbatch_accepts,
        names=tuple(p.name for p in plans),
        launcher=getattr(first, "launcher", None),
        runtime=getattr(first, "runtime", None),
        image=image,
        nodes=nodes,
        gpus=gpus,
        time_limit_seconds=limit,
        node_hours=round(node_hours, 4),
        gpu_hours=round(gpu_hours, 4),
        issues=tuple(issues),
        rows=rows,
        decisions=_decisions(issues, rows, modules, envs, paths, image),
        modules=modules,
        environments=envs,
        paths=paths,
        yaml=yaml_text,
        outputs=tuple(outputs),
    )
