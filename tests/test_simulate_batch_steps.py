"""`simulate`'s emulated mpirun starts the tasks of a batch-mode srun step (translator/plan/batch_prologue.py).

The batch script runs once on the launcher pod; its `srun` starts the step's tasks with
`mpirun --host h0:c0,h1:c1 -np N --map-by slot -x NAME ... --wdir DIR bash -c WRAPPER s2k-task CMD ...`.
The sandbox's mpirun must start one process per rank on the pod whose host the rank is mapped to, with
Open MPI's OMPI_COMM_WORLD_* variables, so that the wrapper derives each task's Slurm variables. Expected
values by hand: Open MPI's by-slot mapping fills h0's c0 slots first (ranks 0..c0-1), then h1's; Slurm's
block layout for -N2 -n3 is tasks 0,1 on node 0 and task 2 on node 1 (slurm_step_layout.c);
--gpus-per-task=2 gives local task l the GPUs 2l, 2l+1.
"""

from __future__ import annotations

from tests.batch_prologue_helpers import prologue_text
from translator.simulate import sandbox as sb

L, N0 = "j-launcher-0-0", "j-node-0-0"
HOSTS = [(L, 0, "10.0.0.1", 4), (N0, 1, "10.0.0.2", 4)]


def _run(body: str):
    pro = prologue_text("#SBATCH -N2\n#SBATCH --ntasks-per-node=2\n#SBATCH --gpus-per-node=4")
    unit = sb.Unit(
        argv=["/bin/bash", "--noprofile", "--norc", "-c", pro + body],
        env={"OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile", "PATH": "/usr/local/bin:/usr/bin:/bin"},
        hostname=L,
        node=0,
        files=[("/etc/mpi/hostfile", f"{N0}.j slots=2\n{L}.j slots=2\n")],
        programs=sb.program_paths(["./app"]),
    )
    return sb.run_units([unit], "kubeflow", HOSTS, timeout=30)


def test_emulated_mpirun_starts_each_rank_on_its_pod_with_the_task_variables():
    res = _run("mkdir -p data\nsrun -N2 -n3 -D data python train.py --lr 1\necho rc=$?\n")
    assert res.units[0].stdout == "rc=0\n", res.units[0].stderr
    procs = [r for r in res.records if r["kind"] == "process"]
    got = [
        (
            p["program"],
            p["argv"],
            p["node"],
            p["rank"],
            p["local_rank"],
            p["world_size"],
            p["env"]["SLURM_PROCID"],
            p["env"]["SLURM_NODEID"],
            p["env"]["SLURMD_NODENAME"],
            p["env"]["SLURM_STEP_NODELIST"],
            p["cwd"],
        )
        for p in sorted(procs, key=lambda p: p["rank"])
    ]
    nl = f"{L}.j,{N0}.j"
    assert got == [
        ("train.py", ["--lr", "1"], 0, 0, 0, 3, "0", "0", f"{L}.j", nl, "/home/user/data"),
        ("train.py", ["--lr", "1"], 0, 1, 1, 3, "1", "0", f"{L}.j", nl, "/home/user/data"),
        ("train.py", ["--lr", "1"], 1, 2, 0, 3, "2", "1", f"{N0}.j", nl, "/home/user/data"),
    ]
    calls = [r for r in res.records if r["kind"] == "call" and r["name"] == "mpirun"]
    assert [c["np"] for c in calls] == [3] and calls[0]["hosts"] == [f"{L}.j", f"{N0}.j"]


def test_emulated_mpirun_gives_each_task_its_gpus():
    res = _run("srun --gpus-per-task=2 ./app x\n")
    procs = sorted((r for r in res.records if r["kind"] == "process"), key=lambda p: p["rank"])
    assert [(p["node"], p["env"]["SLURM_LOCALID"], p["env"]["CUDA_VISIBLE_DEVICES"], p["gpus"]) for p in procs] == [
        (0, "0", "0,1", 2),
        (0, "1", "2,3", 2),
        (1, "0", "0,1", 2),
        (1, "1", "2,3", 2),
    ]
