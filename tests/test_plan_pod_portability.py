"""Findings the fallback was missing (issue 19.6): what a Slurm node gave the script that a pod lacks.

Expected values are derived by hand from:
- a pod's network: one interface `eth0` plus `lo` (Kubernetes pod networking); NCCL_SOCKET_IFNAME is a
  comma list of interface prefixes, `^` excludes, `=` asks for exact names (NCCL environment variables
  docs); GLOO_SOCKET_IFNAME names interfaces (PyTorch distributed docs); OMPI_MCA_btl_tcp_if_include and
  `--mca btl_tcp_if_include` take interface names or CIDR subnets (Open MPI FAQ); UCX_NET_DEVICES takes
  `device:port` names or `all` (UCX docs);
- sbatch(1): the batch script gets the submission environment (`--export=ALL` by default); a pod has the
  image's environment and the TrainJob env only;
- bash(1): `source FILE` of a missing file is an error (fatal under `set -e`); an indexed array's
  subscript is an arithmetic expression, an unset name in it is 0; `clear`/`tput` need TERM (ncurses);
- the Trainer: a pod gets GPUs only through a `nvidia.com/gpu` request (resourcesPerNode).
"""

from __future__ import annotations

import pytest

from translator.pipeline import ConvertSettings, convert


def conv(text, **settings):
    return convert("job.sbatch", data=text.encode(), settings=ConvertSettings(**settings))


def found(c, code):
    return [f for f in c.findings if f.code == code]


# A fallback script modelled on public multi-node jobs (a loop of srun steps: the body runs as it is).
FALLBACK = """#!/bin/bash
#SBATCH --job-name=sweep
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
{pre}
for lr in 0.1 0.01; do
  srun python train.py --lr $lr {args}
done
"""

# A native torchrun script (the launch line becomes the TrainJob command).
TORCHRUN = """#!/bin/bash
#SBATCH --job-name=gpt
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
{gres}
{pre}
srun torchrun --nnodes=2 --nproc_per_node={nproc} train.py {args}
"""


def fallback(pre="", args=""):
    return conv(FALLBACK.format(pre=pre, args=args))


def native(pre="", args="", gres="#SBATCH --gpus-per-node=8", nproc="8", **settings):
    return conv(TORCHRUN.format(pre=pre, args=args, gres=gres, nproc=nproc), **settings)


# ---- P460 network interfaces -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pre, named",
    [
        ("export NCCL_SOCKET_IFNAME=ib0", "ib0"),
        ("export NCCL_SOCKET_IFNAME=hsn0,hsn1", "hsn0, hsn1"),
        ("export GLOO_SOCKET_IFNAME=ib0", "ib0"),
        ("export OMPI_MCA_btl_tcp_if_include=ib0", "ib0"),
        ("export OMPI_MCA_btl_tcp_if_include=10.10.0.0/16", "10.10.0.0/16"),
        ("export UCX_NET_DEVICES=mlx5_0:1", "mlx5_0"),
    ],
)
def test_interface_names_of_the_slurm_nodes(pre, named):
    for c in (fallback(pre), native(pre)):
        (f,) = found(c, "P460")
        # the assignment is line 6 of both templates
        assert f.line == 6 and f.severity == "warning" and f"({named})" in f.message and "eth0" in f.suggestion


def test_interface_in_mpirun_mca_option():
    c = conv(
        "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n"
        "mpirun -np 8 --mca btl_tcp_if_include ib0 ./solver in.dat\n"
    )
    (f,) = found(c, "P460")
    assert f.line == 4 and "btl_tcp_if_include=ib0" in f.message


@pytest.mark.parametrize(
    "pre",
    [
        "export NCCL_SOCKET_IFNAME=eth0",
        "export NCCL_SOCKET_IFNAME=^docker0,lo",
        "export NCCL_SOCKET_IFNAME==eth0",
        "export GLOO_SOCKET_IFNAME=eth",
        "export UCX_NET_DEVICES=all",
        "export NCCL_SOCKET_IFNAME=$IFACE",
        "export NCCL_DEBUG=INFO",
    ],
)
def test_interfaces_a_pod_has_are_fine(pre):
    assert not found(fallback(pre), "P460") and not found(native(pre), "P460")


# ---- L348 the submission environment (fallback) -------------------------------------------------------


def test_variables_only_the_submission_environment_had():
    c = fallback('DATA="$DATA_ROOT/imagenet"\nmkdir -p $SCRATCH/runs', args="--data $DATA --wandb $WANDB_PROJECT")
    got = {f.message.split(" ", 1)[0]: f.line for f in found(c, "L348")}
    # DATA_ROOT read on line 6, SCRATCH on 7, WANDB_PROJECT on 9; DATA is set by the script
    assert got == {"$DATA_ROOT": 6, "$SCRATCH": 7, "$WANDB_PROJECT": 9}
    assert all("set " in f.suggestion for f in found(c, "L348"))


@pytest.mark.parametrize(
    "pre, args",
    [
        ("OUT=/tmp/o", "--out $OUT"),  # set by the script
        ("", "--out ${OUT_DIR:-/tmp/o}"),  # a default when unset
        ("", "--nodes $SLURM_NNODES --host $HOSTNAME --home $HOME"),  # Slurm's / the pod's own
        ("export PYTHONPATH=$PYTHONPATH:$PWD/src", ""),  # a path list extended
        ("read -r STEPS < steps.txt", "--steps $STEPS"),  # set by read
        ("echo 'cost: $5'", ""),  # single-quoted: not expanded
        ("source env.sh", "--data $DATA_ROOT"),  # a sourced file may set it: not guessed
        ("module load cuda/12.4", "--cuda $CUDA_HOME"),  # module-provided
    ],
)
def test_no_submission_env_finding_when_the_value_is_known(pre, args):
    assert not found(fallback(pre, args), "L348")


def test_native_launch_line_keeps_its_own_finding_once():
    c = native(args="--data $DATA_ROOT/x")
    msgs = [f.message for f in found(c, "L348")]
    assert len(msgs) == 1 and "$DATA_ROOT" in msgs[0]


# ---- P461 sourced site files -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pre",
    ["source /etc/profile.d/modules.sh", ". /opt/site/env.sh", "source ~/.bashrc", 'source "$HOME/.profile"'],
)
def test_sourced_site_files_in_the_fallback(pre):
    c = fallback(pre)
    (f,) = found(c, "P461")
    assert f.line == 6 and pre.split()[1].strip('"') in f.message


def test_sourced_files_dropped_by_a_native_family_are_not_reported_twice():
    c = native("source /etc/profile.d/modules.sh")
    assert found(c, "P440") and not found(c, "P461")


@pytest.mark.parametrize(
    "pre",
    ["source venv/bin/activate", "source /opt/conda/etc/profile.d/conda.sh", "source ./local_env.sh"],
)
def test_activations_and_job_files_are_not_site_files(pre):
    assert not found(fallback(pre), "P461")


# ---- P462 terminal commands ----------------------------------------------------------------------------


@pytest.mark.parametrize("pre, word", [("clear", "clear"), ("COLS=$(tput cols)", "tput"), ("reset", "reset")])
def test_terminal_commands_without_set_e(pre, word):
    (f,) = found(fallback(pre), "P462")
    assert f.line == 6 and f"`{word}`" in f.message


def test_terminal_commands_under_set_e_keep_l345_only():
    c = conv(FALLBACK.format(pre="set -e\nclear", args="").replace("#!/bin/bash\n", "#!/bin/bash\n", 1))
    assert found(c, "L345") and not found(c, "P462")


def test_terminal_command_dropped_by_a_native_family_is_not_reported():
    c = native("clear")
    assert not found(c, "P462")


# ---- P463 array subscripts -------------------------------------------------------------------------------


def test_subscript_variable_never_set():
    c = fallback("aug=(none flip crop)", args="--aug ${aug[i]}")
    (f,) = found(c, "P463")
    assert f.line == 8 and "`${aug[i]}`" in f.message and "never sets" in f.message


def test_subscript_set_only_in_a_loop_the_native_launch_drops():
    text = (
        "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
        "aug=(none flip)\nfor i in 0 1; do echo $i; done\n"
        "srun torchrun --nnodes=2 --nproc_per_node=8 train.py --aug ${aug[i]}\n"
    )
    (f,) = found(conv(text), "P463")
    assert f.line == 7 and "loop" in f.message


def test_subscript_by_array_task_id_with_one_trainjob_for_the_array():
    text = (
        "#!/bin/bash\n#SBATCH --array=0-2\n#SBATCH --gpus-per-node=1\n"
        "LRS=(0.1 0.01 0.001)\nIDX=$SLURM_ARRAY_TASK_ID\n"
        "python train.py --lr ${LRS[$SLURM_ARRAY_TASK_ID]} --seed ${SEEDS[IDX]}\n"
    )
    c = conv(text)
    assert [f.line for f in found(c, "P463")] == [6, 6]
    # one TrainJob per index sets SLURM_ARRAY_TASK_ID: nothing to report
    assert not found(conv(text, array_mode="expand"), "P463")


@pytest.mark.parametrize(
    "pre, args",
    [
        ("aug=(none flip)\ni=1", "--aug ${aug[i]}"),
        ("aug=(none flip)", "--aug ${aug[0]}"),
        ("aug=(none flip)", "--aug ${aug[$SLURM_PROCID]}"),
        ("aug=(none flip)", "--aug '${aug[i]}'"),
    ],
)
def test_subscripts_that_are_set(pre, args):
    assert not found(fallback(pre, args), "P463")


def test_array_task_id_subscript_in_a_job_without_array_is_the_same_on_both_sides():
    # no --array: SLURM_ARRAY_TASK_ID is unset on Slurm too, element 0 both times
    c = conv("#!/bin/bash\nLRS=(0.1 0.01)\npython train.py --lr ${LRS[$SLURM_ARRAY_TASK_ID]}\n")
    assert not found(c, "P463")


# ---- P464 GPU training without a GPU request -------------------------------------------------------------


@pytest.mark.parametrize(
    "pre, nproc, signal",
    [
        ("export NCCL_DEBUG=INFO", "4", "NCCL_DEBUG"),
        ("GPUS_PER_NODE=8", "$GPUS_PER_NODE", "GPUS_PER_NODE=8"),
        ("", "gpu", "--nproc_per_node=gpu"),
    ],
)
def test_gpu_training_without_gpu_request(pre, nproc, signal):
    c = native(pre=pre, gres="#SBATCH -p gpu", nproc=nproc)
    (f,) = found(c, "P464")
    assert signal in f.message and "gpus-per-node" in f.suggestion


def test_eight_processes_on_an_exclusive_node_without_gpus():
    c = native(gres="#SBATCH --exclusive", nproc="8")
    (f,) = found(c, "P464")
    assert "--exclusive" in f.message and f.line == 7


def test_gpu_program_arguments_on_the_mpi_runtime():
    c = conv(
        "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n"
        "srun --mpi=pmix python train.py --gpus 4 --strategy ddp\n"
    )
    (f,) = found(c, "P464")
    assert "--gpus 4" in f.message and f.line == 4


@pytest.mark.parametrize(
    "gres, nproc, pre",
    [
        ("#SBATCH --gpus-per-node=8", "8", "export NCCL_DEBUG=INFO"),  # GPUs requested
        ("#SBATCH --gres=gpu:4", "4", ""),
        ("#SBATCH -p cpu", "8", ""),  # 8 CPU processes, not exclusive: a CPU training
        ("#SBATCH --exclusive", "1", ""),  # one process on a whole node
    ],
)
def test_no_gpu_finding_when_gpus_are_requested_or_nothing_says_gpu(gres, nproc, pre):
    assert not found(native(pre=pre, gres=gres, nproc=nproc), "P464")


def test_cpu_mpi_job_on_exclusive_nodes_is_not_a_gpu_job():
    c = conv("#!/bin/bash\n#SBATCH -N 4\n#SBATCH --exclusive\n#SBATCH --ntasks-per-node=64\nsrun ./lmp -in in.lj\n")
    assert not found(c, "P464")


# ---- a script that is fine has none of these ---------------------------------------------------------------


def test_clean_script_has_no_portability_finding():
    text = (
        "#!/bin/bash\n#SBATCH --job-name=ok\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
        "export NCCL_DEBUG=WARN\nexport OMP_NUM_THREADS=8\nDATA=/data/imagenet\n"
        "head=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)\n"
        "srun torchrun --nnodes=$SLURM_NNODES --nproc_per_node=8 --rdzv_endpoint=$head:29500 train.py --data $DATA\n"
    )
    c = conv(text)
    assert not {f.code for f in c.findings} & {"P460", "P461", "P462", "P463", "P464", "L348"}


def test_sbatch_export_option_decides_what_came_from_the_submission_environment():
    # sbatch(1) --export: NAME=value is set by sbatch itself; NONE passes no user variable; a name list
    # passes only those names
    base = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH {export}\nfor s in 1 2; do srun python t.py --d $DATA --w $WORK; done\n"
    c = conv(base.format(export="--export=ALL,DATA=/d"))
    assert [f.message.split(" ", 1)[0] for f in found(c, "L348")] == ["$WORK"]
    assert not found(conv(base.format(export="--export=NONE")), "L348")
    c = conv(base.format(export="--export=DATA"))
    assert [f.message.split(" ", 1)[0] for f in found(c, "L348")] == ["$DATA"]
