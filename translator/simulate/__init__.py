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
):
    """(SideResult, job) of the Slurm side of `path`."""
    from translator.pipeline import read_and_resolve
    from translator.simulate import slurm_side

    text = _read_text(path)
    script, job, err = read_and_resolve(path, data=text.encode("utf-8"), settings=settings)
    if err is not None:
        raise SimulateError(err.format(path))
    side, alloc = slurm_side.run(job, text, script_args=script_args, array_index=array_index, timeout=timeout)
    notes = list(side.notes)
    if not job.sbatch_accepts:
        notes.append("sbatch would refuse this script (see `slurm2kf inspect`); simulated as written")
    return replace(side, notes=tuple(notes), hosts=tuple((h[0], h[1], h[2]) for h in alloc.host_table())), job


def kubeflow_of_trainjob(
    trainjob: dict, runtimes=None, timeout: float = DEFAULT_TIMEOUT, provides: Sequence[str] = ()
) -> SideResult:
    from translator.simulate.kubeflow_pods import TrainJobError, pods_from_trainjob
    from translator.simulate.pods_run import run_pods

    name = str((trainjob.get("metadata") or {}).get("name") or "trainjob") if isinstance(trainjob, dict) else "?"
    try:
        pods = pods_from_trainjob(trainjob, runtimes)
    except TrainJobError as exc:
        return SideResult(
            "kubeflow", failures=(Failure("kubeflow", 0, f"TrainJob {name}", f"the Trainer would not start it: {exc}"),)
        )
    return run_pods(pods, timeout=timeout, provides=provides)


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
) -> Verdict:
    """Convert `path` as `convert` does and run both sides (the two sandboxes run at the same time).
    `provides`: site tools (`conda`, `apptainer`, `module`, ...) the image is declared to have."""
    from concurrent.futures import ThreadPoolExecutor

    import dataclasses

    settings = settings or _default_settings()
    if not script_args and getattr(settings, "script_args", None):
        script_args = tuple(settings.script_args)  # `convert --simulate --script-args ...`
    if script_args and any(f.name == "script_args" for f in dataclasses.fields(settings)):
        settings = dataclasses.replace(settings, script_args=tuple(script_args))  # the conversion sees them too
    _check_readable(path, settings)
    text = _read_text(path)
    conv = _convert(path, text, settings)
    why = refusal(conv)
    if why:
        from translator.simulate.verdict import refused

        return refused(path, SideResult("slurm"), why)
    with ThreadPoolExecutor(max_workers=1) as pool:
        slurm_future = pool.submit(slurm_of, path, settings, script_args, array_index, timeout)
        kube = _kube_of_plans(conv.plans, array_index, timeout, runtimes, provides)
        slurm, _ = slurm_future.result()
    return _verdict(path, slurm, kube)


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


def _kube_of_plans(plans, array_index, timeout, runtimes, provides=()) -> SideResult:
    from translator.emit.trainjob import trainjob_dict

    plans = list(plans)
    plan = plans[0]
    if len(plans) > 1 and array_index is not None:
        for p in plans:  # --array-mode=expand: the TrainJob of that index
            if str(p.name).endswith(f"-{array_index}"):
                plan = p
    kube = kubeflow_of_trainjob(trainjob_dict(plan), _with_runtime_of(plan, runtimes), timeout, provides)
    if len(plans) > 1:
        kube = replace(kube, notes=kube.notes + (f"{len(plans)} TrainJobs were produced; {plan.name} is compared",))
    return kube


def _with_runtime_of(plan, runtimes):
    """The runtimes the Kubeflow side knows, plus the one a batch-mode plan writes beside its TrainJob."""
    if plan.runtime_document is None:
        return runtimes
    from translator.simulate.kubeflow_pods import load_runtimes

    known = dict(runtimes if runtimes is not None else load_runtimes())
    known[str(plan.runtime)] = plan.runtime_document
    return known


def _with_runtimes_in(trainjob_path: str, runtimes):
    """The runtimes the Kubeflow side knows, plus the (Cluster)TrainingRuntimes of the TrainJob's own file
    (batch mode writes its runtime there)."""
    from translator.simulate.kubeflow_pods import load_runtimes

    own = load_runtimes([trainjob_path])
    if not own:
        return runtimes
    known = dict(runtimes if runtimes is not None else load_runtimes())
    known.update(own)
    return known


def source_of_trainjob(trainjob: dict, trainjob_path: str) -> str | None:
    """The script named by the `slurm2kf.io/source` annotation, relative to the TrainJob file."""
    from translator.plan.naming import ANNOTATION_SOURCE

    ann = ((trainjob.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_SOURCE)
    if not ann:
        return None
    if os.path.isabs(ann) or os.path.exists(ann):
        return ann
    return os.path.join(os.path.dirname(os.path.abspath(trainjob_path)), ann)


def simulate_trainjob(
    trainjob_path: str,
    script: str | None = None,
    settings=None,
    script_args: Sequence[str] = (),
    array_index: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    runtimes=None,
    provides: Sequence[str] = (),
) -> Sequence[Verdict]:
    """Compare an existing TrainJob file (each TrainJob in it) with its Slurm script."""
    from translator.pipeline import ConvertSettings
    from translator.simulate.kubeflow_pods import TrainJobError, read_trainjobs

    settings = settings or ConvertSettings()
    try:
        jobs = read_trainjobs(_read_text(trainjob_path), trainjob_path)
    except TrainJobError as exc:
        raise SimulateError(str(exc)) from None
    try:
        runtimes = _with_runtimes_in(trainjob_path, runtimes)
    except TrainJobError as exc:
        raise SimulateError(str(exc)) from None
    out = []
    for tj in jobs:
        src = script or source_of_trainjob(tj, trainjob_path)
        if not src:
            raise SimulateError(
                f"{trainjob_path}: error: no Slurm script: give --script or the slurm2kf.io/source annotation"
            )
        _check_readable(src, settings)
        slurm, _ = slurm_of(src, settings, script_args, array_index, timeout)
        kube = kubeflow_of_trainjob(tj, runtimes, timeout, provides)
        out.append(_verdict(trainjob_path, slurm, kube))
    return out
