"""`slurm2kf migrate`: convert a whole source tree into a reviewed, kubectl-appliable output tree.

Flow: discover (lazy, sorted) -> batches to a process pool (bounded in flight, so memory stays
flat) -> each worker converts, renders and writes its script's outputs atomically -> the parent
spools the report records to disk, fixes TrainJob name clashes, writes the kustomizations, the three
reports and the manifest, and removes outputs of scripts that disappeared since the last run.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from translator.migrate import files as F
from translator.migrate.discover import DEFAULT_MAX_SIZE, Candidate, discover
from translator.migrate.worker import FileResult, WorkContext, init, process, rename_suffix, run_batch
from translator.report.model import Report, SkippedFile, SummaryBuilder

BATCH_SIZE = 24
REPORT_FORMATS = (("md", "markdown"), ("html", "html"), ("json", "json_report"))


class MigrateError(Exception):
    """A usage or I/O failure that stops the run (exit 2). Carries an M6xx code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code} {message}")
        self.code = code
        self.message = message


@dataclass
class MigrateOptions:
    src: str
    out: Optional[str]                 # None: report-only run (nothing written)
    settings: object = None            # ConvertSettings
    jobs: int = 0                      # 0 = all cores
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    force: bool = False
    check: bool = False
    max_size: int = DEFAULT_MAX_SIZE
    timeout: float = 60.0              # seconds per script before it is recorded as M615 (0 = none)
    progress: Optional[bool] = None    # None = rich bar when stderr is a terminal
    echo: Callable[[str], None] = lambda s: print(s, file=sys.stderr)
    max_messages: int = 50             # per-script problem lines printed before "... and N more"
    report_sink: Optional[Callable[[Report], None]] = None   # report-only runs: called with the report


@dataclass
class MigrateResult:
    exit_code: int
    scripts: int = 0
    outcomes: Dict[str, int] = field(default_factory=dict)
    files_examined: int = 0
    written: List[str] = field(default_factory=list)       # OUT paths written (or that would be, in --check)
    unchanged: int = 0
    removed: List[str] = field(default_factory=list)       # stale outputs removed (or that would be)
    kept_stale: List[str] = field(default_factory=list)    # stale outputs edited by hand: kept
    skipped: List[SkippedFile] = field(default_factory=list)
    renamed: List[str] = field(default_factory=list)
    report: Optional[Report] = None                         # report-only runs
    seconds: float = 0.0


def _jobs(n: int) -> int:
    if n and n > 0:
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def check_paths(src: str, out: Optional[str], force: bool) -> None:
    if not os.path.isdir(src):
        raise MigrateError("M611", f"source {src!r} is not a folder")
    if out is None:
        return
    s, o = os.path.realpath(src), os.path.realpath(out)
    if o == s or s.startswith(o.rstrip(os.sep) + os.sep):
        raise MigrateError("M612", f"output folder {out!r} is the source folder or contains it; "
                                   "choose a separate folder (the source tree is never written)")
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise MigrateError("M613", f"output {out!r} exists and is not a folder")
        manifest = F.read_manifest(out)
        if manifest is None and os.listdir(out) and not force:
            raise MigrateError("M613", f"output folder {out!r} is not empty and was not created by "
                                       f"slurm2kf migrate (no {F.MANIFEST_NAME}); use --force to write into it")
        if manifest == {} and not force:
            raise MigrateError("M613", f"{os.path.join(out, F.MANIFEST_NAME)} is unreadable or not a slurm2kf "
                                       "manifest; use --force to write into this folder")


class _Progress:
    """Rich progress on a terminal; a plain line every ~10% of examined files otherwise."""

    def __init__(self, enabled: Optional[bool], echo) -> None:
        self.echo = echo
        self.rich = None
        self.examined = 0
        self.scripts = 0
        self.next_plain = 200
        tty = sys.stderr.isatty() if enabled is None else enabled
        if tty:
            try:
                from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

                self.rich = Progress(SpinnerColumn(), TextColumn("[bold]migrate[/]"), BarColumn(),
                                     TextColumn("{task.fields[scripts]} scripts / {task.completed} files"),
                                     TimeElapsedColumn(), transient=True)
                self.task = self.rich.add_task("migrate", total=None, scripts=0)
                self.rich.start()
            except Exception:
                self.rich = None

    def advance(self, examined: int, scripts: int, discovered: int) -> None:
        self.examined += examined
        self.scripts += scripts
        if self.rich is not None:
            self.rich.update(self.task, completed=self.examined, total=max(discovered, self.examined),
                             scripts=self.scripts)
        elif self.examined >= self.next_plain:
            self.echo(f"migrate: {self.examined} files examined, {self.scripts} scripts converted")
            self.next_plain = max(self.next_plain * 2, self.examined + 1)

    def stop(self) -> None:
        if self.rich is not None:
            self.rich.stop()


def _batches(found: Iterator, skipped: List[SkippedFile], counter: List[int],
             renamed: frozenset = frozenset()) -> Iterator[List[Tuple[Candidate, Optional[str]]]]:
    batch: List[Tuple[Candidate, Optional[str]]] = []
    for item in found:
        if isinstance(item, Candidate):
            counter[0] += 1
            batch.append((item, rename_suffix(item.rel) if item.rel in renamed else None))
            if len(batch) >= BATCH_SIZE:
                yield batch
                batch = []
        else:
            skipped.append(item)
    if batch:
        yield batch


def _execute(batches: Iterator, ctx: WorkContext, jobs: int, on_results: Callable[[List[FileResult]], None]) -> None:
    """Run batches inline (jobs == 1) or in a process pool with at most 2*jobs batches in flight.

    A worker that dies (a signal, the OOM killer) breaks the pool: the files of the batches that were
    in flight are then converted one at a time, each in a process of its own, so the script that kills
    its process is recorded against itself (M616) and the run goes on with a fresh pool.
    """
    if jobs <= 1:
        init(ctx)
        for b in batches:
            on_results(run_batch(b))
        return
    import multiprocessing

    from translator.migrate import worker

    worker.warm_up()  # imported before fork: children inherit the modules instead of re-importing
    try:
        mp = multiprocessing.get_context("fork")
    except ValueError:
        mp = None
    source = iter(batches)
    while True:
        lost = _run_pool(source, ctx, jobs, on_results, mp)
        if not lost:
            return
        for batch in lost:
            for item in batch:
                _run_alone(item, ctx, on_results, mp)


def _run_pool(source: Iterator, ctx: WorkContext, jobs: int, on_results, mp) -> List[list]:
    """Feed `source` to a pool until it is exhausted ([] returned) or the pool breaks (the batches
    that were in flight are returned; `source` keeps the rest)."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    pending: Dict[object, list] = {}
    lost: List[list] = []
    with ProcessPoolExecutor(max_workers=jobs, mp_context=mp, initializer=init, initargs=(ctx,)) as pool:
        while True:
            while not lost and len(pending) < 2 * jobs:
                b = next(source, None)
                if b is None:
                    break
                try:
                    pending[pool.submit(run_batch, b)] = b
                except BrokenProcessPool:
                    lost.append(b)
            if not pending:
                return lost
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for fut in done:
                b = pending.pop(fut)
                try:
                    on_results(fut.result())
                except BrokenProcessPool:
                    lost.append(b)
            if lost:                      # the pool is broken: every batch still pending is lost too
                lost.extend(pending.values())
                pending.clear()
                return lost


def _run_alone(item, ctx: WorkContext, on_results, mp) -> None:
    """Convert one (candidate, suffix) in a process of its own; its death is recorded as M616."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from translator.migrate.worker import failed_result

    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=mp, initializer=init, initargs=(ctx,)) as pool:
            results = pool.submit(run_batch, [item]).result()
    except BrokenProcessPool:
        results = [failed_result(item[0].rel, "M616", "the process converting this script died (killed by a "
                                 "signal or the out-of-memory killer); the run went on without it")]
    on_results(results)


def migrate(opts: MigrateOptions) -> MigrateResult:
    from translator import __version__
    from translator.pipeline import ConvertSettings
    from translator.report.spool import ScriptSpool

    t0 = time.perf_counter()
    settings = opts.settings if opts.settings is not None else ConvertSettings()
    check_paths(opts.src, opts.out, opts.force)
    write_outputs = opts.out is not None
    out = opts.out
    if write_outputs and not opts.check:
        try:
            os.makedirs(out, exist_ok=True)
            F.sweep_temp_files(out)
        except OSError as exc:
            raise MigrateError("M610", f"cannot create output folder {out!r}: {exc.strerror or exc}") from None
    old_manifest = (F.read_manifest(out) or {}) if write_outputs and os.path.isdir(out) else {}
    if write_outputs and not opts.check and not old_manifest:
        # Claim the folder first, so a run killed half-way can be resumed without --force.
        try:
            F.write_if_changed(os.path.join(out, F.MANIFEST_NAME), F.manifest_bytes({}, {}, [], __version__))
        except OSError as exc:
            raise MigrateError("M610", f"cannot write in {out!r}: {exc.strerror or exc}") from None

    ctx = WorkContext(out_dir=out if write_outputs else None, settings=settings, check=opts.check,
                      max_size=opts.max_size, timeout=opts.timeout)
    result = MigrateResult(exit_code=0)
    skipped: List[SkippedFile] = []
    outputs: Dict[str, str] = {}                 # rel OUT path -> sha256
    script_outputs: Dict[str, List[str]] = {}    # rel source path -> its outputs
    runnable_yaml: Dict[str, str] = {}           # rel source -> yaml output (kustomization members)
    names: Dict[str, List[str]] = {}             # TrainJob name (before clash suffix) -> rel source paths
    suffixed: set = set()                        # rel source paths emitted with a clash suffix
    prev_renamed = frozenset(x for x in old_manifest.get("renamed", []) if isinstance(x, str))
    candidates: Dict[str, Candidate] = {}
    written: List[str] = []
    unchanged = [0]
    discovered = [0]
    progress = _Progress(opts.progress, opts.echo)
    spool = ScriptSpool()

    def take(r: FileResult) -> int:
        if r.kind == "unreadable" and r.skipped:
            skipped.append(SkippedFile.from_json(r.skipped))
            return 0
        if r.kind != "script" or r.record is None:
            return 0
        spool.add_rendered(r.rel, r.record_json, r.record, dict(r.fragments))
        if r.suffixed:
            suffixed.add(r.rel)
        else:
            suffixed.discard(r.rel)
        script_outputs[r.rel] = [o[0] for o in r.outputs]
        for rel_out, digest, status in r.outputs:
            outputs[rel_out] = digest
            if status == F.WRITTEN:
                written.append(rel_out)
            else:
                unchanged[0] += 1
        if r.runnable:
            runnable_yaml[r.rel] = next((o[0] for o in r.outputs if o[0].endswith(".trainjob.yaml")), "")
        else:
            runnable_yaml.pop(r.rel, None)
        return 1

    def on_results(results: List[FileResult]) -> None:
        n = 0
        for r in results:
            n += take(r)
            for nm in r.base_names:
                lst = names.setdefault(nm, [])
                if r.rel not in lst:
                    lst.append(r.rel)
        progress.advance(len(results), n, discovered[0])

    def remember(found):
        for item in found:
            if isinstance(item, Candidate):
                candidates[item.rel] = item
            yield item

    try:
        found = remember(discover(opts.src, out_dir=out, include=opts.include, exclude=opts.exclude,
                                  max_size=opts.max_size))
        _execute(_batches(found, skipped, discovered, prev_renamed), ctx, _jobs(opts.jobs), on_results)
        result.files_examined = discovered[0]

        # Scripts whose TrainJobs would share a name all get a suffix from their path. The previous
        # run's renames are applied up front (manifest), so a re-run rewrites nothing.
        clashing = {rel for rels in names.values() if len(rels) > 1 for rel in rels}
        redo = sorted((clashing ^ suffixed) & set(candidates))
        if redo:
            init(ctx)
        for rel in redo:
            r = process(candidates[rel], ctx, rename_suffix(rel) if rel in clashing else None)
            for rel_out, _d, _s in r.outputs:
                if rel_out in written:
                    written.remove(rel_out)
                else:
                    unchanged[0] -= 1
            take(r)
        for rel in sorted(clashing):
            result.renamed.append(rel)
    except OSError as exc:
        progress.stop()
        spool.close()
        raise MigrateError("M610", f"I/O failure: {exc.strerror or exc} ({getattr(exc, 'filename', '')})") from None
    finally:
        progress.stop()

    try:
        index = spool.light()
        builder = SummaryBuilder()
        for sr in index:
            builder.add(sr)
        skipped.sort(key=lambda f: f.path)
        for f in skipped:
            builder.add_skipped(f)
        title = "slurm2kf migration review: " + os.path.basename(os.path.realpath(opts.src))
        report = Report(title=title, source=os.path.basename(os.path.realpath(opts.src)),
                        summary=builder.build(), scripts=spool, skipped=tuple(skipped), index=index,
                        fragments=spool)
        result.scripts = len(index)
        result.outcomes = dict(report.summary.outcomes)
        result.skipped = skipped

        if write_outputs:
            _finish_tree(opts, out, report, outputs, script_outputs, runnable_yaml, written, unchanged,
                         old_manifest, result, __version__, sorted(clashing))
        else:
            if opts.report_sink is not None:
                # report-only: the caller renders now, from the spool
                opts.report_sink(report)
            else:   # materialise the full records (the spool is closed below)
                report.scripts = list(spool)
                report.index = None
                report.fragments = None
                result.report = report
    except OSError as exc:
        raise MigrateError("M610", f"I/O failure: {exc.strerror or exc} ({getattr(exc, 'filename', '')})") from None
    finally:
        spool.close()

    result.written = sorted(written)
    result.unchanged = unchanged[0]
    errors = report.summary.outcome("errors") + sum(1 for f in skipped if f.severity == "error")
    result.exit_code = 1 if errors else 0
    if opts.check and (written or result.removed):
        result.exit_code = 1
    _echo_problems(opts, index, skipped)
    result.seconds = time.perf_counter() - t0
    return result


def _finish_tree(opts, out, report, outputs, script_outputs, runnable_yaml, written, unchanged,
                 old_manifest, result, version, renamed) -> None:
    import importlib

    def put(rel: str, data: bytes) -> None:
        status = F.write_if_changed(os.path.join(out, *rel.split("/")), data, opts.check)
        outputs[rel] = F.sha256_bytes(data)
        if status == F.WRITTEN:
            written.append(rel)
        else:
            unchanged[0] += 1

    for folder, resources in sorted(F.kustomizations(v for v in runnable_yaml.values() if v).items()):
        put(f"{folder}/{F.KUSTOMIZATION}" if folder else F.KUSTOMIZATION, F.kustomization_bytes(resources))

    for ext, module in REPORT_FORMATS:
        writer = importlib.import_module(f"translator.report.{module}")
        rel = f"{F.REPORT_BASENAME}.{ext}"
        status, digest = F.write_stream_if_changed(os.path.join(out, rel), lambda fh: writer.write(report, fh),
                                                   opts.check)
        outputs[rel] = digest
        if status == F.WRITTEN:
            written.append(rel)
        else:
            unchanged[0] += 1

    # Outputs of the previous run that this run did not produce: remove them if still as we wrote them.
    old_outputs = old_manifest.get("outputs", {}) if isinstance(old_manifest.get("outputs"), dict) else {}
    for rel, digest in sorted(old_outputs.items()):
        if rel in outputs or not isinstance(rel, str) or rel.startswith("/") or ".." in rel.split("/"):
            continue
        path = os.path.join(out, *rel.split("/"))
        if not os.path.exists(path):
            continue
        if F.sha256_file(path) != digest:
            result.kept_stale.append(rel)
            continue
        result.removed.append(rel)
        if not opts.check:
            os.unlink(path)
            _prune_empty_dirs(out, os.path.dirname(path))

    if not opts.check:
        manifest = F.manifest_bytes(outputs, script_outputs, renamed, version)
        F.write_if_changed(os.path.join(out, F.MANIFEST_NAME), manifest)


def _prune_empty_dirs(root: str, d: str) -> None:
    root = os.path.realpath(root)
    d = os.path.realpath(d)
    while d != root and d.startswith(root + os.sep):
        try:
            os.rmdir(d)
        except OSError:
            return
        d = os.path.dirname(d)


def _echo_problems(opts: MigrateOptions, index, skipped: List[SkippedFile]) -> None:
    shown = 0
    total = 0
    for sr in index:
        if sr.outcome != "errors":
            continue
        total += 1
        if shown < opts.max_messages:
            first = next((i for i in sr.issues if i.severity == "error"), None)
            where = f"{sr.path}:{first.line}" if first and first.line else sr.path
            msg = f"{first.code} {first.message}" if first else "sbatch would refuse this script"
            opts.echo(f"{where}: error {msg}")
            shown += 1
    for f in skipped:
        if f.severity in ("error", "warning"):
            total += 1
            if shown < opts.max_messages:
                opts.echo(f"{f.path}: {f.severity} {f.code} {f.message}")
                shown += 1
    if total > shown:
        opts.echo(f"... and {total - shown} more (see the report)")
