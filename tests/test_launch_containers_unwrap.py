"""Container wrappers are unwrapped, never run in a pod (issue 19.5).

Expected values are derived by hand from the wrappers' documentation:
- pyxis (NVIDIA/pyxis README): `srun --container-image=[USER@][REGISTRY#]IMAGE[:TAG]`,
  `--container-mounts=SRC:DST[,…]`, `--container-env=NAME[,NAME]` (host values override the image's);
- enroot(1): `enroot import docker://[USER@][REGISTRY#]IMAGE[:TAG]` writes a squashfs file, `enroot
  create --name NAME FILE` unpacks it, `enroot start [--mount SRC:DST] [--env K[=V]] NAME [CMD…]` runs
  CMD in that container;
- apptainer/singularity exec(1): `-B/--bind SRC[:DST]`, `--env A=B`, `--env-file F`, `docker://` URIs;
- podman-hpc (podman-run(1)): `run [-v SRC:DST] [-e A=B] [--env-file F] IMAGE CMD…`;
- bash(1): `"${A[@]}"` expands to the elements of A, one word each; `${X:-d}` is d when X is unset.
The inner command goes to its own family: `srun` with one task per node around torchrun is torchrun on
the torch runtime (one pod per node), never mpirun.
"""

from __future__ import annotations

import pytest


from translator.pipeline import ConvertSettings, convert

HEAD = "#!/bin/bash\n#SBATCH --job-name=job\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
TORCHRUN = "torchrun --nnodes=2 --nproc_per_node=4 train.py --cfg a.yaml"
NGC = "nvcr.io/nvidia/pytorch:24.01-py3"


def conv(text, **settings):
    return convert("job.sbatch", data=text.encode(), settings=ConvertSettings(**settings))


def by_code(c, code):
    return [f for f in c.findings if f.code == code]


def assert_torchrun(c, image):
    # torchrun once per pod on the torch runtime: 4 workers per node; --nnodes dropped (PET_NNODES)
    p = c.plans[0]
    assert p.runtime == "torch-distributed" and p.num_nodes == 2 and p.image == image
    assert p.command == ("torchrun",)
    assert p.args == ("--nproc-per-node", "4", "train.py", "--cfg", "a.yaml")
    assert "mpirun" not in " ".join(p.command + p.args)


@pytest.mark.parametrize(
    "lines",
    [
        f"IMG=nvcr.io#nvidia/pytorch:24.01-py3\nsrun --container-image=$IMG {TORCHRUN}\n",
        f'IMG="nvcr.io#nvidia/pytorch:24.01-py3"\nsrun --container-image="${{IMG}}" {TORCHRUN}\n',
        f"srun --container-image=${{IMAGE:-nvcr.io#nvidia/pytorch:24.01-py3}} {TORCHRUN}\n",
        f'CONTAINER=(--container-image="${{IMAGE:-nvcr.io#nvidia/pytorch:24.01-py3}}")\nsrun "${{CONTAINER[@]}}" {TORCHRUN}\n',
        f"srun --mpi=pmix --container-image=nvcr.io#nvidia/pytorch:24.01-py3 {TORCHRUN}\n",
    ],
)
def test_pyxis_image_given_literally_in_a_variable_an_array_or_a_default(lines):
    c = conv(HEAD + lines)
    assert_torchrun(c, NGC)
    assert by_code(c, "L322") and not by_code(c, "L310") and not by_code(c, "L330")


def test_pyxis_array_with_mounts_and_env():
    c = conv(
        HEAD + "CONTAINER=(--container-image=nvcr.io#nvidia/pytorch:24.01-py3 "
        "--container-mounts=/lustre/data:/data,/home/u:/home/u --container-env=HF_HOME)\n"
        f'srun "${{CONTAINER[@]}}" {TORCHRUN}\n'
    )
    assert_torchrun(c, NGC)
    (mounts,) = by_code(c, "L323")
    assert "/lustre/data -> /data" in mounts.message and "/home/u -> /home/u" in mounts.message
    (env,) = by_code(c, "L359")
    assert "--container-env HF_HOME" in env.message and env.line == 7


def test_pyxis_default_with_the_variable_assigned_uses_the_assigned_value():
    c = conv(
        HEAD + f"IMAGE=ghcr.io/x/y:2\nsrun --container-image=${{IMAGE:-nvcr.io#nvidia/pytorch:24.01-py3}} {TORCHRUN}\n"
    )
    assert_torchrun(c, "ghcr.io/x/y:2")


@pytest.mark.parametrize("exe", ["singularity", "apptainer"])
@pytest.mark.parametrize("sub", ["exec"])
def test_apptainer_exec_with_binds_and_env(exe, sub):
    c = conv(
        HEAD + f"srun --mpi=pmix {exe} {sub} --nv -B /scratch,/lustre/d:/data --env A=1 --env-file run.env "
        f"docker://{NGC} {TORCHRUN}\n"
    )
    assert_torchrun(c, NGC)
    (mounts,) = by_code(c, "L323")
    assert "/scratch -> /scratch" in mounts.message and "/lustre/d -> /data" in mounts.message
    # `--env A=1` sets A inside the container: carried as TrainJob env (P449, translator/launchers/wrapper_env.py);
    # the variables of `--env-file` (a file of the Slurm side) are not
    (carried,) = by_code(c, "P449")
    assert carried.line == 6 and "A" in carried.message
    assert ("A", "1") in [(e.name, e.value) for p in c.plans for e in p.env]
    envs = by_code(c, "L359")
    assert [f.line for f in envs] == [6]
    assert "--env-file run.env" in envs[0].message


def test_shifter_with_image_volume_and_job_image():
    c = conv(HEAD + f"#SBATCH --image=docker:{NGC}\nsrun shifter -V /pscratch/u:/work {TORCHRUN}\n")
    assert_torchrun(c, NGC)
    (mounts,) = by_code(c, "L323")
    assert "/pscratch/u -> /work" in mounts.message


def test_enroot_start_uses_the_image_the_script_imported():
    c = conv(
        HEAD + "enroot import -o pyt.sqsh docker://nvcr.io#nvidia/pytorch:24.01-py3\n"
        "enroot create --name pyt pyt.sqsh\n"
        f"srun enroot start --mount /lustre/d:/data --env WANDB_MODE pyt {TORCHRUN}\n"
    )
    assert_torchrun(c, NGC)
    assert "/lustre/d -> /data" in by_code(c, "L323")[0].message
    assert any("--env WANDB_MODE" in f.message for f in by_code(c, "L359"))
    assert not by_code(c, "L310")


def test_enroot_start_of_a_container_without_import_is_an_error_with_the_fix():
    c = conv(HEAD + f"srun enroot start pyt {TORCHRUN}\n")
    (f,) = by_code(c, "L310")
    assert f.severity == "error" and "enroot container" in f.message and "--image" in f.suggestion
    # the inner command is still torchrun (the image is the only thing missing)
    p = c.plans[0]
    assert p.command == ("torchrun",) and p.runtime == "torch-distributed"
    c = conv(HEAD + f"srun enroot start pyt {TORCHRUN}\n", image="ghcr.io/site/pyt:1")
    assert c.plans[0].image == "ghcr.io/site/pyt:1"


def test_podman_hpc_run_with_env_file_and_mount():
    c = conv(
        HEAD + "srun podman-hpc run --rm --gpu -v /scratch:/scratch --mount type=bind,src=/d,dst=/data "
        f"--env-file e.env ghcr.io/x/y:1 {TORCHRUN}\n"
    )
    assert_torchrun(c, "ghcr.io/x/y:1")
    (mounts,) = by_code(c, "L323")
    assert "/scratch -> /scratch" in mounts.message and "/d -> /data" in mounts.message
    assert any("--env-file e.env" in f.message for f in by_code(c, "L359"))


@pytest.mark.parametrize(
    "wrapper",
    ["apptainer exec --nv ~/torch.sif", "singularity exec /scratch/img.simg", "srun --container-image=./pyt.sqsh"],
)
def test_local_image_files_stay_an_error_with_the_fix(wrapper):
    launch = f"{wrapper} {TORCHRUN}" if wrapper.startswith("srun") else f"srun {wrapper} {TORCHRUN}"
    c = conv(HEAD + launch + "\n")
    (f,) = by_code(c, "L310")
    assert f.severity == "error" and "registry" in f.suggestion


def test_site_profile_maps_a_local_sif_to_a_registry_image(tmp_path):
    # profiles.md: an `images` rule with a `container:` glob chooses the image for that container path
    from translator.profile.load import load_profile

    prof = tmp_path / "site.yaml"
    prof.write_text(
        "apiVersion: slurm2kf/v1\nkind: SiteProfile\nimages:\n  rules:\n"
        "    - container: '/apps/containers/torch_*.sif'\n"
        "      image: registry.site.org/ml/torch:2.3\n"
    )
    profile = load_profile(str(prof))
    c = conv(HEAD + f"srun apptainer exec --nv /apps/containers/torch_2.3.sif {TORCHRUN}\n", profile=profile)
    p = c.plans[0]
    assert p.image == "registry.site.org/ml/torch:2.3"
    assert all(f.severity != "error" for f in p.findings if f.code == "L310")


# ---- batch mode runs the body on the batch pod: its steps' wrappers run the command directly, on every pod ----


def _fallback_pods(text, tmp_path, mpi_env):
    """Batch mode, run for real (tests/test_batch_mode_run.py): the calls of each pod, the batch pod first."""
    from test_batch_mode_run import _pods, run_launcher

    c = conv(text)
    plan = c.plans[0]
    assert plan.launcher == "script"
    proc, calls = run_launcher(plan, tmp_path, mpi_env)
    assert proc.returncode == 0, proc.stderr
    launcher, hosts = _pods(plan)
    order = [launcher] + [h for h in hosts if h != launcher]
    return c, plan, [[x for x in calls if x["host"] == h] for h in order]


def test_fallback_shifter_loop_runs_python_in_the_job_image(tmp_path, mpi_env):
    # Slurm: a loop of two steps, each `srun shifter python …` = 1 task per node on 2 nodes inside the
    # job's image -> python train.py --lr 0.1 and --lr 0.01 on each node. In the pods: the same calls, no
    # shifter (the pod runs the image nersc/pytorch:24.06.01).
    text = (
        "#!/bin/bash\n#SBATCH --job-name=sweep\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n"
        "#SBATCH --image=docker:nersc/pytorch:24.06.01\n#SBATCH --volume=/pscratch/u:/data\n"
        "for lr in 0.1 0.01; do\n  srun shifter --module=gpu python train.py --lr $lr\ndone\n"
    )
    c, plan, pods = _fallback_pods(text, tmp_path, mpi_env)
    assert plan.image == "nersc/pytorch:24.06.01"
    for calls in pods:
        assert [(x["name"], x["args"]) for x in calls] == [
            ("python", ["train.py", "--lr", "0.1"]),
            ("python", ["train.py", "--lr", "0.01"]),
        ]
    assert {"L322", "L323", "L358", "L360"} <= {f.code for f in c.findings}


def test_fallback_enroot_import_and_apptainer_exec(tmp_path, mpi_env):
    # `enroot import` only prepared the image (nothing to do in a pod); `srun enroot start … pyt python`
    # and `srun apptainer exec … docker://IMG python` ran python in the image: one task per node each.
    text = (
        "#!/bin/bash\n#SBATCH --job-name=two\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\nset -e\n"
        "enroot import -o pyt.sqsh docker://nvcr.io#nvidia/pytorch:24.01-py3\n"
        "enroot create --name pyt pyt.sqsh\n"
        "srun enroot start --mount /d:/data pyt python prep.py\n"
        f"srun apptainer exec --nv -B /d:/data docker://{NGC} python train.py\n"
    )
    c, plan, pods = _fallback_pods(text, tmp_path, mpi_env)
    assert plan.image == NGC
    for calls in pods:
        assert [(x["name"], x["args"]) for x in calls] == [("python", ["prep.py"]), ("python", ["train.py"])]
    (info,) = [f for f in c.findings if f.code == "L360"]
    assert "`enroot` (line 6)" in info.message and "`apptainer` (line 9)" in info.message


def test_fallback_with_two_images_says_which_one_runs():
    text = (
        "#!/bin/bash\n#SBATCH -N 1\nfor s in a b; do\n"
        "  srun apptainer exec docker://ghcr.io/x/prep:1 python prep.py $s\n"
        "  srun apptainer exec docker://ghcr.io/x/train:2 python train.py $s\ndone\n"
    )
    c = conv(text)
    assert c.plans[0].image == "ghcr.io/x/prep:1"
    (w,) = [f for f in c.findings if f.code == "L360" and f.severity == "warning"]
    assert "ghcr.io/x/train:2" in w.message and w.line == 5
