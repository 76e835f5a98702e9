"""Never silently different: each conversion starts the same processes as Slurm did, or says why not.

Expected values are derived by hand from what Slurm does (sbatch(1)/srun(1) of Slurm 22.05, the batch
script running once on the first node of the allocation), from bash(1), and from what the Kubeflow
Trainer v2.3 runtimes do (/work/shared/docs/kubeflow-trainer.md section b: the torch plugin's PET_*
variables, one pod per node; MPI runtimes run the command on the launcher pod only). Generated shell is
executed with fake programs and the PET_* environment of each pod (helpers from test_launch_shims.py).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from test_launch_shims import _calls, _fake_bin, _pet, _plan, _run
from translator.pipeline import ConvertSettings, convert

HEAD = "#!/bin/bash\n#SBATCH --job-name=job\n"


def conv(text, **settings):
    return convert("job.sbatch", data=text.encode(), settings=ConvertSettings(**settings))


def codes(c):
    return {f.code for f in c.findings}


# ---- launcher choice: look through wrappers before deciding MPI -------------------------------------


@pytest.mark.parametrize(
    "wrapped",
    [
        "apptainer exec --nv docker://nvcr.io/nvidia/pytorch:24.01-py3 torchrun --nproc_per_node=4 train.py",
        "env NCCL_DEBUG=INFO torchrun --nproc_per_node=4 train.py",
        "bash -c 'torchrun --nproc_per_node=4 train.py'",
        "podman-hpc run --gpu nvcr.io/nvidia/pytorch:24.01-py3 torchrun --nproc_per_node=4 train.py",
    ],
)
def test_srun_mpi_around_torchrun_is_not_mpi(wrapped):
    # srun(1): --mpi only selects the PMI Slurm offers the tasks; the task here is torchrun (one per node,
    # 2 nodes), which starts 4 workers itself. On Kubeflow: torch runtime, 2 pods, torchrun in each.
    c = conv(
        HEAD + f"#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\nsrun --mpi=pmix {wrapped}\n"
    )
    p = c.plans[0]
    assert p.runtime == "torch-distributed" and p.num_nodes == 2
    assert "mpirun" not in " ".join(p.command + p.args)
    assert "torchrun" in " ".join(p.command + p.args) and "L336" in codes(c)


def test_srun_mpi_container_mpi_program_uses_the_image_and_mpirun():
    # srun --mpi=pmi2 singularity exec IMG ./a.out: 8 MPI ranks (2 nodes x 4 tasks) of ./a.out in IMG.
    c = conv(
        HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n"
        "srun --mpi=pmi2 singularity exec docker://ghcr.io/x/solver:1 ./a.out in.dat\n"
    )
    p = c.plans[0]
    assert p.runtime == "deepspeed-distributed" and p.image == "ghcr.io/x/solver:1"
    assert p.command == ("mpirun",)
    assert list(p.args) == [
        "--hostfile",
        "/etc/mpi/hostfile",
        "-np",
        "8",
        "-npernode",
        "4",
        "--oversubscribe",
        "./a.out",
        "in.dat",
    ]


def test_mpi_runtime_never_without_mpirun():
    c = conv(
        HEAD + "#SBATCH -N 2\n#SBATCH --gpus-per-node=2\nsrun torchrun --nproc_per_node=2 t.py\n",
        runtime="deepspeed-distributed",
    )
    assert "P444" in codes(c) and not c.plans[0].can_run


def test_single_node_mpi_runtime_is_flagged():
    # runLauncherAsNode: numNodes 1 still makes launcher + max(numNodes-1, 1) = 1 worker pod (mpi.go).
    c = conv(HEAD + "#SBATCH -N 1\n#SBATCH --ntasks-per-node=4\nmpirun -np 4 ./a.out\n")
    assert c.plans[0].num_nodes == 1 and "P445" in codes(c)


# ---- explicit process counts ----------------------------------------------------------------------


def test_mpirun_npernode_that_differs_is_kept():
    # mpirun -npernode 2 inside a 2 x 4 allocation starts 2 ranks per node, 4 in all.
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\nmpirun -npernode 2 ./a.out\n")
    args = list(c.plans[0].args)
    assert args[:6] == ["--hostfile", "/etc/mpi/hostfile", "-np", "4", "-npernode", "2"]
    assert "L335" in codes(c)


def test_mpirun_np_equal_to_the_layout_is_not_flagged():
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\nmpirun -np $SLURM_NTASKS ./a.out\n")
    assert "L335" not in codes(c) and list(c.plans[0].args)[3] == "8"


@pytest.mark.parametrize(
    "gres,nproc,flag",
    [
        ("#SBATCH --gpus-per-node=4\n", "8", True),
        ("#SBATCH --gpus-per-node=4\n", "4", False),
        ("", "gpu", True),
        ("", "auto", True),
    ],
)
def test_torchrun_processes_against_gpus(gres, nproc, flag):
    c = conv(HEAD + "#SBATCH -N 1\n" + gres + f"torchrun --nproc_per_node={nproc} t.py\n")
    assert ("L337" in codes(c)) is flag


def test_multinode_deepspeed_without_gpus_is_flagged():
    # The runtime's hostfile slots = numProcPerNode 1 when the node has no GPUs (mpi.go): 1 rank per node.
    c = conv(HEAD + "#SBATCH -N 2\ndeepspeed --hostfile hosts t.py\n")
    assert c.plans[0].runtime == "deepspeed-distributed" and "L338" in codes(c)


# ---- SPANK plugin options --------------------------------------------------------------------------


def test_pyxis_sbatch_options_are_plugin_options_and_give_the_image(tmp_path):
    # pyxis options given to sbatch reach every srun step (SPANK passes them on); sbatch accepts them
    # where pyxis is installed, so this is a warning, not a refusal (exit 0).
    text = (
        HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
        '#SBATCH --container-image="nvcr.io#nvidia/pytorch:24.01-py3"\n'
        "#SBATCH --container-mounts=/lustre:/lustre\n"
        "srun torchrun --nproc_per_node=8 train.py\n"
    )
    c = conv(text)
    p = c.plans[0]
    assert p.image == "nvcr.io/nvidia/pytorch:24.01-py3" and p.num_nodes == 2
    assert {"P446", "L322", "L323"} <= codes(c) and "P401" not in codes(c)
    assert c.job.sbatch_accepts is False  # plain sbatch 22.05 (no plugin) still refuses it
    script = tmp_path / "job.sbatch"
    script.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "translator", "convert", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "warning P446" in proc.stderr and "--container-image (pyxis)" in proc.stderr


def test_shifter_inline_image_and_podman_hpc():
    c = conv(HEAD + "#SBATCH -N 1\nshifter --image=docker:ghcr.io/x/y:2 python t.py\n")
    assert c.plans[0].image == "ghcr.io/x/y:2" and c.plans[0].command == ("python",)
    c = conv(HEAD + "#SBATCH -N 1\npodman-hpc run --rm -v /data:/data ghcr.io/x/y:3 python t.py\n")
    assert c.plans[0].image == "ghcr.io/x/y:3" and "L323" in codes(c)


# ---- secrets ----------------------------------------------------------------------------------------

TOKEN = "hf_Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0PpOo"
GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _all_outputs(c):
    from translator.emit import plan_json, sdk_python, trainjob_yaml

    return (
        trainjob_yaml.render(c.plans)
        + sdk_python.render(c.plans)
        + plan_json.render(c.plans)
        + "\n".join(f.format("job.sbatch") for f in c.findings)
    )


@pytest.mark.parametrize(
    "body",
    [
        f"export HF_TOKEN={TOKEN}\ntorchrun --nproc_per_node=1 t.py\n",
        f"export MY_SERVICE_PASSWORD='hunter2-long'\nexport X={TOKEN}\ntorchrun --nproc_per_node=1 t.py\n",
        f"HF_TOKEN={TOKEN} torchrun --nproc_per_node=1 t.py\n",
        f"TOKEN={GH}\ntorchrun --nproc_per_node=1 t.py --token $TOKEN\n",
        f"torchrun --nproc_per_node=1 t.py --hub-token={TOKEN}\n",
        f"export HF_TOKEN={TOKEN}\nfor i in 1 2; do srun python t.py $i; done\n",
    ],
)
def test_secrets_never_reach_the_outputs(body):
    c = conv(HEAD + "#SBATCH -N 1\n" + body)
    out = _all_outputs(c)
    for secret in (TOKEN, GH, "hunter2-long"):
        assert secret not in out
    assert "P447" in codes(c)
    from translator.emit.trainjob import trainjob_dict

    env = trainjob_dict(c.plans[0])["spec"]["trainer"]["env"]
    refs = [e for e in env if "valueFrom" in e]
    assert refs and all(set(e) == {"name", "valueFrom"} for e in refs)
    assert all(r["valueFrom"]["secretKeyRef"] == {"name": "job-env", "key": r["name"]} for r in refs)


def test_secret_reaches_the_program_through_the_secret(tmp_path):
    # the kubelet defines HF_TOKEN from the Secret; the script text refers to it and the program gets it
    plan = _plan(text=HEAD + f"#SBATCH -N 1\nexport HF_TOKEN={TOKEN}\nfor i in 1; do srun python t.py; done\n")
    bindir = _fake_bin(tmp_path, "python")
    (bindir / "python").write_text('#!/bin/bash\necho "TOKEN=$HF_TOKEN" >> "$FAKE_LOG"\n')
    _, log = _run(list(plan.command) + list(plan.args), tmp_path, bindir, HF_TOKEN="from-secret", **_pet("job", 0, 1))
    assert "TOKEN=from-secret" in log


def test_names_that_are_not_secrets():
    c = conv(
        HEAD + "#SBATCH -N 1\nexport TOKENIZERS_PARALLELISM=false\nexport SSH_KEY_PATH=/home/u/.ssh/id\n"
        "export MAX_TOKENS=2048\ntorchrun --nproc_per_node=1 t.py\n"
    )
    assert "P447" not in codes(c)
    assert {e.name for e in c.plans[0].env} == {"TOKENIZERS_PARALLELISM", "SSH_KEY_PATH", "MAX_TOKENS"}


# ---- script arguments --------------------------------------------------------------------------------


def test_script_arguments_without_values_are_flagged():
    c = conv(HEAD + "#SBATCH -N 1\ntorchrun --nproc_per_node=1 t.py --lr $1\n")
    assert "L339" in codes(c)


def test_script_arguments_in_the_fallback(tmp_path):
    plan = _plan(
        text=HEAD + '#SBATCH -N 1\nshift\nfor x in "$@"; do srun python t.py $x; done\n',
        script_args=("drop", "a", "b c"),
    )
    bindir = _fake_bin(tmp_path, "python")
    _, log = _run(list(plan.command) + list(plan.args), tmp_path, bindir, **_pet("job", 0, 1))
    assert [c["args"] for c in _calls(log)] == [["t.py", "a"], ["t.py", "b", "c"]]


def test_script_args_option_is_a_usage_error_when_unbalanced(tmp_path):
    script = tmp_path / "job.sbatch"
    script.write_text(HEAD + "torchrun t.py $1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "translator", "convert", str(script), "--script-args", "'a"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "--script-args" in proc.stderr and "Traceback" not in proc.stderr


# ---- variables --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "setter", ["read -r N < n.txt", "case $SLURM_JOB_NAME in job) N=2 ;; *) N=1 ;; esac", "let N=1+1"]
)
def test_variable_set_by_shell_logic_runs_the_script(setter, tmp_path):
    # only running the script's logic gives N: the body runs under bash as on Slurm (one node, so once)
    c = conv(HEAD + "#SBATCH -N 1\n" + setter + "\ntorchrun --nproc_per_node=$N t.py\n")
    p = c.plans[0]
    assert p.launcher == "script" and "L368" in codes(c) and setter in p.args[0]
    (tmp_path / "n.txt").write_text("2\n")
    bindir = _fake_bin(tmp_path, "torchrun")
    _, log = _run(list(p.command) + list(p.args), tmp_path, bindir, **_pet("job", 0, 1))
    assert _calls(log)[0]["args"] == ["--nproc_per_node=2", "t.py"]


def test_variable_from_the_submission_environment_is_flagged():
    c = conv(HEAD + "#SBATCH -N 1\ntorchrun --nproc_per_node=1 t.py --data $SCRATCH/data\n")
    assert any(f.code == "L348" and "SCRATCH" in f.message for f in c.findings)


def test_array_index_table_is_carried(tmp_path):
    # ${ARGS[$SLURM_ARRAY_TASK_ID]} with index 2 of --array=0-2 is 0.001 (bash arrays are 0-based)
    text = (
        HEAD + "#SBATCH -N 1\n#SBATCH --array=0-2\nARGS=(0.1 0.01 0.001)\n"
        "python t.py --lr ${ARGS[$SLURM_ARRAY_TASK_ID]}\n"
    )
    plans = convert("job.sbatch", data=text.encode(), settings=ConvertSettings(array_mode="expand")).plans
    bindir = _fake_bin(tmp_path, "python")
    env = {e.name: e.value for e in plans[2].env}
    _, log = _run(list(plans[2].command) + list(plans[2].args), tmp_path, bindir, **env)
    assert _calls(log)[0]["args"] == ["t.py", "--lr", "0.001"]


# ---- batch mode (the multi-node runs with real Open MPI are in test_batch_mode_run.py) ------------------


def test_fallback_terminal_commands_under_set_e(tmp_path):
    plan = _plan(text="#!/bin/bash -e\n#SBATCH -N 1\nclear\ntput cols\nfor i in 1; do srun python t.py; done\n")
    bindir = _fake_bin(tmp_path, "python")
    for name in ("clear", "tput"):  # as in a pod: no terminal, the command fails
        (bindir / name).write_text("#!/bin/bash\necho 'no TERM' >&2; exit 1\n")
        (bindir / name).chmod(0o755)
    _, log = _run(list(plan.command) + list(plan.args), tmp_path, bindir, **_pet("job", 0, 1))
    assert [c["args"] for c in _calls(log)] == [["t.py"]]


def test_batch_mode_computes_per_run_values_once():
    # batch mode runs the script once, as Slurm does: $(date) in an assignment is one value, nothing to flag
    c = conv(HEAD + "#SBATCH -N 2\nOUT=run_$(date +%s)\nfor i in 1; do srun python t.py $OUT; done\n")
    assert c.plans[0].launcher == "script" and "L346" not in codes(c) and "L366" in codes(c)

def test_batch_hostname_in_a_launch_preamble(tmp_path):
    # srun python t.py --master $M with M=$(hostname): Slurm's batch shell expanded it once on node 0.
    plan = _plan(text=HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\nM=$(hostname)\nsrun python t.py --master $M\n")
    args = list(plan.args)
    worker = args[args.index("--no-python") + 1 :]
    bindir = _fake_bin(tmp_path, "python")
    _, log = _run(
        worker,
        tmp_path,
        bindir,
        RANK=3,
        LOCAL_RANK=1,
        WORLD_SIZE=4,
        LOCAL_WORLD_SIZE=2,
        GROUP_RANK=1,
        **_pet("job", 1, 2),
    )
    assert _calls(log)[0]["args"] == ["t.py", "--master", "job-node-0-0.job"]


def test_findings_never_quote_a_secret():
    # P422 quotes a non-literal export; L342/L327 quote launch text: the token must not appear in them
    c = conv(HEAD + f'#SBATCH -N 1\nexport API_TOKEN="{TOKEN}$SUFFIX"\nX=$(date) HF_TOKEN={TOKEN} torchrun t.py\n')
    text = "\n".join(f.format("job.sbatch") for f in c.findings)
    assert TOKEN not in text and "<secret>" in text
    assert TOKEN not in _all_outputs(c)


def test_mpi_ranks_get_the_job_environment():
    # Open MPI under Slurm starts the ranks through slurmd with the job's environment; on the MPI runtime
    # mpirun reaches the workers over ssh, so the env is forwarded with -x (Open MPI mpirun(1) -x).
    c = conv(
        HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\nexport OMP_NUM_THREADS=2\n"
        "mpirun -x OMP_NUM_THREADS -np 4 ./a.out\n"
    )
    assert list(c.plans[0].args).count("OMP_NUM_THREADS") == 1 and "L351" not in codes(c)
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\nexport OMP_NUM_THREADS=2\nexport A=b\nmpirun ./a.out\n")
    assert list(c.plans[0].args) == [
        "--hostfile",
        "/etc/mpi/hostfile",
        "-np",
        "4",
        "-npernode",
        "2",
        "-x",
        "OMP_NUM_THREADS",
        "-x",
        "A",
        "--oversubscribe",
        "./a.out",
    ]
    assert "L351" in codes(c)


@pytest.mark.parametrize(
    "flags,port",
    [
        ("--rdzv_backend=c10d --rdzv_endpoint=$head:29400", "29400"),
        ("--master_addr=$head --master_port 12345 --node_rank=$SLURM_NODEID", "12345"),
        ("--rdzv_backend=c10d --rdzv_endpoint=$head:29500", None),
    ],
)
def test_torchrun_keeps_the_rendezvous_port(flags, port):
    # the workers saw MASTER_PORT=<port> on Slurm; PET_MASTER_PORT alone would make it 29500
    c = conv(
        HEAD + "#SBATCH -N 2\n#SBATCH --gpus-per-node=2\nhead=$(scontrol show hostnames | head -n 1)\n"
        f"srun torchrun --nnodes=2 --nproc_per_node=2 {flags} t.py\n"
    )
    args = list(c.plans[0].args)
    if port is None:
        assert "--master-port" not in args
    else:
        assert args[args.index("--master-port") + 1] == port


def test_srun_tasks_keep_a_literal_master_port():
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\nexport MASTER_PORT=23456\nsrun python t.py\n")
    assert list(c.plans[0].args)[:4] == ["--nproc-per-node", "2", "--master-port", "23456"]


def test_inherited_ntasks_conflict_is_flagged():
    c = conv(
        HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n"
        "srun --ntasks-per-node=1 torchrun --nnodes 2 --nproc_per_node 4 --rdzv_backend c10d "
        "--rdzv_endpoint $(hostname):29500 t.py\n"
    )
    assert "L352" in codes(c)
    c = conv(
        HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n"
        "srun -N 2 --ntasks-per-node=1 torchrun --nnodes 2 --rdzv_backend c10d --rdzv_endpoint h:29500 t.py\n"
    )
    assert "L352" not in codes(c)


def test_launchers_in_the_batch_step_run_on_node_zero_only():
    # the batch script runs on the first node only (sbatch(1)); without srun a launcher starts there alone
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --gpus-per-node=4\ntorchrun --nproc_per_node=4 t.py\n")
    assert c.plans[0].num_nodes == 1 and "P443" in codes(c)
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --gpus-per-node=4\naccelerate launch --multi_gpu t.py\n")
    assert c.plans[0].num_nodes == 1
    c = conv(
        HEAD + "#SBATCH -N 2\n#SBATCH --gpus-per-node=4\n"
        "accelerate launch --num_machines 2 --machine_rank 0 --main_process_ip $(hostname) t.py\n"
    )
    assert c.plans[0].num_nodes == 2 and "L350" in codes(c)
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --gpus-per-node=4\ntorchrun --nnodes 2 --nproc_per_node=4 t.py\n")
    assert c.plans[0].num_nodes == 2 and "L350" in codes(c)


def test_srun_export_and_chdir():
    # srun(1) --export=ALL,NAME=value: every task also gets NAME=value
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\nsrun --export=ALL,NCCL_DEBUG=INFO python t.py\n")
    assert {e.name: e.value for e in c.plans[0].env}.get("NCCL_DEBUG") == "INFO" and "L353" not in codes(c)
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\nsrun --export=NONE python t.py\n")
    assert "L353" in codes(c)
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\nsrun -D /work/run1 python t.py\n")
    assert "L353" in codes(c)


def test_srun_gpus_per_task_binds_each_task(tmp_path):
    # srun --gpus-per-task=2 with 2 tasks on a 4-GPU node: task 1 sees the node's GPUs 2,3 (as 0,1 after
    # Slurm's binding; CUDA_VISIBLE_DEVICES lists the node's indices)
    plan = _plan(
        text=HEAD + "#SBATCH -N 1\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n"
        "srun --ntasks=2 --gpus-per-task=2 python t.py\n"
    )
    args = list(plan.args)
    worker = args[args.index("--no-python") + 1 :]
    bindir = _fake_bin(tmp_path, "python")
    (bindir / "python").write_text('#!/bin/bash\necho "CVD=$CUDA_VISIBLE_DEVICES" >> "$FAKE_LOG"\n')
    _, log = _run(
        worker,
        tmp_path,
        bindir,
        RANK=1,
        LOCAL_RANK=1,
        WORLD_SIZE=2,
        LOCAL_WORLD_SIZE=2,
        GROUP_RANK=0,
        **_pet("job", 0, 1),
    )
    assert "CVD=2,3" in log


def test_deepspeed_keeps_the_slots_of_the_scripts_hostfile():
    # DeepSpeed's runner starts `slots` ranks per hostfile line; the runtime's hostfile has slots = GPUs (8),
    # the script's had 4: --num_gpus 4 ("max number of GPUs to use on each node") keeps 4 per node.
    c = conv(
        HEAD + "#SBATCH -N 2\n#SBATCH --gpus-per-node=8\nhf=/tmp/hosts\n"
        'for h in $(scontrol show hostnames); do echo "$h slots=4"; done > $hf\n'
        "deepspeed --hostfile $hf train.py\n"
    )
    assert list(c.plans[0].args)[:6] == ["--hostfile", "/etc/mpi/hostfile", "--launcher", "openmpi", "--num_gpus", "4"]


@pytest.mark.parametrize(
    "arg",
    ["--dist-url env://", "--init_method env://", "--master_addr $MASTER_ADDR", "--dist-url tcp://127.0.0.1:23456"],
)
def test_addresses_a_pod_has_are_not_flagged(arg):
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\nsrun python t.py " + arg + "\n")
    assert "P448" not in codes(c)


def test_mpi_ranks_get_the_preambles_exports():
    # `export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK` used by the launch line is defined in the command's
    # preamble on the launcher; the ranks on the workers need it forwarded too.
    c = conv(
        HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --cpus-per-task=16\n"
        'export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK\nsrun gmx_mpi mdrun -ntomp "$OMP_NUM_THREADS"\n'
    )
    text = c.plans[0].args[0]
    assert "exec mpirun -x OMP_NUM_THREADS " in text and "L351" in codes(c)


def test_hard_coded_master_host_in_the_fallback_is_flagged():
    c = conv(HEAD + "#SBATCH -N 2\nexport MASTER_ADDR=gpu-node-01\nfor i in 1 2; do srun python t.py; done\n")
    assert any(f.code == "P448" and "gpu-node-01" in f.message for f in c.findings)
    c = conv(HEAD + "#SBATCH -N 2\nexport MASTER_ADDR=$(hostname)\nfor i in 1 2; do srun python t.py; done\n")
    assert "P448" not in codes(c)


# ---- the same, measured by `slurm2kf simulate` ---------------------------------------------------------

EQUIVALENT = [
    "batch_once_values",
    "indirect_eval",
    "mpirun_np_mismatch",
    "node_specific",
    "pyxis_sbatch_options",
    "script_args",
    "shifter_image",
    "srun_mpi_container_torchrun",
    "variables_carried",
]
# different on purpose, and said so: the secret's value comes from a Secret (P447); an MPI runtime given to a
# torchrun job (P444)
FLAGGED = {"secrets_env": "P447", "mpi_runtime_without_mpirun": "P444"}


@pytest.mark.parametrize("name", EQUIVALENT + sorted(FLAGGED))
def test_equivalence_fixtures_under_simulate(name, monkeypatch):
    from pathlib import Path
    from translator.simulate import simulate_script

    fixtures = Path(__file__).parent / "fixtures" / "convert" / "equivalence"
    assert sorted(EQUIVALENT + list(FLAGGED)) == sorted(p.stem for p in fixtures.glob("*.sbatch"))
    monkeypatch.chdir(fixtures.parent)
    rel = f"equivalence/{name}.sbatch"
    head = (fixtures / f"{name}.expected.yaml").read_text()
    settings = ConvertSettings(
        runtime="deepspeed-distributed" if "--runtime" in head.split("\n")[0] else None,
        script_args=("0.001", "run a") if name == "script_args" else None,
    )
    v = simulate_script(rel, settings, settings.script_args or ())
    if name in EQUIVALENT:
        assert v.verdict == "equivalent", v.differences
    else:
        c = convert(rel, settings=settings)
        assert FLAGGED[name] in codes(c)
        assert v.verdict == "equivalent" or any(f.severity in ("error", "warning") for f in c.findings)


def test_job_id_in_the_command_is_flagged():
    # every sbatch submission gets a new job id; a TrainJob has none, the stand-in is fixed per script
    c = conv(HEAD + "#SBATCH -N 1\npython t.py --out runs/$SLURM_JOB_ID\n")
    assert "L354" in codes(c)
    c = conv(HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\nsrun python t.py\n")
    assert "L354" not in codes(c)  # the shim defines SLURM_JOB_ID; the command does not use it
