"""Launch lines built in variables (Hugging Face's accelerate Slurm template, site templates)."""

from __future__ import annotations

import pytest

from translator.launchers import detect
from translator.launchers.indirect import split_shell_words
from translator.pipeline import read_and_resolve

HEADER = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"


def intent_of(body: str):
    script, job, err = read_and_resolve("job.sbatch", (HEADER + body).encode())
    assert err is None
    return detect(script, job)


def test_accelerate_template_with_cmd_variable():
    body = (
        "GPUS_PER_NODE=8\n"
        "head_node_ip=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)\n"
        'export LAUNCHER="accelerate launch \\\n'
        "    --num_processes $((SLURM_NNODES * GPUS_PER_NODE)) \\\n"
        "    --num_machines $SLURM_NNODES \\\n"
        "    --rdzv_backend c10d \\\n"
        "    --main_process_ip $head_node_ip \\\n"
        "    --main_process_port 29500 \\\n"
        '    "\n'
        'export SCRIPT="/accelerate/examples/complete_nlp_example.py"\n'
        'export SCRIPT_ARGS=" \\\n    --mixed_precision fp16 \\\n    --output_dir /accelerate/examples/output \\\n    "\n'
        'export CMD="$LAUNCHER $SCRIPT $SCRIPT_ARGS"\n'
        "srun $CMD\n"
    )
    i = intent_of(body)
    assert i.family == "accelerate" and i.num_nodes == 2
    assert i.command == ("bash", "-c")
    assert i.args[1:] == (
        "accelerate",
        "--num_processes",
        "16",
        "/accelerate/examples/complete_nlp_example.py",
        "--mixed_precision",
        "fp16",
        "--output_dir",
        "/accelerate/examples/output",
    )


def test_bash_c_with_double_quoted_variables():
    i = intent_of(
        'export LAUNCHER="torchrun --nproc_per_node 8 --nnodes $SLURM_NNODES"\n'
        'srun bash -c "$LAUNCHER train.py --lr 0.1"\n'
    )
    assert i.family == "torchrun"
    assert i.args == ("--nproc-per-node", "8", "train.py", "--lr", "0.1")


def test_literal_argument_string_is_word_split_like_the_shell():
    i = intent_of('ARGS="--lr 0.1 --batch 64"\nsrun torchrun --nproc_per_node 8 train.py $ARGS\n')
    assert i.args == ("--nproc-per-node", "8", "train.py", "--lr", "0.1", "--batch", "64")
    # quoted: one word, as the shell passes it
    i = intent_of('ARGS="--lr 0.1"\nsrun torchrun --nproc_per_node 8 train.py "$ARGS"\n')
    assert i.args == ("--nproc-per-node", "8", "train.py", "--lr 0.1")


def test_pyxis_image_in_a_variable():
    i = intent_of(
        'CONTAINER="nvcr.io#nvidia/nemo:24.01"\nMOUNTS="/lustre/data:/data"\n'
        'srun --container-image="$CONTAINER" --container-mounts="$MOUNTS" torchrun --nproc_per_node 8 t.py\n'
    )
    assert i.image == "nvcr.io/nvidia/nemo:24.01" and i.mounts == (("/lustre/data", "/data"),)


def test_variable_assigned_in_a_block_is_not_guessed():
    i = intent_of('if [ -n "$X" ]; then CMD="python a.py"; else CMD="python b.py"; fi\nsrun $CMD\n')
    assert i.family == "script"


@pytest.mark.parametrize(
    "text, words",
    [
        ("a 'b c' \"d $e\" f\\ g", ["a", "b c", "d $e", "f g"]),
        ("--n $((A * B)) --ip $(hostname -i)", ["--n", "$((A * B))", "--ip", "$(hostname -i)"]),
        ("x \\\n y", ["x", "y"]),
    ],
)
def test_split_shell_words(text, words):
    assert [t.value for t in split_shell_words(text)] == words


@pytest.mark.parametrize("text", ["a; b", "a && b", "a | b", "a > f", "`id`", "a\nb"])
def test_split_shell_words_refuses_shell_logic(text):
    assert split_shell_words(text) is None


def test_program_in_a_variable_with_a_known_value():
    i = intent_of("PY=python3\nsrun $PY train.py\n")
    assert i.family == "srun-tasks" and i.args[-2:] == ("python3", "train.py")


def test_assignments_used_by_the_launch_are_consumed_lines():
    i = intent_of('A=1\nLAUNCHER="torchrun --nproc_per_node 8"\nCMD="$LAUNCHER t.py"\nsrun $CMD\n')
    assert i.consumed_lines == (6, 7, 8)  # LAUNCHER, CMD, srun (not A)
