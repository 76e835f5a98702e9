"""The Kubeflow side run from hand-written pods, and the verdict's comparison rules.

Sources: Trainer v2.3 torch plugin (PET_NNODES/PET_NPROC_PER_NODE/PET_NODE_RANK/PET_MASTER_ADDR/PORT; torchrun
reads them as its option defaults, torch/distributed/argparse_util.py), the MPI plugin (hostfile
`/etc/mpi/hostfile` with `<pod>.<job> slots=N`, OMPI_MCA_orte_default_hostfile, ranks started over ssh,
which carries only `-x` variables: Open MPI mpirun(1) "-x"), Kubernetes (no Slurm commands in the image).
"""

from __future__ import annotations

from translator.simulate.model import PodLaunch, Process, SideResult
from translator.simulate.pods_run import run_pods
from translator.simulate.verdict import compare


def pod(i, argv, env=(), gpus=0, role="node", name="job", files=()):
    host = f"{name}-node-0-{i}" if role == "node" else f"{name}-launcher-0-0"
    return PodLaunch(
        name=host,
        role=role,
        node=i,
        hostname=host,
        argv=tuple(argv),
        env=tuple(env),
        gpus=gpus,
        files=tuple(files),
        fqdn=f"{host}.{name}",
    )


def torch_env(i, n, nproc):
    return (
        ("PET_NNODES", str(n)),
        ("PET_NPROC_PER_NODE", str(nproc)),
        ("PET_NODE_RANK", str(i)),
        ("PET_MASTER_ADDR", "job-node-0-0.job"),
        ("PET_MASTER_PORT", "29500"),
    )


def test_torch_pods_run_torchrun_with_the_runtime_env():
    pods = [pod(i, ["torchrun", "train.py", "--x"], torch_env(i, 2, 4), gpus=4) for i in range(2)]
    side = run_pods(pods)
    assert not side.failures
    got = sorted((p.node, p.rank, p.local_rank, p.world_size, p.master_addr, p.gpus) for p in side.processes)
    assert got == [(n, n * 4 + lr, lr, 8, "job-node-0-0.job", 4) for n in range(2) for lr in range(4)]
    assert side.hosts[0][:2] == ("job-node-0-0", 0)


def test_slurm_commands_do_not_exist_in_a_pod():
    side = run_pods([pod(0, ["bash", "-c", "module load x; scontrol show hostnames n[1-2]; srun python a.py"])])
    failed = sorted(f.command.split()[0] for f in side.failures if f.reason == "command not found in the container")
    assert failed == ["module", "scontrol", "srun"]
    assert side.processes == ()


def test_mpi_launcher_places_ranks_on_worker_pods_and_ssh_drops_the_env():
    hostfile = "job-node-0-0.job slots=2\njob-node-0-1.job slots=2\n"
    launcher = pod(
        0,
        ["bash", "-c", "export A=1 B=2; mpirun -x A python train.py"],
        role="launcher",
        env=(("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),),
        files=(("/etc/mpi/hostfile", hostfile),),
    )
    workers = [pod(i, ["/usr/sbin/sshd", "-De"], gpus=2) for i in range(2)]
    side = run_pods(workers + [launcher])
    assert not side.failures
    got = sorted((p.node, p.rank, p.world_size, p.gpus) for p in side.processes)
    assert got == [(0, 0, 4, 2), (0, 1, 4, 2), (1, 2, 4, 2), (1, 3, 4, 2)]
    envs = [dict(p.env) for p in side.processes]
    assert all(e.get("A") == "1" and "B" not in e for e in envs)


def P(side, node, rank, world, gpus=1, prog="train.py", argv=(), master="node01", port="29500", env=(), cwd=""):
    return Process(
        side=side,
        node=node,
        host=f"h{node}",
        program=prog,
        argv=tuple(argv),
        rank=rank,
        local_rank=rank % 2,
        world_size=world,
        master_addr=master,
        master_port=port,
        gpus=gpus,
        env=tuple(env),
        cwd=cwd,
    )


SH = (("node01", 0, "10.0.0.1"), ("node02", 1, "10.0.0.2"))
KH = (("job-node-0-0", 0, "10.244.0.10"), ("job-node-0-1", 1, "10.244.1.10"))


def sides(s_procs, k_procs):
    return SideResult("slurm", tuple(s_procs), hosts=SH), SideResult("kubeflow", tuple(k_procs), hosts=KH)


def test_same_layout_with_host_names_of_each_side_is_equivalent():
    s = [P("slurm", r // 2, r, 4) for r in range(4)]
    k = [P("kubeflow", r // 2, r, 4, master="job-node-0-0.job") for r in range(4)]
    assert compare(*sides(s, k)) == []


def test_each_kind_of_difference_is_named():
    s = [P("slurm", r // 2, r, 4, env=(("NCCL_DEBUG", "INFO"),)) for r in range(4)]
    k = [P("kubeflow", 0, r, 2, gpus=2, master="job-node-0-0.job") for r in range(2)]
    d = compare(*sides(s, k))
    assert any("Slurm starts 4, Kubeflow starts 2" in x for x in d)
    k = [P("kubeflow", r // 2, r, 8, gpus=2, master="job-node-0-1", port="1234") for r in range(4)]
    d = " | ".join(compare(*sides(s, k)))
    assert "world size on Slurm 4, on Kubeflow 8" in d
    assert "GPUs visible per process on Slurm 1, on Kubeflow 2" in d
    assert "MASTER_ADDR points to node0 on Slurm, to node1 on Kubeflow" in d
    assert "MASTER_PORT" not in d  # any free port works: only one port per side matters
    assert "NCCL_DEBUG is 'INFO' on Slurm, unset on Kubeflow" in d


def test_a_per_pod_master_addr_is_a_difference():
    s = [P("slurm", r // 2, r, 4) for r in range(4)]
    k = [P("kubeflow", r // 2, r, 4, master="localhost") for r in range(4)]  # each pod its own "master"
    d = compare(*sides(s, k))
    assert any(x.startswith("Kubeflow: the ranks of") and "MASTER_ADDR" in x for x in d)
    k = [P("kubeflow", r // 2, r, 4, master="job-node-0-0", port=str(29500 + r // 2)) for r in range(4)]
    d = compare(*sides(s, k))
    assert any(x.startswith("Kubeflow: the ranks of") and "MASTER_PORT (29500, 29501)" in x for x in d)


def test_rank_layout_and_failures():
    s = [P("slurm", r // 2, r, 4) for r in range(4)]
    k = [P("kubeflow", r % 2, r, 4, master="job-node-0-0.job") for r in range(4)]
    assert any("rank -> node layout differs" in x for x in compare(*sides(s, k)))
    from translator.simulate.model import Failure

    ks = SideResult(
        "kubeflow",
        tuple(P("kubeflow", r // 2, r, 4, master="job-node-0-0") for r in range(4)),
        failures=(Failure("kubeflow", 0, "srun python a.py", "command not found in the container"),),
        hosts=KH,
    )
    assert compare(SideResult("slurm", tuple(s), hosts=SH), ks) == [
        "Kubeflow: `srun python a.py` fails on pod 0: command not found in the container"
    ]


def test_job_id_and_launcher_defaults_and_internals_are_not_differences():
    s = [P("slurm", 0, 0, 1, argv=("--out", "runs/4242"), env=(("SLURM_JOB_ID", "4242"), ("SLURM_NNODES", "1")))]
    k = [
        P(
            "kubeflow",
            0,
            0,
            1,
            argv=("--out", "runs/98765"),
            master="job-node-0-0",
            env=(("SLURM_JOB_ID", "98765"), ("PET_NNODES", "1"), ("PIP_NO_INPUT", "1")),
        )
    ]
    assert compare(*sides(s, k)) == []


def test_host_names_in_arguments_and_variables_name_nodes_on_each_side():
    # `--head node01` on Slurm and `--head job-node-0-0.job` in a pod both name node 0
    s = [P("slurm", 0, 0, 1, argv=("--head", "node01", "--ip", "10.0.0.2"), env=(("HEAD", "node01:29500"),))]
    k = [
        P(
            "kubeflow",
            0,
            0,
            1,
            argv=("--head", "job-node-0-0.job", "--ip", "10.244.1.10"),
            env=(("HEAD", "job-node-0-0:29500"),),
            master="job-node-0-0",
        )
    ]
    assert compare(*sides(s, k)) == []
    k = [
        P(
            "kubeflow",
            0,
            0,
            1,
            argv=("--head", "job-node-0-1", "--ip", "10.244.1.10"),
            env=(("HEAD", "job-node-0-0:29500"),),
            master="job-node-0-0",
        )
    ]
    assert compare(*sides(s, k)) == [
        "`python train.py --head '<node0>' --ip '<node1>'`: Slurm starts 1, Kubeflow starts 0",
        "`python train.py --head '<node1>' --ip '<node1>'`: Slurm starts 0, Kubeflow starts 1",
    ]
