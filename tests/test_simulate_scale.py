"""Cost that does not grow with ranks (issue 20): tasks that provably behave alike cost one run, and the
result is the same as running each task; GPU visibility per task (srun.1 --gpu-bind)."""

from __future__ import annotations

import textwrap

from translator.pipeline import ConvertSettings
from translator.simulate import simulate_script
from translator.simulate.stubs import same_ranks
from test_simulate_slurm_side import run

SHIM = """
# per-process Slurm variables from torchrun's RANK/LOCAL_RANK
_s2k_hosts() {
  local h="${PET_MASTER_ADDR:-}" n="${PET_NNODES:-1}" i base dom=""
  if [ -z "$h" ]; then hostname; return; fi
  base="${h%%.*}"; [ "$base" = "$h" ] || dom=".${h#*.}"
  for ((i = 0; i < n; i++)); do echo "${base}-${i}${dom}"; done
}
export SLURM_JOB_NODELIST="$(_s2k_hosts | paste -sd, -)"
export SLURM_TASKS_PER_NODE='8(x64)'
export SLURM_PROCID="$RANK" SLURM_LOCALID="$LOCAL_RANK"
exec "$@"
"""


def test_a_wrapper_that_only_copies_the_rank_is_alike():
    assert same_ranks.text_alike(SHIM, {"RANK", "LOCAL_RANK"}, host_varies=False)
    # `hostname` reads the node: alike only when every task is on the same node
    assert not same_ranks.text_alike(SHIM, {"RANK", "LOCAL_RANK"}, host_varies=True)


def test_wrappers_that_read_the_rank_are_not_alike():
    names = {"RANK"}
    for text in (
        'if [ "$RANK" = 0 ]; then exec "$@"; fi',  # a branch on the rank
        'export R="$RANK"; echo "$R"; exec "$@"',  # the copy is read again
        'eval "export R=$RANK"; exec "$@"',  # a computed command
        'v=RANK; export R="${!v}"; exec "$@"',  # a computed name
        'x="${Y:-$(hostname)}"; exec "$@"',  # a command hidden in an expansion
        'sleep $((RANK * 2)); exec "$@"',
        '(( RANK > 0 )) && exit 0; exec "$@"',
    ):
        assert not same_ranks.text_alike(text, names), text


def test_a_run_that_starts_more_than_plain_programs_is_not_alike():
    # `python -c`, a nested launcher or nvidia-smi may read a varying value: they record a call of their own
    assert same_ranks.records_alike([{"kind": "process"}, {"kind": "call", "name": "module"}])
    assert not same_ranks.records_alike([{"kind": "call", "name": "python", "argv": ["-c", "import os"]}])
    assert not same_ranks.records_alike([{"kind": "call", "name": "torchrun"}])


def _layout(side):
    def env(p):  # (PATH, PWD and HOME name the sandbox's temporary directory in its weaker mode)
        return tuple(kv for kv in p.env if kv[0] not in ("PATH", "PWD", "HOME"))

    return sorted(
        (p.rank, p.node, p.host, p.local_rank, p.world_size, p.gpus, p.program, p.argv, env(p)) for p in side.processes
    )


def test_one_run_for_alike_tasks_gives_what_each_task_gives(tmp_path):
    # The same srun step twice: the first wrapper only copies SLURM_PROCID/SLURM_LOCALID (one run stands for
    # the 8 tasks), the second also reads SLURM_PROCID with `:` (each task runs). Same processes either way.
    body = """
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=4
        #SBATCH --gpus-per-task=1
        srun bash -c '{extra}export TASK="$SLURM_PROCID" LOCAL="$SLURM_LOCALID"; exec "$@"' wrap python train.py --x 1
    """
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    alike = run(tmp_path / "a", textwrap.dedent(body.format(extra="")))
    each = run(tmp_path / "b", textwrap.dedent(body.format(extra=': "$SLURM_PROCID"; ')))
    varying = {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "HOSTNAME", "CUDA_VISIBLE_DEVICES", "SLURM_GTIDS"}
    wrapper = 'export TASK="$SLURM_PROCID" LOCAL="$SLURM_LOCALID"; exec "$@"'
    assert same_ranks.text_alike(wrapper, varying) and not same_ranks.text_alike(
        ': "$SLURM_PROCID"; ' + wrapper, varying
    )
    assert len(alike.processes) == 8 and not alike.failures
    assert _layout(alike) == _layout(each)
    env = {p.rank: dict(p.env) for p in alike.processes}
    # srun.1: SLURM_PROCID is the global task id, SLURM_LOCALID the id on the node; --gpus-per-task=1 gives
    # task i of a node GPU i
    assert [(env[r]["TASK"], env[r]["LOCAL"], env[r]["CUDA_VISIBLE_DEVICES"]) for r in (0, 5)] == [
        ("0", "0", "0"),
        ("5", "1", "1"),
    ]


def test_rank_as_a_python_argument_is_alike_and_gives_each_task_its_rank(tmp_path):
    body = """
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=2
        srun bash -c '{extra}module load cuda; cd /home/user && python train.py --rank $SLURM_PROCID --node "${{SLURMD_NODENAME}}"'
    """
    text = 'module load cuda; cd /home/user && python train.py --rank $SLURM_PROCID --node "${SLURMD_NODENAME}"'
    assert same_ranks.text_alike(text, {"SLURM_PROCID", "SLURMD_NODENAME", "SLURM_LOCALID"})
    assert not same_ranks.text_alike("echo $SLURM_PROCID; " + text, {"SLURM_PROCID"})
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    alike = run(tmp_path / "a", textwrap.dedent(body.format(extra="")))
    each = run(tmp_path / "b", textwrap.dedent(body.format(extra=': "$SLURM_PROCID"; ')))
    assert _layout(alike) == _layout(each)
    # srun.1: task ids 0-3 in block order, two per node (node01: 0, 1; node02: 2, 3)
    assert sorted(p.argv for p in alike.processes) == [
        ("--rank", str(r), "--node", f"node0{r // 2 + 1}") for r in range(4)
    ]


def test_gpu_bind_narrows_what_each_task_sees(tmp_path):
    # srun.1 --gpu-bind: map_gpu gives task i the i-th listed GPU; single:N gives the first N tasks GPU 0,
    # the next N GPU 1, ...
    side = run(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --nodes=1
        #SBATCH --ntasks=4
        #SBATCH --gpus-per-node=4
        srun --gpu-bind=map_gpu:3,2,1,0 python a.py
        srun --gpu-bind=single:2 python b.py
        srun --gpus-per-task=1 --gpu-bind=none python c.py
        """,
    )
    # --gpus-per-task implies --gpu-bind=per_task:1 "but that can be overridden with an explicit --gpu-bind":
    # with none, each task sees the step's 4 GPUs of the node
    assert {dict(p.env)["CUDA_VISIBLE_DEVICES"] for p in side.processes if p.program == "c.py"} == {"0,1,2,3"}
    got = {(p.program, p.rank): dict(p.env)["CUDA_VISIBLE_DEVICES"] for p in side.processes}
    assert [got[("a.py", r)] for r in range(4)] == ["3", "2", "1", "0"]
    assert [got[("b.py", r)] for r in range(4)] == ["0", "0", "1", "1"]
    assert {p.gpus for p in side.processes if p.program != "c.py"} == {1}


def test_64_nodes_by_8_ranks_every_rank_accounted(tmp_path):
    p = tmp_path / "gpt-64n.sbatch"
    p.write_text(
        textwrap.dedent(
            """\
            #!/bin/bash
            #SBATCH --job-name=gpt-64n
            #SBATCH --nodes=64
            #SBATCH --ntasks-per-node=8
            #SBATCH --gpus-per-node=8
            #SBATCH --cpus-per-task=12
            export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
            export MASTER_PORT=29500
            srun python train.py --config configs/gpt.yaml
            """
        )
    )
    # generous time limit: the machine running the tests may be busy (benchmarks/bench_simulate.py times it)
    v = simulate_script(str(p), ConvertSettings(), timeout=60)
    for side in (v.slurm, v.kubeflow):
        assert sorted(x.rank for x in side.processes) == list(range(512))
        assert {x.world_size for x in side.processes} == {512}
    assert v.verdict == "equivalent", v.differences
