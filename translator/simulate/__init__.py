"""`slurm2kf simulate`: which processes a job starts on Slurm and on Kubeflow Trainer, and whether they match.

Stages (each a module): the Slurm side (`slurm_side`) and the Kubeflow side (`kubeflow_pods` turns a TrainJob
into the pods the Trainer and the kubelet would start, `pods_run` runs them) both run their commands in the
sandbox (`sandbox`) with recording stubs; `verdict` compares the two process lists. Records are plain
dataclasses (`model`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from collections.abc import Sequence

from translator.simulate.model import Failure, SideResult, Verdict

DEFAULT_TIMEOUT = 5.0
DEFAULT_DEADLINE = 60.0  # seconds one script's whole simulation (both sides) may take


class SimulateError(Exception):
    """The input cannot be simulated at all (unreadable file, not a TrainJob, no script found)."""


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise SimulateError(f"{path}: error: cannot read: {exc.strerror or exc}") from None
    return data.decode("utf-8", "replace")


def slurm_of(
    path: str,
    settings,
    script_args: Sequence[str] = (),
    array_index: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float | None = None,
):
    """(SideResult, job) of the Slurm side of `path`; `deadline` (time.monotonic()) ends it."""
    from translator.pipeline import read_and_resolve
    from translator.simulate import slurm_side

    text = _read_text(path)
    script, job, err = read_and_resolve(path, data=text.encode("utf-8"), settings=settings)
    if err is not None:
        raise SimulateError(err.format(path))
    side, alloc = slurm_side.run(
        job, text, script_args=script_args, array_index=array_index, timeout=timeout, deadline=deadline
    )
    notes = list(side.notes)
    if not job.sbatch_accepts:
        notes.append("sbatch would refuse this script (see `slurm2kf inspect`); simulated as written")
    return replace(side, notes=tuple(notes), hosts=tuple((h[0], h[1], h[2]) for h in alloc.host_table())), job


def kubeflow_of_trainjob(
    trainjob: dict,
    runtimes=None,
    timeout: float = DEFAULT_TIMEOUT,
    provides: Sequence[str] = (),
    deadline: float | None = None,
) -> SideResult:
    from translator.simulate.kubeflow_pods import TooManyPods, TrainJobError, pods_from_trainjob
    from translator.simulate.pods_run import run_pods
    from translator.simulate.sandbox import MAX_NODES, S821_CAPPED, check_isolation

    check_isolation()
    name = str((trainjob.get("metadata") or {}).get("name") or "trainjob") if isinstance(trainjob, dict) else "?"
    try:
        pods = pods_from_trainjob(trainjob, runtimes, max_pods=MAX_NODES)
    except TooManyPods as exc:
        why = f"the TrainJob starts {exc.count} pods; simulate runs at most {MAX_NODES} per side"
        return SideResult("kubeflow", notes=(f"not run: {why} ({S821_CAPPED})",), incomplete=((S821_CAPPED, why),))
    except TrainJobError as exc:
        return SideResult(
            "kubeflow", failures=(Failure("kubeflow", 0, f"TrainJob {name}", f"the Trainer would not start it: {exc}"),)
        )
    return run_pods(pods, timeout=timeout, provides=provides, deadline=deadline)


def _verdict(path: str, slurm: SideResult, kube: SideResult) -> Verdict:
    from translator.simulate.verdict import decide

    return decide(path, slurm, kube, slurm.blockers)


def simulate_script(
    path: str,
    settings=None,
    script_args: Sequence[str] = (),
    array_index: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    runtimes=None,
    provides: Sequence[str] = (),
    total: float = DEFAULT_DEADLINE,
) -> Verdict:
    """Convert `path` as `convert` does and run both sides (the two sandboxes run at the same time),
    within `total` seconds for the whole run. `provides`: site tools (`conda`, `apptainer`, `module`, ...)
    the image is declared to have."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    import dataclasses

    settings = settings or _default_settings()
    if not script_args and getattr(settings, "script_args", None):
        script_args = tuple(settings.script_args)  # `convert --simulate --script-args ...`
    if script_args and any(f.name == "script_args" for f in dataclasses.fields(settings)):
        settings = dataclasses.replace(settings, script_args=tuple(script_args))  # the conversion sees them too
    from translator.simulate.sandbox import check_isolation

    check_isolation()
    deadline = time.monotonic() + total
    _check_readable(path, settings)
    text = _read_text(path)
    conv = _convert(path, text, settings)
    why = refusal(conv)
    if why:
        from translator.simulate.verdict import refused

        return refused(path, SideResult("slurm"), why)
    with ThreadPoolExecutor(max_workers=1) as pool:
        slurm_future = pool.submit(slurm_of, path, settings, script_args, array_index, timeout, deadline)
        kube = _kube_of_plans(conv.plans, array_index, timeout, runtimes, provides, deadline)
        slurm, _ = slurm_future.result()
    return _verdict(path, *hide_secrets((slurm, kube), conv.script))  # compared and shown as `<secret>`


def hide_secrets(sides: tuple, script) -> tuple:
    """Both sides with the script's secrets as `<secret>` (translator/plan/redact.py): the Slurm side ran with the
    values, the Kubeflow side reads them from the job's Secret (`<secret NAME/KEY>`), which P447 asks to
    create with those values; so they compare equal, and no output shows them."""
    from translator.plan import redact

    values = redact.script_secrets(script)
    if not redact.needs_redaction(getattr(script, "text", "") or "", values):
        return sides
    return redact.redact_data(sides, values)


def refusal(conv) -> str:
    """Why `convert` refuses the script (it would exit 1), or "": sbatch refuses it, no TrainJob was produced,
    or the TrainJob carries an error finding (it cannot run as converted)."""
    from translator.plan.build import accepted_with_plugins

    if conv.job is not None and not accepted_with_plugins(conv.job):
        err = next((d for d in conv.diagnostics if d.severity == "error"), None)
        return f"sbatch refuses it ({err.code}: {err.message})" if err else "sbatch refuses it"
    if not conv.plans:
        return "no TrainJob was produced"
    err = next((f for p in conv.plans for f in p.findings if f.severity == "error"), None)
    return f"{err.code}: {err.message}" if err is not None else ""


def _check_readable(path: str, settings) -> None:
    """The reader's own diagnostic (R1xx, file and line) for a file that cannot be read as a script."""
    from translator.pipeline import read_and_resolve

    _, _, err = read_and_resolve(path, settings=settings)
    if err is not None:
        raise SimulateError(err.format(path))


def _default_settings():
    from translator.pipeline import ConvertSettings

    return ConvertSettings()


def _convert(path, text, settings):
    from translator.pipeline import convert

    return convert(path, data=text.encode("utf-8"), settings=settings)


def _kube_of_plans(plans, array_index, timeout, runtimes, provides=(), deadline=None) -> SideResult:
    from translator.emit.trainjob import trainjob_dict

    plans = list(plans)
    plan = plans[0]
    if len(plans) > 1 and array_index is not None:
        for p in plans:  # --array-mode=expand: the TrainJob of that index
            if str(p.name).endswith(f"-{array_index}"):
                plan = p
    kube = kubeflow_of_trainjob(trainjob_dict(plan), _with_runtime_of(plan, runtimes), timeout, provides, deadline)
    if len(plans) > 1:
        kube = replace(kube, notes=kube.notes + (f"{len(plans)} TrainJobs were produced; {plan.name} is compared",))
    return kube


def _with_runtimes(runtimes, extra: dict):
    """The runtimes the Kubeflow side knows (the given ones, else the shipped ones) plus `extra` by name."""
    if not extra:
        return runtimes
    from translator.simulate.kubeflow_pods import load_runtimes

    return {**(runtimes if runtimes is not None else load_runtimes()), **extra}


def _with_runtime_of(plan, runtimes):
    """... plus the TrainingRuntime a batch-mode plan writes beside its TrainJob."""
    return _with_runtimes(runtimes, {str(plan.runtime): plan.runtime_document} if plan.runtime_document else {})


def _with_runtimes_in(trainjob_path: str, runtimes):
    """... plus the (Cluster)TrainingRuntimes of the TrainJob's own file (batch mode writes its runtime there)."""
    from translator.simulate.kubeflow_pods import load_runtimes

    return _with_runtimes(runtimes, load_runtimes([trainjob_path]))


S823_SOURCE_OUTSIDE = "S823"


def source_of_trainjob(trainjob: dict, trainjob_path: str, text: str = "") -> str | None:
    """The script named by the `slurm2kf.io/source` annotation, relative to the TrainJob file's folder and
    confined to it like any input: an absolute path, a `..` step out of the folder or a symbolic link
    that leads out of it is an error (S823, naming the file and the annotation's line), never read."""
    from translator.naming import ANNOTATION_SOURCE

    ann = ((trainjob.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_SOURCE)
    if not ann:
        return None
    folder = os.path.dirname(os.path.abspath(trainjob_path))
    problem = None
    if not isinstance(ann, str) or "\0" in ann:
        problem = "is not a file name"
    elif os.path.isabs(ann):
        problem = "is an absolute path"
    else:
        real_folder = os.path.realpath(folder)
        target = os.path.realpath(os.path.join(folder, ann))
        if os.path.commonpath([real_folder, target]) != real_folder:
            problem = "leads out of the TrainJob file's folder" + (" (a symbolic link)" if ".." not in ann else "")
    if problem is None:
        return os.path.join(folder, ann)
    line = next((i + 1 for i, ln in enumerate(text.splitlines()) if ANNOTATION_SOURCE in ln), 0)
    where = f"{trainjob_path}:{line}" if line else trainjob_path
    raise SimulateError(
        f"{where}: error {S823_SOURCE_OUTSIDE}: the {ANNOTATION_SOURCE} annotation {str(ann)!r} {problem}; "
        "only a script in that folder (or below) is read from it: give --script FILE"
    )


def simulate_trainjob(
    trainjob_path: str,
    script: str | None = None,
    settings=None,
    script_args: Sequence[str] = (),
    array_index: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    runtimes=None,
    provides: Sequence[str] = (),
    total: float = DEFAULT_DEADLINE,
) -> Sequence[Verdict]:
    """Compare an existing TrainJob file (each TrainJob in it) with its Slurm script, within `total`
    seconds for each TrainJob."""
    import time

    from translator.pipeline import ConvertSettings
    from translator.simulate.kubeflow_pods import TrainJobError, read_trainjobs

    from translator.simulate.sandbox import check_isolation

    check_isolation()
    settings = settings or ConvertSettings()
    text = _read_text(trainjob_path)
    try:
        jobs = read_trainjobs(text, trainjob_path)
    except TrainJobError as exc:
        raise SimulateError(str(exc)) from None
    try:
        runtimes = _with_runtimes_in(trainjob_path, runtimes)
    except TrainJobError as exc:
        raise SimulateError(str(exc)) from None
    out = []
    for tj in jobs:
        deadline = time.monotonic() + total
        src = script or source_of_trainjob(tj, trainjob_path, text)
        if not src:
            raise SimulateError(
                f"{trainjob_path}: error: no Slurm script: give --script or the slurm2kf.io/source annotation"
            )
        _check_readable(src, settings)
        slurm, _ = slurm_of(src, settings, script_args, array_index, timeout, deadline)
        kube = kubeflow_of_trainjob(tj, runtimes, timeout, provides, deadline)
        out.append(_verdict(trainjob_path, slurm, kube))
    return out
