"""Running the batch-step prologue (translator/plan/batch_prologue.py) for real with bash."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


from translator.launchers.common import job_shape
from translator.plan.batch_prologue import batch_prologue_lines
from translator.read import read_script
from translator.slurm.resolve import resolve

# The batch-step variables a script may read (sbatch.1 OUTPUT ENVIRONMENT).
NAMES = (
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURM_NNODES",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NTASKS",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_NODEID",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURMD_NODENAME",
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_GPUS_PER_NODE",
)

# One line per task: what a task sees (its Slurm variables, GPUs and, in the Open MPI tests, the host
# the test's ssh agent started it on).
SHOW = (
    "#!/bin/bash\n"
    'echo "P=$SLURM_PROCID L=$SLURM_LOCALID N=$SLURM_NODEID S=$SLURM_STEP_ID D=$SLURMD_NODENAME '
    "H=${S2K_TEST_REAL_HOST:-local} NT=$SLURM_NTASKS NN=$SLURM_NNODES TPN=$SLURM_STEP_TASKS_PER_NODE "
    'G=$SLURM_GTIDS NL=$SLURM_STEP_NODELIST C=${CUDA_VISIBLE_DEVICES-unset}"\n'
)


def prologue_text(header: str) -> str:
    job = resolve(read_script(("#!/bin/bash\n" + header + "\nsrun hostname\n").encode(), "job.sbatch"))
    lines = batch_prologue_lines(job, job_shape(job.fields), names=NAMES, functions=("srun", "scontrol"))
    return "\n".join(lines) + "\n"


def run_batch(tmp: Path, header: str, body: str, me: str, hostfile: str | None = None, env=None, timeout=60):
    """Run `body` as the batch script on the pod whose `hostname` is `me`; returns the CompletedProcess."""
    show = tmp / "show"
    show.write_text(SHOW)
    show.chmod(0o755)
    run_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), "TMPDIR": str(tmp)}
    if hostfile is not None:
        (tmp / "hostfile").write_text(hostfile)
        run_env["OMPI_MCA_orte_default_hostfile"] = str(tmp / "hostfile")
    run_env.update(env or {})
    script = tmp / "batch.sh"
    script.write_text(f"hostname() {{ echo {me}; }}\n" + prologue_text(header) + body)
    return subprocess.run(["bash", str(script)], cwd=tmp, env=run_env, capture_output=True, text=True, timeout=timeout)


def task_lines(out: str) -> list[dict]:
    """The SHOW lines of a run, as dicts, sorted by step then task id."""
    rows = []
    for line in out.splitlines():
        if line.startswith("P="):
            rows.append(dict(item.split("=", 1) for item in line.split(" ")))
    return sorted(rows, key=lambda r: (int(r["S"]), int(r["P"])))


AGENT = """#!/bin/bash
# test-only ssh: skip ssh's options, take the host, run the command here in a clean session
while [ $# -gt 0 ]; do case "$1" in -p|-o|-l|-i) shift 2 ;; -*) shift ;; *) break ;; esac; done
host="$1"; shift
tmp="$S2K_TEST_PODS/$host"; mkdir -p "$tmp"  # each pod its own /tmp (Open MPI's session directory)
exec env -i PATH="$PATH" HOME="$HOME" TMPDIR="$tmp" S2K_TEST_REAL_HOST="$host" /bin/sh -c "$*"
"""


def mpi_env_for(tmp_path):
    """The environment that makes Open MPI start the daemons of "other pods" here (the fixture `mpi_env`)."""
    mpirun = shutil.which("mpirun")
    assert mpirun, "mpirun is missing: install Debian's openmpi-bin (./test.sh does)"
    agent = tmp_path / "fake-ssh"
    agent.write_text(AGENT)
    agent.chmod(0o755)
    return {
        "OMPI_MCA_plm_rsh_agent": str(agent),
        "S2K_TEST_PODS": str(tmp_path / "pods"),
        "OMPI_MCA_oob_tcp_if_include": "lo",
        "OMPI_MCA_btl_tcp_if_include": "lo",
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",  # as the Trainer's MPI plugin sets it
    }
