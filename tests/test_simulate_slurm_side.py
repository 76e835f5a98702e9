"""Golden tests of the Slurm side: the processes a batch script starts, derived by hand from Slurm's and the
launchers' documented behaviour (each test names its source). Nothing of the user's program runs.

Sources:
- sbatch.1 / srun.1 OUTPUT ENVIRONMENT, /work/shared/docs/sbatch-semantics.md §12-§13 (SLURM_* variables,
  inheritance of the allocation shape by srun, variable expansion by the batch shell);
- slurm src/common/slurm_step_layout.c `_task_layout_block` (block distribution: per-node counts handed
  out round-robin, consecutive task ids per node);
- torch/distributed/run.py (torchrun: RANK = node_rank * nproc_per_node + local_rank, PET_* defaults);
- Open MPI mpirun(1) (by-slot mapping, --map-by node, -npernode, slots from SLURM_TASKS_PER_NODE);
- deepspeed/launcher/runner.py + launch.py (hostfile slots, --num_gpus, `--local_rank=N` appended);
- accelerate/commands/launch.py (multi_gpu -> torch.distributed.run with num_machines/machine_rank).
"""

from __future__ import annotations

import textwrap


from translator.pipeline import read_and_resolve
from translator.simulate import slurm_side


def run(tmp_path, body: str, name="job.sbatch", **kw):
    text = textwrap.dedent(body).lstrip()
    p = tmp_path / name
    p.write_text(text)
    _, job, err = read_and_resolve(str(p))
    assert err is None
    side, alloc = slurm_side.run(job, text, **kw)
    return side


def layout(side):
    """[(node, rank, local_rank, world_size, gpus)] in rank order."""
    return sorted((p.node, p.rank, p.local_rank, p.world_size, p.gpus) for p in side.processes)


def test_srun_python_one_task_per_gpu_block_distribution(tmp_path):
    # 2 nodes x 4 tasks: ranks 0-3 on node 0, 4-7 on node 1 (block); each task sees the node's 4 GPUs
    # (gres per node, no per-task binding); SLURM_NTASKS=8 (sbatch sets it from --ntasks-per-node x nodes).
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=4
        #SBATCH --gres=gpu:4
        srun python train.py --lr 0.1
    """,
    )
    assert not side.failures
    assert layout(side) == [(0, r, r, 8, 4) for r in range(4)] + [(1, r, r - 4, 8, 4) for r in range(4, 8)]
    p = side.processes[5]
    assert (p.interpreter, p.program, p.argv, p.launcher) == ("python", "train.py", ("--lr", "0.1"), "srun")
    env = dict(p.env)
    assert env["SLURM_PROCID"] == "5" and env["SLURM_LOCALID"] == "1" and env["SLURM_NODEID"] == "1"
    assert env["SLURM_STEP_NODELIST"] == "node[01-02]" and env["SLURM_STEP_NUM_TASKS"] == "8"
    assert env["SLURM_STEP_TASKS_PER_NODE"] == "4(x2)" and env["SLURM_GTIDS"] == "4,5,6,7"
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3" and p.host == "node02" and env["HOSTNAME"] == "node02"


def test_srun_uneven_tasks_and_gpus_per_task(tmp_path):
    # -n 3 on 2 nodes: counts [2, 1], ids 0,1 on node 0 and 2 on node 1 (_task_layout_block);
    # --gpus-per-task=1 binds one GPU per task (CUDA_VISIBLE_DEVICES = the task's own GPU).
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 2
        #SBATCH --gpus-per-node=2
        srun -n 3 --gpus-per-task=1 python a.py
    """,
    )
    assert layout(side) == [(0, 0, 0, 3, 1), (0, 1, 1, 3, 1), (1, 2, 0, 3, 1)]
    assert [dict(p.env)["CUDA_VISIBLE_DEVICES"] for p in sorted(side.processes, key=lambda p: p.rank)] == [
        "0",
        "1",
        "0",
    ]


def test_srun_inherits_shape_and_nodelist_relative(tmp_path):
    # no -n anywhere: one task per node of the allocation (srun.1); -w picks that node; --relative=1 starts
    # at the second node; -N1 -n1 runs one task.
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 3
        srun python all.py
        srun -N1 -n1 -w node03 python one.py
        srun -N1 -n1 --relative=1 python rel.py
    """,
    )
    by_prog = {}
    for p in side.processes:
        by_prog.setdefault(p.program, []).append(p.node)
    assert by_prog == {"all.py": [0, 1, 2], "one.py": [2], "rel.py": [1]}


def test_srun_refuses_a_node_outside_the_allocation(tmp_path):
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 2
        srun -w node09 python a.py
    """,
    )
    assert side.processes == ()
    assert any("node09" in f.reason for f in side.failures)


def test_batch_environment_of_node_zero(tmp_path):
    # sbatch.1 OUTPUT ENVIRONMENT: SLURM_NTASKS only when requested; nodelist in hostlist form; GPU variables
    # for the node's GPUs; SLURM_PROCID/LOCALID/NODEID = 0 in the batch step.
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 4 --gpus-per-node=2 -J myjob
        python direct.py
    """,
    )
    (p,) = side.processes
    env = dict(p.env)
    assert env["SLURM_JOB_NODELIST"] == "node[01-04]" and env["SLURM_NNODES"] == "4"
    assert env["SLURM_JOB_NUM_NODES"] == "4" and env["SLURM_JOB_NAME"] == "myjob"
    assert "SLURM_NTASKS" not in env and "SLURM_NTASKS_PER_NODE" not in env
    assert env["SLURM_GPUS_ON_NODE"] == "2" and env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert env["SLURM_PROCID"] == env["SLURM_LOCALID"] == env["SLURM_NODEID"] == "0"
    assert env["SLURM_SUBMIT_DIR"] == "/home/user" and env["ENVIRONMENT"] == "BATCH"
    assert (p.node, p.host, p.launcher, p.gpus) == (0, "node01", "direct", 2)


def test_scontrol_hostnames_hostname_and_nvidia_smi(tmp_path):
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 3 --gres=gpu:2
        first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
        n=$(scontrol show hostnames node[08-10],gpu5 | wc -l)
        g=$(nvidia-smi -L | wc -l)
        python a.py "$first" "$n" "$(hostname)" "$g" "$(python -c 'import torch; print(torch.cuda.device_count())')"
    """,
    )
    (p,) = side.processes
    assert p.argv == ("node01", "4", "node01", "2", "2")


def test_array_index_and_script_arguments(tmp_path):
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --array=0-15:5
        python sweep.py --seed "$SLURM_ARRAY_TASK_ID" --count "$SLURM_ARRAY_TASK_COUNT" --arg "$1" --n $#
    """,
        script_args=("alpha", "beta"),
        array_index=10,
    )
    (p,) = side.processes
    # 0-15:5 = 0,5,10,15 (sbatch.1 --array)
    assert p.argv == ("--seed", "10", "--count", "4", "--arg", "alpha", "--n", "2")
    assert dict(p.env)["SLURM_ARRAY_TASK_STEP"] == "5"


def test_shebang_options_are_kept(tmp_path):
    # `#!/bin/bash -e`: the kernel passes -e to bash; the failing command ends the script.
    side = run(
        tmp_path,
        """
        #!/bin/bash -e
        false
        python never.py
    """,
    )
    assert side.processes == ()
    assert any("status 1" in f.reason for f in side.failures)


def test_torchrun_node_rank_expanded_by_the_batch_shell_vs_deferred(tmp_path):
    # sbatch-semantics §13: `srun torchrun --node_rank=$SLURM_NODEID` is expanded once by the batch shell
    # (every node gets 0: ranks 0-3 twice); inside `bash -c '...'` each task expands its own.
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 2 --ntasks-per-node=1 --gpus-per-node=4
        srun torchrun --nnodes 2 --nproc_per_node 4 --node_rank=$SLURM_NODEID --master_addr node01 wrong.py
        srun bash -c 'torchrun --nnodes 2 --nproc_per_node 4 --node_rank=$SLURM_NODEID --master_addr node01 right.py'
    """,
    )
    wrong = sorted((p.node, p.rank) for p in side.processes if p.program == "wrong.py")
    right = sorted((p.node, p.rank) for p in side.processes if p.program == "right.py")
    assert wrong == [(0, r) for r in range(4)] + [(1, r) for r in range(4)]
    assert right == [(0, r) for r in range(4)] + [(1, r) for r in range(4, 8)]
    assert {(p.world_size, p.master_addr, p.master_port, p.local_rank is not None) for p in side.processes} == {
        (8, "node01", "29500", True)
    }


def test_torchrun_c10d_endpoint_and_pet_defaults(tmp_path):
    # c10d: ranks by arrival (emulated as the node order), MASTER_ADDR/PORT = the rendezvous endpoint;
    # options default to $PET_* (torch/distributed/argparse_util.py).
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 2 --ntasks-per-node=1 --gpus-per-node=2
        head=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)
        srun torchrun --nnodes 2 --nproc_per_node gpu --rdzv_backend c10d --rdzv_endpoint $head:29400 t.py
        PET_NPROC_PER_NODE=3 torchrun --standalone -m pkg.main --x
    """,
    )
    t = sorted(
        (p.node, p.rank, p.world_size, p.master_addr, p.master_port) for p in side.processes if p.program == "t.py"
    )
    assert t == [
        (0, 0, 4, "node01", "29400"),
        (0, 1, 4, "node01", "29400"),
        (1, 2, 4, "node01", "29400"),
        (1, 3, 4, "node01", "29400"),
    ]
    m = sorted((p.rank, p.world_size) for p in side.processes if p.program == "-m pkg.main")
    assert m == [(0, 3), (1, 3), (2, 3)]


def test_mpirun_by_slot_map_by_node_and_npernode(tmp_path):
    # Open MPI under Slurm: slots per node from SLURM_TASKS_PER_NODE (4,4); by slot fills node 0 first;
    # --map-by node alternates; -npernode 1 puts one rank per node.
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 2 --ntasks-per-node=4
        mpirun -np 8 ./slot
        mpirun -np 4 --map-by node ./rr
        mpirun -npernode 1 ./per
        mpirun -np 9 ./toomany
    """,
    )

    def nodes(prog):
        return [p.node for p in sorted((p for p in side.processes if p.program == prog), key=lambda p: p.rank)]

    assert nodes("./slot") == [0, 0, 0, 0, 1, 1, 1, 1]
    assert nodes("./rr") == [0, 1, 0, 1]
    assert nodes("./per") == [0, 1]
    assert nodes("./toomany") == []
    assert any("9 ranks but only 8 slots" in f.reason for f in side.failures)
    p = next(p for p in side.processes if p.program == "./slot" and p.rank == 5)
    env = dict(p.env)
    assert env["OMPI_COMM_WORLD_LOCAL_RANK"] == "1" and env["OMPI_COMM_WORLD_SIZE"] == "8" and p.interpreter == ""


def test_deepspeed_hostfile_from_the_node_list(tmp_path):
    # runner.py: hostfile `host slots=N`; multi-node: MASTER_ADDR = first host's address, ranks host by host;
    # launch.py appends --local_rank=<local rank> to the user's arguments.
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 2 --ntasks-per-node=1 --gres=gpu:2
        scontrol show hostnames $SLURM_JOB_NODELIST | sed 's/$/ slots=2/' > hostfile
        export NCCL_DEBUG=INFO
        export OTHER=x
        deepspeed --hostfile hostfile train.py --deepspeed
    """,
    )
    got = sorted((p.node, p.rank, p.local_rank, p.world_size, p.master_addr, p.argv) for p in side.processes)
    assert got == [
        (0, 0, 0, 4, "10.0.0.1", ("--local_rank=0", "--deepspeed")),
        (0, 1, 1, 4, "10.0.0.1", ("--local_rank=1", "--deepspeed")),
        (1, 2, 0, 4, "10.0.0.1", ("--local_rank=0", "--deepspeed")),
        (1, 3, 1, 4, "10.0.0.1", ("--local_rank=1", "--deepspeed")),
    ]
    env = dict(side.processes[3].env)
    # pdsh/ssh carries only the exported prefixes (NCCL*, PYTHON*, ...), not OTHER
    assert env.get("NCCL_DEBUG") == "INFO" and "OTHER" not in env


def test_deepspeed_single_node_num_gpus(tmp_path):
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --gres=gpu:4
        deepspeed --num_gpus 2 train.py
    """,
    )
    assert sorted((p.rank, p.world_size, p.master_addr) for p in side.processes) == [
        (0, 2, "127.0.0.1"),
        (1, 2, "127.0.0.1"),
    ]


def test_accelerate_multi_machine(tmp_path):
    # launch.py multi_gpu_launcher: nnodes=num_machines, nproc=num_processes/num_machines, node_rank=machine_rank
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 2 --ntasks-per-node=1 --gpus-per-node=2
        srun bash -c 'accelerate launch --multi_gpu --num_processes 4 --num_machines 2 \
            --machine_rank $SLURM_NODEID --main_process_ip node01 --main_process_port 6000 \
            --mixed_precision bf16 sft.py --epochs 1'
    """,
    )
    got = sorted((p.node, p.rank, p.world_size, p.master_addr, p.master_port) for p in side.processes)
    assert got == [
        (0, 0, 4, "node01", "6000"),
        (0, 1, 4, "node01", "6000"),
        (1, 2, 4, "node01", "6000"),
        (1, 3, 4, "node01", "6000"),
    ]
    assert {dict(p.env)["ACCELERATE_MIXED_PRECISION"] for p in side.processes} == {"bf16"}
    assert {p.argv for p in side.processes} == {("--epochs", "1")}


def test_containers_exec_their_inner_command(tmp_path):
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --gres=gpu:1
        export KEEP=1
        export APPTAINERENV_INSIDE=2
        srun apptainer exec --nv -B /data:/data docker://img:1 python a.py
        apptainer exec --cleanenv img.sif python b.py
        srun --container-image=nvcr.io#nvidia/pytorch:24.01-py3 --container-mounts=/a:/a python c.py
        shifter --image=docker:img:1 python d.py
        podman-hpc run --rm --gpu img python e.py
    """,
    )
    envs = {p.program: dict(p.env) for p in side.processes}
    assert sorted(envs) == ["a.py", "b.py", "c.py", "d.py", "e.py"]
    assert envs["a.py"]["KEEP"] == "1" and envs["a.py"]["INSIDE"] == "2"
    # --cleanenv: only APPTAINERENV_* reach the container (apptainer docs, "Environment and Metadata")
    assert "KEEP" not in envs["b.py"] and envs["b.py"]["INSIDE"] == "2"


def test_script_fallback_several_steps_and_module_noops(tmp_path):
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 2 --ntasks-per-node=1
        module load cuda
        source /etc/profile.d/modules.sh
        conda activate myenv
        for lr in 0.1 0.01; do
          srun python train.py --lr "$lr"
        done
    """,
    )
    got = sorted((p.argv[1], p.node, dict(p.env)["SLURM_STEP_ID"]) for p in side.processes)
    assert got == [("0.01", 0, "1"), ("0.01", 1, "1"), ("0.1", 0, "0"), ("0.1", 1, "0")]
    assert not side.failures


def test_pip_and_one_liners_are_not_training(tmp_path):
    side = run(
        tmp_path,
        """
        #!/bin/bash
        pip install -r requirements.txt
        python -m pip install x
        python -c 'print(1)'
        python -m pkg.train --epochs 2
    """,
    )
    assert [(p.program, p.argv) for p in side.processes] == [("-m pkg.train", ("--epochs", "2"))]


def test_srun_export_and_label(tmp_path):
    # srun.1 --export=NONE: only SLURM_* variables reach the task; NAME=value items are added.
    # -l prefixes each output line with the task id.
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 2
        export SECRET_SETTING=1
        srun --export=NONE,MODE=fast python a.py
        srun --export=ALL python b.py
        out=$(srun -l bash -c 'echo $(hostname)/$(uname -n)/$HOSTNAME' | sort | tr '\\n' ' ')
        python c.py "$out"
    """,
    )
    a = [dict(p.env) for p in side.processes if p.program == "a.py"]
    b = [dict(p.env) for p in side.processes if p.program == "b.py"]
    assert len(a) == 2 and all("SECRET_SETTING" not in e and e["MODE"] == "fast" for e in a)
    assert all(e["SECRET_SETTING"] == "1" for e in b)
    (c,) = [p for p in side.processes if p.program == "c.py"]
    assert c.argv == ("0: node01/node01/node01 1: node02/node02/node02 ",)


def test_random_is_repeatable_and_differs_per_node(tmp_path):
    # $RANDOM evaluated by each node's shell: different per node on a real cluster; the simulation seeds it
    # per node so that two runs give the same verdict.
    body = """
        #!/bin/bash
        #SBATCH -N 2
        port=$RANDOM
        srun bash -c 'python a.py $RANDOM'
        python b.py $port
    """
    one, two = run(tmp_path, body), run(tmp_path, body)

    def key(s):
        return sorted((p.program, p.node, p.argv) for p in s.processes)

    assert key(one) == key(two)
    a = {p.node: p.argv for p in one.processes if p.program == "a.py"}
    assert a[0] != a[1]


def test_legacy_launch_module_and_terminal_commands(tmp_path):
    # torch.distributed.launch (without --use-env) appends --local-rank=N (torch>=2.0 spelling);
    # `clear` needs TERM: with --export=NONE sbatch propagates no TERM from the submit shell (sbatch.1
    # --export: only SLURM_* variables), it fails, and `set -e` stops the script.
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --gres=gpu:2 --export=NONE
        python -m torch.distributed.launch --nproc_per_node 2 t.py --a
        set -e
        clear
        python never.py
    """,
    )
    assert sorted((p.rank, p.argv) for p in side.processes) == [
        (0, ("--local-rank=0", "--a")),
        (1, ("--local-rank=1", "--a")),
    ]
    assert any("status 1" in f.reason and "TERM" in f.reason for f in side.failures)


def test_gpu_program_without_gpus(tmp_path):
    # No GPU requested: nothing is visible (CUDA_VISIBLE_DEVICES unset, node has 0), nvidia-smi fails,
    # torchrun --nproc_per_node=gpu refuses (torch: "Cuda is not available").
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 1
        nvidia-smi -L || echo no-gpu
        torchrun --nproc_per_node=gpu t.py
        python c.py
    """,
    )
    assert [(p.program, p.gpus) for p in side.processes] == [("c.py", 0)]
    assert any("no GPU is visible" in f.reason for f in side.failures)


def test_the_users_own_programs_run_by_path_are_training_processes(tmp_path):
    # `./app` and `/opt/tools/bin/run` are the user's binaries: they are not in the sandbox, and running
    # them records a process instead of failing with "No such file or directory".
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 2 --ntasks-per-node=2
        ./app -in in.lj
        OMP_NUM_THREADS=2 /opt/tools/bin/run --x && echo ok
        srun bin/solver.sh 3
        /opt/conda/bin/python train.py
    """,
    )
    got = sorted((p.program, p.argv, p.launcher, p.node) for p in side.processes)
    assert got == [("./app", ("-in", "in.lj"), "direct", 0), ("/opt/tools/bin/run", ("--x",), "direct", 0)] + [
        ("bin/solver.sh", ("3",), "srun", n) for n in (0, 0, 1, 1)
    ] + [("train.py", (), "direct", 0)]
    assert not side.failures


def test_horovodrun_and_project_environment_runners(tmp_path):
    # horovodrun -np 4 -H node01:2,node02:2 places ranks like mpirun (host:slots, by slot);
    # `poetry run` / `uv run` run their command in the project's environment.
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH -N 2 --ntasks-per-node=2
        horovodrun -np 4 -H node01:2,node02:2 python hvd.py
        poetry run python p.py
        uv run --with numpy python u.py
    """,
    )
    assert sorted((p.program, p.node, p.rank) for p in side.processes if p.program == "hvd.py") == [
        ("hvd.py", 0, 0),
        ("hvd.py", 0, 1),
        ("hvd.py", 1, 2),
        ("hvd.py", 1, 3),
    ]
    assert sorted(p.program for p in side.processes if p.program != "hvd.py") == ["p.py", "u.py"]
