"""One unit of migrate work: read a candidate, decide by content, convert, render, write, report.

Runs in pool workers (and inline for `--jobs 1`). The pipeline and emitters are imported once per
process (`init`), and each call handles a batch of files to keep inter-process traffic low. A
failure on one file is caught and recorded (M606); it never stops the batch.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from translator.migrate.discover import Candidate, is_job_script, looks_binary
from translator.migrate.files import UNCHANGED, WRITTEN, sha256_bytes, write_if_changed

YAML_SUFFIX = ".trainjob.yaml"
PY_SUFFIX = ".trainjob.py"


@dataclass(frozen=True)
class WorkContext:
    out_dir: Optional[str]          # None: report only, nothing written or compared
    settings: object                # translator.pipeline.ConvertSettings
    check: bool = False
    max_size: int = 1 << 20
    source_label: str = ""          # prefix for the source path recorded in annotations ("" = relative)
    timeout: float = 60.0           # seconds one script may take (0 = no limit); over it: M615


@dataclass
class FileResult:
    """What the parent needs back about one candidate."""

    rel: str
    kind: str                                   # "script" | "other" | "binary" | "unreadable"
    record: Optional[dict] = None               # light ScriptReport.to_json() (no rows, no YAML)
    record_json: str = ""                       # the full record as the JSON report holds it
    fragments: Tuple[Tuple[str, str], ...] = () # pre-rendered report parts: ("html", ...), ("md", ...)
    outputs: Tuple[Tuple[str, str, str], ...] = ()   # (rel OUT path, sha256, WRITTEN|UNCHANGED)
    names: Tuple[str, ...] = ()                 # TrainJob names as emitted
    base_names: Tuple[str, ...] = ()            # TrainJob names before any clash suffix
    suffixed: bool = False                      # a clash suffix was applied
    runnable: bool = False                      # goes into the kustomization
    skipped: Optional[dict] = None              # SkippedFile.to_json() (unreadable)


_CTX: Optional[WorkContext] = None
_PROFILES: dict = {}       # profile path -> (Profile | None, load diagnostics), per process
_FOLDER_PROFILE: dict = {} # script folder -> profile path (or None), per process


def _settings_for(c: Candidate, ctx: WorkContext):
    """The run's settings, with the nearest `slurm2kf.yaml` profile when no --profile was given."""
    settings = ctx.settings
    if getattr(settings, "profile", None) is not None:
        return settings, ()
    try:
        from translator.profile.load import ProfileError, find_profile, load_profile
    except ImportError:
        return settings, ()
    folder = os.path.dirname(os.path.abspath(c.path))
    if folder not in _FOLDER_PROFILE:
        _FOLDER_PROFILE[folder] = find_profile(os.path.join(folder, "x"))
    path = _FOLDER_PROFILE[folder]
    if not path:
        return settings, ()
    if path not in _PROFILES:
        try:
            _PROFILES[path] = (load_profile(path), ())
        except ProfileError as exc:
            _PROFILES[path] = (None, exc.diagnostics)
    prof, diags = _PROFILES[path]
    if prof is None:
        return settings, diags
    return dataclasses.replace(settings, profile=prof), ()


def init(ctx: WorkContext) -> None:
    """Pool initializer: keep the context and import the whole pipeline once."""
    global _CTX
    _CTX = ctx
    warm_up()


def warm_up() -> None:
    import translator.pipeline  # noqa: F401
    import translator.report.build  # noqa: F401
    import translator.report.html  # noqa: F401
    for mod in ("translator.read", "translator.slurm.resolve", "translator.plan.build",
                "translator.emit.trainjob_yaml", "translator.emit.sdk_python"):
        try:
            __import__(mod)
        except ImportError:
            pass


def run_batch(batch: Sequence[Tuple[Candidate, Optional[str]]]) -> List[FileResult]:
    """Process (candidate, rename_suffix) pairs with the process-wide context."""
    assert _CTX is not None, "worker.init() was not called"
    return [process(c, _CTX, suffix) for c, suffix in batch]


def renamed(name: str, suffix: str) -> str:
    base = name[: 63 - len(suffix) - 1].rstrip("-")
    return f"{base}-{suffix}"


def rename_suffix(rel: str) -> str:
    return hashlib.sha1(rel.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def process(c: Candidate, ctx: WorkContext, suffix: Optional[str] = None) -> FileResult:
    from translator.report.model import SkippedFile

    try:
        with open(c.path, "rb") as fh:
            data = fh.read(ctx.max_size + 1)
    except OSError as exc:
        sk = SkippedFile(c.rel, "M602", "error", f"cannot read: {exc.strerror or exc}")
        return FileResult(c.rel, "unreadable", skipped=sk.to_json())
    if len(data) > ctx.max_size:      # grew after discovery looked at it
        sk = SkippedFile(c.rel, "M601", "warning", f"over the {ctx.max_size}-byte limit (--max-size); not read")
        return FileResult(c.rel, "unreadable", skipped=sk.to_json())
    if not is_job_script(data):
        return FileResult(c.rel, "binary" if looks_binary(data) else "other")
    try:
        return _with_deadline(ctx.timeout, _convert, c, data, ctx, suffix)
    except ScriptTimeout:
        return failed_result(c.rel, "M615", f"conversion took longer than {ctx.timeout:g} s (--timeout); stopped")
    except Exception as exc:  # a bug in a stage must not stop the run: record it against the script
        return failed_result(c.rel, "M606", f"internal error while converting ({type(exc).__name__}: {exc})")


class ScriptTimeout(Exception):
    """One script took longer than WorkContext.timeout."""


def _with_deadline(seconds: float, fn, *args):
    """fn(*args), interrupted by ScriptTimeout after `seconds` (a SIGALRM timer; main thread only,
    which is where pool workers and inline runs call it)."""
    import signal
    import threading

    if not seconds or seconds <= 0 or threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "setitimer"):
        return fn(*args)

    def on_alarm(signum, frame):
        raise ScriptTimeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def failed_result(rel: str, code: str, message: str) -> FileResult:
    """The record of a script that could not be converted (timeout, worker crash, internal error)."""
    from translator.report.model import ERRORS, Issue, ScriptReport

    hint = ("report this script to the slurm2kf maintainers" if code != "M615"
            else "raise --timeout, or report the script to the slurm2kf maintainers")
    sr = ScriptReport(path=rel, outcome=ERRORS, sbatch_accepts=False,
                      issues=(Issue("error", code, message[:500], None, hint),))
    return _result(rel, sr)


def _convert(c: Candidate, data: bytes, ctx: WorkContext, suffix: Optional[str]) -> FileResult:
    from translator.pipeline import convert
    from translator.report.build import script_report

    settings, profile_errors = _settings_for(c, ctx)
    conv = convert(ctx.source_label + c.rel, data=data, settings=settings)
    plans = tuple(conv.plans)
    base_names = tuple(p.name for p in plans)
    if suffix and plans:
        plans = tuple(dataclasses.replace(p, name=renamed(p.name, suffix)) for p in plans)
        conv = dataclasses.replace(conv, plans=plans)
    yaml_text = ""
    outputs: List[Tuple[str, str, str]] = []
    if plans:
        from translator.emit import sdk_python, trainjob_yaml

        yaml_text = trainjob_yaml.render(plans, findings_comment=True)
        py_text = sdk_python.render(plans)
        for suffix_, text in ((YAML_SUFFIX, yaml_text), (PY_SUFFIX, py_text)):
            rel_out = c.out_stem + suffix_
            blob = text.encode("utf-8")
            status = UNCHANGED
            if ctx.out_dir is not None:
                status = write_if_changed(os.path.join(ctx.out_dir, *rel_out.split("/")), blob, ctx.check)
            outputs.append((rel_out, sha256_bytes(blob), status))
    sr = script_report(conv, c.rel, yaml_text, [o[0] for o in outputs], settings=settings)
    if getattr(settings, "simulate", False):
        from translator.report.build import with_simulation

        sr = with_simulation(sr, c.path, settings)
    if profile_errors:
        from translator.report.build import _issue

        sr = dataclasses.replace(sr, outcome="errors", issues=tuple(_issue(d) for d in profile_errors) + sr.issues)
    if suffix and plans:
        from translator.report.model import Issue

        note = Issue("info", "M607", f"TrainJob name {', '.join(base_names)} is shared with another script "
                                     f"of the repository; renamed to {', '.join(sr.names)}", None,
                     "give the scripts distinct --job-name values to choose the names yourself")
        sr = dataclasses.replace(sr, issues=sr.issues + (note,))
    return _result(c.rel, sr, outputs=tuple(outputs), names=sr.names, base_names=base_names,
                   suffixed=bool(suffix and plans), runnable=bool(plans) and sr.outcome != "errors")


def _result(rel: str, sr, **kw) -> FileResult:
    """Serialise the record and render its HTML section here, in the worker, in parallel."""
    import json

    from translator.report import html

    full = sr.to_json()
    record_json = json.dumps(full, sort_keys=False, ensure_ascii=False, separators=(",", ":"))
    del full["rows"], full["yaml"]
    return FileResult(rel, "script", record=full, record_json=record_json,
                      fragments=(("html", html._PART.join(html.script_parts(sr))),), **kw)
