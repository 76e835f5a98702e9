"""The ClusterTrainingRuntimes Kubeflow Trainer v2.3 ships (manifests/base/runtimes), as data.

Facts taken from the runtime manifests: framework label, ML policy, the trainer container's image
(tags as in the base manifests; the install overlay retags ghcr.io images `latest`), and which
replicatedJob carries the `trainjob-ancestor-step: trainer` label (the one spec.trainer configures).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Runtime:
    name: str
    framework: str  # trainer.kubeflow.org/framework label
    policy: str  # mlPolicy kind: torch | mpi | jax | xgboost | plain
    image: str  # image of container `node` in the trainer job
    trainer_job: str = "node"  # replicatedJob with the trainer ancestor label
    jobs: tuple[str, ...] = ("node",)  # all replicatedJobs
    container: str = "node"
    custom_trainer: bool = True  # accepts CustomTrainerContainer (not the torchtune BuiltinTrainer ones)


_TORCH_IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"

SHIPPED: dict[str, Runtime] = {
    r.name: r
    for r in (
        Runtime("torch-distributed", "torch", "torch", _TORCH_IMAGE),
        Runtime("torch-distributed-with-cache", "torch", "torch", _TORCH_IMAGE, jobs=("dataset-initializer", "node")),
        Runtime(
            "deepspeed-distributed",
            "deepspeed",
            "mpi",
            "ghcr.io/kubeflow/trainer/deepspeed-runtime",
            trainer_job="launcher",
            jobs=("node", "launcher"),
        ),
        Runtime(
            "mlx-distributed",
            "mlx",
            "mpi",
            "ghcr.io/kubeflow/trainer/mlx-runtime",
            trainer_job="launcher",
            jobs=("node", "launcher"),
        ),
        Runtime("jax-distributed", "jax", "jax", "nvcr.io/nvidia/jax:25.10-py3"),
        Runtime("xgboost-distributed", "xgboost", "xgboost", "ghcr.io/kubeflow/trainer/xgboost-runtime"),
        Runtime(
            "torchtune-llama3.2-1b",
            "torchtune",
            "torch",
            "ghcr.io/kubeflow/trainer/torchtune-trainer",
            jobs=("dataset-initializer", "model-initializer", "node"),
            custom_trainer=False,
        ),
        Runtime(
            "torchtune-llama3.2-3b",
            "torchtune",
            "torch",
            "ghcr.io/kubeflow/trainer/torchtune-trainer",
            jobs=("dataset-initializer", "model-initializer", "node"),
            custom_trainer=False,
        ),
        Runtime(
            "torchtune-qwen2.5-1.5b",
            "torchtune",
            "torch",
            "ghcr.io/kubeflow/trainer/torchtune-trainer",
            jobs=("dataset-initializer", "model-initializer", "node"),
            custom_trainer=False,
        ),
    )
}

#: Batch mode's TrainingRuntime (translator/plan/batch_runtime.py), as the plan builder sees it: its name is
#: the TrainJob's plus `-batch`, and its pods run the TrainJob's image.
BATCH = Runtime(
    "slurm2kf-batch", "slurm2kf-batch", "mpi", _TORCH_IMAGE, trainer_job="launcher", jobs=("node", "launcher")
)

#: The runtime each launcher framework uses unless --runtime says otherwise.
DEFAULT_FOR_FRAMEWORK = {"torch": "torch-distributed", "mpi": "deepspeed-distributed", "jax": "jax-distributed"}


def get(name: str) -> Runtime | None:
    return SHIPPED.get(name)


def default_image(framework: str) -> str:
    return SHIPPED[DEFAULT_FOR_FRAMEWORK.get(framework, "torch-distributed")].image
