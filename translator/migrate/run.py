"""`slurm2kf migrate`: convert a whole source tree into a reviewed, kubectl-appliable output tree.

Flow: discover (lazy, sorted) -> batches to a process pool (bounded in flight, so memory stays
flat) -> each worker converts, renders and writes its script's outputs atomically -> the parent
spools the report records to disk, fixes TrainJob name clashes, writes the kustomizations, the
reports and the manifest, and removes outputs of scripts that disappeared since the last run.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING
from collections.abc import Callable, Iterator, Sequence

from translator.emit import migrate_writers
from translator.migrate import files as F
from translator.migrate.discover import DEFAULT_MAX_SIZE, Candidate, discover
from translator.migrate.worker import FileResult, WorkContext, init, pool_init, process, rename_suffix, run_batch
from translator.report.model import Report, SkippedFile, SummaryBuilder

if TYPE_CHECKING:
    from concurrent.futures import Future

    from translator.pipeline import ConvertSettings
    from translator.report.spool import ScriptSpool

BATCH_SIZE = 24


class MigrateError(Exception):
    """A usage or I/O failure that stops the run (exit 2). Carries an M6xx code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code} {message}")
        self.code = code
        self.message = message


@dataclass
class MigrateOptions:
    src: str
    out: str | None  # None: report-only run (nothing written)
    settings: ConvertSettings | None = None
    jobs: int = 0  # 0 = all cores
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    force: bool = False
    check: bool = False
    max_size: int = DEFAULT_MAX_SIZE
    timeout: float = 60.0  # seconds per script before it is recorded as M615 (0 = none)
    follow_symlinks: bool = False  # follow links that lead out of SRC (loops and /proc cut)
    progress: bool | None = None  # None = rich bar when stderr is a terminal
    echo: Callable[[str], None] = lambda s: print(s, file=sys.stderr)
    max_messages: int = 50  # per-script problem lines printed before "... and N more"
    report_sink: Callable[[Report], None] | None = None  # report-only runs: called with the report


@dataclass
class MigrateResult:
    exit_code: int
    scripts: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    files_examined: int = 0
    written: list[str] = field(default_factory=list)  # OUT paths written (or that would be, in --check)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)  # stale outputs removed (or that would be)
    kept_stale: list[str] = field(default_factory=list)  # stale outputs edited by hand: kept
    manifest_rejected: list[str] = field(default_factory=list)  # manifest entries not acted on (M620)
    skipped: list[SkippedFile] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)
    report: Report | None = None  # report-only runs
    seconds: float = 0.0


def _jobs(n: int) -> int:
    if n and n > 0:
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def check_paths(src: str, out: str | None, force: bool) -> None:
    if not os.path.isdir(src):
        raise MigrateError("M611", f"source {src!r} is not a folder")
    if out is None:
        return
    s, o = os.path.realpath(src), os.path.realpath(out)
    if o == s or s.startswith(o.rstrip(os.sep) + os.sep):
        raise MigrateError(
            "M612",
            f"output folder {out!r} is the source folder or contains it; "
            "choose a separate folder (the source tree is never written)",
        )
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise MigrateError("M613", f"output {out!r} exists and is not a folder")
        manifest = F.read_manifest(out)
        if manifest is None and set(os.listdir(out)) - {F.LOCK_NAME} and not force:
            raise MigrateError(
                "M613",
                f"output folder {out!r} is not empty and was not created by "
                f"slurm2kf migrate (no {F.MANIFEST_NAME}); use --force to write into it",
            )
        if manifest == {} and not force:
            raise MigrateError(
                "M613",
                f"{os.path.join(out, F.MANIFEST_NAME)} is unreadable or not a slurm2kf "
                "manifest; use --force to write into this folder",
            )


class _Progress:
    """Rich progress on a terminal; a plain line every ~10% of examined files otherwise."""

    def __init__(self, enabled: bool | None, echo) -> None:
        self.echo = echo
        self.rich = None
        self.examined = 0
        self.scripts = 0
        self.next_plain = 200
        tty = sys.stderr.isatty() if enabled is None else enabled
        if tty:
            try:
                from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

                self.rich = Progress(
                    SpinnerColumn(),
                    TextColumn("[bold]migrate[/]"),
                    BarColumn(),
                    TextColumn("{task.fields[scripts]} scripts / {task.completed} files"),
                    TimeElapsedColumn(),
                    transient=True,
                )
                self.task = self.rich.add_task("migrate", total=None, scripts=0)
                self.rich.start()
            except Exception:
                self.rich = None

    def advance(self, examined: int, scripts: int, discovered: int) -> None:
        self.examined += examined
        self.scripts += scripts
        if self.rich is not None:
            self.rich.update(
                self.task, completed=self.examined, total=max(discovered, self.examined), scripts=self.scripts
            )
        elif self.examined >= self.next_plain:
            self.echo(f"migrate: {self.examined} files examined, {self.scripts} scripts converted")
            self.next_plain = max(self.next_plain * 2, self.examined + 1)

    def stop(self) -> None:
        if self.rich is not None:
            self.rich.stop()


def _execute(
    batches: Iterator,
    ctx: WorkContext,
    jobs: int,
    on_results: Callable[[list[FileResult]], None],
    on_lost: Callable[[list[FileResult]], None] = lambda results: None,
) -> None:
    """Run batches inline (jobs == 1) or in a process pool with at most 2*jobs batches in flight.

    A worker that dies (a signal, the OOM killer) breaks the pool: the files of the batches that were
    in flight are then converted one at a time, each in a process of its own, so the script that kills
    its process is recorded against itself (M616) and the run goes on with a fresh pool. When the run
    fails (on_results raises: disk full), the batches still in flight are waited for and handed to
    `on_lost`, so the outputs their workers wrote are known.
    """
    if jobs <= 1:
        from translator.migrate.worker import close_writer

        init(ctx)
        try:
            for b in batches:
                on_results(run_batch(b))
        finally:
            close_writer()
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
        lost = _run_pool(source, ctx, jobs, on_results, mp, on_lost)
        if not lost:
            return
        for batch in lost:
            for item in batch:
                _run_alone(item, ctx, on_results, mp)


def _run_pool(source: Iterator, ctx: WorkContext, jobs: int, on_results, mp, on_lost=None) -> list[list]:
    """Feed `source` to a pool until it is exhausted ([] returned) or the pool breaks (the batches
    that were in flight are returned; `source` keeps the rest)."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    pending: dict[Future, list] = {}
    lost: list[list] = []
    with ProcessPoolExecutor(
        max_workers=jobs, mp_context=mp, initializer=pool_init, initargs=(ctx, os.getpid())
    ) as pool:
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
            try:
                for fut in done:
                    b = pending.pop(fut)
                    try:
                        on_results(fut.result())
                    except BrokenProcessPool:
                        lost.append(b)
            except BaseException:  # (Ctrl-C too: the workers ignore SIGINT and finish their batches anyway)
                _drain([*done, *pending], on_lost)
                raise
            if lost:  # the pool is broken: every batch still pending is lost too
                lost.extend(pending.values())
                pending.clear()
                return lost


def _drain(futures, on_lost) -> None:
    """Wait for the batches still in flight and pass their results to `on_lost` (failures ignored)."""
    if on_lost is None:
        return
    for fut in futures:
        try:
            on_lost(fut.result())
        except Exception:
            continue


def _run_alone(item, ctx: WorkContext, on_results, mp) -> None:
    """Convert one (candidate, suffix) in a process of its own; its death is recorded as M616."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from translator.migrate.worker import failed_result

    try:
        with ProcessPoolExecutor(
            max_workers=1, mp_context=mp, initializer=pool_init, initargs=(ctx, os.getpid())
        ) as pool:
            results = pool.submit(run_batch, [item]).result()
    except BrokenProcessPool:
        results = [
            failed_result(
                item[0].rel,
                "M616",
                "the process converting this script died (killed by a "
                "signal or the out-of-memory killer); the run went on without it",
            )
        ]
    on_results(results)


def migrate(opts: MigrateOptions) -> MigrateResult:
    """Run `slurm2kf migrate` (or, with `opts.out` None, the conversion behind `slurm2kf report`)."""
    return MigrationRun(opts).run()


class MigrationRun:
    """One migrate run. `run()` calls the phases in order; what they share lives on the instance:

    prepare (check SRC/OUT, claim OUT) -> convert (discover, convert and write each script's outputs in
    the pool) -> fix name clashes -> build the report -> write the tree (kustomizations, reports, stale
    outputs pruned, manifest), or hand the report to the caller -> exit status and messages.
    """

    def __init__(self, opts: MigrateOptions) -> None:
        from translator.pipeline import ConvertSettings

        self.opts = opts
        self.out = opts.out
        self.write_outputs = opts.out is not None
        self.settings = opts.settings if opts.settings is not None else ConvertSettings()
        self.result = MigrateResult(exit_code=0)
        self.old_manifest: dict = {}
        self.skipped: list[SkippedFile] = []
        self.outputs: dict[str, str] = {}  # rel OUT path -> sha256
        self.script_outputs: dict[str, list[str]] = {}  # rel source path -> its outputs
        self.kube_outputs: dict[str, list[str]] = {}  # rel source -> its Kubernetes outputs (kustomizations)
        self.names: dict[str, list[str]] = {}  # TrainJob name (before clash suffix) -> rel source paths
        self.suffixed: set = set()  # rel source paths emitted with a clash suffix
        self.clashing: set = set()  # rel source paths whose TrainJob names clash
        self.candidates: dict[str, Candidate] = {}
        self.written: list[str] = []
        self.lock_fd: int | None = None  # the lock on OUT (lock_out), held for the whole run
        self.unchanged = 0
        self.discovered = 0
        # made by run(), before the phases that use them
        self.ctx: WorkContext
        self.progress: _Progress
        self.heap: _SettledHeap
        self.spool: ScriptSpool
        self.index: list = []  # the light records, sorted by path
        self.kube_suffixes = tuple(w.suffix for w in migrate_writers() if w.kubernetes)

    @property
    def out_dir(self) -> str:
        """OUT, for the phases that write (they run only when OUT was given)."""
        assert self.out is not None, "a report-only run writes nothing"
        return self.out

    def run(self) -> MigrateResult:
        t0 = time.perf_counter()
        try:
            self.prepare()
            report = self._phases()
        except BaseException:
            self.salvage_manifest()
            raise
        finally:
            if self.lock_fd is not None:
                F.unlock_out(self.out_dir, self.lock_fd, remove=not self.opts.check)
                self.lock_fd = None
        self.finish(report)
        self.result.seconds = time.perf_counter() - t0
        return self.result

    def _phases(self) -> Report:
        """convert -> name clashes -> report -> write the tree (or hand the report over)."""
        from translator.report.spool import ScriptSpool

        self.spool = ScriptSpool()
        self.ctx = WorkContext(
            out_dir=self.out if self.write_outputs else None,
            settings=self.settings,
            check=self.opts.check,
            max_size=self.opts.max_size,
            timeout=self.opts.timeout,
            spool_dir=self.spool.folder,
        )
        try:
            self.progress = _Progress(self.opts.progress, self.opts.echo)
        except BaseException:
            self.spool.close()
            raise
        self.heap = _SettledHeap()
        try:
            try:
                self.convert_all()
                self.fix_name_clashes()
            except OSError as exc:
                raise _io_failure(exc) from None
            finally:
                self.progress.stop()
            try:
                report = self.build_report()
                if self.write_outputs:
                    self.write_tree(report)
                else:
                    self.hand_over(report)
            except F.OutEntryRefused as exc:
                raise MigrateError("M618", exc.message) from None
            except OSError as exc:
                raise _io_failure(exc) from None
        finally:
            self.heap.release()
            self.spool.close()
        return report

    # ---- phases ---------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Check SRC and OUT; create OUT, sweep a killed run's temporary files and claim the folder
        (a manifest first), so a run killed half-way can be resumed without --force."""
        from translator import __version__

        opts, out = self.opts, self.out
        try:
            check_paths(opts.src, out, opts.force)
        except MigrateError as exc:
            if exc.code == "M613" and out is not None and os.path.isdir(out):
                self.lock(out, probe=True)  # another run half-way through its start: M622, not M613
            raise
        if out is None:  # a report-only run: no OUT to create or claim
            return
        if not opts.check:
            try:
                os.makedirs(out, exist_ok=True)
            except OSError as exc:
                raise MigrateError("M610", f"cannot create output folder {out!r}: {exc.strerror or exc}") from None
        self.lock(out)
        if not opts.check:
            try:
                F.sweep_temp_files(out)
            except OSError as exc:
                raise MigrateError("M610", f"cannot write in {out!r}: {exc.strerror or exc}") from None
        if os.path.isdir(out):
            self.old_manifest = F.read_manifest(out) or {}
        if not opts.check and not self.old_manifest:
            try:
                F.out_write(out, F.MANIFEST_NAME, F.manifest_bytes({}, {}, [], __version__))
            except F.OutEntryRefused as exc:
                raise MigrateError("M618", exc.message) from None
            except OSError as exc:
                raise MigrateError("M610", f"cannot write in {out!r}: {exc.strerror or exc}") from None

    def lock(self, out: str, probe: bool = False) -> None:
        """Hold OUT for the whole run: an exclusive lock (a shared one for --check, which writes nothing),
        taken before anything in OUT is touched; a second run into the same OUT stops here (M622).
        `probe`: only say M622 when another run holds the lock (nothing is created or kept)."""
        try:
            fd = F.lock_out(out, exclusive=not (self.opts.check or probe))
            if probe:
                if fd is not None:
                    os.close(fd)
                return
            self.lock_fd = fd
        except F.OutBusy:
            raise MigrateError(
                "M622",
                f"another slurm2kf migrate is writing into {out!r} (it holds {F.LOCK_NAME}); "
                "nothing was changed; run again when it has finished",
            ) from None
        except (F.OutEntryRefused, OSError) as exc:
            if probe:
                return
            if isinstance(exc, F.OutEntryRefused):
                raise MigrateError("M618", exc.message) from None
            raise MigrateError("M610", f"cannot lock {out!r}: {exc.strerror or exc}") from None

    def salvage_manifest(self) -> None:
        """The run stopped early (disk full, a refused entry, Ctrl-C): record the outputs it already
        wrote, so the next run knows them (and can remove them when their script is gone). The previous
        manifest's entries stay, updated with what this run wrote. When even that cannot be written, the
        outputs this run created (that no manifest lists) are removed instead, and the manifest is
        tried once more in the space that frees."""
        if self.lock_fd is None or not self.write_outputs or self.opts.check or not self.outputs:
            return
        from translator import __version__

        old = self.old_manifest.get("outputs", {})
        old_outputs = (
            {k: v for k, v in old.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(old, dict) else {}
        )
        scripts = self.old_manifest.get("scripts", {})
        merged_scripts = dict(scripts) if isinstance(scripts, dict) else {}
        merged_scripts.update(self.script_outputs)
        renamed = [x for x in self.old_manifest.get("renamed", []) if isinstance(x, str)]
        for attempt in (0, 1):
            outputs = {**old_outputs, **self.outputs}
            listed = {rel: [o for o in outs if o in outputs] for rel, outs in merged_scripts.items()}
            try:
                F.out_write(self.out_dir, F.MANIFEST_NAME, F.manifest_bytes(outputs, listed, renamed, __version__))
                return
            except OSError:
                if attempt:
                    return
            for rel in dict.fromkeys(r for r in self.written if r not in old_outputs and r in self.outputs):
                try:
                    F.out_remove(self.out_dir, rel, self.outputs[rel])
                except OSError:
                    continue
                del self.outputs[rel]

    def convert_all(self) -> None:
        """Discover the scripts and convert them in the pool (each worker writes its script's outputs).
        The previous run's renames (manifest) are applied up front, so a re-run rewrites nothing."""
        opts = self.opts
        prev_renamed = frozenset(x for x in self.old_manifest.get("renamed", []) if isinstance(x, str))
        found = discover(
            opts.src,
            out_dir=self.out,
            include=opts.include,
            exclude=opts.exclude,
            max_size=opts.max_size,
            follow_symlinks=opts.follow_symlinks,
        )
        _execute(self._batches(found, prev_renamed), self.ctx, _jobs(opts.jobs), self._on_results, self._take_lost)
        self.result.files_examined = self.discovered

    def fix_name_clashes(self) -> None:
        """Scripts whose TrainJobs would share a name all get a suffix from their path; the scripts
        converted with the wrong choice (a clash appeared or went away) are converted again."""
        self.clashing = {rel for rels in self.names.values() if len(rels) > 1 for rel in rels}
        redo = sorted((self.clashing ^ self.suffixed) & set(self.candidates))
        if redo:
            init(self.ctx)
        for rel in redo:
            r = process(self.candidates[rel], self.ctx, rename_suffix(rel) if rel in self.clashing else None)
            for rel_out, _d, _s in r.outputs:
                if rel_out in self.written:
                    self.written.remove(rel_out)
                else:
                    self.unchanged -= 1
            self._take(r)
        self.result.renamed.extend(sorted(self.clashing))

    def build_report(self) -> Report:
        """The run's report over the spooled records (the full records stay on disk)."""
        from translator.fsio import display_name

        index = self.index = self.spool.light()
        builder = SummaryBuilder()
        for sr in index:
            builder.add(sr)
        self.skipped.sort(key=lambda f: f.path)
        for f in self.skipped:
            builder.add_skipped(f)
        src_name = display_name(os.path.basename(os.path.realpath(self.opts.src)))  # bytes not UTF-8 as \xNN
        report = Report(
            title="slurm2kf migration review: " + src_name,
            source=src_name,
            summary=builder.build(),
            scripts=self.spool,
            skipped=tuple(self.skipped),
            index=index,
            fragments=self.spool,
        )
        self.result.scripts = len(index)
        self.result.outcomes = dict(report.summary.outcomes)
        self.result.skipped = self.skipped
        return report

    def write_tree(self, report: Report) -> None:
        """The files of OUT beyond the scripts' own outputs, then the stale outputs, then the manifest."""
        from translator import __version__

        self.write_kustomizations()
        self.write_reports(report)
        self.prune_stale()
        if not self.opts.check:
            F.out_write(
                self.out_dir,
                F.MANIFEST_NAME,
                F.manifest_bytes(self.outputs, self.script_outputs, sorted(self.clashing), __version__),
            )

    def hand_over(self, report: Report) -> None:
        """Report-only run: the caller renders the report now, from the spool and the workers' fragments;
        without a sink, the full records are materialised into the result (the spool is closed next)."""
        if self.opts.report_sink is not None:
            self.opts.report_sink(report)
        else:
            report.scripts = list(self.spool)
            report.index = None
            report.fragments = None
            self.result.report = report

    def finish(self, report: Report) -> None:
        """Exit status and the per-script problem lines."""
        result = self.result
        result.written = sorted(self.written)
        result.unchanged = self.unchanged
        errors = report.summary.outcome("errors") + sum(1 for f in self.skipped if f.severity == "error")
        result.exit_code = 1 if errors else 0
        if self.opts.check and (self.written or result.removed):
            result.exit_code = 1
        _echo_problems(self.opts, self.index, self.skipped)

    # ---- the parts of write_tree ----------------------------------------------------------------

    def write_kustomizations(self) -> None:
        members = (rel for rels in self.kube_outputs.values() for rel in rels)
        for folder, resources in sorted(F.kustomizations(members).items()):
            self._put(f"{folder}/{F.KUSTOMIZATION}" if folder else F.KUSTOMIZATION, F.kustomization_bytes(resources))

    def write_reports(self, report: Report) -> None:
        """One report per format of the table (translator/report), streamed into OUT."""
        from translator.report import REPORT_WRITERS

        for w in REPORT_WRITERS.values():
            write = w.load()
            rel = f"{F.REPORT_BASENAME}.{w.extension}"
            status, digest = F.out_write_stream(self.out_dir, rel, partial(write, report), self.opts.check)
            self._count(rel, digest, status)

    def prune_stale(self) -> None:
        """Outputs of the previous run that this run did not produce: removed if still as we wrote them.
        The manifest is data from disk: only clean relative paths of names migrate writes are considered,
        each reached without following links, and only a regular file with the recorded hash is removed."""
        opts, out, result = self.opts, self.out_dir, self.result
        old = self.old_manifest.get("outputs", {})
        old_outputs = old if isinstance(old, dict) else {}
        for rel, digest in sorted(old_outputs.items(), key=lambda kv: str(kv[0])):
            if rel in self.outputs:
                continue
            try:
                F.out_parts(rel)
                if not F.is_output_name(rel) or not isinstance(digest, str):
                    raise F.OutEntryRefused(rel, f"{rel!r} is not a file migrate writes")
            except F.OutEntryRefused as exc:
                result.manifest_rejected.append(f"{_shown(rel)}: {exc.message}")
                continue
            try:
                if opts.check:
                    current = F.out_sha256(out, rel)
                    state = "absent" if current is None else ("removed" if current == digest else "edited")
                else:
                    state = F.out_remove(out, rel, digest)
            except F.OutEntryRefused as exc:
                result.manifest_rejected.append(f"{_shown(rel)}: {exc.message}")
                continue
            if state == "edited":
                result.kept_stale.append(rel)
            elif state == "removed":
                result.removed.append(rel)

    # ---- bookkeeping ----------------------------------------------------------------------------

    def _put(self, rel: str, data: bytes) -> None:
        self._count(rel, F.sha256_bytes(data), F.out_write(self.out_dir, rel, data, self.opts.check))

    def _count(self, rel: str, digest: str, status: str) -> None:
        self.outputs[rel] = digest
        if status == F.WRITTEN:
            self.written.append(rel)
        else:
            self.unchanged += 1

    def _batches(self, found: Iterator, renamed: frozenset) -> Iterator[list[tuple[Candidate, str | None]]]:
        """Candidates in batches of BATCH_SIZE, each with its clash suffix (or None); files discovery
        skipped are kept for the report."""
        batch: list[tuple[Candidate, str | None]] = []
        for item in found:
            if isinstance(item, Candidate):
                self.candidates[item.rel] = item
                self.discovered += 1
                batch.append((item, rename_suffix(item.rel) if item.rel in renamed else None))
                if len(batch) >= BATCH_SIZE:
                    yield batch
                    batch = []
            else:
                self.skipped.append(item)
        if batch:
            yield batch

    def _on_results(self, results: list[FileResult]) -> None:
        self.heap.settle()
        n = 0
        for r in results:
            try:
                n += self._take(r)
            except BaseException:
                self._take_lost(results)  # the outputs of the batch's other scripts are on disk too
                raise
            for nm in r.base_names:
                lst = self.names.setdefault(nm, [])
                if r.rel not in lst:
                    lst.append(r.rel)
        self.progress.advance(len(results), n, self.discovered)

    def _take(self, r: FileResult) -> int:
        """Record one file's result; 1 when it was a script."""
        if r.kind == "unreadable" and r.skipped:
            self.skipped.append(SkippedFile.from_json(r.skipped))
            return 0
        if r.kind != "script" or r.light is None:
            return 0
        self._take_outputs(r)  # first: a spool that fails below (disk full) must not hide written outputs
        if r.record_at is not None:
            self.spool.add_written(r.rel, r.record_at, r.light)
        else:
            self.spool.add_text(r.rel, r.record_json, r.light)
        if r.suffixed:
            self.suffixed.add(r.rel)
        else:
            self.suffixed.discard(r.rel)
        if r.runnable:
            self.kube_outputs[r.rel] = [o[0] for o in r.outputs if o[0].endswith(self.kube_suffixes)]
        else:
            self.kube_outputs.pop(r.rel, None)
        return 1

    def _take_outputs(self, r: FileResult) -> None:
        """Record the outputs a worker wrote for one script (also for results the run could not finish
        taking: they go into the manifest salvage_manifest writes)."""
        self.script_outputs[r.rel] = [o[0] for o in r.outputs]
        for rel_out, digest, status in r.outputs:
            self.outputs[rel_out] = digest
            if status == F.WRITTEN:
                self.written.append(rel_out)
            else:
                self.unchanged += 1

    def _take_lost(self, results: list[FileResult]) -> None:
        """Results of batches still in flight when the run failed: only their outputs are recorded."""
        for r in results:
            if r.kind == "script" and r.rel not in self.script_outputs:
                self._take_outputs(r)


class _SettledHeap:
    """The parent keeps every script's light record (tens of objects each) until the reports are written:
    hundreds of thousands of objects that live until the end. Each full collection walks all of them,
    and one ran every few hundred scripts (0.3-0.5 s of the parent's CPU on 10,000 scripts, taken from
    the cores the workers need). So, as the workers do between batches, the parent collects what one
    batch left and moves what is still alive out of the collector's generations (gc.freeze); `release`
    hands them back when the run ends. Only when the caller had frozen nothing and the collector is on
    (a caller's own freeze is never undone)."""

    def __init__(self) -> None:
        import gc

        self.active = gc.isenabled() and gc.get_freeze_count() == 0

    def settle(self) -> None:
        if self.active:
            import gc

            gc.collect()
            gc.freeze()

    def release(self) -> None:
        if self.active:
            import gc

            self.active = False
            gc.unfreeze()


# Report formats written each by a process of their own when the run may use several processes. Measured on
# 10,000 scripts (CPU): JSON 0.34-0.58 s, HTML 0.30-0.34 s, Markdown 0.15 s, and a fork costs the parent's
# pages their copy-on-write (+0.1 s CPU per child here). With a free core (the workers are done) the HTML
# report aside takes the phase from ~0.6 s to ~0.4 s; on a machine whose cores are all busy it costs ~0.15 s
# more wall time than writing the three in turn (both measured). The Markdown report stays in the parent.
def _io_failure(exc: OSError) -> MigrateError:
    return MigrateError("M610", f"I/O failure: {exc.strerror or exc} ({getattr(exc, 'filename', '')})")


def _shown(rel) -> str:
    from translator.fsio import display_name

    return display_name(rel) if isinstance(rel, str) else repr(rel)


def _echo_problems(opts: MigrateOptions, index, skipped: list[SkippedFile]) -> None:
    from translator.fsio import terminal_safe

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
            opts.echo(terminal_safe(f"{where}: error {msg}"))
            shown += 1
    for f in skipped:
        if f.severity in ("error", "warning"):
            total += 1
            if shown < opts.max_messages:
                opts.echo(terminal_safe(f"{f.path}: {f.severity} {f.code} {f.message}"))
                shown += 1
    if total > shown:
        opts.echo(f"... and {total - shown} more (see the report)")
