"""The pipeline in one place: bytes -> Script -> SlurmJob -> TrainerPlan(s).

Each stage is a pure function in its own package; this module only chains them so that the CLI,
`migrate` and `report` all convert a script the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.diagnostics import Diagnostic
from translator.read.ast import Script
from translator.slurm.job import SlurmJob
from translator.plan.model import TrainerPlan


@dataclass(frozen=True)
class ConvertSettings:
    runtime: str | None = None  # --runtime: overrides the runtime name chosen by the launcher
    image: str | None = None  # --image
    namespace: str | None = None  # --namespace
    array_mode: str = "finding"  # "finding" | "expand"
    gpu_resource: str = "nvidia.com/gpu"  # --gpu-resource
    sbatch_env: tuple[tuple[str, str], ...] = ()  # SBATCH_* input variables (precedence over #SBATCH)
    sbatch_args: tuple[str, ...] = ()  # sbatch command-line options (precedence over everything)
    profile: object | None = None  # translator.profile.model.Profile, when one applies
    script_args: tuple[str, ...] | None = None  # --script-args: the arguments sbatch gives the script
    simulate: bool = False  # migrate/report --simulate: also compare the launches (slurm2kf simulate)
    # --trainer-version: the Kubeflow Trainer release (validate/versions.py); None: the profile's, else 2.3
    trainer_version: str | None = None


@dataclass(frozen=True)
class Conversion:
    path: str
    script: Script | None
    job: SlurmJob | None
    plans: tuple[TrainerPlan, ...] = ()
    file_error: Diagnostic | None = None  # the file could not be read at all

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        if self.file_error is not None:
            return (self.file_error,)
        return self.job.diagnostics if self.job is not None else ()

    @property
    def findings(self):
        return tuple(dict.fromkeys(f for p in self.plans for f in p.findings))


def read_and_resolve(path: str, data: bytes | None = None, settings: ConvertSettings = ConvertSettings()):
    """Read one file and resolve the Slurm job. Returns (script, job, file_error)."""
    from translator.read import read_file, read_script, ReadError
    from translator.slurm.resolve import resolve

    try:
        script = read_script(data, path) if data is not None else read_file(path)
    except ReadError as exc:
        return None, None, exc.diagnostic
    job = resolve(script, env=dict(settings.sbatch_env), cli_args=settings.sbatch_args)
    if settings.script_args is not None:
        import dataclasses

        job = dataclasses.replace(job, script_args=tuple(settings.script_args))
    return script, job, None


def convert(path: str, data: bytes | None = None, settings: ConvertSettings = ConvertSettings()) -> Conversion:
    """Read, resolve and plan one script. Never raises for bad input."""
    from translator.plan.build import build_plans

    script, job, err = read_and_resolve(path, data, settings)
    if err is not None:
        return Conversion(path=path, script=None, job=None, file_error=err)
    plans = build_plans(script, job, settings)
    defaults = getattr(settings.profile, "defaults", None)
    version = settings.trainer_version or getattr(defaults, "trainer_version", None) or "2.3"
    if version != "2.3":
        from translator.plan.trainer_version import plans_for

        plans = plans_for(plans, version, settings.profile)
    return Conversion(path=path, script=script, job=job, plans=tuple(plans))
