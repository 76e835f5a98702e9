"""The shell the launchers generate, executed under bash with fake programs and a fake Kubeflow env.

Each pod of a torch-distributed TrainJob gets PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR and
PET_MASTER_PORT from the controller (pod names `<job>-node-0-<i>.<job>`); torchrun gives each worker
RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE and GROUP_RANK. These tests run the generated text with
exactly those variables and check what the user's program would see.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from translator.pipeline import ConvertSettings, convert
from translator.plan.kube import expand

FIXTURES = Path(__file__).parent / "fixtures" / "convert"
BASH = shutil.which("bash")


def _plan(rel=None, text=None, name="job.sbatch", **settings):
    if text is not None:
        return convert(name, data=text.encode(), settings=ConvertSettings(**settings)).plans[0]
    return convert(str(FIXTURES / rel), settings=ConvertSettings(**settings)).plans[0]


def _fake_bin(tmp_path: Path, *names: str) -> Path:
    """Programs that print their name, their argv (one per line) and the SLURM_* env they see."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for n in names:
        p = bindir / n
        # one file per call (parallel tasks' records are larger than one atomic write); _run joins them
        p.write_text(
            '#!/bin/bash\nf="$(mktemp "$FAKE_LOG.XXXXXX")"\n'
            '{ echo "CALL $(basename "$0")"; for a in "$@"; do echo "ARG $a"; done; '
            "env | grep -E '^SLURM' | sort | sed 's/^/ENV /'; } > \"$f\"\n"
        )
        p.chmod(0o755)
    return bindir


def _run(argv, tmp_path, bindir, **env):
    log = tmp_path / f"log-{len(list(tmp_path.glob('log-*')))}"
    full = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path), "FAKE_LOG": str(log)}
    full.update({k: str(v) for k, v in env.items()})
    proc = subprocess.run([expand(a) for a in argv], capture_output=True, text=True, env=full, cwd=tmp_path, timeout=30)
    assert proc.returncode == 0, proc.stderr
    recs = sorted(tmp_path.glob(log.name + ".*"), key=lambda r: r.stat().st_mtime_ns)
    text = (log.read_text() if log.exists() else "") + "".join(r.read_text() for r in recs)
    for r in recs:
        r.unlink()
    return proc, text


def _calls(log: str):
    calls = []
    for line in log.splitlines():
        if line.startswith("CALL "):
            calls.append({"name": line[5:], "args": [], "env": {}})
        elif line.startswith("ARG "):
            calls[-1]["args"].append(line[4:])
        elif line.startswith("ENV "):
            k, _, v = line[4:].partition("=")
            calls[-1]["env"][k] = v
    return calls


def _pet(job, rank, nnodes):
    return {
        "PET_NNODES": nnodes,
        "PET_NODE_RANK": rank,
        "PET_MASTER_ADDR": f"{job}-node-0-0.{job}",
        "PET_MASTER_PORT": 29500,
    }


def test_srun_tasks_shim_gives_each_process_its_slurm_ranks(tmp_path):
    plan = _plan("srun_tasks/per_gpu_tasks.sbatch")
    args = list(plan.args)
    i = args.index("--no-python")
    # what torchrun execs for worker RANK=5 (second node, local rank 1): bash -c SHIM slurm2kf-task python …
    worker = args[i + 1 :]
    bindir = _fake_bin(tmp_path, "python")
    env = dict(
        _pet("lightning-ddp", 1, 2),
        RANK=5,
        LOCAL_RANK=1,
        WORLD_SIZE=8,
        LOCAL_WORLD_SIZE=4,
        GROUP_RANK=1,
        MASTER_ADDR="lightning-ddp-node-0-0.lightning-ddp",
        MASTER_PORT=29500,
    )
    _, log = _run(worker, tmp_path, bindir, **env)
    [call] = _calls(log)
    assert call["name"] == "python"
    assert call["args"] == ["train_lightning.py", "--devices", "4", "--num_nodes", "2"]
    e = call["env"]
    assert (e["SLURM_PROCID"], e["SLURM_LOCALID"], e["SLURM_NODEID"]) == ("5", "1", "1")
    assert (e["SLURM_NTASKS"], e["SLURM_NTASKS_PER_NODE"], e["SLURM_NNODES"]) == ("8", "4", "2")
    assert e["SLURM_JOB_NODELIST"] == "lightning-ddp-node-0-0.lightning-ddp,lightning-ddp-node-0-1.lightning-ddp"
    assert e["SLURM_JOB_NAME"] == "lightning-ddp" and e["SLURM_CPUS_PER_TASK"] == "10"
    assert e["SLURM_JOB_ID"].isdigit()


@pytest.mark.parametrize("value", ['it\'s "q"', "$(touch pwned) `id` $HOME", "a\\b c", "-- --x=1", "$$ $(PET_NNODES)"])
def test_srun_tasks_user_arguments_are_data(tmp_path, value):
    import shlex

    text = (
        "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=2\n"
        f"srun python train.py --tag {shlex.quote(value)}\n"
    )
    plan = _plan(text=text)
    args = list(plan.args)
    worker = args[args.index("--no-python") + 1 :]
    bindir = _fake_bin(tmp_path, "python")
    _, log = _run(
        worker,
        tmp_path,
        bindir,
        RANK=0,
        LOCAL_RANK=0,
        WORLD_SIZE=2,
        LOCAL_WORLD_SIZE=2,
        GROUP_RANK=0,
        **_pet("job-sbatch", 0, 1),
    )
    [call] = _calls(log)
    assert call["args"] == ["train.py", "--tag", value]
    assert not (tmp_path / "pwned").exists()


def test_accelerate_machine_flags_come_from_pet_variables(tmp_path):
    plan = _plan("accelerate/multinode.sbatch")
    bindir = _fake_bin(tmp_path, "accelerate")
    _, log = _run(list(plan.command) + list(plan.args), tmp_path, bindir, **_pet("accelerate-sft", 1, 2))
    [call] = _calls(log)
    assert call["args"][:9] == [
        "launch",
        "--num_machines",
        "2",
        "--machine_rank",
        "1",
        "--main_process_ip",
        "accelerate-sft-node-0-0.accelerate-sft",
        "--main_process_port",
        "29500",
    ]
    assert call["args"][9:] == [
        "--num_processes",
        "16",
        "--mixed_precision",
        "bf16",
        "sft.py",
        "--model",
        "meta-llama/Llama-3.1-8B",
        "--output_dir",
        "/checkpoints/sft",
    ]
    assert not any(k.startswith("SLURM") for k in call["env"])


def test_torchrun_word_that_needs_the_shell_gets_a_preamble(tmp_path):
    text = (
        "#!/bin/bash\n#SBATCH --job-name=t\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=4\n"
        "DATA=/datasets/c4\nOUT=$(date +%s)\n"
        "srun torchrun --nproc_per_node=$SLURM_GPUS_ON_NODE train.py --data $DATA --node $SLURM_NODEID "
        '--name $SLURM_JOB_NAME --out "$OUT/x"\n'
    )
    plan = _plan(text=text)
    assert plan.command == ("bash", "-c")
    assert "L302" in {f.code for f in plan.findings}
    bindir = _fake_bin(tmp_path, "torchrun", "date")
    _, log = _run(list(plan.command) + list(plan.args), tmp_path, bindir, **_pet("t", 1, 2))
    calls = [c for c in _calls(log) if c["name"] == "torchrun"]
    assert len(calls) == 1
    args = calls[0]["args"]
    assert args[:6] == ["--nproc-per-node", "4", "train.py", "--data", "/datasets/c4", "--node"]
    assert args[6] == "1" and args[7:9] == ["--name", "t"]
    assert not any(k.startswith("SLURM") for k in calls[0]["env"]), "shell-local, not exported"


def test_hf_accelerate_template_runs_with_pet_values(tmp_path):
    plan = _plan("accelerate/hf_template_cmd_variable.sbatch")
    bindir = _fake_bin(tmp_path, "accelerate")
    _, log = _run(list(plan.command) + list(plan.args), tmp_path, bindir, **_pet("multinode", 3, 4))
    [call] = _calls(log)
    assert call["args"] == [
        "launch",
        "--num_machines",
        "4",
        "--machine_rank",
        "3",
        "--main_process_ip",
        "multinode-node-0-0.multinode",
        "--main_process_port",
        "29500",
        "--num_processes",
        "16",
        "/accelerate/examples/complete_nlp_example.py",
        "--mixed_precision",
        "fp16",
        "--output_dir",
        "/accelerate/examples/output",
    ]


def test_gpus_per_task_binds_each_process_to_its_gpus(tmp_path):
    text = (
        "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-task=2\nsrun python train.py\n"
    )
    plan = _plan(text=text)
    args = list(plan.args)
    worker = args[args.index("--no-python") + 1 :]
    bindir = _fake_bin(tmp_path, "python")
    (bindir / "python").write_text('#!/bin/bash\necho "$CUDA_VISIBLE_DEVICES" >> "$FAKE_LOG"\n')
    seen = []
    for rank in range(4):
        _, log = _run(
            worker,
            tmp_path,
            bindir,
            RANK=rank,
            LOCAL_RANK=rank,
            WORLD_SIZE=4,
            LOCAL_WORLD_SIZE=4,
            GROUP_RANK=0,
            **_pet("job-sbatch", 0, 1),
        )
        seen.append(log.strip())
    assert seen == ["0,1", "2,3", "4,5", "6,7"]
    assert dict(plan.resources_per_node)["nvidia.com/gpu"] == "8"


def test_batch_mode_keeps_slurm_rendezvous_working(tmp_path, mpi_env):
    """Several steps: the script runs once on the batch pod; scontrol/srun/SLURM_* come from the prologue and
    the step's torchrun runs on each pod (with real Open MPI: tests/test_batch_mode_run.py)."""
    from test_batch_mode_run import _pods, run_launcher

    text = (
        "#!/bin/bash\n#SBATCH --job-name=two-step\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
        "python prepare.py\n"
        'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n'
        "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node 4 --rdzv_id $SLURM_JOB_ID "
        "--rdzv_backend c10d --rdzv_endpoint $head:29500 train.py\n"
    )
    plan = _plan(text=text)
    assert plan.launcher == "script"
    proc, calls = run_launcher(plan, tmp_path, mpi_env, programs=("python", "torchrun"))
    assert proc.returncode == 0, proc.stderr
    launcher, (node0, _) = _pods(plan)
    assert [c["host"] for c in calls if c["name"] == "python"] == [launcher]  # prepare.py: once, on node 0
    runs = sorted((c for c in calls if c["name"] == "torchrun"), key=lambda c: c["env"]["SLURM_PROCID"])
    assert [(c["env"]["SLURM_PROCID"], c["host"]) for c in runs] == [("0", launcher), ("1", node0)]
    for call in runs:  # one rendezvous: the batch pod's name (the first host), one id
        a = call["args"]
        assert a[a.index("--nnodes") + 1] == "2"
        assert a[a.index("--rdzv_endpoint") + 1] == f"{launcher}:29500"
    assert runs[0]["args"][a.index("--rdzv_id") + 1] == runs[1]["args"][a.index("--rdzv_id") + 1]
