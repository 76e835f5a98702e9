"""The records both sides of a simulation produce, and the verdict that compares them.

A *training process* is one process started by a launcher stub (torchrun's workers, each `python` task of
srun, each mpirun rank, ...): what the user's program would see when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Process:
    side: str  # "slurm" | "kubeflow"
    node: int  # node index in the allocation / pod index of the trainer job
    host: str  # hostname the process sees
    program: str  # the user's program: script path or module ("train.py", "-m pkg.main")
    argv: tuple[str, ...]  # the program's own arguments (after the script/module)
    interpreter: str = "python"  # python | python3 | a binary name, as the launcher exec'd it
    launcher: str = ""  # which stub started it: torchrun | srun | mpirun | deepspeed | accelerate | direct
    rank: int | None = None  # global rank the program can read (RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID / PMI_RANK)
    local_rank: int | None = None
    world_size: int | None = None
    master_addr: str | None = None
    master_port: str | None = None
    gpus: int = 0  # GPUs visible to the process (CUDA_VISIBLE_DEVICES, else all on the node)
    env: tuple[tuple[str, str], ...] = ()  # the env the program was given (sorted; sandbox/stub variables removed)
    cwd: str = ""  # working directory the process started in
    defaulted: tuple[str, ...] = ()  # env names the launcher set by default (torchrun's OMP_NUM_THREADS=1)


@dataclass(frozen=True)
class Failure:
    """Something that would fail where it ran: a Slurm-only command in a pod, a stub refusing, a time-out."""

    side: str
    node: int
    command: str
    reason: str
    kind: str = ""  # "timeout" | "exit" (the unit's status) | "unsupported" | "not-found" | "" (a stub refused)


@dataclass(frozen=True)
class PodLaunch:
    """One container the Trainer + kubelet would start, ready to run in the sandbox."""

    name: str  # pod name, e.g. "<trainjob>-node-0-0"
    role: str  # "node" | "launcher"
    node: int  # index of the pod within its replicated job
    hostname: str  # what `hostname` prints in the pod
    argv: tuple[str, ...]  # container command + args after the kubelet's $(VAR) expansion
    env: tuple[tuple[str, str], ...]  # container env after expansion (runtime + plugin + trainer.env), in order
    gpus: int = 0  # GPU limit of the container
    files: tuple[tuple[str, str], ...] = ()  # files mounted into the pod (path, content), e.g. the MPI hostfile
    workdir: str = ""  # container workingDir, "" = image default
    image: str = ""  # container image (MPI workers keep the runtime's image under v2.3)
    fqdn: str = ""  # "<hostname>.<trainjob>": the name other pods (hostfile, PET_MASTER_ADDR) use
    image_entrypoint: bool = False  # no container command: the image's ENTRYPOINT runs, with `argv` as its args
    batch: bool = False  # a pod of batch mode's runtime (plan/batch_runtime.py): the launcher is Slurm's node 0


@dataclass(frozen=True)
class SideResult:
    side: str
    processes: tuple[Process, ...] = ()
    failures: tuple[Failure, ...] = ()
    notes: tuple[str, ...] = ()  # e.g. "isolation: user+mount+net namespaces"
    hosts: tuple[tuple[str, int, str], ...] = ()  # (hostname, node, ip) of the side's nodes/pods, for MASTER_ADDR
    blockers: tuple[tuple[str, str], ...] = ()  # (reason code, where): why the script cannot run as written
    # why this side's run is not complete, as (code, sentence): more nodes/pods than simulate runs (S821),
    # the overall deadline or a node's/pod's time limit (S822). Non-empty: the verdict is inconclusive.
    incomplete: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Reason:
    """Why a verdict is `inconclusive` or `refused`: a stable code (S8xx, docs/codes.md), which side, where."""

    code: str
    text: str
    side: str = ""  # "slurm" | "kubeflow" | "both" | ""
    where: str = ""  # the command, node or pod, and the script line when known


@dataclass(frozen=True)
class Verdict:
    path: str
    verdict: str  # "equivalent" | "differs" | "inconclusive" | "refused"
    differences: tuple[str, ...] = ()
    slurm: SideResult = field(default_factory=lambda: SideResult("slurm"))
    kubeflow: SideResult = field(default_factory=lambda: SideResult("kubeflow"))
    reason: Reason | None = None  # for inconclusive and refused
    shared: tuple[str, ...] = ()  # failures both sides have identically (reported once, not a difference)
