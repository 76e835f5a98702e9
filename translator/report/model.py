"""The review report model: one record per script, one summary per repository.

Plain dataclasses with a JSON form (`to_json` / `from_json`) so that records can cross process
boundaries (migrate workers), be spooled to disk (memory stays flat on large repositories) and be
read back from a migrate output's `slurm2kf-report.json` (`slurm2kf report OUT`).

The three writers (markdown.py, html.py, json_report.py) render a `Report` and nothing else.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from json.encoder import encode_basestring as _str_json
from typing import IO, TYPE_CHECKING
from collections.abc import Iterable, Iterator

from translator.report.simulation import SimulationTally

if TYPE_CHECKING:  # (spool.py imports this module)
    from translator.report.spool import ScriptSpool

REPORT_FORMAT_VERSION = 1

# Line statuses, from best to worst. "ignored" = a line that looks like a directive but Slurm ignores.
MAPPED = "mapped"
APPROXIMATED = "approximated"
DROPPED = "dropped"
UNSUPPORTED = "unsupported"
IGNORED = "ignored"
LINE_STATUSES = (MAPPED, APPROXIMATED, DROPPED, UNSUPPORTED, IGNORED)
_STATUS_RANK = {MAPPED: 0, IGNORED: 1, APPROXIMATED: 2, DROPPED: 3, UNSUPPORTED: 4}

# Script outcomes.
CLEAN = "clean"  # converted, no warning or error
WARNINGS = "warnings"  # converted, with warnings to review
ERRORS = "errors"  # sbatch refuses it, or an error finding: cannot run as converted
OUTCOMES = (CLEAN, WARNINGS, ERRORS)


def worst_status(statuses: Iterable[str]) -> str | None:
    best = None
    for s in statuses:
        if best is None or _STATUS_RANK.get(s, 0) > _STATUS_RANK.get(best, 0):
            best = s
    return best


@dataclass(frozen=True)
class Issue:
    """A diagnostic or finding as the report shows it."""

    severity: str
    code: str
    message: str
    line: int | None = None
    suggestion: str | None = None

    def to_json(self) -> dict:
        return {
            "severity": self.severity,
            "code": self.code,
            "line": self.line,
            "message": self.message,
            "suggestion": self.suggestion,
        }

    @classmethod
    def from_json(cls, d: dict) -> Issue:
        return new_issue(d["severity"], d["code"], d["message"], d.get("line"), d.get("suggestion"))


@dataclass(frozen=True)
class FieldRef:
    """A Kubeflow field a source line became, with how faithfully."""

    field: str
    status: str

    def to_json(self) -> dict:
        return {"field": self.field, "status": self.status}


@dataclass(frozen=True)
class LineRow:
    """One row of the side-by-side view: a script line and what it became."""

    line: int
    text: str
    kind: str  # "directive" | "ignored" | "body" | "shebang"
    status: str | None  # worst status of its fields (None = context only)
    fields: tuple[FieldRef, ...] = ()
    notes: tuple[Issue, ...] = ()  # findings/diagnostics on this line, with their explanation

    def to_json(self) -> dict:
        return {
            "line": self.line,
            "text": self.text,
            "kind": self.kind,
            "status": self.status,
            "fields": [f.to_json() for f in self.fields],
            "notes": [n.to_json() for n in self.notes],
        }

    @classmethod
    def from_json(cls, d: dict) -> LineRow:
        return new_row(
            d["line"],
            d["text"],
            d["kind"],
            d.get("status"),
            tuple([_field_ref_json(f) for f in d.get("fields", ())]),
            tuple([_issue_from_json(n) for n in d.get("notes", ())]),
        )


_FIELD_REFS: dict[tuple[str, str], FieldRef] = {}  # (field, status) -> one shared FieldRef (immutable)


def field_ref(field: str, status: str) -> FieldRef:
    """`FieldRef(field, status)`, shared: a few hundred distinct pairs recur in every script."""
    key = (field, status)
    try:
        ref = _FIELD_REFS.get(key)
    except TypeError:  # not hashable (a record read back from a file)
        return FieldRef(field, status)
    if ref is None:
        ref = FieldRef(field, status)
        if len(_FIELD_REFS) < 4096:
            _FIELD_REFS[key] = ref
    return ref


def _field_ref_json(f: dict) -> FieldRef:
    return field_ref(f["field"], f["status"])


def _issue_from_json(d: dict) -> Issue:
    return new_issue(d["severity"], d["code"], d["message"], d.get("line"), d.get("suggestion"))


def new_issue(severity: str, code: str, message: str, line: int | None, suggestion: str | None) -> Issue:
    """`Issue(...)` without the frozen dataclass's per-field `object.__setattr__` (the builders make tens
    per script): the same fields in the instance dict, an equal object."""
    i = _new_object(Issue)
    d = i.__dict__
    d["severity"] = severity
    d["code"] = code
    d["message"] = message
    d["line"] = line
    d["suggestion"] = suggestion
    return i


def new_row(line: int, text: str, kind: str, status: str | None, fields: tuple, notes: tuple) -> LineRow:
    """`LineRow(...)`, built as `new_issue` is."""
    r = _new_object(LineRow)
    d = r.__dict__
    d["line"] = line
    d["text"] = text
    d["kind"] = kind
    d["status"] = status
    d["fields"] = fields
    d["notes"] = notes
    return r


_new_object = object.__new__


@dataclass(frozen=True)
class ScriptReport:
    """Everything the report says about one script."""

    path: str  # relative to the repository root ('/' separated)
    outcome: str  # clean | warnings | errors
    sbatch_accepts: bool
    names: tuple[str, ...] = ()  # TrainJob metadata.name(s)
    launcher: str | None = None
    runtime: str | None = None
    image: str | None = None
    nodes: int = 0  # nodes requested (sum over emitted TrainJobs)
    gpus: int = 0  # GPUs requested in total (nodes x GPUs per node)
    time_limit_seconds: int | None = None  # None = no limit set (partition default applies)
    node_hours: float = 0.0
    gpu_hours: float = 0.0
    issues: tuple[Issue, ...] = ()  # diagnostics + findings, in line order
    rows: tuple[LineRow, ...] = ()
    decisions: tuple[str, ...] = ()  # what the reviewer must decide
    modules: tuple[str, ...] = ()  # environment modules loaded
    environments: tuple[str, ...] = ()  # conda envs / virtualenvs activated
    paths: tuple[str, ...] = ()  # path prefixes used that no volume mounts yet
    yaml: str = ""  # the emitted TrainJob YAML ('' when none)
    outputs: tuple[str, ...] = ()  # output files (relative to OUT) when migrated
    simulation: dict | None = None  # --simulate: verdict, differences, process counts

    @cached_property
    def codes(self) -> tuple[str, ...]:
        """The distinct issue codes, sorted (kept once computed: a record never changes; `light()` computes
        them in the migrate worker, so they reach the parent with the light record)."""
        return tuple(sorted({i.code for i in self.issues}))

    @property
    def blocking_codes(self) -> tuple[str, ...]:
        return tuple(sorted({i.code for i in self.issues if i.severity == "error"}))

    def to_json(self) -> dict:
        return self._json(full=True)

    def light_json(self) -> dict:
        """`to_json()` without "rows" and "yaml" (what the summaries and the index read)."""
        return self._json(full=False)

    def light(self) -> ScriptReport:
        """`ScriptReport.from_json(self.light_json())` (the record without rows and YAML, as it reads back from
        JSON) without the round trip through dicts when every value already has the type from_json gives,
        with `codes` computed (the migrate worker sends it to the parent, whose HTML index reads them)."""
        t = tuple
        if not (
            type(self.names) is t
            and type(self.issues) is t
            and type(self.decisions) is t
            and type(self.modules) is t
            and type(self.environments) is t
            and type(self.paths) is t
            and type(self.outputs) is t
            and type(self.sbatch_accepts) is bool
            and type(self.nodes) is int
            and type(self.gpus) is int
            and type(self.node_hours) is float
            and type(self.gpu_hours) is float
            and self.simulation is None
            and all(type(i) is Issue for i in self.issues)
        ):
            out = ScriptReport.from_json(self.light_json())
        else:
            out = _new_object(ScriptReport)
            d = out.__dict__
            d.update(self.__dict__)
            d.pop("codes", None)
            d["node_hours"] = self.node_hours or 0.0  # as from_json reads them (-0.0 becomes 0.0)
            d["gpu_hours"] = self.gpu_hours or 0.0
            d["rows"] = ()
            d["yaml"] = ""
        out.__dict__["codes"] = out.codes
        return out

    def record_json(self) -> str:
        """`json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))`, the record as the JSON
        report holds it, built from pre-encoded pieces (each issue encoded once, also where a row cites it)."""
        try:
            return _record_json(self)
        except TypeError:  # a value of an unexpected type (a record read back from a file): the general path
            return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))

    def _json(self, full: bool) -> dict:
        out = {
            "path": self.path,
            "outcome": self.outcome,
            "sbatch_accepts": self.sbatch_accepts,
            "names": list(self.names),
            "launcher": self.launcher,
            "runtime": self.runtime,
            "image": self.image,
            "nodes": self.nodes,
            "gpus": self.gpus,
            "time_limit_seconds": self.time_limit_seconds,
            "node_hours": self.node_hours,
            "gpu_hours": self.gpu_hours,
            "issues": [i.to_json() for i in self.issues],
        }
        if full:
            out["rows"] = [r.to_json() for r in self.rows]
        out["decisions"] = list(self.decisions)
        out["modules"] = list(self.modules)
        out["environments"] = list(self.environments)
        out["paths"] = list(self.paths)
        if full:
            out["yaml"] = self.yaml
        out["outputs"] = list(self.outputs)
        if self.simulation is not None:
            out["simulation"] = dict(self.simulation)
        return out

    @classmethod
    def from_json(cls, d: dict) -> ScriptReport:
        return cls(
            path=d["path"],
            outcome=d["outcome"],
            sbatch_accepts=bool(d.get("sbatch_accepts")),
            names=tuple(d.get("names", ())),
            launcher=d.get("launcher"),
            runtime=d.get("runtime"),
            image=d.get("image"),
            nodes=int(d.get("nodes") or 0),
            gpus=int(d.get("gpus") or 0),
            time_limit_seconds=d.get("time_limit_seconds"),
            node_hours=float(d.get("node_hours") or 0.0),
            gpu_hours=float(d.get("gpu_hours") or 0.0),
            issues=tuple([_issue_from_json(i) for i in d.get("issues", ())]),
            rows=tuple([LineRow.from_json(r) for r in d.get("rows", ())]),
            decisions=tuple(d.get("decisions", ())),
            modules=tuple(d.get("modules", ())),
            environments=tuple(d.get("environments", ())),
            paths=tuple(d.get("paths", ())),
            yaml=d.get("yaml", ""),
            outputs=tuple(d.get("outputs", ())),
            simulation=d.get("simulation"),
        )


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _scalar(v) -> str:
    """JSON of one value as json.dumps writes it (strings, None and plain ints without a call into json)."""
    t = type(v)
    if t is str:
        return _str_json(v)
    if v is None:
        return "null"
    if t is int:
        return int.__repr__(v)
    if t is float and math.isfinite(v):
        return float.__repr__(v)
    return _dumps(v)


def _strs(xs) -> str:
    """JSON list of strings (TypeError on anything else, which sends the record to the general path)."""
    return "[" + ",".join([_str_json(x) for x in xs]) + "]" if xs else "[]"


def _issue_json(i: Issue) -> str:
    line = i.line
    sug = i.suggestion
    ls = "null" if line is None else int.__repr__(line) if type(line) is int else _dumps(line)
    ss = "null" if sug is None else _str_json(sug)
    return (
        f'{{"severity":{_str_json(i.severity)},"code":{_str_json(i.code)},"line":{ls},'
        f'"message":{_str_json(i.message)},"suggestion":{ss}}}'
    )


_FIELD_JSON: dict[tuple[str, str], str] = {}  # (field, status) -> its JSON (a few hundred distinct pairs)
_ROW_JSON: dict[tuple[str, str | None], str] = {}  # (kind, status) -> a row's JSON between its text and fields


def _record_json(sr: ScriptReport) -> str:
    issues = {id(i): _issue_json(i) for i in sr.issues}
    rows: list[str] = []
    ra = rows.append
    fjson = _FIELD_JSON
    mid = _ROW_JSON
    for r in sr.rows:
        if r.fields:
            fs = []
            for f in r.fields:
                key = (f.field, f.status)
                fj = fjson.get(key)
                if fj is None:
                    fj = '{"field":' + _str_json(f.field) + ',"status":' + _str_json(f.status) + "}"
                    if len(fjson) < 4096:
                        fjson[key] = fj
                fs.append(fj)
            fields = ",".join(fs)
        else:
            fields = ""
        kind_status = (r.kind, r.status)
        m = mid.get(kind_status)
        if m is None:
            st = r.status
            m = (
                ',"kind":'
                + _str_json(r.kind)
                + ',"status":'
                + ("null" if st is None else _str_json(st))
                + ',"fields":['
            )
            if len(mid) < 256:
                mid[kind_status] = m
        line = r.line
        ls = int.__repr__(line) if type(line) is int else _dumps(line)
        ns = ",".join([issues.get(id(n)) or _issue_json(n) for n in r.notes]) if r.notes else ""
        ra(f'{{"line":{ls},"text":{_str_json(r.text)}{m}{fields}],"notes":[{ns}]}}')
    sba = sr.sbatch_accepts
    parts = [
        '{"path":',
        _str_json(sr.path),
        ',"outcome":',
        _str_json(sr.outcome),
        ',"sbatch_accepts":',
        ("true" if sba else "false") if type(sba) is bool else _dumps(sba),
        ',"names":',
        _strs(sr.names),
        ',"launcher":',
        _scalar(sr.launcher),
        ',"runtime":',
        _scalar(sr.runtime),
        ',"image":',
        _scalar(sr.image),
        ',"nodes":',
        _scalar(sr.nodes),
        ',"gpus":',
        _scalar(sr.gpus),
        ',"time_limit_seconds":',
        _scalar(sr.time_limit_seconds),
        ',"node_hours":',
        _scalar(sr.node_hours),
        ',"gpu_hours":',
        _scalar(sr.gpu_hours),
        ',"issues":[',
        ",".join(issues.values()) if len(issues) == len(sr.issues) else ",".join(map(_issue_json, sr.issues)),
        '],"rows":[',
        ",".join(rows),
        '],"decisions":',
        _strs(sr.decisions),
        ',"modules":',
        _strs(sr.modules),
        ',"environments":',
        _strs(sr.environments),
        ',"paths":',
        _strs(sr.paths),
        ',"yaml":',
        _str_json(sr.yaml),
        ',"outputs":',
        _strs(sr.outputs),
    ]
    if sr.simulation is not None:
        parts.append(',"simulation":')
        parts.append(_dumps(dict(sr.simulation)))
    parts.append("}")
    return "".join(parts)


@dataclass(frozen=True)
class SkippedFile:
    """A file discovery did not convert, and why (M6xx)."""

    path: str
    code: str
    severity: str
    message: str

    def to_json(self) -> dict:
        return {"path": self.path, "code": self.code, "severity": self.severity, "message": self.message}

    @classmethod
    def from_json(cls, d: dict) -> SkippedFile:
        return cls(d["path"], d["code"], d["severity"], d["message"])


@dataclass(frozen=True)
class CodeCount:
    code: str
    severity: str
    scripts: int
    example_message: str
    affected: tuple[str, ...]  # script paths (first few, sorted)

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity,
            "scripts": self.scripts,
            "example_message": self.example_message,
            "affected": list(self.affected),
        }


@dataclass(frozen=True)
class RepoSummary:
    scripts: int
    outcomes: tuple[tuple[str, int], ...]  # (clean|warnings|errors, count)
    blockers: tuple[CodeCount, ...]  # error codes, most scripts first
    warnings: tuple[CodeCount, ...]  # warning codes, most scripts first
    launchers: tuple[tuple[str, int], ...]
    runtimes: tuple[tuple[str, int], ...]
    gpus: int
    nodes: int
    gpu_hours: float
    node_hours: float
    scripts_without_time_limit: int
    modules: tuple[tuple[str, int], ...]  # (name, scripts using it)
    environments: tuple[tuple[str, int], ...]
    paths: tuple[tuple[str, int], ...]
    skipped: tuple[tuple[str, int], ...]  # (M6xx code, files)
    simulation: dict | None = None  # --simulate: verdict counts, difference kinds (report/simulation.py)

    def outcome(self, name: str) -> int:
        return dict(self.outcomes).get(name, 0)

    def to_json(self) -> dict:
        out: dict = {"scripts": self.scripts}
        if self.simulation is not None:  # the proof leads
            out["simulation"] = self.simulation
        return out | {
            "outcomes": dict(self.outcomes),
            "blockers": [c.to_json() for c in self.blockers],
            "warnings": [c.to_json() for c in self.warnings],
            "launchers": dict(self.launchers),
            "runtimes": dict(self.runtimes),
            "gpus": self.gpus,
            "nodes": self.nodes,
            "gpu_hours": round(self.gpu_hours, 2),
            "node_hours": round(self.node_hours, 2),
            "scripts_without_time_limit": self.scripts_without_time_limit,
            "modules": dict(self.modules),
            "environments": dict(self.environments),
            "paths": dict(self.paths),
            "skipped": dict(self.skipped),
        }


AFFECTED_SHOWN = 20


class SummaryBuilder:
    """Accumulates the repository summary one script at a time (no list of scripts kept)."""

    def __init__(self) -> None:
        self.scripts = 0
        self.outcomes: Counter = Counter()
        self.code_scripts: Counter = Counter()
        self.code_severity: dict[str, str] = {}
        self.code_message: dict[str, str] = {}
        self.code_affected: dict[str, list[str]] = {}
        self.launchers: Counter = Counter()
        self.runtimes: Counter = Counter()
        self.gpus = 0
        self.nodes = 0
        self.gpu_hours = 0.0
        self.node_hours = 0.0
        self.no_limit = 0
        self.modules: Counter = Counter()
        self.environments: Counter = Counter()
        self.paths: Counter = Counter()
        self.skipped: Counter = Counter()
        self.simulation = SimulationTally()

    def add(self, s: ScriptReport) -> None:
        self.scripts += 1
        self.outcomes[s.outcome] += 1
        self.simulation.add(s.simulation)
        worst: dict[str, str] = {}
        message = self.code_message
        for i in s.issues:
            code = i.code
            sev = i.severity
            if sev == "error" or (sev == "warning" and worst.get(code) != "error"):
                worst[code] = sev
            if code not in message:  # the first message seen for a code
                message[code] = i.message
        if worst:
            scripts = self.code_scripts
            severity = self.code_severity
            affected = self.code_affected
            path = s.path
            for code, sev in worst.items():
                scripts[code] += 1
                if severity.get(code) != "error":
                    severity[code] = sev
                aff = affected.get(code)
                if aff is None:
                    affected[code] = [path]
                    continue
                aff.append(path)
                if len(aff) > 4 * AFFECTED_SHOWN:  # keep the smallest paths, bounded
                    aff.sort()
                    del aff[AFFECTED_SHOWN:]
        if s.launcher:
            self.launchers[s.launcher] += 1
        if s.runtime:
            self.runtimes[s.runtime] += 1
        if s.sbatch_accepts:  # totals of jobs Slurm would run; a refused script requests nothing
            self.gpus += s.gpus
            self.nodes += s.nodes
            self.gpu_hours += s.gpu_hours
            self.node_hours += s.node_hours
            if s.names and not s.time_limit_seconds:
                self.no_limit += 1
        if s.modules:
            self.modules.update(set(s.modules))
        if s.environments:
            self.environments.update(set(s.environments))
        if s.paths:
            self.paths.update(set(s.paths))

    def add_skipped(self, f: SkippedFile) -> None:
        self.skipped[f.code] += 1

    def _codes(self, severity: str) -> tuple[CodeCount, ...]:
        out = []
        for code, n in self.code_scripts.items():
            if self.code_severity.get(code) != severity:
                continue
            out.append(
                CodeCount(
                    code,
                    severity,
                    n,
                    self.code_message.get(code, ""),
                    tuple(sorted(self.code_affected.get(code, ()))[:AFFECTED_SHOWN]),
                )
            )
        out.sort(key=lambda c: (-c.scripts, c.code))
        return tuple(out)

    def build(self) -> RepoSummary:
        def ranked(c: Counter) -> tuple[tuple[str, int], ...]:
            return tuple(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))

        return RepoSummary(
            scripts=self.scripts,
            outcomes=tuple((o, self.outcomes.get(o, 0)) for o in OUTCOMES),
            blockers=self._codes("error"),
            warnings=self._codes("warning"),
            launchers=ranked(self.launchers),
            runtimes=ranked(self.runtimes),
            gpus=self.gpus,
            nodes=self.nodes,
            gpu_hours=self.gpu_hours,
            node_hours=self.node_hours,
            scripts_without_time_limit=self.no_limit,
            modules=ranked(self.modules),
            environments=ranked(self.environments),
            paths=ranked(self.paths),
            skipped=tuple(sorted(self.skipped.items())),
            simulation=self.simulation.build(),
        )


@dataclass
class Report:
    """What the writers render. `scripts` is re-iterable (a list, or a spool read back from disk)."""

    title: str
    source: str
    summary: RepoSummary
    scripts: Iterable[ScriptReport]
    skipped: tuple[SkippedFile, ...] = ()
    extra: dict[str, object] = field(default_factory=dict)  # e.g. migrate counts
    index: list[ScriptReport] | None = None  # the same scripts without rows/YAML (cheap to walk)
    fragments: ScriptSpool | None = None  # holds pre-rendered per-script text

    def light(self) -> Iterable[ScriptReport]:
        """The scripts, sorted by path, possibly without their rows and YAML."""
        return self.index if self.index is not None else self.scripts

    @classmethod
    def from_scripts(
        cls, title: str, source: str, scripts: list[ScriptReport], skipped: Iterable[SkippedFile] = ()
    ) -> Report:
        b = SummaryBuilder()
        for s in scripts:
            b.add(s)
        skipped = tuple(skipped)
        for f in skipped:
            b.add_skipped(f)
        return cls(title, source, b.build(), scripts, skipped)


class TextBuffer:
    """A text stream that passes its small writes on joined, in pieces of about `size` characters, and a large
    write as it is: a writer's sink may pay a system call, a hash update and an encoding per write, so the
    writers make fewer ones, while no joined piece grows into a large allocation (in the parent, large
    strings cost page faults). Use as a context manager: the rest is written on a clean exit, nothing more
    on an error.

    (Feeding the sink from a second thread was measured too: the GIL hand-overs between the reading and the
    encoding made it slower, 0.83 -> 1.3 s wall for a 238 MB JSON report on a busy machine.)
    """

    def __init__(self, out: IO[str], size: int = 1 << 13) -> None:
        self._out = out
        self._parts: list[str] = []
        self._n = 0
        self._size = size

    def write(self, s: str) -> int:
        n = len(s)
        if n >= self._size:  # large: after what is pending, as it is (no copy)
            self.flush()
            self._out.write(s)
            return n
        self._parts.append(s)
        self._n += n
        if self._n >= self._size:
            self.flush()
        return n

    def flush(self) -> None:
        if self._parts:
            chunk = "".join(self._parts)
            self._parts = []
            self._n = 0
            self._out.write(chunk)

    def __enter__(self) -> TextBuffer:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.flush()


def prerendered(report: Report, kind: str) -> ScriptSpool | None:
    """The spool when it holds `kind` fragments for every script, else None."""
    f = report.fragments
    return f if f is not None and f.has(kind) else None


def iter_sorted(scripts: Iterable[ScriptReport]) -> Iterator[ScriptReport]:
    return iter(sorted(scripts, key=lambda s: s.path))
