"""Every script of the test corpora converted under each site profile: no exception, and a profile
never turns a TrainJob the CRD accepts into one it rejects (differential check with the real CRD
through the shared oracle). The launcher fixtures also go through the real SDK under the AI-lab
profile (tolerations, affinity, NFS, service account, pull secrets in one runtime patch)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kf_helpers import VENV_PY, _oracle
from translator.emit import sdk_python, trainjob_yaml
from translator.pipeline import ConvertSettings, convert
from translator.profile.load import load_profile

FIX = Path(__file__).parent / "fixtures"
SITES = ("university", "ailab", "amd")
SCRIPTS = (
    sorted(FIX.glob("sbatch/*.sbatch"))
    + sorted(FIX.glob("convert/*/*.sbatch"))
    + sorted(FIX.glob("profiles/*/scripts/*.sbatch"))
)


def _runtime_args(site):
    d = FIX / "profiles" / site / "runtimes"
    return ["--runtimes", str(d)] if d.is_dir() else []


def _validate(paths, site=None):
    proc = subprocess.run(
        _oracle("validate_trainjob.py") + (_runtime_args(site) if site else []) + [str(p) for p in paths],
        capture_output=True,
        text=True,
        timeout=300,
    )
    docs = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert docs, proc.stderr[-2000:]
    valid = {}
    for d in docs:
        valid[d["file"]] = valid.get(d["file"], True) and d["valid"]
    return valid, docs


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("profile-corpus")
    out = {None: {}}
    profiles = {site: load_profile(str(FIX / "profiles" / site / "slurm2kf.yaml")) for site in SITES}
    for site in SITES:
        out[site] = {}
    for i, script in enumerate(SCRIPTS):
        for site in (None,) + SITES:
            settings = ConvertSettings(profile=profiles[site]) if site else ConvertSettings()
            conv = convert(str(script), settings=settings)  # must never raise
            if not conv.plans:
                continue
            y = tmp / f"{site or 'none'}-{i:03d}-{script.stem}.yaml"
            y.write_text(trainjob_yaml.render(conv.plans), encoding="utf-8")
            out[site][script] = (y, conv.plans)
    return out


def test_corpus_is_large():
    assert len(SCRIPTS) > 100


def test_profiles_never_make_a_valid_trainjob_invalid(rendered):
    base_valid, _ = _validate([y for y, _ in rendered[None].values()])
    problems = []
    for site in SITES:
        files = {str(y): s for s, (y, _) in rendered[site].items()}
        valid, docs = _validate(list(files), site)
        for d in docs:
            script = files[d["file"]]
            was = base_valid.get(str(rendered[None][script][0])) if script in rendered[None] else None
            if was and not d["valid"]:
                problems.append(f"{site}: {script.name}: {d['errors']}")
    assert not problems, "\n".join(problems)


def test_every_plan_under_a_profile_says_which_profile(rendered):
    for site in SITES:
        for script, (_, plans) in rendered[site].items():
            for plan in plans:
                assert [f.code for f in plan.findings].count("F500") == 1, script


# One launcher fixture per family that takes a different path through the profile (MPI: two jobs).
LAUNCHER_FIXTURES = [
    FIX / "convert" / f
    for f in (
        "torchrun/multinode_rdzv.sbatch",
        "srun_tasks/per_gpu_tasks.sbatch",
        "deepspeed/hostfile_multinode.sbatch",
        "mpi/mpirun_cpu.sbatch",
        "jax/multinode.sbatch",
        "container/pyxis.sbatch",
        "python/single_gpu_pip.sbatch",
    )
]


def test_launcher_fixtures_under_the_ailab_profile_match_the_sdk(rendered, tmp_path):
    plans = [p for script in LAUNCHER_FIXTURES for p in rendered["ailab"][script][1]]
    assert all(p.can_run for p in plans)
    y, p = tmp_path / "launchers.yaml", tmp_path / "launchers.py"
    y.write_text(trainjob_yaml.render(plans), encoding="utf-8")
    p.write_text(sdk_python.render(plans), encoding="utf-8")
    env = {"KF_ORACLE_PYTHON": str(VENV_PY), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        _oracle("compare_outputs.py") + _runtime_args("ailab") + [str(y), str(p)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0 and "equivalent: yes" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    assert len(plans) >= len(LAUNCHER_FIXTURES)


def test_an_unmapped_local_image_still_cannot_run(rendered):
    _, plans = rendered["ailab"][FIX / "convert" / "container" / "local_sif.sbatch"]
    (plan,) = plans
    assert not plan.can_run  # no ailab image rule matches /home/alice/...sif
    (f508,) = [f for f in plan.findings if f.code == "F508"]
    assert f508.severity == "warning" and f508.line == 6
    assert f508.message.startswith("container `/home/alice/containers/pytorch_23.10.sif` matches no rule")
