"""The shell body: statements, blocks with positions, words, classification, never-fail."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from translator.read import read_script
from translator.read import ast
from translator.read.ast import Block, Comment, iter_assignments, iter_commands

HEAD = "#!/bin/bash\n#SBATCH -N 2\n"


def body(text: str):
    s = read_script((HEAD + text).encode(), "job.sbatch")
    return s


def cmds(text: str):
    return list(iter_commands(body(text).body))


def launch_lines(text: str):
    return [(c.line, c.argv) for c in cmds(text) if c.kind == ast.LAUNCH]


# ---- classification --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line,kind",
    [
        ("module load cuda/12.1 nccl", ast.MODULE),
        ("module purge", ast.MODULE),
        ("module use /opt/modules", ast.MODULE),
        ("module swap gcc/9 gcc/11", ast.MODULE),
        ("ml PyTorch/2.1", ast.MODULE),
        ("source ~/miniconda3/etc/profile.d/conda.sh", ast.SOURCE),
        (". /etc/profile", ast.SOURCE),
        ("conda activate train", ast.CONDA),
        ("mamba activate train", ast.CONDA),
        ("micromamba activate -n train", ast.CONDA),
        ("source activate myenv", ast.CONDA),
        ("source venv/bin/activate", ast.VENV),
        (". /scratch/me/.venv/bin/activate", ast.VENV),
        ("pip install -r requirements.txt", ast.PIP),
        ("pip3 install --user torch", ast.PIP),
        ("python -m pip install -e .", ast.PIP),
        ("uv pip install flash-attn", ast.PIP),
        ("cd $SLURM_SUBMIT_DIR", ast.CD),
        ("sbatch --dependency=afterok:$SLURM_JOB_ID next.sh", ast.SBATCH),
        ("srun --ntasks-per-node=1 hostname", ast.LAUNCH),
        ("torchrun --nproc_per_node 8 train.py", ast.LAUNCH),
        ("python -m torch.distributed.run --nproc_per_node=4 train.py", ast.LAUNCH),
        ("python3 -m torch.distributed.launch train.py", ast.LAUNCH),
        ("mpirun -np $SLURM_NTASKS ./app", ast.LAUNCH),
        ("mpiexec -n 4 ./app", ast.LAUNCH),
        ("deepspeed --hostfile hosts train.py", ast.LAUNCH),
        ("accelerate launch --num_processes 8 train.py", ast.LAUNCH),
        ("python train.py --lr 3e-4", ast.LAUNCH),
        ("python3 -u -m trainer.main", ast.LAUNCH),
        ("python -c 'import torch; print(torch.cuda.is_available())'", ast.LAUNCH),
        ("/usr/bin/python3.10 train.py", ast.LAUNCH),
        ("apptainer exec --nv img.sif python train.py", ast.LAUNCH),
        ("singularity run docker://pytorch/pytorch", ast.LAUNCH),
        ("time srun python train.py", ast.LAUNCH),
        ("exec python train.py", ast.LAUNCH),
        ("nohup python train.py", ast.LAUNCH),
        ("stdbuf -oL -eL python train.py", ast.LAUNCH),
        ("stdbuf -o L python train.py", ast.LAUNCH),
        ("python --version", ast.OTHER),
        ("command -v conda", ast.OTHER),
        ("command python train.py", ast.LAUNCH),
        ("env CUDA_VISIBLE_DEVICES=0 python train.py", ast.LAUNCH),
        ("timeout 2h srun python train.py", ast.LAUNCH),
        ("conda run -n env python train.py", ast.LAUNCH),
        ("conda create -y -n env python=3.10", ast.CONDA),
        ("accelerate config", ast.OTHER),
        ("echo python train.py", ast.OTHER),
        ("nvidia-smi", ast.OTHER),
    ],
)
def test_classification(line, kind):
    [c] = cmds(line + "\n")
    assert c.kind == kind, (line, c.kind)
    assert c.line == 3


def test_prefix_words_are_kept_as_written():
    [c] = cmds("time srun --mpi=pmix python train.py\n")
    assert c.argv[:2] == ("time", "srun") and c.kind == ast.LAUNCH


def test_srun_keeps_its_own_options_and_quoting():
    [c] = cmds("srun --ntasks-per-node=1 bash -c 'torchrun --node_rank=$SLURM_NODEID x.py'\n")
    assert c.argv == ("srun", "--ntasks-per-node=1", "bash", "-c", "torchrun --node_rank=$SLURM_NODEID x.py")
    assert c.words[-1].literal is True  # single quotes: the batch shell does not expand it
    [c] = cmds("srun torchrun --node_rank=$SLURM_NODEID x.py\n")
    assert c.words[2].literal is False and c.words[2].value == "--node_rank=$SLURM_NODEID"


# ---- assignments and export ---------------------------------------------------------------------------


def test_assignments_and_exports():
    s = body('A=1\nexport B="two words" C=3\nexport D\ndeclare -x E=5\nF=6 G=7 srun x\nreadonly H=8\n')
    got = [(a.line, a.name, a.value.value, a.exported) for a in iter_assignments(s.body)]
    assert got == [
        (3, "A", "1", False),
        (4, "B", "two words", True),
        (4, "C", "3", True),
        (6, "E", "5", True),
        (7, "F", "6", False),
        (7, "G", "7", False),
        (8, "H", "8", False),
    ]
    exports = [c for c in iter_commands(s.body) if c.kind == ast.EXPORT]
    assert [(c.line, c.argv) for c in exports] == [(5, ("export", "D"))]
    [srun] = [c for c in iter_commands(s.body) if c.kind == ast.LAUNCH]
    assert [a.name for a in srun.prefix_assignments] == ["F", "G"] and srun.argv == ("srun", "x")


def test_assignment_value_words():
    s = body("head=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)\nPORT=29500\nP=~/x\n")
    [head, port, p] = list(iter_assignments(s.body))
    assert head.value.value == "$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)"
    assert head.value.literal is False
    assert port.value.literal is True
    assert p.value.literal is False


# ---- words ------------------------------------------------------------------------------------------


def test_word_values():
    [c] = cmds("""echo 'a b' "c $D" e\\ f "g\\"h" $'i\\tj' ${K:-x} `date` *.py ~ plain\n""")
    assert c.argv == ("echo", "a b", "c $D", "e f", 'g"h', "i\tj", "${K:-x}", "`date`", "*.py", "~", "plain")
    assert [w.literal for w in c.words] == [True, True, False, True, True, True, False, False, False, False, True]
    assert c.words[1].raw == "'a b'"


def test_operators_connectors_background_redirections():
    cs = cmds("module purge; module load x && srun a | tee log || echo fail\nsrun b > out.log 2>&1 &\nwait\n")
    assert [(c.argv[0], c.connector) for c in cs[:5]] == [
        ("module", ""),
        ("module", ";"),
        ("srun", "&&"),
        ("tee", "|"),
        ("echo", "||"),
    ]
    b = cs[5]
    assert b.background and b.redirections == (">out.log", "2>&1") and b.argv == ("srun", "b")
    assert cs[6].argv == ("wait",) and not cs[6].background


def test_comments_and_trailing_comments():
    s = body("set -e\n# load things\nmodule load x # trailing\necho a#b\n")
    assert isinstance(s.body[1], Comment) and s.body[1].line == 4 and s.body[1].text == "# load things"
    assert s.body[2].argv == ("module", "load", "x") and s.body[2].text == "module load x"
    assert s.body[3].argv == ("echo", "a#b")


def test_continuation_lines_keep_the_first_line_number():
    [c] = cmds("srun torchrun \\\n    --nnodes 4 \\\n    train.py\necho next\n")[:1]
    assert c.line == 3 and c.end_line == 5
    assert c.argv == ("srun", "torchrun", "--nnodes", "4", "train.py")
    assert c.text == "srun torchrun --nnodes 4 train.py"
    assert cmds("srun a \\\n b\necho next\n")[1].line == 5


def test_multiline_quotes_and_substitutions_do_not_split_commands():
    cs = cmds('python -c "\nimport os\nprint(1)\n"\nx=$(\n  hostname\n)\nsrun y\n')
    assert cs[0].kind == ast.LAUNCH and cs[0].line == 3 and cs[0].end_line == 6
    assert cs[-1].argv == ("srun", "y") and cs[-1].line == 10


# ---- blocks -----------------------------------------------------------------------------------------


def test_if_elif_else_block_with_positions():
    s = body(
        "if [ -f a ]; then\n  srun python a.py\nelif [ -f b ]; then\n  echo b\nelse\n  srun python c.py\nfi\necho after\n"
    )
    blk = s.body[0]
    assert isinstance(blk, Block) and blk.kind == "if" and (blk.line, blk.end_line) == (3, 9)
    assert blk.text == "if [ -f a ]; then"
    assert launch_lines("if [ -f a ]; then\n  srun python a.py\nelse\n  srun python c.py\nfi\n") == [
        (4, ("srun", "python", "a.py")),
        (6, ("srun", "python", "c.py")),
    ]
    assert s.body[1].argv == ("echo", "after")


def test_one_line_blocks():
    s = body("if true; then srun a; else srun b; fi\nfor i in 1 2; do srun c $i; done\n")
    assert [(b.kind, b.line, b.end_line) for b in s.body] == [("if", 3, 3), ("for", 4, 4)]
    assert [c.argv[:2] for c in iter_commands(s.body) if c.kind == ast.LAUNCH] == [
        ("srun", "a"),
        ("srun", "b"),
        ("srun", "c"),
    ]


def test_loops():
    s = body(
        "for n in $(seq 1 4); do\n  srun -N1 python w.py $n &\ndone\nwait\n"
        "while read -r host; do\n  echo $host\ndone < hosts.txt\n"
        "until false; do\n  break\ndone\n"
        "for ((i=0; i<3; i++)); do\n  echo $i\ndone\n"
    )
    kinds = [(b.kind, b.line, b.end_line) for b in s.body if isinstance(b, Block)]
    assert kinds == [("for", 3, 5), ("while", 7, 9), ("until", 10, 12), ("for", 13, 15)]
    srun = [c for c in iter_commands(s.body) if c.kind == ast.LAUNCH][0]
    assert srun.background and srun.line == 4


def test_case_block():
    s = body(
        'case "$MODE" in\n  train|ft) srun python train.py ;;\n  eval)\n    python eval.py\n    ;;\n  *) echo "?" ;;\nesac\n'
    )
    [blk] = [b for b in s.body if isinstance(b, Block)]
    assert (blk.kind, blk.line, blk.end_line) == ("case", 3, 9)
    assert launch_lines(
        'case "$MODE" in\n  train|ft) srun python train.py ;;\n  eval)\n    python eval.py\n    ;;\nesac\n'
    ) == [(4, ("srun", "python", "train.py")), (6, ("python", "eval.py"))]


def test_functions_groups_subshells():
    s = body(
        "run() {\n  srun python a.py\n}\nfunction other {\n  deepspeed b.py\n}\nsetup ()\n{\n  module load x\n}\n"
        "( cd sub && srun c )\n{ echo a; echo b; } > log\ncd x || { echo no; exit 1; }\n"
    )
    blocks = [(b.kind, b.line, b.end_line) for b in s.body if isinstance(b, Block)]
    assert blocks == [
        ("function", 3, 5),
        ("function", 6, 8),
        ("function", 9, 12),
        ("subshell", 13, 13),
        ("group", 14, 14),
        ("group", 15, 15),
    ]
    assert [(c.line, c.kind) for c in iter_commands(s.body) if c.kind in (ast.LAUNCH, ast.MODULE)] == [
        (4, ast.LAUNCH),
        (7, ast.LAUNCH),
        (11, ast.MODULE),
        (13, ast.LAUNCH),
    ]


def test_heredoc_generator_script():
    text = (
        "for n in 1 2; do\n"
        "cat > job_$n.sbatch <<EOF\n"
        "#!/bin/bash\n"
        "#SBATCH -N $n\n"
        "srun python train.py --n $n\n"
        "EOF\n"
        "sbatch job_$n.sbatch\n"
        "done\n"
        "python - <<'PY'\nimport os\nPY\n"
        "\tcat <<-END\n\tx\n\tEND\n"
        "srun final\n"
    )
    s = body(text)
    loop = s.body[0]
    hd = loop.children[0]
    assert hd.kind == "heredoc" and (hd.line, hd.end_line) == (4, 8) and hd.heredoc_delimiter == "EOF"
    assert hd.heredoc_body == "#!/bin/bash\n#SBATCH -N $n\nsrun python train.py --n $n\n"
    assert hd.command.argv == ("cat",) and hd.command.redirections == (">job_$n.sbatch", "<<EOF")
    assert loop.children[1].kind == ast.SBATCH
    py = s.body[1]
    assert py.kind == "heredoc" and py.heredoc_delimiter == "PY" and py.command.kind == ast.LAUNCH
    assert s.body[2].kind == "heredoc" and s.body[2].heredoc_body == "\tx\n"
    # the srun line inside the heredoc is text, not a command; the one after it is
    assert launch_lines(text)[-1] == (17, ("srun", "final"))
    assert all(line != 7 for line, _ in launch_lines(text))


def test_function_keyword_with_parens_and_pyxis_hash_in_words():
    s = body("function f() {\n  srun --container-image=nvcr.io#nvidia/pytorch:24.01-py3 python x.py\n}\n")
    [fn] = s.body
    assert (fn.kind, fn.line, fn.end_line) == ("function", 3, 5)
    [c] = list(iter_commands(s.body))
    assert c.argv[1] == "--container-image=nvcr.io#nvidia/pytorch:24.01-py3" and c.kind == ast.LAUNCH


def test_double_brackets_and_arithmetic():
    cs = cmds('if [[ $A == "x" && -n $B ]]; then srun a; fi\n(( n = 1 + 2 ))\necho $((n * 2))\n')
    assert [c.line for c in cs] == [3, 3, 4, 5]
    assert cs[1].argv == ("srun", "a")


# ---- recovery: never fail ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,code,line",
    [
        ("if true; then\n  srun a\n", "R141", 3),  # missing fi
        ("for i in 1; do\n  srun a\n", "R141", 3),  # missing done
        ("cat <<EOF\nabc\n", "R140", 3),  # unterminated heredoc
        ('echo "abc\nsrun x\n', "R143", 3),  # unterminated quote
        ("fi\nsrun a\n", "R142", 3),  # closer without opener
        ("while true; do\n  if x; then\n    srun a\ndone\n", "R141", 4),  # inner if closed at done
    ],
)
def test_unbalanced_structures_warn_with_the_line_and_keep_the_rest(text, code, line):
    s = body(text)
    assert any(d.code == code and d.line == line and d.severity == "warning" for d in s.diagnostics), s.diagnostics
    assert not s.sbatch_refuses


def test_launch_after_broken_block_is_still_found():
    assert launch_lines("fi\nsrun a\n") == [(4, ("srun", "a"))]
    assert launch_lines("while true; do\n  if x; then\n    srun a\ndone\nsrun b\n") == [
        (5, ("srun", "a")),
        (7, ("srun", "b")),
    ]


def test_deep_nesting_is_flattened_with_a_warning():
    depth = 500
    s = body("if true; then\n" * depth + "srun python t.py\n" + "fi\n" * depth)
    assert any(d.code == "R146" for d in s.diagnostics)
    assert launch_lines("if true; then\n" * depth + "srun python t.py\n" + "fi\n" * depth) == [
        (3 + depth, ("srun", "python", "t.py"))
    ]


def test_csh_body_is_opaque_but_classified():
    s = read_script(
        b"#!/bin/tcsh\n#SBATCH -N 1\nsetenv OMP_NUM_THREADS 4\nif ($x == 1) then\n  srun ./a.out\nendif\n", "c"
    )
    assert s.shell == "tcsh"
    assert [(a.name, a.value.value, a.exported) for a in iter_assignments(s.body)] == [("OMP_NUM_THREADS", "4", True)]
    assert [(c.line, c.kind) for c in iter_commands(s.body) if c.kind == ast.LAUNCH] == [(5, ast.LAUNCH)]


SHELLISH = st.sampled_from(
    [
        "if",
        "then",
        "elif",
        "else",
        "fi",
        "for",
        "in",
        "do",
        "done",
        "while",
        "until",
        "case",
        "esac",
        ";;",
        "{",
        "}",
        "(",
        ")",
        "((",
        "))",
        "[[",
        "]]",
        ";",
        "&",
        "&&",
        "||",
        "|",
        "<<",
        "<<-",
        "EOF",
        "'",
        '"',
        "`",
        "$(",
        "${",
        "}",
        "\\",
        "\n",
        " ",
        "\t",
        "#",
        "#SBATCH -N 2",
        "srun",
        "python",
        "x.py",
        "=",
        "A=1",
        "export",
        "function",
        "f()",
        "<",
        ">",
        "2>&1",
        "$'",
        "\\\n",
        "!",
        "select",
        "\r",
        "\x00",
        "é",
        "\udcff"[:0] + "z",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SHELLISH, max_size=60))
def test_random_shellish_text_never_raises(parts):
    text = "".join(parts)
    s = read_script((HEAD + text).encode("utf-8", "surrogatepass"), "fuzz.sh")
    for c in iter_commands(s.body):
        assert c.line >= 3 and c.end_line >= c.line
    for d in s.diagnostics:
        assert d.code.startswith("R") and (d.line is None or 1 <= d.line <= max(1, s.line_count))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_raise(data):
    s = read_script(data, "bytes.bin")
    assert isinstance(s.sbatch_refuses, bool)


def test_heredoc_inside_command_substitution_does_not_swallow_the_file():
    text = "X=$(cat <<EOF\nit's here ( unbalanced\nEOF\n)\nY=$(cat <<-'END'\n\tdon't\n\tEND\n)\nsrun python train.py\n"
    s = body(text)
    assert [(a.line, a.name) for a in iter_assignments(s.body)] == [(3, "X"), (7, "Y")]
    assert launch_lines(text) == [(11, ("srun", "python", "train.py"))]
    assert s.diagnostics == ()


IDIOMS = """\
head=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
nodes=($(scontrol show hostnames $SLURM_JOB_NODELIST)); head_ip=$(srun -N1 -n1 -w "${nodes[0]}" hostname --ip-address)
export MASTER_PORT=$((15000 + SLURM_JOB_ID % 10000))
module purge; module load cuda/12.1 nccl
source ~/miniconda3/etc/profile.d/conda.sh; conda activate env
spack load openmpi
export PYTHONPATH=$PWD/src:$PYTHONPATH NCCL_SOCKET_IFNAME=ib0 NCCL_IB_HCA=mlx5 FI_PROVIDER=efa
trap 'scontrol requeue $SLURM_JOB_ID' USR1
for h in $(scontrol show hostnames); do echo "$h slots=8" >> hostfile; done
srun torchrun --nnodes 4 --nproc_per_node 8 --rdzv_backend c10d --rdzv_endpoint $head_ip:29500 train.py
srun python train.py
srun --mpi=pmix ./app
mpirun -np $SLURM_NTASKS ./app
deepspeed --hostfile=hostfile train.py
srun --ntasks-per-node=1 accelerate launch --num_processes $((SLURM_NNODES*8)) --main_process_ip $head train.py
srun apptainer exec --nv --bind /data:/data image.sif python x.py
srun --container-image=nvcr.io#nvidia/pytorch:24.01-py3 --container-mounts=src:dst python x.py
srun bash -c 'torchrun --node_rank=$SLURM_NODEID x.py'
"""


def test_multinode_ml_idioms_of_the_semantics_doc_section_14():
    s = body(IDIOMS)
    assigns = {a.name: a for a in iter_assignments(s.body)}
    assert assigns["head"].line == 3 and not assigns["head"].value.literal
    assert assigns["head_ip"].line == 4 and assigns["nodes"].value.value.startswith("(")
    assert assigns["MASTER_PORT"].exported and assigns["NCCL_IB_HCA"].value.value == "mlx5"
    assert {n for n, a in assigns.items() if a.exported} >= {
        "PYTHONPATH",
        "NCCL_SOCKET_IFNAME",
        "NCCL_IB_HCA",
        "FI_PROVIDER",
    }
    kinds = [(c.line, c.kind, c.argv[0]) for c in iter_commands(s.body)]
    assert (
        (6, ast.MODULE, "module") in kinds and (7, ast.SOURCE, "source") in kinds and (7, ast.CONDA, "conda") in kinds
    )
    assert (8, ast.MODULE, "spack") in kinds
    assert (10, ast.OTHER, "trap") in kinds
    launches = [(c.line, c.argv[0], c.argv[1]) for c in iter_commands(s.body) if c.kind == ast.LAUNCH]
    assert launches == [
        (12, "srun", "torchrun"),
        (13, "srun", "python"),
        (14, "srun", "--mpi=pmix"),
        (15, "mpirun", "-np"),
        (16, "deepspeed", "--hostfile=hostfile"),
        (17, "srun", "--ntasks-per-node=1"),
        (18, "srun", "apptainer"),
        (19, "srun", "--container-image=nvcr.io#nvidia/pytorch:24.01-py3"),
        (20, "srun", "bash"),
    ]
    trap = next(c for c in iter_commands(s.body) if c.argv[0] == "trap")
    assert trap.argv == ("trap", "scontrol requeue $SLURM_JOB_ID", "USR1") and trap.words[1].literal


def test_a_heredoc_that_is_a_job_script_is_read_as_one():
    text = (
        "for n in 1 2; do\n"
        "cat > job_$n.sbatch <<EOF\n"
        "#!/bin/bash\n"
        "#SBATCH -N $n\n"
        "#SBATCH --gpus-per-node=8\n"
        "module load cuda\n"
        "srun torchrun --nproc_per_node 8 train.py\n"
        "EOF\n"
        "sbatch job_$n.sbatch\n"
        "done\n"
        "cat > notes.txt <<EOF\nnot a script\nEOF\n"
    )
    s = body(text)
    found = list(ast.iter_generated_scripts(s.body))
    assert len(found) == 1
    blk, gen = found[0]
    assert blk.heredoc_body_line == 5 and blk.line == 4
    assert [(d.line, d.words) for d in gen.directives] == [(2, ("-N", "$n")), (3, ("--gpus-per-node=8",))]
    launches = [
        (c.line + blk.heredoc_body_line - 1, c.argv[:2]) for c in iter_commands(gen.body) if c.kind == ast.LAUNCH
    ]
    assert launches == [(9, ("srun", "torchrun"))]
    assert not gen.sbatch_refuses


def test_the_lexer_has_a_method_for_every_character_a_plain_word_stops_at():
    # The scan reads runs of ordinary characters with one regex (_PLAIN) and hands every other
    # character to its method (_DISPATCH); a character in neither would be read as a one-letter word.
    from translator.read import shell_lexer as L

    handled = {c for chars, _ in L._DISPATCH for c in chars}
    stops = {chr(k) for k in range(128) if not L._PLAIN.match(chr(k))}
    assert stops <= handled
    assert handled - stops == {"#"}  # `#` starts a comment only between words
    assert all(callable(getattr(L.ShellLexer, name, None)) for _, name in L._DISPATCH)
