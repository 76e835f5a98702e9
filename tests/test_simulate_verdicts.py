"""The four verdicts of `slurm2kf simulate` (issue 20), each on a script written the way public job scripts are.

Expected values come from what Slurm and Kubernetes do (sbatch.1, srun.1, the Kubernetes docs), not from the
code: which programs a step starts, what the batch step's environment holds, what a container lacks.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from translator.pipeline import ConvertSettings
from translator.simulate import simulate_script


def write(tmp_path, body: str, name: str = "job.sbatch") -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body).lstrip())
    return str(p)


def sim(tmp_path, body: str, image: str | None = None, **kw):
    return simulate_script(write(tmp_path, body), ConvertSettings(image=image), **kw)


# ---------------------------------------------------------------- every program is a process


@pytest.mark.parametrize(
    "launch, program",
    [
        ("srun /opt/app/bin/lmp -in in.lj", "/opt/app/bin/lmp"),  # LAMMPS, by absolute path
        ("srun ./a.out input.dat", "a.out"),  # a compiled program in the submit directory
    ],
)
def test_programs_by_path_are_training_processes(tmp_path, launch, program):
    # srun starts --ntasks copies of the program (srun.1): 2 processes, ranks 0 and 1, on each side.
    v = sim(
        tmp_path,
        f"""
        #!/bin/bash
        #SBATCH --job-name=md
        #SBATCH --nodes=1
        #SBATCH --ntasks=2
        {launch}
        """,
    )
    for side in (v.slurm, v.kubeflow):
        assert sorted(p.rank for p in side.processes) == [0, 1]
        assert {p.program.removeprefix("./") for p in side.processes} == {program}
    assert v.verdict == "equivalent", v.differences


def test_absolute_binary_in_the_batch_step_and_bash_c_are_processes(tmp_path):
    # The batch step itself runs /home/u/bin/prep (once, on node 0) and `bash -c "$cmd"` runs python.
    v = sim(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --nodes=1
        #SBATCH --gpus-per-node=1
        cmd="python train.py --lr 0.1"
        /home/u/bin/prep --shard 0
        bash -c "${cmd}"
        """,
    )
    progs = sorted((p.program, p.argv) for p in v.slurm.processes)
    assert progs == [("/home/u/bin/prep", ("--shard", "0")), ("train.py", ("--lr", "0.1"))]


# ---------------------------------------------------------------- inconclusive, with the reason


def test_empty_comparison_is_never_equivalent(tmp_path):
    v = sim(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --job-name=check-env
        #SBATCH --nodes=1
        echo "running on $(hostname)"
        date
        """,
    )
    assert v.verdict == "inconclusive" and v.reason.code == "S812"


def test_placeholder_is_inconclusive_and_says_the_line(tmp_path):
    # `<your-token>` is a redirection for bash: the line is a syntax error, the script cannot run as written.
    v = sim(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --job-name=llama-ft
        #SBATCH --nodes=1
        #SBATCH --gpus-per-node=4
        export HF_TOKEN=<your-token>
        torchrun --nproc_per_node=4 finetune.py --model meta-llama/Llama-2-7b-hf
        """,
    )
    assert v.verdict == "inconclusive"
    assert (v.reason.code, v.reason.side, v.reason.where) == ("S807", "slurm", "line 5: <your-token>")


def test_multi_prog_is_inconclusive(tmp_path):
    v = sim(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --nodes=1
        #SBATCH --ntasks=2
        srun --multi-prog tasks.conf
        """,
    )
    assert v.verdict == "inconclusive" and v.reason.code == "S808"


def test_missing_site_directory_is_inconclusive_with_the_line(tmp_path):
    v = sim(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --nodes=1
        #SBATCH --gpus-per-node=1
        set -e
        cd /gpfs/projects/climate/run42
        python train.py --epochs 10
        """,
    )
    assert v.verdict == "inconclusive" and v.reason.code == "S809"
    assert v.reason.where.endswith("line 5")  # the `cd` (line 1 is `#!/bin/bash`)


def test_identical_failure_is_reported_once_and_is_not_a_difference(tmp_path):
    # A site script that is not here: bash exits 127 at the same command on both sides (set -e).
    v = sim(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --nodes=1
        #SBATCH --gpus-per-node=1
        set -e
        bash /gpfs/projects/climate/tools/stage_data.sh
        for seed in 1 2; do
          python train.py --seed "$seed"
        done
        """,
    )
    assert v.verdict == "inconclusive" and v.reason.code == "S811"
    assert v.differences == () and len(v.shared) == 1 and "status 127" in v.shared[0]


def test_time_running_out_is_only_inconclusive(tmp_path):
    v = sim(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --nodes=1
        #SBATCH --gpus-per-node=1
        while true; do :; done
        python train.py
        """,
        timeout=1.0,
    )
    assert v.verdict == "inconclusive" and v.reason.code == "S806" and v.reason.side == "slurm"


def test_refused(tmp_path):
    # sbatch: "Maximum node count 1 is less than minimum node count 2"
    v = sim(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --nodes=2-1
        #SBATCH --ntasks-per-node=4
        srun python train.py
        """,
    )
    assert v.verdict == "refused" and v.reason.code == "S813" and "O207" in v.reason.text


# ---------------------------------------------------------------- no cosmetic differences


def test_home_working_directory_and_user_are_the_same_on_both_sides(tmp_path):
    v = sim(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --job-name=resnet
        #SBATCH --nodes=1
        #SBATCH --gpus-per-node=2
        python train.py --data "$PWD/data" --output_dir "$HOME/runs/resnet" --user "$USER"
        """,
    )
    assert v.verdict == "equivalent", v.differences
    (s,), (k,) = v.slurm.processes, v.kubeflow.processes
    assert s.argv == k.argv == ("--data", "/home/user/data", "--output_dir", "/home/user/runs/resnet", "--user", "user")


def test_rendezvous_helper_variable_set_on_one_side_is_not_a_difference():
    from translator.simulate.verdict import noticeable

    assert not noticeable("<node0>", None)  # HEAD_NODE: names the side's first node, rendezvous is the launcher's
    assert not noticeable(None, "<node0> <node1>")
    assert not noticeable("<node0>", "<node0>")
    assert noticeable("/data/a", None)  # a path the program reads
    assert noticeable("<node0>", "<node1>")  # a different node


# ---------------------------------------------------------------- pods are not login nodes


def test_shifter_is_absent_in_a_pod(tmp_path):
    v = sim(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --nodes=1
        #SBATCH --gpus-per-node=1
        #SBATCH --image=docker:nersc/pytorch:24.06
        for seed in 1 2; do
          shifter python train.py --seed "$seed"
        done
        """,
    )
    # the converted script does not need shifter: its stand-in runs the command in the pod, which runs the
    # image (L360), so both sides start the same two processes
    assert v.verdict == "equivalent", v.differences
    assert len(v.slurm.processes) == 2 == len(v.kubeflow.processes)
    # but a pod has no shifter of its own: a TrainJob that calls it fails there with "command not found"
    from translator.simulate import kubeflow_of_trainjob

    tj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "s"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"image": "nersc/pytorch:24.06", "command": ["shifter", "python", "train.py"], "numNodes": 1},
        },
    }
    kube = kubeflow_of_trainjob(tj)
    assert not kube.processes and any("command not found" in f.reason for f in kube.failures), kube.failures


CONDA_SWEEP = """
    #!/bin/bash
    #SBATCH --job-name=sweep
    #SBATCH --nodes=1
    #SBATCH --gpus-per-node=1
    conda activate torch2
    for lr in 0.1 0.01; do
      python train.py --lr "$lr"
    done
    """


def test_conda_only_where_the_image_provides_it(tmp_path):
    # NGC's PyTorch image has no conda; pytorch/pytorch is built on it; --image-provides declares it.
    ngc = "nvcr.io/nvidia/pytorch:24.01-py3"
    v = sim(tmp_path, CONDA_SWEEP, image=ngc)
    assert v.verdict == "differs" and any("conda" in d and "command not found" in d for d in v.differences)
    assert sim(tmp_path, CONDA_SWEEP, image=ngc, provides=("conda",)).verdict == "equivalent"
    assert sim(tmp_path, CONDA_SWEEP, image="pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime").verdict == "equivalent"


def test_sbatch_exports_term_so_tput_works_on_slurm_only(tmp_path):
    # sbatch --export=ALL (default) propagates the submit shell's TERM; a container has none unless tty.
    v = sim(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --nodes=1
        #SBATCH --gpus-per-node=1
        COLS=$(tput cols)
        python train.py --width "$COLS"
        """,
    )
    assert [p.argv for p in v.slurm.processes] == [("--width", "80")]
    assert [p.argv for p in v.kubeflow.processes] == [("--width", "")]
    assert v.verdict == "differs"


def test_submit_environment_follows_export_rules():
    from translator.simulate.slurm_side import submit_env

    # sbatch.1 --export: ALL is the default; NONE/NIL give only SLURM_*; a list gives those names only;
    # with ALL,VAR=val the caller's own value wins.
    assert submit_env(None) == {"TERM": "xterm-256color"}
    assert submit_env("NONE") == {} and submit_env("NIL") == {}
    assert submit_env("HF_HOME,WANDB_MODE=offline") == {"WANDB_MODE": "offline"}
    assert submit_env("TERM") == {"TERM": "xterm-256color"}
    assert submit_env("ALL,TERM=dumb") == {"TERM": "xterm-256color"}


# ---------------------------------------------------------------- exit status and JSON


def test_exit_status_and_json_reason(tmp_path, cli):
    eq = write(
        tmp_path,
        """
        #!/bin/bash
        #SBATCH --nodes=1
        #SBATCH --ntasks=2
        srun ./a.out
        """,
        "eq.sbatch",
    )
    empty = write(tmp_path, "#!/bin/bash\n#SBATCH -N 1\necho hi\n", "empty.sbatch")
    # srun torchrun on 2 nodes without --nnodes: each node its own training on Slurm, one on Kubeflow (L349)
    differs = write(
        tmp_path,
        "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=2\n"
        "srun torchrun --nproc_per_node 2 t.py\n",
        "d.sbatch",
    )
    assert cli("simulate", eq).exit_code == 0
    r = cli("simulate", "--json", eq, empty)
    assert r.exit_code == 3
    docs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [d["verdict"] for d in docs] == ["equivalent", "inconclusive"]
    assert docs[0]["reason"] is None and docs[1]["reason"]["code"] == "S812"
    assert cli("simulate", eq, empty, differs).exit_code == 1


def test_convert_simulate_gives_the_reason_code(tmp_path, cli):
    p = write(tmp_path, "#!/bin/bash\n#SBATCH -N 1\necho hi\n", "empty.sbatch")
    r = cli("convert", "--simulate", "--to", "json", p)
    assert " warning S812 simulation inconclusive: no training process on either side" in r.stderr
    doc = json.loads(r.stdout)
    assert doc["simulation"]["verdict"] == "inconclusive" and doc["simulation"]["reason"]["code"] == "S812"


def test_the_same_rendezvous_split_on_both_sides_is_shared_not_a_difference():
    from test_simulate_pods_verdict import P, sides

    from translator.simulate.verdict import decide

    # each node's ranks name their own node as MASTER_ADDR (`MASTER_ADDR=$(hostname)` inside the step): no
    # single rendezvous on either side; the TrainJob reproduces the script's bug exactly
    s = [P("slurm", r // 2, r, 4, master=f"node0{r // 2 + 1}") for r in range(4)]
    k = [P("kubeflow", r // 2, r, 4, master=f"job-node-0-{r // 2}.job") for r in range(4)]
    v = decide("job.sbatch", *sides(s, k))
    assert v.verdict == "equivalent", v.differences
    assert v.shared == (
        "both sides: the ranks of `python train.py` do not share one MASTER_ADDR (node0, node1): "
        "they would not form one training",
    )
    # split on one side only: a difference
    k = [P("kubeflow", r // 2, r, 4, master="job-node-0-0.job") for r in range(4)]
    v = decide("job.sbatch", *sides(s, k))
    assert v.verdict == "differs" and any(d.startswith("Slurm: the ranks of") for d in v.differences)
