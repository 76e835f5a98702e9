"""Launcher detection and per-family rewriting (translator/launchers), on scripts read by the real reader."""

from __future__ import annotations

import pytest

from translator.launchers import common, container, detect
from translator.pipeline import read_and_resolve
from translator.read.ast import Word


def intent_of(body: str, header: str = "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"):
    text = "#!/bin/bash\n" + header + body
    script, job, err = read_and_resolve("job.sbatch", text.encode())
    assert err is None
    return detect(script, job)


def codes(intent):
    return {f.code for f in intent.findings}


@pytest.mark.parametrize(
    "flags",
    [
        "--nnodes=$SLURM_NNODES --node_rank=$SLURM_NODEID --master_addr=$MASTER_ADDR --master_port=29500",
        "--nnodes $SLURM_NNODES --node-rank $SLURM_NODEID --master-addr $MASTER_ADDR --master-port 29500",
        "--rdzv_id=$SLURM_JOB_ID --rdzv_backend=c10d --rdzv_endpoint=$head:29500",
        "--rdzv-id $SLURM_JOB_ID --rdzv-backend c10d --rdzv-endpoint $head:29500 --nnodes 2",
    ],
)
def test_torchrun_rendezvous_flags_dropped_in_every_spelling(flags):
    i = intent_of(f"srun torchrun {flags} --nproc_per_node 8 train.py --x 1\n")
    assert i.family == "torchrun" and i.runtime == "torch-distributed"
    assert i.command == ("torchrun",)
    assert i.args == ("--nproc-per-node", "8", "train.py", "--x", "1")
    assert i.proc_per_node == 8 and i.num_nodes == 2
    assert "L301" in codes(i)


def test_torchrun_keeps_other_options_and_script_arguments_that_look_like_flags():
    i = intent_of("torchrun --nproc-per-node=gpu --max-restarts 3 train.py --nnodes 5 --master_port 1\n")
    assert i.args == (
        "--nproc-per-node",
        "gpu",
        "--max-restarts",
        "3",
        "train.py",
        "--nnodes",
        "5",
        "--master_port",
        "1",
    )


def test_srun_torchrun_with_many_tasks_per_node_is_reported():
    i = intent_of("srun torchrun --nproc_per_node 4 train.py\n", "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n")
    assert i.family == "torchrun" and "L303" in codes(i)


def test_python_m_torch_distributed_launch_is_kept_and_reported():
    i = intent_of("python -m torch.distributed.launch --nproc_per_node=2 --use_env train.py\n")
    assert i.command == ("python",) and i.args[:2] == ("-m", "torch.distributed.launch")
    assert "L321" in codes(i)


def test_single_quoted_bash_c_defers_expansion_to_the_task():
    i = intent_of("srun bash -c 'torchrun --node_rank=$SLURM_NODEID --nproc_per_node=8 train.py'\n")
    assert i.family == "torchrun" and "L302" not in codes(i) and "L301" in codes(i)
    i = intent_of("srun torchrun --node_rank=$SLURM_NODEID --nproc_per_node=8 train.py\n")
    assert "L302" in codes(i)


def test_srun_python_one_task_per_gpu_becomes_torchrun_with_shim():
    i = intent_of("srun python train.py\n", "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4\n")
    assert i.family == "srun-tasks" and i.command == ("torchrun",)
    assert i.args[:5] == ("--nproc-per-node", "4", "--no-python", "bash", "-c")
    assert i.args[6:] == ("slurm2kf-task", "python", "train.py")
    assert i.proc_per_node == 4


def test_plain_python_is_one_node():
    i = intent_of("python3 train.py --lr 0.1\n")
    assert i.family == "python" and i.num_nodes == 1 and i.command == ("python3",)
    assert "L318" in codes(i)


def test_multi_launch_falls_back_to_script():
    # several launch lines on 2 nodes: batch mode (the script runs once on the launcher pod: L366)
    i = intent_of("python prep.py\nsrun torchrun --nproc_per_node 8 train.py\n")
    assert i.family == "script" and i.command == ("bash", "-c") and "L366" in codes(i) and i.framework == "mpi"


def test_informational_srun_steps_do_not_force_the_fallback():
    i = intent_of("srun hostname\nsrun nvidia-smi -L\nsrun torchrun --nproc_per_node 8 train.py\n")
    assert i.family == "torchrun" and "L326" in codes(i)


def test_background_launch_falls_back_to_script():
    i = intent_of("srun torchrun --nproc_per_node 8 train.py &\nwait\n")
    assert i.family == "script"


def test_no_launch_line_falls_back_to_script():
    i = intent_of("./run_everything.sh\n")
    assert i.family == "script"


def test_mpi_families():
    i = intent_of(
        "mpirun -np 16 -npernode 8 --mca btl ^openib -x NCCL_DEBUG python train.py\n",
        "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gres=gpu:8\n",
    )
    assert i.family == "mpi" and i.runtime == "deepspeed-distributed"
    assert i.args == (
        "--hostfile",
        "/etc/mpi/hostfile",
        "-np",
        "16",
        "-npernode",
        "8",
        "--mca",
        "btl",
        "^openib",
        "-x",
        "NCCL_DEBUG",
        "python",
        "train.py",
    )
    assert "L309" not in codes(i), "8 GPUs per node give 8 slots: no oversubscription"
    i = intent_of("srun --mpi=pmi2 ./solver in.dat\n", "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n")
    assert i.family == "mpi" and i.command == ("mpirun",) and "L308" in codes(i)


def test_deepspeed_single_and_multi_node():
    one = intent_of("deepspeed --num_gpus 4 train.py\n", "#SBATCH --nodes=1\n#SBATCH --gres=gpu:4\n")
    assert one.runtime == "torch-distributed" and one.command == ("deepspeed",)
    # Without a hostfile DeepSpeed's runner uses local resources only (deepspeed/launcher/runner.py: "Unable
    # to find hostfile, will proceed with training with local resources only", master 127.0.0.1), even with
    # --num_nodes 2: on Slurm it trained on the batch node alone, so the TrainJob has one node (and L343).
    alone = intent_of("deepspeed --num_nodes 2 --master_addr $(hostname) train.py\n")
    assert alone.runtime == "torch-distributed" and alone.num_nodes == 1
    assert "L343" in {f.code for f in alone.findings}
    multi = intent_of("deepspeed --hostfile hosts --num_nodes 2 --master_addr $(hostname) train.py\n")
    assert multi.runtime == "deepspeed-distributed" and multi.framework == "mpi"
    assert multi.args[:4] == ("--hostfile", "/etc/mpi/hostfile", "--launcher", "openmpi")


def test_accelerate_single_node_stays_plain():
    i = intent_of("accelerate launch --multi_gpu --num_processes 4 train.py\n", "#SBATCH --gres=gpu:4\n")
    assert i.command == ("accelerate",) and i.args == ("launch", "--multi_gpu", "--num_processes", "4", "train.py")


def test_jax_detected_from_the_script():
    i = intent_of("python -c 'import jax'\nsrun python train.py\n")
    assert i.family == "jax" and i.runtime == "jax-distributed"


@pytest.mark.parametrize(
    "ref, image",
    [
        ("docker://nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io/nvidia/pytorch:24.01-py3"),
        ("nvcr.io#nvidia/pytorch:24.01-py3", "nvcr.io/nvidia/pytorch:24.01-py3"),
        ("user@nvcr.io#nvidia/pytorch:24.01-py3", "nvcr.io/nvidia/pytorch:24.01-py3"),
        ("ubuntu:22.04", "ubuntu:22.04"),
        ("ghcr.io/org/img@sha256:abcd", "ghcr.io/org/img@sha256:abcd"),
        ("/shared/images/torch.sif", None),
        ("torch.sqsh", None),
        ("./sandbox", None),
        ("library://sylabs/default/alpine", None),
        ("oras://ghcr.io/org/img.sif:1", None),
    ],
)
def test_container_references(ref, image):
    assert container.registry_image(ref)[0] == image


def test_pyxis_and_apptainer_wrap_the_inner_family():
    i = intent_of(
        "srun --container-image=nvcr.io#nvidia/pytorch:24.01-py3 --container-mounts=/a:/b,/c "
        "torchrun --nproc_per_node=8 train.py\n"
    )
    assert i.family == "torchrun" and i.image == "nvcr.io/nvidia/pytorch:24.01-py3"
    assert i.mounts == (("/a", "/b"), ("/c", "/c"))
    i = intent_of("srun singularity exec --nv --bind /data img.sif torchrun --nproc_per_node 8 t.py\n")
    assert i.image is None and "L310" in codes(i) and i.family == "torchrun"


def test_parse_srun_options():
    words = tuple(
        Word(w, w, True)
        for w in [
            "srun",
            "-N2",
            "-n",
            "8",
            "--ntasks-per-node=4",
            "-l",
            "--cpu-bind",
            "cores",
            "--exclusive",
            "python",
            "-u",
            "x.py",
        ]
    )
    call = common.parse_srun(words)
    assert call.options["nodes"] == "2" and call.options["ntasks"] == "8"
    assert call.options["ntasks-per-node"] == "4" and call.options["cpu-bind"] == "cores"
    assert [w.value for w in call.command] == ["python", "-u", "x.py"]


def test_job_shape_rules():
    from translator.slurm.job import JobFields

    s = common.job_shape(JobFields(nodes_min=4, ntasks=16))
    assert (s.nodes, s.tasks_per_node, s.total_tasks) == (4, 4, 16)
    s = common.job_shape(JobFields(ntasks=8, ntasks_per_node=4))
    assert (s.nodes, s.tasks_per_node) == (2, 4)
    s = common.job_shape(JobFields(nodes_min=3, gpus_total=8))
    assert s.gpus_per_node == 3 and s.gpus_uneven
    s = common.job_shape(JobFields(nodes_min=2, ntasks_per_node=2, gpus_per_task=2))
    assert s.gpus_per_node == 4


def test_jax_detected_from_the_program_file_next_to_the_script(tmp_path):
    (tmp_path / "train.py").write_text("import jax\njax.distributed.initialize()\n")
    (tmp_path / "other.py").write_text("import torch\n")
    header = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
    for prog, family in (("train.py", "jax"), ("other.py", "srun-tasks")):
        path = tmp_path / f"{prog}.sbatch"
        path.write_text(header + f"srun python {prog}\n")
        script, job, _ = read_and_resolve(str(path))
        assert detect(script, job).family == family, prog


@pytest.mark.parametrize(
    "line, command, env",
    [
        ("time srun torchrun --nproc_per_node 8 t.py", ("torchrun",), ()),
        ("exec srun torchrun --nproc_per_node 8 t.py", ("torchrun",), ()),
        (
            "srun env NCCL_DEBUG=INFO stdbuf -oL torchrun --nproc_per_node=8 t.py",
            ("torchrun",),
            (("NCCL_DEBUG", "INFO"),),
        ),
        ("NCCL_DEBUG=INFO nohup srun torchrun --nproc_per_node=8 t.py", ("torchrun",), (("NCCL_DEBUG", "INFO"),)),
    ],
)
def test_wrappers_and_prefix_assignments(line, command, env):
    i = intent_of("srun env\n" + line + "\n")
    assert i.command == command and i.args[-1] == "t.py"
    assert i.env == env
    assert "L326" in codes(i)


def test_prefix_assignment_needing_the_shell_is_reported():
    i = intent_of("X=$(hostname) srun torchrun --nproc_per_node 8 t.py\n")
    assert i.env == () and "L327" in codes(i)


def test_heredoc_program_keeps_its_input_through_the_fallback():
    i = intent_of("python - <<'EOF'\nprint('hello')\nEOF\n")
    assert i.family == "script" and "print('hello')" in i.args[0]


def test_launch_redirection_is_reported():
    i = intent_of("srun torchrun --nproc_per_node 8 t.py > train.log 2>&1\n")
    assert i.family == "torchrun" and "L334" in codes(i)


def test_script_without_commands():
    i = intent_of("# nothing here\n")
    assert i.command == ("true",) and "L333" in codes(i)


def test_mpi4py_under_srun_is_mpi():
    i = intent_of("srun python -m mpi4py.futures sweep.py\n", "#SBATCH --ntasks=16\n")
    assert i.family == "mpi" and i.args[-4:] == ("python", "-m", "mpi4py.futures", "sweep.py")


def test_srun_single_task_runs_on_one_node():
    i = intent_of("srun -n1 python eval.py\n")
    assert i.family == "python" and i.num_nodes == 1
