"""Test helpers for the emitters and the validator: hand-built plans and the shared Kubeflow oracles.

The oracles (/work/shared/kubeflow/oracle) are independent instruments: the real CRD, the real
kubeflow==0.5.0 SDK against a fake cluster.  Missing oracles make tests FAIL, never skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from collections.abc import Sequence

from translator.diagnostics import Finding
from translator.plan.model import EnvVar, PodPatch, SourceMap, TrainerPlan

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SLURM2KF_SHARED", str(REPO.parent / "shared")))
ORACLE = SHARED / "kubeflow" / "oracle"
CRD = SHARED / "kubeflow" / "crds" / "trainer.kubeflow.org_trainjobs.yaml"
VENV_PY = REPO / ".venv" / "bin" / "python"
ORACLE_PY = Path("/tmp/kf-oracle-venv/bin/python")

TORCH_IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
DS_IMAGE = "ghcr.io/kubeflow/trainer/deepspeed-runtime"
JAX_IMAGE = "nvcr.io/nvidia/jax:25.10-py3"


def plan(**kw) -> TrainerPlan:
    base = dict(
        name="job",
        source_path="job.sbatch",
        job_name="job",
        image=TORCH_IMAGE,
        command=("torchrun",),
        args=("train.py",),
    )
    base.update(kw)
    return TrainerPlan(**base)


def sample_plans() -> dict:
    """A range of plans, one per family/feature, written by hand from the runtime docs."""
    shm = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
    return {
        "torch_multinode": plan(
            name="llm-pretrain",
            num_nodes=4,
            command=("torchrun",),
            args=("--nproc-per-node", "8", "pretrain.py", "--epochs", "10"),
            resources_per_node=(("nvidia.com/gpu", "8"), ("cpu", "64"), ("memory", "900Gi")),
            env=(EnvVar("NCCL_DEBUG", "WARN", 7), EnvVar("OMP_NUM_THREADS", "8", 8)),
            active_deadline_seconds=86400,
            source_map=(
                SourceMap("spec.trainer.numNodes", (3,), "mapped"),
                SourceMap("spec.activeDeadlineSeconds", (4,), "mapped"),
            ),
            findings=(
                Finding("warning", "P401", "module load cuda/12 must be in the image", 5, "bake it into the image"),
            ),
        ),
        "mpi_deepspeed": plan(
            name="ds-2x8",
            runtime="deepspeed-distributed",
            framework="mpi",
            launcher="mpi",
            image=DS_IMAGE,
            num_nodes=2,
            command=("mpirun",),
            args=("--hostfile", "/etc/mpi/hostfile", "-np", "16", "python", "/home/mpiuser/train.py"),
            resources_per_node=(("nvidia.com/gpu", "8"),),
            patches=(
                PodPatch(job="launcher", volumes=(shm,), volume_mounts=({"name": "dshm", "mountPath": "/dev/shm"},)),
                PodPatch(
                    job="node",
                    volumes=(shm,),
                    volume_mounts=({"name": "dshm", "mountPath": "/dev/shm"},),
                    node_selector=(("pool", "a100"),),
                ),
            ),
        ),
        "jax": plan(
            name="jax-job",
            runtime="jax-distributed",
            framework="jax",
            image=JAX_IMAGE,
            num_nodes=2,
            command=("python",),
            args=("train_jax.py",),
            resources_per_node=(("nvidia.com/gpu", "4"),),
        ),
        "python_cpu": plan(
            name="cpu-job",
            num_nodes=1,
            command=("python",),
            args=("prep.py", "--in", "x"),
            resources_per_node=(("cpu", "4"), ("memory", "8000Mi")),
        ),
        "packages": plan(
            name="pip-job",
            command=("torchrun",),
            args=("--nproc-per-node", "2", "t.py"),
            packages=("transformers[torch]==4.40", "datasets>=2", "-r requirements.txt"),
            pip_index_urls=("https://pypi.org/simple", "https://download.pytorch.org/whl/cu121"),
            resources_per_node=(("nvidia.com/gpu", "2"),),
        ),
        "patches": plan(
            name="vol-job",
            num_nodes=2,
            patches=(
                PodPatch(
                    volumes=(
                        {"name": "scratch", "persistentVolumeClaim": {"claimName": "scratch"}},
                        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
                    ),
                    volume_mounts=(
                        {"name": "scratch", "mountPath": "/scratch"},
                        {"name": "dshm", "mountPath": "/dev/shm"},
                    ),
                    node_selector=(("cloud.google.com/gke-accelerator", "nvidia-h100-80gb"),),
                    tolerations=({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},),
                    image_pull_secrets=("regcred",),
                ),
            ),
        ),
        "namespace_meta": plan(
            name="meta-job",
            namespace="team-a",
            labels=(("kueue.x-k8s.io/queue-name", "gpu-queue"), ("app", "slurm2kf")),
            annotations=(("slurm2kf.io/job-name", "My Job!"), ("slurm2kf.io/source", "jobs/a b.sbatch")),
            active_deadline_seconds=7200,
        ),
    }


def write_outputs(tmp: Path, name: str, plans: Sequence[TrainerPlan]):
    from translator.emit import sdk_python, trainjob_yaml

    y = tmp / f"{name}.yaml"
    p = tmp / f"{name}.py"
    y.write_text(trainjob_yaml.render(plans, findings_comment=True), encoding="utf-8")
    p.write_text(sdk_python.render(plans), encoding="utf-8")
    return y, p


def _oracle(tool: str) -> list[str]:
    path = ORACLE / tool
    assert path.is_file(), f"shared Kubeflow oracle missing: {path}"
    return [str(ORACLE_PY if ORACLE_PY.exists() else sys.executable), str(path)]


def oracle_validate(paths: Sequence[Path]) -> list[dict]:
    """validate_trainjob.py on files; one dict per TrainJob (valid, errors, warnings)."""
    proc = subprocess.run(
        _oracle("validate_trainjob.py") + [str(p) for p in paths], capture_output=True, text=True, timeout=120
    )
    out = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    assert out, proc.stdout + proc.stderr
    return out


def oracle_compare(pairs: Sequence[tuple], jobs: int = 2) -> list[tuple]:
    """compare_outputs.py per (yaml, py) pair, `jobs` at a time; returns (rc, output) per pair."""
    env = dict(os.environ, KF_ORACLE_PYTHON=str(VENV_PY))

    def one(pair):
        y, p = pair
        proc = subprocess.run(
            _oracle("compare_outputs.py") + [str(y), str(p)], capture_output=True, text=True, timeout=180, env=env
        )
        return proc.returncode, proc.stdout + proc.stderr

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, pairs))


def oracle_compare_with_runtimes(pairs: Sequence[tuple], jobs: int = 2) -> list[tuple]:
    """compare_outputs.py per (yaml, py) pair with the YAML file as `--runtimes` too: batch mode writes its
    TrainingRuntime there, and the SDK code finds it (get_runtime) instead of creating it."""
    env = dict(os.environ, KF_ORACLE_PYTHON=str(VENV_PY))

    def one(pair):
        y, p = pair
        cmd = _oracle("compare_outputs.py") + ["--runtimes", str(y), str(y), str(p)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
        return proc.returncode, proc.stdout + proc.stderr

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, pairs))


def oracle_run_sdk(paths: Sequence[Path], jobs: int = 2) -> tuple:
    """run_sdk_code.py --json -j on files; (rc, list of captured TrainJobs, stderr)."""
    env = dict(os.environ, KF_ORACLE_PYTHON=str(VENV_PY))
    proc = subprocess.run(
        _oracle("run_sdk_code.py") + ["--json", "-j", str(jobs)] + [str(p) for p in paths],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    try:
        data = json.loads(proc.stdout) if proc.stdout.strip() else []
    except json.JSONDecodeError:
        data = []
    return proc.returncode, data, proc.stderr
