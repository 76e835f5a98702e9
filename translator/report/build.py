"""Conversion -> ScriptReport: the side-by-side rows, totals and open decisions for one script.

Reads only the pipeline's data (Script, SlurmJob, TrainerPlan.source_map/findings); never re-parses
the script text except to show its lines.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from translator.report.model import (
    APPROXIMATED, CLEAN, DROPPED, ERRORS, IGNORED, MAPPED, UNSUPPORTED, WARNINGS,
    FieldRef, Issue, LineRow, ScriptReport, worst_status,
)

_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

# Absolute path prefixes that exist in any container, or that Kubeflow provides: not "homeless".
_SYSTEM_TOPS = frozenset({
    "bin", "sbin", "usr", "lib", "lib64", "etc", "dev", "proc", "sys", "tmp", "var", "run", "opt/conda",
})
_ABS_PATH = re.compile(r"(?<![\w$}.~/-])(/[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*)")


def _issue(d) -> Issue:
    return Issue(severity=str(getattr(d, "severity", "info")), code=str(getattr(d, "code", "")),
                 message=str(getattr(d, "message", "")), line=getattr(d, "line", None),
                 suggestion=getattr(d, "suggestion", None))


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


def _module_names(argv: Sequence[str]) -> List[str]:
    """`module load a b`, `module add a`, `module swap old new`, `ml a b` -> loaded module names."""
    if not argv:
        return []
    cmd, rest = argv[0], list(argv[1:])
    rest = [w for w in rest if not w.startswith("-")]
    if cmd == "ml":
        if rest and rest[0] in ("load", "add"):
            return rest[1:]
        if rest and rest[0] in ("swap", "switch"):
            return rest[2:3] or rest[1:2]
        if rest and rest[0] in ("purge", "list", "avail", "spider", "show", "unload", "del", "rm", "use",
                                "save", "restore", "help", "whatis", "keyword", "reset"):
            return []
        return [w for w in rest if not w.startswith("-")]   # `ml -foo` unloads; `ml foo` loads
    if rest and rest[0] in ("load", "add", "try-load", "try-add"):
        return rest[1:]
    if rest and rest[0] in ("swap", "switch"):
        return rest[2:3] or rest[1:2]
    return []


def _environment_name(kind: str, argv: Sequence[str]) -> Optional[str]:
    words = [w for w in argv if not w.startswith("-")]
    if kind == "conda":
        # conda activate ENV | mamba activate ENV | source activate ENV | conda activate -p PATH
        if "activate" in words:
            after = words[words.index("activate") + 1:]
            return ("conda:" + after[-1]) if after else "conda:base"
        return None
    if kind == "venv":
        for w in words[1:]:
            if w.endswith("/bin/activate") or w.endswith("/activate"):
                return "venv:" + (w[: -len("/bin/activate")] if w.endswith("/bin/activate") else w)
        return None
    return None


def _path_prefix(p: str) -> Optional[str]:
    parts = [x for x in p.split("/") if x]
    if not parts or parts[0] in _SYSTEM_TOPS or "/".join(parts[:2]) in _SYSTEM_TOPS:
        return None
    if parts[0] in ("home", "scratch", "work", "project", "projects", "gpfs", "lustre", "data",
                    "datasets", "shared", "nfs", "mnt", "fs", "storage", "p", "cluster"):
        return "/" + "/".join(parts[:2]) if len(parts) > 1 else "/" + parts[0]
    return "/" + parts[0]


def _mount_paths(plans) -> List[str]:
    out = []
    for plan in plans:
        for patch in getattr(plan, "patches", ()) or ():
            for m in getattr(patch, "volume_mounts", ()) or ():
                mp = m.get("mountPath") if isinstance(m, dict) else None
                if mp:
                    out.append(str(mp).rstrip("/") or "/")
    return out


def _covered(prefix: str, mounts: Sequence[str]) -> bool:
    return any(prefix == m or prefix.startswith(m + "/") or m.startswith(prefix + "/") or m == "/"
               for m in mounts)


def environment_needs(script, job, plans) -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
    """Modules, environments and path prefixes the script relies on (paths minus mounted ones)."""
    from translator.read.ast import CONDA, MODULE, VENV, iter_assignments, iter_commands

    modules: List[str] = []
    envs: List[str] = []
    paths: List[str] = []
    body = getattr(script, "body", ()) or ()

    def add(lst, v):
        if v and v not in lst:
            lst.append(v)

    def scan(text: str):
        for m in _ABS_PATH.finditer(text):
            add(paths, _path_prefix(m.group(1)))

    for cmd in iter_commands(body):
        argv = cmd.argv
        if cmd.kind == MODULE:
            for name in _module_names(argv):
                add(modules, name)
            continue
        if cmd.kind in (CONDA, VENV):
            add(envs, _environment_name(cmd.kind, argv))
        for w in argv:
            if "/" in w:
                scan(w)
    for a in iter_assignments(body):
        if "/" in a.value.value:
            scan(a.value.value)
    chdir = getattr(getattr(job, "fields", None), "chdir", None) if job is not None else None
    if chdir:
        scan(chdir)
    mounts = _mount_paths(plans)
    paths = [p for p in paths if not _covered(p, mounts)]
    return tuple(modules), tuple(envs), tuple(sorted(paths))


def _rows(script, job, plans, issues: Sequence[Issue]) -> Tuple[LineRow, ...]:
    lines = script.text.splitlines() if getattr(script, "text", "") else []

    def text_of(n: int) -> str:
        return lines[n - 1] if 0 < n <= len(lines) else ""

    fields: Dict[int, List[FieldRef]] = {}
    for plan in plans:
        for sm in getattr(plan, "source_map", ()) or ():
            for ln in sm.lines or ():
                lst = fields.setdefault(int(ln), [])
                ref = FieldRef(str(sm.field), str(sm.status))
                if ref not in lst:
                    lst.append(ref)
    notes: Dict[int, List[Issue]] = {}
    for i in issues:
        if i.line is not None:
            lst = notes.setdefault(int(i.line), [])
            if i not in lst:
                lst.append(i)

    kinds: Dict[int, str] = {}
    if getattr(script, "shebang", None) is not None:
        kinds[1] = "shebang"
    for d in getattr(script, "directives", ()) or ():
        kinds[d.line] = "directive"
    ignored: Dict[int, object] = {}
    for ig in getattr(script, "ignored", ()) or ():
        kinds[ig.line] = "ignored"
        ignored[ig.line] = ig
    for fd in getattr(script, "foreign", ()) or ():
        kinds.setdefault(fd.line, "directive")

    wanted = sorted(set(kinds) | set(fields) | set(notes))
    rows = []
    for n in wanted:
        kind = kinds.get(n, "body")
        f = tuple(fields.get(n, ()))
        ns = list(notes.get(n, ()))
        if kind == "ignored":
            ig = ignored[n]
            status = IGNORED
            expl = Issue("info", str(ig.reason), str(ig.explanation), n, None)
            if not any(x.code == expl.code for x in ns):
                ns.insert(0, expl)
        elif f:
            status = worst_status(x.status for x in f)
        elif kind == "directive":
            status = UNSUPPORTED if any(x.severity == "error" for x in ns) else DROPPED
        elif any(x.severity == "error" for x in ns):
            status = UNSUPPORTED
        else:
            status = None
        rows.append(LineRow(n, text_of(n), kind, status, f, tuple(ns)))
    return tuple(rows)


def _decisions(issues: Sequence[Issue], rows: Sequence[LineRow], modules, envs, paths, image) -> Tuple[str, ...]:
    out: List[str] = []

    def add(s: str) -> None:
        if s not in out:
            out.append(s)

    for i in issues:
        if i.severity in ("error", "warning"):
            where = f"line {i.line}: " if i.line is not None else ""
            add(f"{where}{i.code} {i.suggestion or i.message}")
    if (modules or envs) and not image:
        need = ", ".join(list(modules) + list(envs))
        add(f"choose a container image that provides {need} (or pass --image / a profile)")
    if paths:
        add("mount or replace these paths (volumes in a profile): " + ", ".join(paths))
    approx = [f"{f.field} (line {r.line})" for r in rows for f in r.fields if f.status == APPROXIMATED]
    if approx:
        add("check the approximated fields: " + ", ".join(dict.fromkeys(approx)))
    return tuple(out)


def script_report(conv, rel_path: str, yaml_text: str = "", outputs: Sequence[str] = ()) -> ScriptReport:
    """Build the report record of one Conversion."""
    raw: List = []
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
    issues: List[Issue] = []
    for d in raw:
        i = _issue(d)
        if i not in issues:
            issues.append(i)
    issues.sort(key=_issue_key)
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
        modules, envs, paths = environment_needs(script, job, plans)
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
        nodes=nodes, gpus=gpus, time_limit_seconds=limit,
        node_hours=round(node_hours, 4), gpu_hours=round(gpu_hours, 4),
        issues=tuple(issues), rows=rows,
        decisions=_decisions(issues, rows, modules, envs, paths, image),
        modules=modules, environments=envs, paths=paths,
        yaml=yaml_text, outputs=tuple(outputs),
    )
