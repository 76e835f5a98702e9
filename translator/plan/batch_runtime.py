"""The TrainingRuntime of batch mode: Slurm's execution model on the Trainer's MPI machinery.

On Slurm the batch script runs once, on the first node of the allocation, and only `srun` starts work
on the other nodes. Batch mode keeps that model for a multi-node job that no launcher family converts
(docs/batch-mode.md):

* the Trainer's MPI plugin (`mlPolicy.mpi`, Open MPI, `runLauncherAsNode: true`) gives a launcher pod,
  `numNodes - 1` node pods, an SSH key pair mounted in every pod and a hostfile on the launcher
  (/etc/mpi/hostfile, one `<pod>.<trainjob> slots=N` line per pod);
* the launcher pod is the batch host (Slurm's node 0): it runs the batch script once; each `srun` in it
  starts the step's tasks with Open MPI's `mpirun` over that SSH (translator/plan/batch_prologue.py);
* the node pods run `sshd` and nothing else until a step reaches them.

Why a TrainingRuntime written beside the TrainJob rather than a shipped runtime: on Trainer v2.3 the
shipped MPI runtimes' node pods keep the runtime's own image (`deepspeed-runtime`), and a runtime patch's
container has no `image` field, so the user's program would not be on the pods the steps reach. Here the
node pods run the TrainJob's image too (the image must provide bash, an sshd binary and Open MPI). The
runtime is namespaced and named after the TrainJob, so every TrainJob has its own, a kustomization never
lists one object twice, and deleting a job's files removes both.
"""

from __future__ import annotations

import shlex

#: the runtime name is the TrainJob's plus this suffix (TrainingRuntime names are DNS subdomains, <= 253)
SUFFIX = "-batch"
KIND = "TrainingRuntime"
#: framework label: the SDK requires one on every runtime; no Trainer plugin reads its value
FRAMEWORK = "slurm2kf-batch"
#: marks the runtime as batch mode for readers that only see the objects (simulate orders the pods by it)
BATCH_LABEL = "slurm2kf.io/execution"
BATCH_VALUE = "batch"
SSH_PORT = 2222
#: where the Trainer mounts the SSH key pair (id_rsa, id_rsa.pub, authorized_keys); the Trainer's default
SSH_AUTH_PATH = "/root/.ssh"
LAUNCHER = "launcher"
NODE = "node"

_SSHD_DIR = "/tmp/slurm2kf-sshd"


def runtime_name(trainjob_name: str) -> str:
    return f"{trainjob_name}{SUFFIX}"


def sshd_command() -> list[str]:
    """The node pods' command: a host key made at start-up, then sshd in the foreground on SSH_PORT,
    accepting the key the Trainer mounted. No script text is involved."""
    keys = shlex.quote(f"{SSH_AUTH_PATH}/authorized_keys")
    script = "\n".join(
        [
            "set -e",
            f"mkdir -p {_SSHD_DIR} /run/sshd",
            f'[ -f {_SSHD_DIR}/host_key ] || ssh-keygen -q -t ed25519 -N "" -f {_SSHD_DIR}/host_key',
            'sshd_bin="$(command -v sshd || echo /usr/sbin/sshd)"',
            f'exec "$sshd_bin" -D -e -p {SSH_PORT} -h {_SSHD_DIR}/host_key -o AuthorizedKeysFile={keys} '
            "-o StrictModes=no -o PermitRootLogin=prohibit-password -o PidFile=none -o UsePAM=no",
        ]
    )
    return ["bash", "-c", script]


def runtime_document(trainjob_name: str, namespace: str | None, image: str) -> dict:
    """The TrainingRuntime of one batch-mode TrainJob (a plain dict in API form)."""
    metadata: dict = {
        "name": runtime_name(trainjob_name),
        "labels": {"trainer.kubeflow.org/framework": FRAMEWORK, BATCH_LABEL: BATCH_VALUE},
    }
    if namespace:
        metadata["namespace"] = namespace
    node_container = {
        "name": "node",
        "image": image,
        "command": sshd_command(),
        "readinessProbe": {"tcpSocket": {"port": SSH_PORT}, "initialDelaySeconds": 2, "periodSeconds": 2},
    }
    launcher_container = {"name": "node", "image": image}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": KIND,
        "metadata": metadata,
        "spec": {
            "mlPolicy": {
                "numNodes": 1,
                "mpi": {
                    "numProcPerNode": 1,
                    "mpiImplementation": "OpenMPI",
                    "sshAuthMountPath": SSH_AUTH_PATH,
                    "runLauncherAsNode": True,
                },
            },
            "template": {
                "spec": {
                    "network": {"publishNotReadyAddresses": True},
                    "successPolicy": {"operator": "All", "targetReplicatedJobs": [LAUNCHER]},
                    "replicatedJobs": [
                        {
                            "name": NODE,
                            "template": {"spec": {"template": {"spec": {"containers": [node_container]}}}},
                        },
                        {
                            "name": LAUNCHER,
                            "dependsOn": [{"name": NODE, "status": "Ready"}],
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {"template": {"spec": {"containers": [launcher_container]}}},
                            },
                        },
                    ],
                }
            },
        },
    }


def is_batch_runtime(doc: dict) -> bool:
    labels = ((doc or {}).get("metadata") or {}).get("labels") or {}
    return isinstance(labels, dict) and labels.get(BATCH_LABEL) == BATCH_VALUE
