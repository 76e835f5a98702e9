"""The plan as the chosen Kubeflow Trainer release calls for (`--trainer-version`; the rules per release
and their sources are in translator/validate/versions.py)."""

from __future__ import annotations

import dataclasses

from translator.diagnostics import ERROR, INFO, Finding
from translator.validate.versions import DEFAULT, MAX_REPLICATED_JOB_NAME, SDK_TARGET, long_job_names


def plans_for(plans, version: str, profile=None) -> tuple:
    """The plans' findings under ``version``: L306 (MPI workers keep the runtime image) only under 2.3
    (launchers/mpi.py), from 2.4 a note that the SDK code still targets kubeflow 0.5.0 (P467), and
    P465 when the plan runs on a profile runtime whose replicatedJob names the release refuses."""
    from translator.launchers.mpi import l306_for_version

    if version == DEFAULT:
        return tuple(plans)
    note = Finding(
        INFO,
        "P467",
        f"Trainer {version} chosen: the YAML follows its rules; the SDK code (--to python) still targets "
        f"{SDK_TARGET}, the newest SDK release (built for Trainer 2.3), which submits the same TrainJob",
        None,
    )
    bad = profile_findings(profile, version) if profile is not None else []
    out = []
    for p in plans:
        refused = tuple(  # the profile's line belongs to the profile: it goes into the message
            dataclasses.replace(f, line=None, message=f"{profile.where(rule.line)}: {f.message}")
            for f, rule in bad
            if rule.name == p.runtime
        )
        out.append(dataclasses.replace(p, findings=l306_for_version(p.findings, version) + refused + (note,)))
    return tuple(out)


def profile_findings(profile, version: str) -> list:
    """(P465 finding, runtime rule) for the profile's runtimes whose replicatedJob names ``version``
    refuses (trainer #4394)."""
    out = []
    for rule in getattr(profile, "runtimes", ()) or ():
        for job in long_job_names(rule.replicated_jobs, version):
            out.append(
                (
                    Finding(
                        ERROR,
                        "P465",
                        f"{rule.key}.replicatedJobs: `{job}` has {len(job)} characters; Trainer {version} limits "
                        f"runtime replicatedJob names to {MAX_REPLICATED_JOB_NAME[version]} (trainer #4394), so "
                        f"runtime {rule.name} cannot run",
                        rule.line,
                        "rename the job in the runtime and in the profile",
                    ),
                    rule,
                )
            )
    return out
