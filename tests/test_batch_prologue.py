"""The batch-step prologue run for real with bash, on one pod (no MPI needed).

Expected values are derived by hand from srun(1)/sbatch(1) (Slurm 22.05): the batch step's variables
(sbatch.1 OUTPUT ENVIRONMENT: SLURM_NODEID=0, SLURM_PROCID=0, the job's node list), srun's per-task
variables (srun.1 OUTPUT ENVIRONMENT), block distribution (slurm_step_layout.c: consecutive task ids per
node), --gpus-per-task binding (each task its own GPUs), -l labels (`<task id>: `), --multi-prog
(`%t` task id, `%o` offset in the line's range), srun's exit status (the highest task exit code) and -K.
Multi-node steps (Open MPI's mpirun over ssh) are in test_batch_prologue_openmpi.py.
"""

from __future__ import annotations

import time

from tests.batch_prologue_helpers import run_batch, task_lines

ME = "solo-launcher-0-0"
HEADER_4GPU = "#SBATCH -N1\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4"


def test_batch_step_variables_and_hostnames_on_one_pod(tmp_path):
    body = (
        'echo "JNL=$SLURM_JOB_NODELIST NL=$SLURM_NODELIST NID=$SLURM_NODEID PID=$SLURM_PROCID '
        'LID=$SLURM_LOCALID D=$SLURMD_NODENAME NN=$SLURM_NNODES NT=$SLURM_NTASKS"\n'
        "scontrol show hostnames\n"
        "scontrol show hostnames 'gpu[01-03],cpu7'\n"
    )
    r = run_batch(tmp_path, HEADER_4GPU, body, ME)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # no hostfile (single-node job): the allocation is this pod; batch step = task 0 of node 0
    assert lines[0] == f"JNL={ME} NL={ME} NID=0 PID=0 LID=0 D={ME} NN=1 NT=4"
    assert lines[1:] == [ME, "gpu01", "gpu02", "gpu03", "cpu7"]


def test_hosts_come_from_the_hostfile_batch_pod_first(tmp_path):
    # The Trainer's hostfile lists the node pods first and the launcher last; Slurm's node 0 is the
    # batch host, so the launcher comes first, the others keep the file's order.
    hostfile = "j-node-0-0.j slots=2\nj-node-0-1.j slots=2\nj-launcher-0-0.j slots=2\n"
    body = 'echo "$SLURM_JOB_NODELIST|$SLURMD_NODENAME"\nscontrol show hostname\n'
    r = run_batch(tmp_path, "#SBATCH -N3", body, "j-launcher-0-0", hostfile=hostfile)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "j-launcher-0-0.j,j-node-0-0.j,j-node-0-1.j|j-launcher-0-0.j",
        "j-launcher-0-0.j",
        "j-node-0-0.j",
        "j-node-0-1.j",
    ]


def test_other_scontrol_commands_fail_clearly(tmp_path):
    r = run_batch(tmp_path, "#SBATCH -N1", "scontrol show job 1\necho rc=$?\n", ME)
    assert "rc=1" in r.stdout
    assert "scontrol show job 1 is not available" in r.stderr


def test_default_step_runs_the_allocation_tasks_and_every_task_sees_the_node_gpus(tmp_path):
    # srun with no options inherits -n from SLURM_NTASKS (4 = 1 node x --ntasks-per-node=4); without a
    # per-task GPU request every task sees all of the node's GPUs (no binding).
    r = run_batch(tmp_path, HEADER_4GPU, "srun ./show\n", ME)
    assert r.returncode == 0, r.stderr
    rows = task_lines(r.stdout)
    assert [(x["P"], x["L"], x["N"]) for x in rows] == [
        ("0", "0", "0"),
        ("1", "1", "0"),
        ("2", "2", "0"),
        ("3", "3", "0"),
    ]
    for x in rows:
        assert (x["S"], x["D"], x["NT"], x["NN"], x["TPN"], x["G"], x["NL"]) == ("0", ME, "4", "1", "4", "0,1,2,3", ME)
        assert x["C"] == "0,1,2,3"
        assert x["H"] == "local"  # started on the batch pod itself, without mpirun


def test_gpus_per_task_gives_each_task_its_own_gpus(tmp_path):
    # --gpus-per-task=2, 4 tasks on a node with 8 GPUs: local id l gets GPUs 2l, 2l+1.
    header = "#SBATCH -N1\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=8"
    body = (
        "srun --gpus-per-task=2 ./show\nsrun -n4 --gpu-bind=single:2 ./show\nsrun -n3 --gpu-bind=map_gpu:3,1 ./show\n"
    )
    r = run_batch(tmp_path, header, body, ME)
    assert r.returncode == 0, r.stderr
    rows = task_lines(r.stdout)
    assert [x["C"] for x in rows if x["S"] == "0"] == ["0,1", "2,3", "4,5", "6,7"]
    # single:2 -> two tasks share one GPU: tasks 0,1 -> GPU 0; 2,3 -> GPU 1
    assert [x["C"] for x in rows if x["S"] == "1"] == ["0", "0", "1", "1"]
    # map_gpu:3,1 -> task l gets the (l mod 2)-th entry
    assert [x["C"] for x in rows if x["S"] == "2"] == ["3", "1", "3"]


def test_label_multi_prog_and_cpus_per_task(tmp_path):
    conf = tmp_path / "mp.conf"
    conf.write_text("# comment\n0 echo first %t\n1-2 echo 'rest of' %t %o\n")
    body = "srun -l -n3 echo hi\nsrun -n3 --multi-prog mp.conf\nsrun -n1 -c 6 bash -c 'echo cpt=$SLURM_CPUS_PER_TASK'\n"
    r = run_batch(tmp_path, "#SBATCH -N1\n#SBATCH -n4", body, ME)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert sorted(out[:3]) == ["0: hi", "1: hi", "2: hi"]
    # %o: offset within the line's range (task 1 is offset 0 of 1-2, task 2 offset 1)
    assert sorted(out[3:6]) == ["first 0", "rest of 1 0", "rest of 2 1"]
    assert out[6] == "cpt=6"


def test_exit_status_is_the_highest_task_exit_code(tmp_path):
    body = (
        "srun -n3 bash -c 'exit $SLURM_PROCID'; echo rc=$?\n"
        "srun -n3 true; echo rc=$?\n"
        "set -e\nsrun -n2 bash -c 'exit $((SLURM_PROCID * 5))'\necho not-reached\n"
    )
    r = run_batch(tmp_path, "#SBATCH -N1\n#SBATCH -n4", body, ME)
    assert r.stdout.splitlines() == ["rc=2", "rc=0"]
    assert r.returncode == 5  # set -e: the script ends with srun's status


def test_kill_on_bad_exit_ends_the_other_tasks(tmp_path):
    body = "srun -K -n2 bash -c 'if [ $SLURM_PROCID = 1 ]; then echo oops >&2; exit 3; fi; sleep 20; echo survived'; echo rc=$?\n"
    start = time.monotonic()
    r = run_batch(tmp_path, "#SBATCH -N1\n#SBATCH -n2", body, ME)
    assert time.monotonic() - start < 15
    assert r.stdout.splitlines() == ["rc=3"]
    assert r.stderr == "oops\n"  # the task's own stderr, and no job-control report of the ended task


def test_background_steps_get_their_own_step_ids(tmp_path):
    # Every srun of the job is a new step: 0, 1, ... in the order they start, also with & ... wait.
    body = "srun -n1 ./show &\nwait\nsrun -n1 ./show &\nsrun -n1 ./show &\nwait\nsrun -n1 ./show\n"
    r = run_batch(tmp_path, "#SBATCH -N1", body, ME)
    assert r.returncode == 0, r.stderr
    assert sorted(int(x["S"]) for x in task_lines(r.stdout)) == [0, 1, 2, 3]
    assert r.stdout.splitlines()[-1].startswith("P=0 L=0 N=0 S=3 ")


def test_user_words_stay_data(tmp_path):
    body = "srun -n1 printf '[%s]\\n' 'a b' '\"q\"' '$(touch PWNED)' ';' \"it's\" '`id`'\n"
    r = run_batch(tmp_path, "#SBATCH -N1", body, ME)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[a b]", '["q"]', "[$(touch PWNED)]", "[;]", "[it's]", "[`id`]"]
    assert not (tmp_path / "PWNED").exists()


def test_export_none_and_list(tmp_path):
    # srun.1 --export: without ALL only SLURM_* and the named variables reach the task; NAME=value sets one.
    body = (
        "export FOO=1 KEEP=2\n"
        "srun -n1 --export=NONE,KEEP,BAR=3 /bin/bash -c 'echo \"${FOO-unset} ${KEEP-unset} ${BAR-unset} $SLURM_PROCID\"'\n"
        "srun -n1 bash -c 'echo \"${FOO-unset}\"'\n"
    )
    r = run_batch(tmp_path, "#SBATCH -N1", body, ME, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["unset 2 3 0", "1"]


def test_too_many_nodes_is_an_error(tmp_path):
    r = run_batch(tmp_path, "#SBATCH -N1", "srun -N2 true; echo rc=$?\n", ME)
    assert r.stdout.splitlines() == ["rc=1"]
    assert "Only allocated 1 nodes asked for 2" in r.stderr


def test_first_host_idiom_under_pipefail(tmp_path):
    # `scontrol show hostnames | head -n1` under `set -euo pipefail` (a common way to pick the head node):
    # scontrol writes its list at once, so head's early exit does not fail the pipeline.
    body = (
        "set -euo pipefail\n"
        "for i in 1 2 3 4 5; do first=$(scontrol show hostnames 'n[001-300]' | head -n1); done\n"
        'echo "first=$first"\n'
    )
    r = run_batch(tmp_path, "#SBATCH -N1", body, ME)
    assert (r.returncode, r.stdout) == (0, "first=n001\n"), r.stderr


def test_hostile_job_values_and_option_values_stay_data(tmp_path):
    header = "#SBATCH -N1\n#SBATCH --job-name='$(touch PWNED1);`touch PWNED2`'"
    body = (
        'echo "name=$SLURM_JOB_NAME"\n'
        "srun -n '1;touch PWNED3' true; echo rc=$?\n"
        "srun -N '$(touch PWNED4)' true; echo rc=$?\n"
        "srun -w '$(touch PWNED5)' -n1 true; echo rc=$?\n"
        "srun --gpu-bind='map_gpu:$(touch PWNED6)' -n1 true; echo rc=$?\n"
    )
    r = run_batch(tmp_path, header, body, ME)
    assert r.stdout.splitlines() == ["name=$(touch PWNED1);`touch PWNED2`", "rc=1", "rc=1", "rc=0", "rc=0"]
    assert "invalid task or node count" in r.stderr
    assert not list(tmp_path.glob("PWNED*"))
