"""What a TrainJob queued by Kueue gets beyond the queue and priority labels (translator/profile/apply.py).

* **`--time` under Kueue**: `spec.activeDeadlineSeconds` counts from each start of the TrainJob and
  restarts on every resume (Kubeflow Trainer, `activeDeadlineSeconds`); Kueue suspends a preempted job
  and resumes it when it is admitted again, so on its own the deadline lets a job that is preempted
  again and again hold quota for far longer than `--time`. Kueue's "maximum execution time"
  (label `kueue.x-k8s.io/max-exec-time-seconds` on the job, copied to the Workload's
  `spec.maximumExecutionTimeSeconds`; kueue.sigs.k8s.io, Labels and Annotations, and Workload concepts)
  counts the time the workload has been admitted *in total*, over every admission, and deactivates it
  when that passes. slurm2kf writes both, with the same value: the deadline still ends one run at
  `--time`, as Slurm ends a job (TIMEOUT), and the Kueue limit keeps the total admitted time within
  `--time` too, which a requeued Slurm job's accounting would show as separate runs of at most `--time`.
* **`--dependency`**: Kueue has no API for one workload to wait for another; the condition is kept in
  the annotation `slurm2kf.io/dependency` (for a person or a workflow engine to read), next to the
  warning P407 that says it is not enforced.
"""

from __future__ import annotations

import dataclasses

from translator.diagnostics import INFO, Finding

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MAX_EXEC_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
DEPENDENCY_ANNOTATION = "slurm2kf.io/dependency"
MAX_ANNOTATION = 4096  # the Slurm expression kept (annotations may hold 256 KiB in all)


def kueue_fields(plan, dependency: str | None, time_line: int | None, dependency_line: int | None):
    """``plan`` with the Kueue time limit (when a queue applies) and the dependency annotation."""
    labels = dict(plan.labels)
    annotations = dict(plan.annotations)
    findings = list(plan.findings)
    line = time_line
    if labels.get(QUEUE_LABEL) and plan.active_deadline_seconds:
        seconds = str(int(plan.active_deadline_seconds))
        labels[MAX_EXEC_LABEL] = seconds
        findings.append(
            Finding(
                INFO,
                "P468",
                f"--time -> also label {MAX_EXEC_LABEL}={seconds} for Kueue queue `{labels[QUEUE_LABEL]}`: "
                "activeDeadlineSeconds restarts each time Kueue resumes the job after a preemption; Kueue's "
                "maximum execution time counts the admitted time over every admission",
                line,
            )
        )
    if dependency:
        text = str(dependency)[:MAX_ANNOTATION]
        annotations[DEPENDENCY_ANNOTATION] = text
        findings.append(
            Finding(
                INFO,
                "P469",
                f"--dependency kept in the annotation {DEPENDENCY_ANNOTATION} (Kueue and the Trainer have no "
                "job dependency API, so nothing waits for it)",
                dependency_line,
                "submit the TrainJob when the jobs it depends on have ended",
            )
        )
    if labels == dict(plan.labels) and annotations == dict(plan.annotations):
        return plan
    return dataclasses.replace(
        plan, labels=tuple(labels.items()), annotations=tuple(annotations.items()), findings=tuple(findings)
    )
