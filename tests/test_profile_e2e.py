"""Conversions under each site profile, end to end: reader -> resolver -> planner -> profile -> emitters,
then the shared Kubeflow oracles: every TrainJob valid against the real CRD (with the site's own
ClusterTrainingRuntimes), and the SDK code, run on the real kubeflow==0.5.0, submits exactly the YAML's
TrainJob, runtime patches included."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from kf_helpers import VENV_PY, _oracle
from translator.emit import sdk_python, trainjob_yaml
from translator.pipeline import ConvertSettings, convert
from translator.profile.load import load_profile

FIX = Path(__file__).parent / "fixtures" / "profiles"
SITES = ("university", "ailab", "amd")
CASES = [(site, p.name) for site in SITES for p in sorted((FIX / site / "scripts").glob("*.sbatch"))]


def _convert(site: str, script: str):
    profile = load_profile(str(FIX / site / "slurm2kf.yaml"))
    conv = convert(str(FIX / site / "scripts" / script), settings=ConvertSettings(profile=profile))
    assert conv.plans, conv.diagnostics
    return conv.plans


def _runtime_args(site: str):
    d = FIX / site / "runtimes"
    return ["--runtimes", str(d)] if d.is_dir() else []


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("profile-e2e")
    out = {}
    for site, script in CASES:
        plans = _convert(site, script)
        stem = tmp / f"{site}-{script[: -len('.sbatch')]}"
        y, p = stem.with_suffix(".yaml"), stem.with_suffix(".py")
        y.write_text(trainjob_yaml.render(plans, findings_comment=True), encoding="utf-8")
        p.write_text(sdk_python.render(plans), encoding="utf-8")
        out[(site, script)] = (plans, y, p)
    return out


def test_cases_cover_three_sites():
    assert {s for s, _ in CASES} == set(SITES) and len(CASES) >= 9


def test_every_conversion_is_valid_against_the_crd(outputs):
    import json

    failures = []
    for site in SITES:  # one validator run per site, with that site's runtimes
        files = {str(y): f"{site}/{script}" for (s, script), (_, y, _) in outputs.items() if s == site}
        proc = subprocess.run(
            _oracle("validate_trainjob.py") + _runtime_args(site) + list(files),
            capture_output=True,
            text=True,
            timeout=120,
        )
        docs = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or {d["file"] for d in docs} != set(files) or not all(d["valid"] for d in docs):
            failures.append(f"{site}: {proc.stdout}{proc.stderr[-1500:]}")
            continue
        # the site runtimes are known to the validator: no "[runtime]" warning, no webhook/pod warnings
        for d in docs:
            warnings = [w for w in d["warnings"] if w.startswith(("[runtime]", "[webhook]", "[pod]"))]
            if warnings:
                failures.append(f"{files[d['file']]}: {warnings}")
    assert not failures, "\n".join(failures)


def test_sdk_code_submits_the_same_trainjob(outputs, tmp_path):
    # One YAML stream and one SDK program per site (the SDK code submits the TrainJobs in order),
    # so the real SDK runs three times, not once per script.
    pairs = []
    for site in SITES:
        plans = [p for (s, _), (site_plans, _, _) in outputs.items() if s == site for p in site_plans]
        y, p = tmp_path / f"{site}.yaml", tmp_path / f"{site}.py"
        y.write_text(trainjob_yaml.render(plans), encoding="utf-8")
        p.write_text(sdk_python.render(plans), encoding="utf-8")
        pairs.append((site, y, p, len(plans)))

    def one(item):
        site, y, p, n = item
        env = {"KF_ORACLE_PYTHON": str(VENV_PY), "PATH": "/usr/bin:/bin"}
        proc = subprocess.run(
            _oracle("compare_outputs.py") + _runtime_args(site) + [str(y), str(p)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        return site, n, proc.returncode, proc.stdout + proc.stderr[-1500:]

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(one, pairs))
    bad = [(s, out) for s, n, rc, out in results if rc != 0 or "equivalent: yes" not in out]
    assert not bad, "\n\n".join(f"{s}:\n{o}" for s, o in bad)
    assert sum(n for _, n, _, _ in results) == len(CASES)


def _trainjob(path: Path) -> dict:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert len(docs) == 1
    return docs[0]


def _pod_spec(tj: dict, job: str) -> dict:
    (patch,) = tj["spec"]["runtimePatches"]
    jobs = {
        j["name"]: j["template"]["spec"]["template"]["spec"]
        for j in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    }
    return jobs[job]


def test_university_trainjob_carries_queue_namespace_and_volumes(outputs):
    _, y, _ = outputs[("university", "resnet_torchrun.sbatch")]
    tj = _trainjob(y)
    assert tj["metadata"]["namespace"] == "chemistry"
    assert tj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-queue"
    assert tj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "normal"
    assert tj["spec"]["trainer"]["image"] == "registry.uni.example.edu/ml/pytorch:2.1-cuda12.1"
    assert {"name": "SCRATCH", "value": "/scratch/user"} in tj["spec"]["trainer"]["env"]
    spec = _pod_spec(tj, "node")
    assert spec["nodeSelector"] == {
        "uni.example.edu/pool": "gpu",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
        "uni.example.edu/network": "infiniband",
    }
    assert spec["imagePullSecrets"] == [{"name": "uni-registry"}]
    assert spec["containers"] == [
        {
            "name": "node",
            "volumeMounts": [
                {"name": "fs-home", "mountPath": "/home"},
                {"name": "fs-scratch", "mountPath": "/scratch"},
                {"name": "var-scratch", "mountPath": "/scratch/user"},
                {"name": "dshm", "mountPath": "/dev/shm"},
            ],
        }
    ]
    assert "suspend" not in tj["spec"]  # Kueue's webhook suspends it; we only add the label


def test_ailab_trainjob_uses_the_site_runtime_and_mig_resource(outputs):
    plans, y, _ = outputs[("ailab", "mig_notebook_eval.sbatch")]
    tj = _trainjob(y)
    assert tj["spec"]["runtimeRef"] == {"name": "torch-h100", "kind": "ClusterTrainingRuntime"}
    res = tj["spec"]["trainer"]["resourcesPerNode"]
    assert res["limits"]["nvidia.com/mig-1g.10gb"] == "1" and "nvidia.com/gpu" not in res["limits"]
    spec = _pod_spec(tj, "node")
    assert spec["serviceAccountName"] == "trainer"
    assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert plans[0].can_run


def test_ailab_sif_becomes_registry_image_and_job_can_run(outputs):
    plans, y, _ = outputs[("ailab", "llama_apptainer.sbatch")]
    tj = _trainjob(y)
    assert tj["spec"]["trainer"]["image"] == "nvcr.io/nvidia/pytorch:24.05-py3"
    assert tj["spec"]["trainer"]["resourcesPerNode"]["limits"] == {
        "cpu": "200",
        "nvidia.com/gpu": "8",
        "memory": "1900Gi",
    }
    assert plans[0].can_run  # the local .sif error is settled by the profile's image


def test_amd_mpi_patches_both_replicated_jobs(outputs):
    _, y, _ = outputs[("amd", "osu_mpi.sbatch")]
    tj = _trainjob(y)
    launcher, node = _pod_spec(tj, "launcher"), _pod_spec(tj, "node")
    assert launcher == node
    assert {"name": "fs-appl", "hostPath": {"path": "/appl", "type": "Directory"}} in node["volumes"]
    assert node["nodeSelector"] == {"amd.com/gpu.product-name": "AMD_Instinct_MI300X"}
    assert tj["spec"]["trainer"]["resourcesPerNode"]["limits"]["amd.com/gpu"] == "8"


def test_profile_env_and_pip_index_reach_the_sdk_identically(tmp_path):
    from test_profile_apply import PIP_SCRIPT

    profile = load_profile(str(FIX / "ailab" / "slurm2kf.yaml"))
    plans = convert("pip.sbatch", PIP_SCRIPT, ConvertSettings(profile=profile)).plans
    y, p = tmp_path / "pip.yaml", tmp_path / "pip.py"
    y.write_text(trainjob_yaml.render(plans), encoding="utf-8")
    p.write_text(sdk_python.render(plans), encoding="utf-8")
    assert "https://pypi.lab.example.com/simple" in y.read_text()
    env = {"KF_ORACLE_PYTHON": str(VENV_PY), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        _oracle("compare_outputs.py") + _runtime_args("ailab") + ["--validate", str(y), str(p)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0 and "equivalent: yes" in proc.stdout, proc.stdout + proc.stderr[-1500:]
