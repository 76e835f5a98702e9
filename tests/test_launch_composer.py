"""MosaicML Composer's launcher (`composer -n N train.py`), added through the launcher registry.

Expected values follow composer/cli/launcher.py (_get_parser/_parse_args): -n/--nproc processes on the
node; --world_size, --base_rank, --node_rank, --master_addr, --master_port default to the variables of
the same name (not PET_*); world_size > nproc means several nodes. The torch runtime sets PET_NNODES,
PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT on every node (Kubeflow Trainer torch plugin).
"""

from __future__ import annotations

from translator.launchers import detect, registry
from translator.launchers.common import Tok, scan_options
from translator.pipeline import read_and_resolve
from translator.read import ast
from translator.read.classify import classify

TWO_NODES = "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
ONE_NODE = "#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
PET = '--node_rank "$PET_NODE_RANK" --master_addr "$PET_MASTER_ADDR" --master_port "$PET_MASTER_PORT"'


def intent_of(body: str, header: str = TWO_NODES):
    script, job, err = read_and_resolve("job.sbatch", ("#!/bin/bash\n" + header + body).encode())
    assert err is None
    return detect(script, job)


def codes(intent):
    return {f.code for f in intent.findings}


def test_multinode_options_come_from_the_runtime():
    i = intent_of(
        'srun bash -c "composer -n 8 --world_size $((SLURM_NNODES * 8)) --node_rank \\$SLURM_NODEID '
        '--master_addr $(hostname) --master_port 29500 train.py --lr 0.1"\n'
    )
    assert i.family == "composer" and i.runtime == "torch-distributed" and i.framework == "torch"
    assert i.num_nodes == 2 and i.proc_per_node == 8
    # 2 nodes x 8 processes; rank/address/port per node from PET_*; user words as "$@"
    assert i.command == ("bash", "-c")
    assert i.args == (f'exec composer -n 8 --world_size 16 {PET} "$@"', "composer", "train.py", "--lr", "0.1")
    assert {"L355", "L357"} <= codes(i) and "L302" not in codes(i)


def test_long_nproc_spelling_and_equals_form():
    i = intent_of("srun composer --nproc=8 --world_size=16 --node_rank=0 train.py\n")
    assert i.args[0] == f'exec composer -n 8 --world_size 16 {PET} "$@"'
    assert i.args[1:] == ("composer", "train.py")


def test_one_node_keeps_the_command_without_node_set_options():
    i = intent_of("composer -n 4 --master_port 12345 train.py --lr 0.1\n", ONE_NODE)
    assert i.command == ("composer",) and i.args == ("-n", "4", "train.py", "--lr", "0.1")
    assert i.num_nodes == 1 and i.proc_per_node == 4 and not i.uses_shell
    assert "L355" in codes(i) and "L356" not in codes(i)


def test_one_node_without_nproc_keeps_composers_default():
    # composer's default is one process per visible GPU: the pod gets the same GPUs, nothing to write
    i = intent_of("composer train.py\n", ONE_NODE)
    assert i.command == ("composer",) and i.args == ("train.py",)
    assert i.proc_per_node == 4 and "L355" not in codes(i)


def test_flags_are_not_given_a_value():
    i = intent_of("composer -v -m mypkg.train --epochs 3\n", ONE_NODE)
    assert i.args == ("-v", "-m", "mypkg.train", "--epochs", "3")


def test_multinode_without_nproc_writes_the_gpus_per_node():
    i = intent_of(
        "srun composer --world_size 8 --node_rank $SLURM_NODEID train.py\n",
        "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n",
    )
    assert i.args[0] == f'exec composer -n 4 --world_size 8 {PET} "$@"'
    assert "L356" in codes(i)


def test_batch_step_on_several_nodes():
    # without srun the batch step runs on node 0 only
    i = intent_of("composer -n 8 --world_size 16 --node_rank 0 --master_addr h --master_port 1 train.py\n")
    assert "L350" in codes(i) and i.num_nodes == 2
    i = intent_of("composer -n 8 train.py\n")
    assert "L318" in codes(i) and i.num_nodes == 1
    assert i.command == ("composer",) and i.args == ("-n", "8", "train.py")


def test_srun_with_several_tasks_per_node_and_mpi_plugin_are_reported():
    i = intent_of(
        "srun composer -n 8 train.py\n", "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n"
    )
    assert i.family == "composer" and "L303" in codes(i)
    i = intent_of("srun --mpi=pmix composer -n 8 train.py\n")
    assert i.family == "composer" and "L336" in codes(i)


def test_registry_names_reach_the_reader_and_the_profile():
    from translator.profile.load import LAUNCHER_FAMILIES

    assert "composer" in registry.NAMES and LAUNCHER_FAMILIES == registry.NAMES
    assert registry.NAMES[-1] == "script"
    assert classify(["composer", "-n", "8", "train.py"]) == ast.LAUNCH
    assert classify(["accelerate", "launch", "t.py"]) == ast.LAUNCH
    assert classify(["accelerate", "config"]) == ast.OTHER
    assert classify(["shifter", "--image=x", "python", "t.py"]) == ast.OTHER
    # PHP's dependency manager has the same name; its commands are ordinary commands
    assert classify(["composer", "install", "--no-dev"]) == ast.OTHER


def test_php_composer_is_not_the_launcher():
    i = intent_of("composer install --no-dev\npython train.py\n", ONE_NODE)
    assert i.family == "python" and i.args == ("train.py",)


def test_detection_order_is_the_registry_order():
    names = [f.name for f in registry.FAMILIES]
    # torchrun before mpi (srun --mpi=pmix torchrun is torchrun), python last (it takes the rest)
    assert names.index("torchrun") < names.index("mpi") and names[-1] == "python"
    assert intent_of("srun --mpi=pmix torchrun --nproc_per_node 8 t.py\n").family == "torchrun"


def test_scan_options_groups_values_and_stops_at_the_program():
    toks = [Tok(w, w, True) for w in ("--a=1", "-b", "2", "--flag", "-", "x")]
    opts, j = scan_options(toks, lambda k: 0 if k == "--flag" else 1)
    assert [(o.key, o.inline, [t.value for t in o.group]) for o in opts] == [
        ("--a", "1", ["--a=1"]),
        ("-b", None, ["-b", "2"]),
        ("--flag", None, ["--flag"]),
    ]
    assert j == 4 and opts[1].value.value == "2" and opts[0].value is None
    # an option missing its value at the end takes what is there
    opts, j = scan_options([Tok("--x", "--x", True)], lambda k: 1)
    assert j == 1 and opts[0].group == (Tok("--x", "--x", True),)
    # key: underscores and dashes compare equal by default
    opts, _ = scan_options([Tok("--node_rank", "--node_rank", True), Tok("3", "3", True)], lambda k: 1)
    assert opts[0].key == "--node-rank"
