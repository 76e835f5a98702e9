"""apply_profile on the three site fixtures: scripts read and resolved by the real reader/resolver,
plans written by hand (what the planner gives), expected outputs derived by hand from the profiles."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from translator.pipeline import read_and_resolve
from translator.plan.model import EnvVar, PodPatch, TrainerPlan
from translator.profile.apply import apply_profile
from translator.profile.load import load_profile, parse_profile

FIX = Path(__file__).parent / "fixtures" / "profiles"
HEAD = "apiVersion: slurm2kf/v1\nkind: SiteProfile\n"


def run(site: str, script: str, profile=None, settings=None, **plan_kw) -> TrainerPlan:
    path = FIX / site / "scripts" / script
    s, job, err = read_and_resolve(str(path))
    assert err is None
    base = dict(name="job", source_path=str(path), job_name=job.fields.job_name)
    base.update(plan_kw)
    prof = profile or load_profile(str(FIX / site / "slurm2kf.yaml"))
    return apply_profile(TrainerPlan(**base), s, job, prof, settings)


def codes(plan):
    return [(f.code, f.line) for f in plan.findings]


def finding(plan, code, contains=""):
    hits = [f for f in plan.findings if f.code == code and contains in f.message]
    assert hits, (code, contains, [f.message for f in plan.findings])
    return hits[0]


# ---- university -------------------------------------------------------------------------------

UNI_IMAGE = "registry.uni.example.edu/ml/pytorch:2.1-cuda12.1"


def test_university_torchrun_on_gpu_partition():
    plan = run(
        "university",
        "resnet_torchrun.sbatch",
        launcher="torchrun",
        resources_per_node=(("nvidia.com/gpu", "4"), ("cpu", "32"), ("memory", "200Gi")),
    )
    assert plan.labels == (
        ("kueue.x-k8s.io/queue-name", "gpu-queue"),
        ("kueue.x-k8s.io/priority-class", "normal"),
        ("site", "uni-hpc"),
    )
    assert plan.annotations == (("uni.example.edu/migrated-from", "slurm"),)
    assert plan.namespace == "chemistry"  # account chem-lab ~ re:^chem-.*
    assert plan.image == UNI_IMAGE  # module pytorch/2.1.2 ~ pytorch/2.1*
    assert plan.runtime == "torch-distributed"
    assert plan.resources_per_node == (("nvidia.com/gpu", "4"), ("cpu", "32"), ("memory", "200Gi"))
    assert plan.env == (EnvVar("SCRATCH", "/scratch/user"),)
    assert plan.patches == (
        PodPatch(
            job="node",
            container="node",
            node_selector=(
                ("uni.example.edu/pool", "gpu"),
                ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"),
                ("uni.example.edu/network", "infiniband"),
            ),
            tolerations=({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},),
            volumes=(
                {"name": "fs-home", "persistentVolumeClaim": {"claimName": "gpfs-home"}},
                {"name": "fs-scratch", "persistentVolumeClaim": {"claimName": "gpfs-scratch"}},
                {"name": "var-scratch", "persistentVolumeClaim": {"claimName": "gpfs-scratch-user"}},
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
            ),
            volume_mounts=(
                {"name": "fs-home", "mountPath": "/home"},
                {"name": "fs-scratch", "mountPath": "/scratch"},
                {"name": "var-scratch", "mountPath": "/scratch/user"},
                {"name": "dshm", "mountPath": "/dev/shm"},
            ),
            image_pull_secrets=("uni-registry",),
        ),
    )
    # Every change is explained, at the script line that caused it.
    assert codes(plan) == [
        ("F500", None),
        ("F501", 3),
        ("F502", 3),
        ("F503", 4),
        ("F504", 5),
        ("F502", 8),
        ("F502", 11),
        ("F507", 16),
        ("F509", 19),
        ("F509", 13),
        ("F509", 19),
        ("F519", 19),
        ("F511", None),
        ("F516", None),
        ("F516", None),
        ("F516", None),
    ]
    assert all(f.severity == "info" for f in plan.findings)
    assert "profile key `partitions.gpu.queue` (slurm2kf.yaml:20)" in finding(plan, "F501").message
    assert "suspended" in finding(plan, "F501").message
    assert 'profile key `accounts["re:^chem-.*"].namespace` (slurm2kf.yaml:40)' in finding(plan, "F504").message


def test_university_exclusive_cpu_job_gets_whole_node():
    plan = run("university", "cpu_preprocess.sbatch", launcher="python", resources_per_node=(("cpu", "1"),))
    assert dict(plan.labels)["kueue.x-k8s.io/queue-name"] == "cpu-queue"  # cpu-long ~ cpu*
    assert dict(plan.labels)["kueue.x-k8s.io/priority-class"] == "high"  # long ~ re:^(long|high)$
    assert plan.namespace == "physics"
    assert plan.resources_per_node == (("cpu", "128"), ("memory", "500Gi"))  # --exclusive + --mem=0
    assert plan.image == UNI_IMAGE  # conda torch21
    assert finding(plan, "F514", "--exclusive").line == 7
    assert finding(plan, "F514", "--mem=0").line == 8
    assert "all memory of a node" in finding(plan, "F514", "--mem=0").message
    (patch,) = plan.patches
    assert patch.node_selector == (("uni.example.edu/pool", "cpu"),)
    assert [v["name"] for v in patch.volumes] == ["fs-home", "fs-scratch", "dshm"]


def test_university_unmapped_names_are_warnings():
    plan = run("university", "tf_unmapped.sbatch", launcher="python", resources_per_node=(("nvidia.com/gpu", "2"),))
    warnings = [(f.code, f.line) for f in plan.findings if f.severity == "warning"]
    assert warnings == [("F517", 3), ("F517", 4), ("F508", 8), ("F510", 9)]
    assert "partition `debug` is not in the profile's `partitions`" in finding(plan, "F517", "debug").message
    assert "module `hdf5/1.12.2`" in finding(plan, "F508").message
    assert "`/data`" in finding(plan, "F510").message
    assert plan.namespace == "hpc-users"  # defaults.namespace
    assert "kueue.x-k8s.io/queue-name" not in dict(plan.labels)
    assert plan.image == "registry.uni.example.edu/ml/tensorflow:2.15"  # rule 2: tensorflow/*
    (patch,) = plan.patches
    assert patch.node_selector == (("nvidia.com/gpu.product", "Tesla-V100-SXM2-32GB"),)


# ---- AI lab -----------------------------------------------------------------------------------


def test_ailab_apptainer_job_on_h100():
    plan = run(
        "ailab",
        "llama_apptainer.sbatch",
        launcher="torchrun",
        num_nodes=4,
        image="/lustre/containers/pytorch_24.05.sif",
        resources_per_node=(("nvidia.com/gpu", "8"),),
    )
    assert plan.labels == (
        ("kueue.x-k8s.io/queue-name", "h100"),
        ("kueue.x-k8s.io/priority-class", "urgent"),
        ("lab.example.com/cost-center", "research"),
    )
    assert plan.namespace == "llm-team"
    assert plan.image == "nvcr.io/nvidia/pytorch:24.05-py3"  # the .sif replaced by its registry image
    assert (plan.runtime, plan.runtime_kind) == ("torch-h100", "ClusterTrainingRuntime")
    assert plan.resources_per_node == (("nvidia.com/gpu", "8"), ("cpu", "200"), ("memory", "1900Gi"))
    (patch,) = plan.patches
    assert patch.node_selector == (
        ("lab.example.com/pool", "dgx-h100"),
        ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
    )
    assert patch.tolerations == (
        {"key": "lab.example.com/dedicated", "operator": "Equal", "value": "h100", "effect": "NoSchedule"},
    )
    assert patch.volumes == (
        {"name": "fs-lustre", "persistentVolumeClaim": {"claimName": "lustre-fsx"}},
        {"name": "ckpt", "nfs": {"server": "nfs.lab.example.com", "path": "/export/checkpoints"}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "256Gi"}},
    )
    assert patch.image_pull_secrets == ("nvcr-pull", "lab-registry")
    assert patch.service_account_name == "trainer"
    assert (
        'GPU type `h100` from profile key `partitions["re:^h100(-[a-z]+)?$"].gpuType`'
        in finding(plan, "F502", "NVIDIA-H100").message
    )
    assert "(the launcher chose `torch-distributed`)" in finding(plan, "F512").message
    assert not [f for f in plan.findings if f.severity != "info"]


def test_ailab_mig_partition_rewrites_the_gpu_resource():
    plan = run(
        "ailab",
        "mig_notebook_eval.sbatch",
        launcher="python",
        resources_per_node=(("nvidia.com/gpu", "1"), ("cpu", "8"), ("memory", "64Gi")),
    )
    assert plan.resources_per_node == (("cpu", "8"), ("memory", "64Gi"), ("nvidia.com/mig-1g.10gb", "1"))
    assert finding(plan, "F506").line == 5
    assert "`nvidia.com/gpu` -> `nvidia.com/mig-1g.10gb`" in finding(plan, "F506").message
    assert plan.image == "registry.lab.example.com/llm/train:2024.08"  # venv rule
    assert plan.namespace == "vision-team"
    (patch,) = plan.patches
    assert patch.affinity == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "nvidia.com/mig.config", "operator": "In", "values": ["all-1g.10gb"]}
                        ]
                    }
                ]
            }
        }
    }
    assert patch.node_selector == ()
    assert {
        "name": "dshm",
        "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"},
    } in patch.volumes  # partition's shmSize


def test_ailab_default_partition_and_runtime_image():
    plan = run("ailab", "default_partition.sbatch", launcher="torchrun", resources_per_node=(("nvidia.com/gpu", "8"),))
    assert dict(plan.labels)["kueue.x-k8s.io/queue-name"] == "h100"
    assert "default partition `h100`" in finding(plan, "F501").message
    assert plan.image == "nvcr.io/nvidia/pytorch:24.05-py3"
    assert "default image of runtime `torch-h100`" in finding(plan, "F513").message


# ---- AMD site ---------------------------------------------------------------------------------

ROCM = "docker.io/rocm/pytorch:rocm6.1_ubuntu22.04_py3.10_pytorch_2.4"


def test_amd_srun_tasks_on_mi250x():
    plan = run(
        "amd",
        "gpt_mi250x.sbatch",
        launcher="srun-tasks",
        num_nodes=2,
        resources_per_node=(("nvidia.com/gpu", "8"), ("cpu", "56"), ("memory", "480Gi")),
    )
    assert plan.resources_per_node == (("cpu", "56"), ("memory", "480Gi"), ("amd.com/gpu", "8"))
    assert plan.runtime == "torch-distributed-rocm"
    assert plan.image == ROCM
    assert plan.namespace == "projects"
    assert plan.env == (EnvVar("SCRATCH", "/scratch/project"),)
    (patch,) = plan.patches
    assert patch.node_selector == (
        ("amd-hpc.example.eu/partition", "standard-g"),
        ("amd.com/gpu.product-name", "AMD_Instinct_MI250X"),
    )
    assert patch.volumes == (
        {"name": "fs-scratch", "nfs": {"server": "scratch.amd-hpc.example.eu", "path": "/scratch"}},
        {"name": "var-scratch", "persistentVolumeClaim": {"claimName": "project-scratch"}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
    )
    assert patch.volume_mounts[1] == {"name": "var-scratch", "mountPath": "/scratch/project", "subPath": "projects"}
    assert not [f for f in plan.findings if f.severity != "info"]  # LUMI/partition modules are provided


def test_amd_mpi_job_patches_launcher_and_node():
    plan = run(
        "amd",
        "osu_mpi.sbatch",
        launcher="mpi",
        framework="mpi",
        runtime="deepspeed-distributed",
        num_nodes=2,
        resources_per_node=(("nvidia.com/gpu", "8"),),
    )
    assert plan.runtime == "deepspeed-distributed"
    assert plan.image == "registry.amd-hpc.example.eu/mpi/osu-rocm:7.4"  # OpenMPI module rule
    assert plan.resources_per_node == (("amd.com/gpu", "8"), ("cpu", "96"))  # --exclusive
    assert [p.job for p in plan.patches] == ["launcher", "node"]
    for p in plan.patches:
        assert p.volumes[0] == {"name": "fs-appl", "hostPath": {"path": "/appl", "type": "Directory"}}
        assert p.volume_mounts[0] == {"name": "fs-appl", "mountPath": "/appl", "readOnly": True}
        assert p.node_selector == (("amd.com/gpu.product-name", "AMD_Instinct_MI300X"),)
    assert "F512" not in [c for c, _ in codes(plan)]


def test_amd_whole_node_memory_and_unmatched_module():
    plan = run("amd", "dev_single.sbatch", launcher="python", resources_per_node=(("nvidia.com/gpu", "1"),))
    assert plan.resources_per_node == (("amd.com/gpu", "1"), ("memory", "480Gi"))
    assert finding(plan, "F508").message.startswith("module `cray-python/3.11` is not matched by")
    assert finding(plan, "F508").line == 8


# ---- precedence and edge cases -----------------------------------------------------------------


class _Settings:
    runtime = "my-runtime"
    image = "registry.example.org/mine:1"
    namespace = "cli-ns"
    gpu_resource = "example.com/gpu"


def test_command_line_wins_over_the_profile():
    plan = run(
        "amd",
        "gpt_mi250x.sbatch",
        settings=_Settings(),
        launcher="srun-tasks",
        runtime="my-runtime",
        image="registry.example.org/mine:1",
        namespace="cli-ns",
        resources_per_node=(("example.com/gpu", "8"),),
    )
    assert plan.runtime == "my-runtime"
    assert plan.image == "registry.example.org/mine:1"
    assert plan.namespace == "cli-ns"
    assert plan.resources_per_node == (("example.com/gpu", "8"),)
    assert not [c for c, _ in codes(plan) if c in ("F504", "F506", "F507", "F512", "F513")]


def test_registry_image_from_the_script_is_kept():
    plan = run("university", "resnet_torchrun.sbatch", launcher="torchrun", image="nvcr.io/nvidia/pytorch:24.01-py3")
    assert plan.image == "nvcr.io/nvidia/pytorch:24.01-py3"
    assert "F507" not in [c for c, _ in codes(plan)]


def test_unfilled_skeleton_entries_are_reported():
    prof = parse_profile(
        HEAD + "partitions:\n  gpu:\n    queue: null\nfilesystems:\n  - path: /scratch\n    pvc: null\n", "skel.yaml"
    )
    plan = run("university", "resnet_torchrun.sbatch", profile=prof, launcher="torchrun")
    assert ("F522", 3) in codes(plan)
    assert ("F522", 13) in codes(plan)
    assert plan.patches == ()


def test_constraint_with_alternatives_selects_no_gpu_type():
    prof = parse_profile(HEAD + "gpuTypes:\n  a100: {nodeSelector: {g: a}}\n  h100: {nodeSelector: {g: h}}\n")
    from translator.read import read_script
    from translator.slurm.resolve import resolve

    s = read_script(b"#!/bin/bash\n#SBATCH -C 'a100|h100'\n#SBATCH --gres=gpu:4\nsrun python t.py\n", "x.sbatch")
    job = resolve(s, env={}, cli_args=())
    plan = apply_profile(TrainerPlan(name="x", source_path="x", job_name="x"), s, job, prof)
    assert finding(plan, "F518").line == 2
    assert plan.patches == ()


def test_conflicting_node_selectors_warn():
    prof = parse_profile(
        HEAD + "partitions:\n  gpu: {nodeSelector: {pool: a}}\ngpuTypes:\n  a100: {nodeSelector: {pool: b}}\n"
    )
    plan = run("university", "resnet_torchrun.sbatch", profile=prof, launcher="torchrun")
    assert finding(plan, "F521").severity == "warning"
    assert plan.patches[0].node_selector == (("pool", "b"),)


def test_affinities_from_two_rules_are_both_required():
    prof = parse_profile(
        HEAD
        + """partitions:
  gpu:
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
            - matchExpressions: [{key: a, operator: In, values: ["1"]}]
            - matchExpressions: [{key: a, operator: In, values: ["2"]}]
constraints:
  ib:
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
            - matchExpressions: [{key: net, operator: Exists}]
"""
    )
    plan = run("university", "resnet_torchrun.sbatch", profile=prof, launcher="torchrun")
    terms = plan.patches[0].affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}, {"key": "net", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["2"]}, {"key": "net", "operator": "Exists"}]},
    ]


def test_existing_plan_patches_are_merged_not_duplicated():
    existing = PodPatch(
        job="node",
        volumes=({"name": "dshm", "emptyDir": {"medium": "Memory"}},),
        volume_mounts=({"name": "dshm", "mountPath": "/dev/shm"},),
    )
    plan = run("university", "resnet_torchrun.sbatch", launcher="torchrun", patches=(existing,))
    (patch,) = plan.patches
    assert [v["name"] for v in patch.volumes] == ["dshm", "fs-home", "fs-scratch", "var-scratch"]
    assert "F511" not in [c for c, _ in codes(plan)]


def test_empty_profile_changes_nothing_but_says_so():
    prof = parse_profile(HEAD)
    before = TrainerPlan(name="x", source_path="x", job_name="x")
    s, job, _ = read_and_resolve(str(FIX / "university" / "scripts" / "resnet_torchrun.sbatch"))
    after = apply_profile(before, s, job, prof)
    assert [f.code for f in after.findings] == ["F500"]
    assert after.patches == () and after.labels == () and after.namespace is None


def test_mounting_home_under_an_mpi_runtime_warns():
    prof = parse_profile(HEAD + "filesystems:\n  - {path: /home, pvc: home}\n  - {path: /scratch, pvc: s}\n")
    from translator.read import read_script
    from translator.slurm.resolve import resolve

    s = read_script(b"#!/bin/bash\n#SBATCH -N 2\nmpirun /home/me/bin/app --out /scratch/me\n", "m.sbatch")
    job = resolve(s, env={}, cli_args=())
    base = TrainerPlan(
        name="m", source_path="m", job_name="m", framework="mpi", launcher="mpi", runtime="deepspeed-distributed"
    )
    plan = apply_profile(base, s, job, prof)
    (w,) = [f for f in plan.findings if f.code == "F524"]
    assert w.severity == "warning" and w.line == 3 and "`/home`" in w.message and "/home/mpiuser" in w.message
    torch = apply_profile(
        dataclasses.replace(base, framework="torch", launcher="torchrun", runtime="torch-distributed"), s, job, prof
    )
    assert "F524" not in [f.code for f in torch.findings]


PIP_SCRIPT = (
    b"#!/bin/bash\n#SBATCH -p h100\n#SBATCH --gpus-per-node=8\n"
    b"pip install --user 'transformers==4.44.0' accelerate\n"
    b"torchrun --nproc-per-node=8 /lustre/code/ft.py\n"
)


def test_defaults_env_and_pip_index():
    from translator.pipeline import ConvertSettings, convert

    prof = load_profile(str(FIX / "ailab" / "slurm2kf.yaml"))
    (plan,) = convert("pip.sbatch", PIP_SCRIPT, ConvertSettings(profile=prof)).plans
    assert plan.packages == ("transformers==4.44.0", "accelerate")
    assert plan.pip_index_urls == ("https://pypi.lab.example.com/simple",)
    assert EnvVar("HF_HOME", "/lustre/cache/huggingface") in plan.env
    assert "pip installs use index https://pypi.lab.example.com/simple" in finding(plan, "F516", "pip").message
    # the script's own index and export win over the profile
    (own,) = convert(
        str(FIX.parent / "convert" / "python" / "single_gpu_pip.sbatch"), settings=ConvertSettings(profile=prof)
    ).plans
    assert own.pip_index_urls == ("https://pypi.internal.example/simple",)
    assert [e.value for e in own.env if e.name == "HF_HOME"] == ["/scratch/hf"]
