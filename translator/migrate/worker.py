"""One unit of migrate work: read a candidate, decide by content, convert, render, write, report.

Runs in pool workers (and inline for `--jobs 1`). The pipeline and emitters are imported once per
process (`init`), and each call handles a batch of files to keep inter-process traffic low. A
failure on one file is caught and recorded (M606); it never stops the batch. Each process appends
the full report records to a file of its own in the run's spool folder (`RecordWriter`) and sends
back only where they are, with the light record the summaries need.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING
from collections.abc import Sequence

from translator.migrate.discover import Candidate, is_job_script, looks_binary
from translator.migrate.files import UNCHANGED, OutEntryRefused, out_write_many, sha256_bytes
from translator.report.model import Issue, ScriptReport


@dataclass(frozen=True)
class WorkContext:
    out_dir: str | None  # None: report only, nothing written or compared
    settings: ConvertSettings
    check: bool = False
    max_size: int = 1 << 20
    source_label: str = ""  # prefix for the source path recorded in annotations ("" = relative)
    timeout: float = 60.0  # seconds one script may take (0 = no limit); over it: M615
    spool_dir: str | None = None  # the run's ScriptSpool folder: records are written there (None: sent back)


@dataclass
class FileResult:
    """What the parent needs back about one candidate."""

    rel: str
    kind: str  # "script" | "other" | "binary" | "unreadable"
    light: ScriptReport | None = None  # the record without rows and YAML (what summaries read)
    record_json: bytes = b""  # the full record as the JSON report holds it (UTF-8), when not spooled
    record_at: tuple[str, int, int] | None = None  # where a RecordWriter put the full record
    outputs: tuple[tuple[str, str, str], ...] = ()  # (rel OUT path, sha256, WRITTEN|UNCHANGED)
    names: tuple[str, ...] = ()  # TrainJob names as emitted
    base_names: tuple[str, ...] = ()  # TrainJob names before any clash suffix
    suffixed: bool = False  # a clash suffix was applied
    runnable: bool = False  # goes into the kustomization
    skipped: dict | None = None  # SkippedFile.to_json() (unreadable)


_CTX: WorkContext | None = None
_PROFILES: dict = {}  # profile path -> (Profile | None, load diagnostics), per process
_FOLDER_PROFILE: dict = {}  # script folder (as discovery spells it) -> profile path (or None), per process
_WRITER: list = []  # this process's RecordWriter (at most one; a forked child makes its own)
_ALARM_PID = [0]  # the process whose SIGALRM handler pool_init set for good (its deadlines only arm a timer)

if TYPE_CHECKING:  # (the pipeline is imported by warm_up, in each worker)
    from translator.pipeline import ConvertSettings


def _settings_for(c: Candidate, ctx: WorkContext):
    """The run's settings, with the nearest `slurm2kf.yaml` profile when no --profile was given."""
    settings = ctx.settings
    if getattr(settings, "profile", None) is not None:
        return settings, ()
    from translator.profile.load import ProfileError, find_profile, load_profile

    key = os.path.dirname(c.path)
    path = _FOLDER_PROFILE.get(key, "")
    if path == "":
        folder = os.path.dirname(os.path.abspath(c.path))
        path = _FOLDER_PROFILE[key] = find_profile(os.path.join(folder, "x"))
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
    """Keep the context and import the whole pipeline once (inline runs and pool workers)."""
    global _CTX
    _CTX = ctx
    warm_up()


PR_SET_PDEATHSIG = 1


def pool_init(ctx: WorkContext, parent_pid: int) -> None:
    """Pool initializer: die with the migrate process. The kernel sends SIGKILL to this worker when
    its parent dies (prctl PR_SET_PDEATHSIG), whatever killed the parent (SIGTERM, SIGKILL, a crash);
    a parent that died before the prctl call is caught by comparing the parent pid."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent-pid check below still applies
        pass
    if os.getppid() != parent_pid:
        os._exit(1)
    # SIGINT goes to the whole foreground process group: the parent handles Ctrl-C, workers just die
    # with it instead of printing tracebacks of their own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "setitimer"):  # the per-script deadline's handler, set once for this process
        signal.signal(signal.SIGALRM, _on_alarm)
        _ALARM_PID[0] = os.getpid()
    _SETTLE[0] = True
    init(ctx)


_SETTLE = [False]  # a pool worker: what is alive between batches is set aside from the collector


def _settle() -> None:
    """Between two batches of a pool worker: collect the cyclic garbage, then move every object still
    alive (modules, compiled tables, the per-process tables of repeated words, commands and values) out
    of the collector's generations (gc.freeze). Those tables grow to tens of thousands of objects, and
    a full collection walks every tracked object: without this, one every few hundred scripts paused a
    worker for 30-75 ms (in the middle of some script). Frozen objects are still freed by reference
    counting when a bounded table drops them; the collections left only walk one batch's objects."""
    import gc

    gc.collect()
    gc.freeze()


def warm_up() -> None:
    import importlib

    from translator.emit import migrate_writers

    for mod in (
        "translator.pipeline",
        "translator.report.build",
        "translator.report.html",
        "translator.read",
        "translator.slurm.resolve",
        "translator.plan.build",
        *(w.module for w in migrate_writers()),
    ):
        importlib.import_module(mod)


def run_batch(batch: Sequence[tuple[Candidate, str | None]]) -> list[FileResult]:
    """Process (candidate, rename_suffix) pairs with the process-wide context. With a spool folder,
    the full records go to this process's record file (flushed before the results are returned)."""
    assert _CTX is not None, "worker.init() was not called"
    if _SETTLE[0]:
        _settle()
    results = [process(c, _CTX, suffix) for c, suffix in batch]
    if _CTX.spool_dir:
        try:
            writer = _writer(_CTX.spool_dir)
            for r in results:
                if r.record_json:
                    r.record_at = writer.put(r.record_json)
            writer.flush()
        except OSError:  # (disk full) the records go back whole: the outputs written are never lost
            close_writer()  # a half-written file is never appended to again
            for r in results:
                r.record_at = None
            return results
        except BaseException:
            close_writer()
            raise
        for r in results:
            if r.record_at is not None:
                r.record_json = b""
    return results


def _writer(folder: str):
    from translator.report.spool import RecordWriter

    if _WRITER:
        w = _WRITER[0]
        if w.pid == os.getpid() and w.folder == folder:
            return w
        if w.pid == os.getpid():
            w.close()
        _WRITER.clear()  # (a writer inherited through fork stays the parent's)
    w = RecordWriter(folder)
    _WRITER.append(w)
    return w


def close_writer() -> None:
    """Close this process's record file (inline runs call it when the run's batches are done)."""
    if _WRITER:
        w = _WRITER.pop()
        if w.pid == os.getpid():
            try:
                w.close()
            except OSError:
                pass


def renamed(name: str, suffix: str) -> str:
    base = name[: 63 - len(suffix) - 1].rstrip("-")
    return f"{base}-{suffix}"


def rename_suffix(rel: str) -> str:
    return hashlib.sha1(rel.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def process(c: Candidate, ctx: WorkContext, suffix: str | None = None) -> FileResult:
    from translator.fsio import UserFileError
    from translator.report.model import SkippedFile

    try:
        data = _read_candidate(c, ctx.max_size)
    except UserFileError as exc:
        if exc.kind == "too_large":  # grew after discovery looked at it
            sk = SkippedFile(c.rel, "M601", "warning", f"over the {ctx.max_size}-byte limit (--max-size); not read")
        elif exc.kind in ("special", "directory", "symlink"):  # replaced after discovery looked at it
            sk = SkippedFile(
                c.rel,
                "M621",
                "info",
                "no longer a regular file (replaced by a special file, folder or link while migrate ran); not read",
            )
        else:
            why = exc.message.split(": ", 1)[-1] if ": " in exc.message else exc.message
            sk = SkippedFile(c.rel, "M602", "error", f"cannot read: {why}")
        return FileResult(c.rel, "unreadable", skipped=sk.to_json())
    if not is_job_script(data):
        return FileResult(c.rel, "binary" if looks_binary(data) else "other")
    try:
        # Only the conversion runs under the deadline; the outputs are written after it, so a timeout
        # never leaves written files that the result (and so the manifest) does not list.
        done = _with_deadline(ctx.timeout, _convert, c, data, ctx, suffix)
    except ScriptTimeout:
        return failed_result(c.rel, "M615", f"conversion took longer than {ctx.timeout:g} s (--timeout); stopped")
    except Exception as exc:  # a bug in a stage must not stop the run: record it against the script
        return failed_result(c.rel, "M606", f"internal error while converting ({type(exc).__name__}: {exc})")
    return _write_outputs(done, ctx)


def _read_candidate(c: Candidate, limit: int) -> bytes:
    """The candidate's bytes. A symbolic link must still lead to the file discovery checked (same device
    and inode, before and after the open): a link switched to /proc/kmsg, a device or another file while
    migrate ran is refused as a special file (M621), never read."""
    from translator.fsio import SPECIAL, UserFileError, read_fd_regular, read_user_file

    if c.key is None:
        return read_user_file(c.path, limit, follow_symlinks=not c.no_follow)
    changed = UserFileError(SPECIAL, c.path, f"{c.path} changed since it was found; it is not read")
    try:
        st = os.stat(c.path)
        if (st.st_dev, st.st_ino) != c.key:
            raise changed
        fd = os.open(c.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise UserFileError("other", c.path, f"{c.path}: cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != c.key:
            raise changed
        return read_fd_regular(fd, c.path, limit)
    except OSError as exc:
        raise UserFileError("other", c.path, f"{c.path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


@dataclass
class Converted:
    """A converted script, before its outputs are written: the record and the rendered outputs."""

    rel: str
    sr: ScriptReport
    blobs: list[tuple[str, bytes, str]]  # (rel OUT path, content, sha256)
    names: tuple[str, ...] = ()
    base_names: tuple[str, ...] = ()
    suffixed: bool = False
    runnable: bool = False


def _write_outputs(done: Converted, ctx: WorkContext) -> FileResult:
    """Write the script's outputs into OUT (or compare them, in check mode), then serialise its record.
    An entry of OUT that is a symbolic link or a special file is never replaced: the script gets an
    error (M618)."""
    outputs: list[tuple[str, str, str]] = []
    refused: list[tuple[str, str]] = []  # (code, message)
    blobs = done.blobs
    if ctx.out_dir is None:
        outputs = [(rel_out, digest, UNCHANGED) for rel_out, _b, digest in blobs]
    elif blobs:
        statuses = out_write_many(ctx.out_dir, [(rel_out, blob) for rel_out, blob, _d in blobs], ctx.check)
        for (rel_out, _blob, digest), status in zip(blobs, statuses):
            if isinstance(status, str):
                outputs.append((rel_out, digest, status))
            elif isinstance(status, OutEntryRefused):
                refused.append(("M618", status.message))
            else:  # this script's output only (a name the file system refuses...)
                refused.append(("M610", f"cannot write {rel_out}: {status.strerror or status}"))
    if not refused:
        return _result(
            done.rel,
            done.sr,
            outputs=tuple(outputs),
            names=done.names,
            base_names=done.base_names,
            suffixed=done.suffixed,
            runnable=done.runnable,
        )
    from translator.report.model import ERRORS, Issue

    sr = ScriptReport.from_json(done.sr.to_json())  # (as the record reads back)
    code = refused[0][0]
    issue = Issue(
        "error",
        code,
        "; ".join(m for _c, m in refused)[:500],
        None,
        "remove the link or special file from the output folder, then re-run migrate"
        if code == "M618"
        else "fix the output location (space, permissions), then re-run migrate",
    )
    sr = dataclasses.replace(sr, outcome=ERRORS, issues=sr.issues + (issue,))
    return _result(
        done.rel,
        sr,
        outputs=tuple(outputs),
        names=done.names,
        base_names=done.base_names,
        suffixed=done.suffixed,
        runnable=False,
    )


class ScriptTimeout(Exception):
    """One script took longer than WorkContext.timeout."""


def _on_alarm(signum, frame):
    raise ScriptTimeout()


def _with_deadline(seconds: float, fn, *args):
    """fn(*args), interrupted by ScriptTimeout after `seconds` (a SIGALRM timer; main thread only,
    which is where pool workers and inline runs call it). A pool worker's handler is set once
    (pool_init); elsewhere it is set for the call and the previous one restored."""
    if not seconds or seconds <= 0 or not hasattr(signal, "setitimer"):
        return fn(*args)
    if _ALARM_PID[0] == os.getpid():
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return fn(*args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    import threading

    if threading.current_thread() is not threading.main_thread():
        return fn(*args)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def failed_result(rel: str, code: str, message: str) -> FileResult:
    """The record of a script that could not be converted (timeout, worker crash, internal error)."""
    from translator.report.model import ERRORS, Issue, ScriptReport

    hint = (
        "report this script to the slurm2kf maintainers"
        if code != "M615"
        else "raise --timeout, or report the script to the slurm2kf maintainers"
    )
    sr = ScriptReport(
        path=rel, outcome=ERRORS, sbatch_accepts=False, issues=(Issue("error", code, message[:500], None, hint),)
    )
    return _result(rel, sr)


def _convert(c: Candidate, data: bytes, ctx: WorkContext, suffix: str | None) -> Converted:
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
    blobs: list[tuple[str, bytes, str]] = []
    if plans:
        from translator.emit import migrate_writers, render

        for w in migrate_writers():  # one output file per format of the table (translator/emit)
            text = render(plans, w.name, findings_comment=True)
            if w.name == "yaml":
                yaml_text = text  # the report shows the TrainJob YAML
            blob = text.encode("utf-8")
            blobs.append((c.out_stem + w.suffix, blob, sha256_bytes(blob)))
    sr = script_report(conv, c.rel, yaml_text, [b[0] for b in blobs], settings=settings)
    if getattr(settings, "simulate", False):
        from translator.report.build import with_simulation

        sr = with_simulation(sr, c.path, settings)
    if profile_errors:
        from translator.report.build import _issue

        sr = dataclasses.replace(sr, outcome="errors", issues=tuple(_issue(d) for d in profile_errors) + sr.issues)
    if suffix and plans:
        note = Issue(
            "info",
            "M607",
            f"TrainJob name {', '.join(base_names)} is shared with another script "
            f"of the repository; renamed to {', '.join(sr.names)}",
            None,
            "give the scripts distinct --job-name values to choose the names yourself",
        )
        sr = dataclasses.replace(sr, issues=sr.issues + (note,))
    if c.name_note:
        sr = dataclasses.replace(
            sr,
            issues=sr.issues + (Issue("info", "M617", c.name_note, None, "rename the file to choose the output name"),),
        )
    return Converted(
        c.rel,
        sr,
        blobs,
        names=sr.names,
        base_names=base_names,
        suffixed=bool(suffix and plans),
        runnable=bool(plans) and sr.outcome != "errors",
    )


def _result(rel: str, sr: ScriptReport, **kw) -> FileResult:
    """Serialise the record here, in the worker, in parallel: the full record as the JSON report holds
    it, and the light record (as it reads back from JSON, without rows and YAML) for the summaries.

    The HTML section is not pre-rendered: the page details at most DETAILED_SECTIONS (1,000) scripts, which
    the parent renders at the end from their records (rendering and sending one for every script cost more)."""
    record_json = sr.record_json().encode("utf-8")
    return FileResult(rel, "script", light=sr.light(), record_json=record_json, **kw)
