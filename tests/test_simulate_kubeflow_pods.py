"""TrainJob -> the pods Kubeflow Trainer v2.3 and the kubelet start (`slurm2kf simulate`, Kubeflow side).

Every expected value is written by hand from the Trainer's documented/coded behaviour (shared notes
/work/shared/docs/kubeflow-trainer.md section b "Plugin behaviour", and kubeflow/trainer sources):
* pods `<job>-<replicatedJob>-0-<i>`, FQDN `<pod>.<job>` (jobset.go syncPodNetwork);
* torch (plugins/torch/torch.go): trainer.env then PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK
  (completion index), PET_MASTER_ADDR `<job>-node-0-0.<job>`, PET_MASTER_PORT 29500
  (constants.ContainerTrainerPort); nproc unset -> "auto" with a GPU resource, else
  max(1, CPU request (else limit)) rounded up (resource.Quantity.Value());
* MPI (plugins/mpi/mpi.go): node pods = max(numNodes-1, 1) with runLauncherAsNode; OMPI_MCA_* on the
  launcher; hostfile /etc/mpi/hostfile in runtime replicatedJob order (node before launcher in the
  shipped deepspeed/mlx runtimes); slots = numProcPerNode, else GPUs when > 1, else 1;
  trainer.image/command/args on the launcher only, workers keep sshd (v2.3; trainer #2825/#4301);
* JAX (plugins/jax/jax.go): JAX_NUM_PROCESSES, JAX_PROCESS_ID, JAX_COORDINATOR_ADDRESS `...:29500`;
* XGBoost (plugins/xgboost/xgboost.go): DMLC_* then trainer.env; DMLC_NUM_WORKER = pods x GPUs;
* plain (plugins/plainml): trainer.env only;
* Indexed Jobs: the Job controller appends JOB_COMPLETION_INDEX to every container that lacks it
  (kubernetes.io/docs/tasks/job/indexed-parallel-processing-static/);
* kubelet: env resolved in order, $(VAR) in env only sees earlier entries, command/args see all.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

from translator.simulate import kubeflow_pods as kp, kubelet
from translator.simulate.kubeflow_pods import (
    TrainJobError,
    hostfile_of,
    load_runtimes,
    pods_from_trainjob,
    training_pods,
)

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SLURM2KF_SHARED", str(REPO.parent / "shared")))
TORCH_IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
SSHD = ("/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config")


def tj(name, runtime, trainer=None, **spec):
    out = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": runtime, "kind": "ClusterTrainingRuntime"}, **spec},
    }
    if trainer is not None:
        out["spec"]["trainer"] = trainer
    return out


def gpu(n, key="nvidia.com/gpu", **more):
    res = {key: str(n), **more}
    return {"requests": dict(res), "limits": dict(res)}


def env_of(pod):
    return dict(pod.env)


# ------------------------------------------------------------------------------------------ runtimes


def test_bundled_runtimes_are_the_shipped_ones_byte_for_byte():
    names = set(load_runtimes())
    assert names == {
        "torch-distributed",
        "torch-distributed-with-cache",
        "deepspeed-distributed",
        "mlx-distributed",
        "jax-distributed",
        "xgboost-distributed",
    }
    src = SHARED / "kubeflow" / "runtimes"
    assert src.is_dir(), f"shared Kubeflow runtimes missing at {src}"
    data = REPO / "translator" / "simulate" / "data" / "runtimes"
    for f in sorted(data.glob("*.yaml")):
        original = src / f.name if (src / f.name).exists() else src / "data-cache" / f.name
        assert f.read_bytes() == original.read_bytes(), f.name


# ------------------------------------------------------------------------------------------ torch


def test_torch_multinode_pods_env_and_command():
    job = tj(
        "llm",
        "torch-distributed",
        {
            "image": "my/img:1",
            "numNodes": 3,
            "command": ["torchrun"],
            "args": ["train.py", "--lr", "0.1"],
            "env": [{"name": "NCCL_DEBUG", "value": "WARN"}],
            "resourcesPerNode": gpu(4, cpu="16"),
        },
    )
    pods = pods_from_trainjob(job)
    assert [p.name for p in pods] == ["llm-node-0-0", "llm-node-0-1", "llm-node-0-2"]
    for i, p in enumerate(pods):
        assert (p.role, p.node, p.hostname, p.fqdn) == ("node", i, f"llm-node-0-{i}", f"llm-node-0-{i}.llm")
        assert p.argv == ("torchrun", "train.py", "--lr", "0.1")
        assert p.image == "my/img:1" and p.gpus == 4 and p.files == () and not p.image_entrypoint
        # trainer.env first, then the five PET_* the torch plugin upserts, in its order
        assert p.env == (
            ("NCCL_DEBUG", "WARN"),
            ("PET_NNODES", "3"),
            ("PET_NPROC_PER_NODE", "auto"),
            ("PET_NODE_RANK", str(i)),
            ("PET_MASTER_ADDR", "llm-node-0-0.llm"),
            ("PET_MASTER_PORT", "29500"),
            ("JOB_COMPLETION_INDEX", str(i)),
        )
    assert training_pods(pods) == tuple(pods)


@pytest.mark.parametrize(
    "resources, nproc, expected",
    [
        (None, None, "1"),  # no resources at all: max(1, 0)
        ({"requests": {"cpu": "8"}, "limits": {"cpu": "8"}}, None, "8"),
        ({"requests": {"cpu": "1500m"}, "limits": {"cpu": "1500m"}}, None, "2"),  # Quantity.Value() rounds up
        ({"requests": {"cpu": "4"}, "limits": {"cpu": "8"}}, None, "4"),  # the request wins
        ({"limits": {"cpu": "6"}}, None, "6"),  # no request: the limit
        ({"requests": {"memory": "64Gi"}, "limits": {"memory": "64Gi"}}, None, "1"),
        (gpu(2), None, "auto"),  # a GPU resource: torchrun decides
        (gpu(2, key="amd.com/gpu"), None, "auto"),  # any resource name containing "gpu"
        (gpu(8), 2, "2"),  # explicit numProcPerNode wins
        ({"requests": {"cpu": "8"}, "limits": {"cpu": "8"}}, 3, "3"),
    ],
)
def test_torch_nproc_per_node_when_unset_or_set(resources, nproc, expected):
    trainer = {"command": ["torchrun", "t.py"]}
    if resources is not None:
        trainer["resourcesPerNode"] = resources
    if nproc is not None:
        trainer["numProcPerNode"] = nproc
    (pod,) = pods_from_trainjob(tj("one", "torch-distributed", trainer))
    assert env_of(pod)["PET_NPROC_PER_NODE"] == expected
    assert env_of(pod)["PET_NNODES"] == "1"


def test_gpu_count_of_the_pod_comes_from_the_container_limits():
    (pod,) = pods_from_trainjob(tj("a", "torch-distributed", {"resourcesPerNode": gpu(2, key="amd.com/gpu")}))
    assert pod.gpus == 2
    (pod,) = pods_from_trainjob(tj("b", "torch-distributed", {"resourcesPerNode": {"limits": {"cpu": "4"}}}))
    assert pod.gpus == 0


def test_torch_without_spec_trainer_gets_no_pet_env_and_runs_the_image_entrypoint():
    (pod,) = pods_from_trainjob(tj("bare", "torch-distributed"))
    # only the Job controller's JOB_COMPLETION_INDEX (Indexed Job)
    assert pod.env == (("JOB_COMPLETION_INDEX", "0"),)
    assert pod.argv == () and pod.image_entrypoint and pod.image == TORCH_IMAGE


def test_trainer_env_cannot_reference_pet_vars_but_args_can():
    # PET_* are appended after trainer.env, so $(PET_NODE_RANK) in trainer.env stays literal;
    # the args are expanded against the full env.
    job = tj(
        "x",
        "torch-distributed",
        {
            "numNodes": 2,
            "command": ["python", "t.py", "--rank=$(PET_NODE_RANK)", "$$(PET_NODE_RANK)", "$(MY)"],
            "env": [{"name": "RANK", "value": "$(PET_NODE_RANK)"}, {"name": "MY", "value": "m$(RANK)"}],
        },
    )
    pods = pods_from_trainjob(job)
    assert env_of(pods[1])["RANK"] == "$(PET_NODE_RANK)"
    assert env_of(pods[1])["MY"] == "m$(PET_NODE_RANK)"
    assert pods[1].argv == ("python", "t.py", "--rank=1", "$(PET_NODE_RANK)", "m$(PET_NODE_RANK)")


def test_trainer_env_value_from_secret_and_field():
    job = tj(
        "s",
        "torch-distributed",
        {
            "env": [
                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "IDX", "valueFrom": {"fieldRef": {"fieldPath": kp.COMPLETION_INDEX_FIELD}}},
            ],
            "numNodes": 2,
        },
    )
    pods = pods_from_trainjob(job)
    assert env_of(pods[1])["HF_TOKEN"] == "<secret hf/token>"
    assert env_of(pods[1])["POD"] == "s-node-0-1" and env_of(pods[1])["IDX"] == "1"


@pytest.mark.parametrize(
    "name", ["PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"]
)
def test_torch_reserved_env_is_rejected(name):
    with pytest.raises(TrainJobError, match=name):
        pods_from_trainjob(tj("r", "torch-distributed", {"env": [{"name": name, "value": "1"}]}))


def test_data_cache_runtime_leaves_out_the_initializer_and_resolves_the_jobset_label():
    pods = pods_from_trainjob(tj("c", "torch-distributed-with-cache", {"numNodes": 2, "command": ["torchrun", "t.py"]}))
    assert [p.name for p in pods] == ["c-node-0-0", "c-node-0-1"]
    # runtime env first (TRAIN_JOB_NAME from the jobset-name label), then PET_*
    assert pods[0].env[0] == ("TRAIN_JOB_NAME", "c")
    assert [k for k, _ in pods[0].env][1:] == list(kp.TORCH_RESERVED) + ["JOB_COMPLETION_INDEX"]


# ------------------------------------------------------------------------------------------ MPI


def test_deepspeed_launcher_and_nodes_hostfile_and_numnodes_counting_the_launcher():
    job = tj(
        "ds",
        "deepspeed-distributed",
        {
            "image": "my/ds:1",
            "numNodes": 3,
            "command": ["mpirun", "--hostfile", "/etc/mpi/hostfile"],
            "args": ["python", "/home/mpiuser/train.py"],
            "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
            "resourcesPerNode": gpu(4),
        },
    )
    pods = pods_from_trainjob(job)
    # numNodes 3 with runLauncherAsNode: 2 node pods + the launcher (runtime order: node, launcher)
    assert [(p.name, p.role, p.node) for p in pods] == [
        ("ds-node-0-0", "node", 0),
        ("ds-node-0-1", "node", 1),
        ("ds-launcher-0-0", "launcher", 0),
    ]
    launcher = pods[2]
    assert launcher.argv == ("mpirun", "--hostfile", "/etc/mpi/hostfile", "python", "/home/mpiuser/train.py")
    assert launcher.image == "my/ds:1"
    assert launcher.env == (
        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
        ("OMPI_MCA_orte_set_default_slots", "4"),  # 4 GPUs > 1: slots = 4
        ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
        ("NCCL_DEBUG", "INFO"),
        ("JOB_COMPLETION_INDEX", "0"),
    )
    assert launcher.files == (
        ("/etc/mpi/hostfile", "ds-node-0-0.ds slots=4\nds-node-0-1.ds slots=4\nds-launcher-0-0.ds slots=4\n"),
    )
    for worker in pods[:2]:
        # workers keep the runtime image and its sshd command; trainer env + resources do reach them
        assert worker.argv == SSHD and worker.image == "ghcr.io/kubeflow/trainer/deepspeed-runtime"
        assert worker.env == (("NCCL_DEBUG", "INFO"), ("JOB_COMPLETION_INDEX", str(worker.node)))
        assert worker.gpus == 4 and worker.files == ()
    assert launcher.gpus == 4
    assert [p.name for p in training_pods(pods)] == ["ds-node-0-0", "ds-node-0-1", "ds-launcher-0-0"]


@pytest.mark.parametrize("num_nodes, node_pods", [(1, 1), (2, 1), (4, 3), (0, 1)])
def test_mpi_numnodes_semantics(num_nodes, node_pods):
    pods = pods_from_trainjob(tj("m", "mlx-distributed", {"numNodes": num_nodes, "command": ["mpirun", "x"]}))
    assert [p.role for p in pods] == ["node"] * node_pods + ["launcher"]
    # no GPUs: slots stay the runtime's numProcPerNode (1)
    assert (
        hostfile_of(pods)
        == "".join(f"m-node-0-{i}.m slots=1\n" for i in range(node_pods)) + "m-launcher-0-0.m slots=1\n"
    )


def test_mpi_without_numnodes_keeps_one_worker():
    pods = pods_from_trainjob(tj("m", "deepspeed-distributed", {"command": ["mpirun", "x"]}))
    assert [p.name for p in pods] == ["m-node-0-0", "m-launcher-0-0"]


def test_mpi_slots_from_numprocpernode_override_gpus():
    pods = pods_from_trainjob(
        tj(
            "m",
            "deepspeed-distributed",
            {"numNodes": 2, "numProcPerNode": 2, "resourcesPerNode": gpu(8), "command": ["mpirun", "x"]},
        )
    )
    assert hostfile_of(pods) == "m-node-0-0.m slots=2\nm-launcher-0-0.m slots=2\n"
    assert env_of(pods[-1])["OMPI_MCA_orte_set_default_slots"] == "2"


def test_mpi_one_gpu_keeps_one_slot():
    pods = pods_from_trainjob(
        tj("m", "deepspeed-distributed", {"numNodes": 2, "resourcesPerNode": gpu(1), "command": ["mpirun", "x"]})
    )
    assert hostfile_of(pods) == "m-node-0-0.m slots=1\nm-launcher-0-0.m slots=1\n"


def test_mpi_reserved_env_rejected_and_pet_not_injected():
    with pytest.raises(TrainJobError, match="OMPI_MCA_orte_default_hostfile"):
        pods_from_trainjob(
            tj("m", "deepspeed-distributed", {"env": [{"name": "OMPI_MCA_orte_default_hostfile", "value": "x"}]})
        )
    pods = pods_from_trainjob(tj("m", "deepspeed-distributed", {"command": ["mpirun", "x"]}))
    assert not any(k.startswith("PET_") for p in pods for k, _ in p.env)


def test_mpi_launcher_without_command_runs_the_image_entrypoint():
    pods = pods_from_trainjob(tj("m", "deepspeed-distributed", {"numNodes": 2}))
    assert pods[-1].argv == () and pods[-1].image_entrypoint and not pods[0].image_entrypoint


# ------------------------------------------------------------------------------------------ JAX, XGBoost, plain


def test_jax_env():
    pods = pods_from_trainjob(
        tj(
            "jx",
            "jax-distributed",
            {
                "numNodes": 2,
                "command": ["python", "train.py"],
                "env": [{"name": "A", "value": "1"}],
                "resourcesPerNode": gpu(8),
            },
        )
    )
    assert [p.name for p in pods] == ["jx-node-0-0", "jx-node-0-1"]
    assert pods[1].env == (
        ("A", "1"),
        ("JAX_NUM_PROCESSES", "2"),
        ("JAX_PROCESS_ID", "1"),
        ("JAX_COORDINATOR_ADDRESS", "jx-node-0-0.jx:29500"),
        ("JOB_COMPLETION_INDEX", "1"),
    )
    assert pods[1].image == "nvcr.io/nvidia/jax:25.10-py3" and pods[1].gpus == 8


def test_xgboost_env():
    pods = pods_from_trainjob(
        tj(
            "xg",
            "xgboost-distributed",
            {
                "numNodes": 2,
                "resourcesPerNode": gpu(2),
                "env": [{"name": "A", "value": "$(DMLC_TASK_ID)"}],
                "command": ["python", "x.py"],
            },
        )
    )
    # DMLC_* first (the plugin), then trainer.env (the JobSet builder), so A can use DMLC_TASK_ID
    assert pods[1].env == (
        ("DMLC_TRACKER_URI", "xg-node-0-0.xg"),
        ("DMLC_TRACKER_PORT", "29500"),
        ("DMLC_TASK_ID", "1"),
        ("DMLC_NUM_WORKER", "4"),
        ("A", "1"),
        ("JOB_COMPLETION_INDEX", "1"),
    )
    with pytest.raises(TrainJobError, match="DMLC_NUM_WORKER"):
        pods_from_trainjob(tj("xg", "xgboost-distributed", {"env": [{"name": "DMLC_NUM_WORKER", "value": "1"}]}))


PLAIN = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "plain"},
    "spec": {
        "mlPolicy": {"numNodes": 2},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {"labels": {kp.ANCESTOR_LABEL: "trainer"}},
                            "spec": {
                                "template": {
                                    "spec": {
                                        "containers": [
                                            {
                                                "name": "node",
                                                "image": "busybox",
                                                "command": ["sh", "-c"],
                                                "args": ["echo $(GREETING)"],
                                                "workingDir": "/w",
                                                "env": [{"name": "GREETING", "value": "hi"}],
                                                "resources": {"limits": {"nvidia.com/gpu": "1"}},
                                            }
                                        ]
                                    }
                                }
                            },
                        },
                    }
                ]
            }
        },
    },
}


def test_plain_runtime_only_numnodes_and_env():
    pods = pods_from_trainjob(
        tj("p", "plain", {"env": [{"name": "GREETING", "value": "hello"}, {"name": "B", "value": "$(GREETING)!"}]}),
        runtimes={"plain": PLAIN},
    )
    # mlPolicy.numNodes 2, no trainer.numNodes: 2 pods; runtime command kept; env upserted in place
    assert [p.name for p in pods] == ["p-node-0-0", "p-node-0-1"]
    assert pods[0].env == (("GREETING", "hello"), ("B", "hello!"), ("JOB_COMPLETION_INDEX", "0"))
    assert pods[0].argv == ("sh", "-c", "echo hello") and pods[0].workdir == "/w" and pods[0].gpus == 1
    pods = pods_from_trainjob(
        tj("p", "plain", {"numNodes": 3, "resourcesPerNode": {"limits": {"cpu": "2"}}}), runtimes={"plain": PLAIN}
    )
    # resourcesPerNode merges per resource name: the runtime's GPU stays
    assert len(pods) == 3 and pods[0].gpus == 1


# ------------------------------------------------------------------------------------------ rejections


def test_runtime_patch_rules():
    def patch(job, container, env=None):
        c = {"name": container}
        if env:
            c["env"] = env
        return [
            {
                "manager": "x.io/y",
                "trainingRuntimeSpec": {
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {"name": job, "template": {"spec": {"template": {"spec": {"containers": [c]}}}}}
                            ]
                        }
                    }
                },
            }
        ]

    with pytest.raises(TrainJobError, match="use spec.trainer.env"):
        pods_from_trainjob(
            tj("r", "torch-distributed", {}, runtimePatches=patch("node", "node", [{"name": "A", "value": "1"}]))
        )
    with pytest.raises(TrainJobError, match="no replicatedJob 'worker'"):
        pods_from_trainjob(tj("r", "torch-distributed", {}, runtimePatches=patch("worker", "node")))
    with pytest.raises(TrainJobError, match="no container 'sidecar'"):
        pods_from_trainjob(tj("r", "torch-distributed", {}, runtimePatches=patch("node", "sidecar")))
    # a volume-only patch changes nothing the process sees
    vol = patch("node", "node")
    assert pods_from_trainjob(tj("r", "torch-distributed", {"command": ["torchrun", "t.py"]}, runtimePatches=vol))[
        0
    ].argv == ("torchrun", "t.py")


def test_runtime_patch_env_on_a_sidecar_reaches_only_that_container():
    rt = copy.deepcopy(PLAIN)
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"].append(
        {"name": "helper", "image": "busybox"}
    )
    patch = [
        {
            "manager": "x.io/y",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {
                                    "spec": {
                                        "template": {
                                            "spec": {
                                                "containers": [{"name": "helper", "env": [{"name": "H", "value": "1"}]}]
                                            }
                                        }
                                    }
                                },
                            }
                        ]
                    }
                }
            },
        }
    ]
    pods = pods_from_trainjob(tj("p", "plain", {}, runtimePatches=patch), runtimes={"plain": rt})
    assert "H" not in env_of(pods[0])


@pytest.mark.parametrize(
    "trainer, match",
    [
        ({"numProcPerNode": 0}, "numProcPerNode must be >= 1"),
        ({"numProcPerNode": "auto"}, "numProcPerNode must be an integer"),
        ({"numNodes": -1}, "numNodes must be >= 0"),
        ({"command": "torchrun"}, "command must be a list of strings"),
        ({"env": [{"value": "x"}]}, r"env\[0\] has no name"),
    ],
)
def test_invalid_trainer_fields(trainer, match):
    with pytest.raises(TrainJobError, match=match):
        pods_from_trainjob(tj("i", "torch-distributed", trainer))


def test_unknown_runtime_and_unsupported_policies():
    with pytest.raises(TrainJobError, match="'nope' is not a runtime"):
        pods_from_trainjob(tj("u", "nope", {}))
    flux = copy.deepcopy(PLAIN)
    flux["spec"]["mlPolicy"]["flux"] = {}
    with pytest.raises(TrainJobError, match="Flux"):
        pods_from_trainjob(tj("u", "f", {}), runtimes={"f": flux})
    with pytest.raises(TrainJobError, match="metadata.name"):
        pods_from_trainjob({"spec": {"runtimeRef": {"name": "torch-distributed"}}})


def test_quantities():
    assert [kp.quantity_value(q) for q in ("4", "500m", "1500m", "2.5", "1e3", "1k", "1Ki", 3, "0")] == [
        4,
        1,
        2,
        3,
        1000,
        1000,
        1024,
        3,
        0,
    ]
    with pytest.raises(TrainJobError):
        kp.quantity_value("four")


# ------------------------------------------------------------------------------------------ emitted TrainJobs

FIXTURES = REPO / "tests" / "fixtures" / "convert"


def emitted(rel):
    from translator.emit.trainjob import trainjob_dict
    from translator.pipeline import convert

    conv = convert(str(FIXTURES / rel))
    assert len(conv.plans) == 1, rel
    job = trainjob_dict(conv.plans[0])
    return job, pods_from_trainjob(job)


def test_emitted_torchrun_multinode_gives_one_pod_per_slurm_node():
    # torchrun/multinode_rdzv.sbatch: --nodes=4, --gpus-per-node=8, `srun torchrun --nproc_per_node 8`;
    # on Slurm: 4 nodes x 8 workers.  On the Trainer: 4 pods, each with 8 GPUs, PET_NNODES=4,
    # PET_NODE_RANK = pod index, the same master for all, and the exported env.
    job, pods = emitted("torchrun/multinode_rdzv.sbatch")
    name = job["metadata"]["name"]
    assert [p.name for p in pods] == [f"{name}-node-0-{i}" for i in range(4)]
    trainer = job["spec"]["trainer"]
    for i, p in enumerate(pods):
        env = env_of(p)
        assert p.gpus == 8 and p.argv == tuple(trainer["command"] + trainer["args"])
        assert (env["PET_NNODES"], env["PET_NODE_RANK"], env["PET_MASTER_ADDR"], env["PET_MASTER_PORT"]) == (
            "4",
            str(i),
            f"{name}-node-0-0.{name}",
            "29500",
        )
        assert env["PET_NPROC_PER_NODE"] == "auto"  # GPUs requested: torchrun decides (8 visible)
        assert (env["NCCL_DEBUG"], env["OMP_NUM_THREADS"], env["LOGLEVEL"]) == ("WARN", "12", "INFO")
    assert p.argv[0] == "torchrun" and "--nproc-per-node" in p.argv


def test_emitted_deepspeed_hostfile_lists_as_many_hosts_as_slurm_nodes():
    # deepspeed/hostfile_multinode.sbatch: 2 nodes x gpu:8, `deepspeed --hostfile ... --num_gpus 8`.
    # deepspeed-distributed: numNodes counts the launcher, so the hostfile must list 2 hosts x 8 slots.
    job, pods = emitted("deepspeed/hostfile_multinode.sbatch")
    name = job["metadata"]["name"]
    hosts = training_pods(pods)
    assert len(hosts) == 2
    assert hostfile_of(pods) == f"{name}-node-0-0.{name} slots=8\n{name}-launcher-0-0.{name} slots=8\n"
    launcher = [p for p in pods if p.role == "launcher"]
    assert len(launcher) == 1 and launcher[0].argv[0] == "deepspeed"
    assert all(p.argv == SSHD for p in pods if p.role == "node")
    assert all(p.gpus == 8 for p in pods)


def test_emitted_mpirun_cpu_job_has_four_hosts_and_the_command_on_the_launcher():
    # mpi/mpirun_cpu.sbatch: 4 nodes x 32 tasks, `mpirun -np $SLURM_NTASKS ... ./lmp`; no GPUs, so
    # the hostfile slots stay 1 and the command must place 32 ranks per host itself.
    job, pods = emitted("mpi/mpirun_cpu.sbatch")
    hosts = training_pods(pods)
    assert len(hosts) == 4 and hosts[-1].role == "launcher"
    (launcher,) = [p for p in pods if p.role == "launcher"]
    assert launcher.argv[0] == "mpirun" and "./lmp" in launcher.argv
    assert env_of(launcher)["OMP_NUM_THREADS"] == "1"
    assert env_of(launcher)["OMPI_MCA_orte_set_default_slots"] == "1"


def test_emitted_jax_job():
    # jax/multinode.sbatch: 2 nodes x 8 GPUs, one `python train_gpt.py` per node (srun, 1 task/node).
    job, pods = emitted("jax/multinode.sbatch")
    name = job["metadata"]["name"]
    assert [p.name for p in pods] == [f"{name}-node-0-0", f"{name}-node-0-1"]
    for i, p in enumerate(pods):
        env = env_of(p)
        assert (env["JAX_NUM_PROCESSES"], env["JAX_PROCESS_ID"], env["JAX_COORDINATOR_ADDRESS"]) == (
            "2",
            str(i),
            f"{name}-node-0-0.{name}:29500",
        )
        assert env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.95" and p.gpus == 8


@pytest.mark.parametrize("rel", sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("*/*.sbatch")))
def test_every_emitted_convert_fixture_becomes_pods(rel):
    from translator.emit.trainjob import trainjob_dict
    from translator.pipeline import convert

    for plan in convert(str(FIXTURES / rel)).plans:
        job = trainjob_dict(plan)
        runtimes = None
        if plan.runtime_document is not None:  # batch mode: its own TrainingRuntime, written beside it
            runtimes = dict(load_runtimes(), **{plan.runtime: plan.runtime_document})
        pods = pods_from_trainjob(job, runtimes)
        trainer = job["spec"].get("trainer") or {}
        runner = [
            p
            for p in pods
            if p.role
            == (
                "launcher"
                if job["spec"]["runtimeRef"]["name"] in ("deepspeed-distributed", "mlx-distributed")
                or plan.runtime_document is not None
                else "node"
            )
        ]
        # the pod(s) running the TrainJob's command get exactly it, after the kubelet's expansion of the
        # $(VAR)s the emitter meant to leave to the kubelet (none: the emitter escapes every `$`)
        want = tuple(kubelet.expand(w, {}) for w in trainer.get("command", []) + trainer.get("args", []))
        assert runner and all(p.argv == want for p in runner), rel


def test_job_completion_index_is_not_added_twice():
    pods = pods_from_trainjob(
        tj("j", "torch-distributed", {"numNodes": 2, "env": [{"name": "JOB_COMPLETION_INDEX", "value": "7"}]})
    )
    assert [k for k, _ in pods[1].env].count("JOB_COMPLETION_INDEX") == 1 and env_of(pods[1])[
        "JOB_COMPLETION_INDEX"
    ] == "7"


def test_read_trainjobs_from_yaml():
    text = (
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n"
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: y}\n"
        "spec: {runtimeRef: {name: torch-distributed}, trainer: {numNodes: 2}}\n"
    )
    (job,) = kp.read_trainjobs(text, "job.yaml")
    assert [p.name for p in pods_from_trainjob(job)] == ["y-node-0-0", "y-node-0-1"]
    with pytest.raises(TrainJobError, match=r"^job.yaml:4: not valid YAML"):
        kp.read_trainjobs("kind: TrainJob\nspec:\n  - a\n b: [\n", "job.yaml")  # line 4: ` b:` breaks the block
    with pytest.raises(TrainJobError, match="job.yaml: no TrainJob"):
        kp.read_trainjobs("kind: ConfigMap\n", "job.yaml")


def test_mig_slice_is_a_visible_gpu_but_not_a_gpu_for_the_torch_plugin():
    # GetNumGPUPerNode looks for "gpu" in the resource name: nvidia.com/mig-1g.10gb has none, so the torch
    # plugin falls back to the CPU count (8) for PET_NPROC_PER_NODE; the container still sees 1 MIG device.
    res = {
        "requests": {"cpu": "8", "nvidia.com/mig-1g.10gb": "1"},
        "limits": {"cpu": "8", "nvidia.com/mig-1g.10gb": "1"},
    }
    (pod,) = pods_from_trainjob(
        tj("mig", "torch-distributed", {"command": ["torchrun", "e.py"], "resourcesPerNode": res})
    )
    assert env_of(pod)["PET_NPROC_PER_NODE"] == "8" and pod.gpus == 1


def test_site_runtime_files(tmp_path):
    # a site's own runtime (tests/fixtures/profiles/ailab/runtimes): torch policy, NGC image
    site = load_runtimes([str(REPO / "tests" / "fixtures" / "profiles" / "ailab" / "runtimes")])
    assert set(site) == {"torch-h100"}
    pods = pods_from_trainjob(
        tj("h", "torch-h100", {"numNodes": 2, "command": ["torchrun", "t.py"]}), {**load_runtimes(), **site}
    )
    assert [p.image for p in pods] == ["nvcr.io/nvidia/pytorch:24.05-py3"] * 2 and env_of(pods[1])[
        "PET_NODE_RANK"
    ] == "1"
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: ClusterTrainingRuntime\nmetadata: {name: x\n")
    with pytest.raises(TrainJobError, match=r"bad.yaml:\d+: not a valid runtime YAML file"):
        load_runtimes([str(bad)])
    with pytest.raises(TrainJobError, match="cannot read the runtime file"):
        load_runtimes([str(tmp_path / "missing.yaml")])


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=150, deadline=None)
@given(
    runtime=st.sampled_from(
        ["torch-distributed", "jax-distributed", "xgboost-distributed", "deepspeed-distributed", "mlx-distributed"]
    ),
    nodes=st.integers(min_value=1, max_value=9),
    gpus=st.integers(min_value=0, max_value=8),
    nproc=st.one_of(st.none(), st.integers(min_value=1, max_value=8)),
)
def test_invariants_of_the_pod_layout(runtime, nodes, gpus, nproc):
    trainer = {"numNodes": nodes, "command": ["run"]}
    if gpus:
        trainer["resourcesPerNode"] = gpu(gpus)
    if nproc is not None:
        trainer["numProcPerNode"] = nproc
    pods = pods_from_trainjob(tj("inv", runtime, trainer))
    hosts = training_pods(pods)
    mpi = runtime in ("deepspeed-distributed", "mlx-distributed")
    # numNodes training hosts, except numNodes 1 on an MPI runtime (launcher + 1 worker)
    assert len(hosts) == (max(nodes, 2) if mpi else nodes)
    assert len({p.fqdn for p in pods}) == len(pods) and all(p.fqdn == f"{p.hostname}.inv" for p in pods)
    assert all(p.gpus == gpus for p in pods)
    runner = [p for p in pods if p.argv == ("run",)]
    assert len(runner) == (1 if mpi else nodes)
    if mpi:
        lines = hostfile_of(pods).splitlines()
        slots = nproc if nproc is not None else (gpus if gpus > 1 else 1)
        assert lines == [f"{h.fqdn} slots={slots}" for h in hosts]
    else:
        index_var = {
            "torch-distributed": "PET_NODE_RANK",
            "jax-distributed": "JAX_PROCESS_ID",
            "xgboost-distributed": "DMLC_TASK_ID",
        }[runtime]
        assert [env_of(p)[index_var] for p in hosts] == [str(i) for i in range(nodes)]
        assert [env_of(p)["JOB_COMPLETION_INDEX"] for p in hosts] == [str(i) for i in range(nodes)]
        if runtime == "torch-distributed":
            assert {env_of(p)["PET_MASTER_ADDR"] for p in hosts} == {hosts[0].fqdn}
            assert {env_of(p)["PET_NPROC_PER_NODE"] for p in hosts} == {
                str(nproc) if nproc is not None else ("auto" if gpus else "1")
            }


_JUNK = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 5) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_BASE = tj(
    "fz",
    "deepspeed-distributed",
    {
        "numNodes": 2,
        "command": ["mpirun", "$(A)"],
        "args": ["x"],
        "env": [{"name": "A", "value": "1"}, {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
        "resourcesPerNode": gpu(2, cpu="1"),
    },
    runtimePatches=[
        {
            "manager": "x.io/y",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "launcher",
                                "template": {"spec": {"template": {"spec": {"containers": [{"name": "node"}]}}}},
                            }
                        ]
                    }
                }
            },
        }
    ],
)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


_ALL_PATHS = [p for p in _paths(_BASE) if p]


@settings(max_examples=300, deadline=None)
@given(
    path=st.sampled_from(_ALL_PATHS),
    junk=_JUNK,
    runtime=st.sampled_from(["deepspeed-distributed", "torch-distributed", "xgboost-distributed", "jax-distributed"]),
)
def test_malformed_trainjobs_give_a_trainjob_error_never_a_crash(path, junk, runtime):
    job = copy.deepcopy(_BASE)
    job["spec"]["runtimeRef"]["name"] = runtime
    target = job
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = junk
    try:
        pods_from_trainjob(job)
    except TrainJobError:
        pass


_SHIPPED = load_runtimes()
_RT_PATHS = [(name, p) for name in sorted(_SHIPPED) for p in _paths(_SHIPPED[name]) if p]


@settings(max_examples=300, deadline=None)
@given(target=st.sampled_from(_RT_PATHS), junk=_JUNK)
def test_malformed_site_runtimes_give_a_trainjob_error_never_a_crash(target, junk):
    name, path = target
    rt = copy.deepcopy(_SHIPPED[name])
    node = rt
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = junk
    job = copy.deepcopy(_BASE)
    job["spec"]["runtimeRef"]["name"] = name
    del job["spec"]["runtimePatches"]
    try:
        pods_from_trainjob(job, {name: rt})
    except TrainJobError:
        pass
