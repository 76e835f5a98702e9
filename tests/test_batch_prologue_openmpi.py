"""The step launcher for real: srun's tasks started on other "pods" by Open MPI's own mpirun.

Debian's openmpi-bin (installed by ./test.sh) starts the tasks. The hostfile names three pods as the
Trainer writes it (node pods first, the launcher last); Open MPI treats every name as a remote host and
starts its daemon through `plm_rsh_agent`, here a test agent that drops ssh's options and runs the daemon
on this machine with a clean environment (what sshd gives a session on the other pod), noting which
pod it stands for in S2K_TEST_REAL_HOST. So each task's placement is the real one Open MPI chose, and
every variable the task sees came through mpirun (`-x`) or the task wrapper.

Expected layouts are derived by hand from srun(1) and Slurm's block distribution (slurm_step_layout.c):
node i of the step gets ceil/floor of ntasks/nnodes tasks, the first nodes the larger share, task ids
consecutive per node; SLURM_NODEID is the node's index in the step's node list (slurmstepd: nodelist_find
on the step's complete_nodelist); with --gpus-per-task=G, local task l sees GPUs l*G .. l*G+G-1.
These tests fail, never skip, when mpirun is missing.
"""

from __future__ import annotations

from tests.batch_prologue_helpers import run_batch, task_lines

HOSTFILE = "j-node-0-0.j slots=2\nj-node-0-1.j slots=2\nj-launcher-0-0.j slots=2\n"
ME = "j-launcher-0-0"
L, N0, N1 = "j-launcher-0-0.j", "j-node-0-0.j", "j-node-0-1.j"


def layout(rows):
    return [(r["P"], r["L"], r["N"], r["D"], r["H"]) for r in rows]


def test_three_tasks_on_two_nodes(tmp_path, mpi_env):
    # srun -N2 -n3: node 0 (the batch pod) gets tasks 0,1; node 1 gets task 2.
    r = run_batch(tmp_path, "#SBATCH -N3", "srun -N2 -n3 ./show\necho rc=$?\n", ME, HOSTFILE, mpi_env)
    assert "rc=0" in r.stdout, r.stderr
    rows = task_lines(r.stdout)
    assert layout(rows) == [("0", "0", "0", L, L), ("1", "1", "0", L, L), ("2", "0", "1", N0, N0)]
    for x in rows:
        assert (x["S"], x["NT"], x["NN"], x["TPN"], x["NL"]) == ("0", "3", "2", "2,1", f"{L},{N0}")
    assert [x["G"] for x in rows] == ["0,1", "0,1", "2"]


def test_nodelist_exclude_relative_and_tasks_per_node(tmp_path, mpi_env):
    body = (
        f"srun -w {N1} -n2 ./show\n"  # both tasks on the named node, which is node 0 of the step
        f"srun -x {L} ./show\n"  # one task per node (no -n in the job) on the two node pods
        "srun -r 1 -N1 ./show\n"  # the step starts at node 1 of the allocation
        "srun --ntasks-per-node=2 -N3 ./show\n"  # 6 tasks: 0,1 | 2,3 | 4,5
    )
    r = run_batch(tmp_path, "#SBATCH -N3", body, ME, HOSTFILE, mpi_env)
    assert r.returncode == 0, r.stderr
    rows = task_lines(r.stdout)
    step = {s: [x for x in rows if x["S"] == s] for s in "0123"}
    assert layout(step["0"]) == [("0", "0", "0", N1, N1), ("1", "1", "0", N1, N1)]
    assert layout(step["1"]) == [("0", "0", "0", N0, N0), ("1", "0", "1", N1, N1)]
    assert step["1"][0]["NL"] == f"{N0},{N1}"
    assert layout(step["2"]) == [("0", "0", "0", N0, N0)]
    assert layout(step["3"]) == [
        ("0", "0", "0", L, L),
        ("1", "1", "0", L, L),
        ("2", "0", "1", N0, N0),
        ("3", "1", "1", N0, N0),
        ("4", "0", "2", N1, N1),
        ("5", "1", "2", N1, N1),
    ]
    assert {x["TPN"] for x in step["3"]} == {"2(x3)"}


def test_gpus_per_task_across_two_pods(tmp_path, mpi_env):
    hostfile = "g-node-0-0.g slots=4\ng-launcher-0-0.g slots=4\n"
    header = "#SBATCH -N2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=8"
    r = run_batch(tmp_path, header, "srun --gpus-per-task=2 ./show\n", "g-launcher-0-0", hostfile, mpi_env)
    assert r.returncode == 0, r.stderr
    rows = task_lines(r.stdout)
    assert [(x["P"], x["L"], x["N"], x["H"], x["C"]) for x in rows] == [
        ("0", "0", "0", "g-launcher-0-0.g", "0,1"),
        ("1", "1", "0", "g-launcher-0-0.g", "2,3"),
        ("2", "2", "0", "g-launcher-0-0.g", "4,5"),
        ("3", "3", "0", "g-launcher-0-0.g", "6,7"),
        ("4", "0", "1", "g-node-0-0.g", "0,1"),
        ("5", "1", "1", "g-node-0-0.g", "2,3"),
        ("6", "2", "1", "g-node-0-0.g", "4,5"),
        ("7", "3", "1", "g-node-0-0.g", "6,7"),
    ]


def test_job_variables_and_user_words_reach_remote_tasks(tmp_path, mpi_env):
    # srun --export=ALL (the default): the batch shell's exported variables reach every task.
    body = "export MY_SETTING='x y'\nsrun -N2 -n2 printf '%s|%s|%s\\n' \"$MY_SETTING\" '$(id); `id`' \"it's\"\n"
    r = run_batch(tmp_path, "#SBATCH -N3", body, ME, HOSTFILE, mpi_env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["x y|$(id); `id`|it's"] * 2


def test_exit_status_and_kill_on_bad_exit_across_pods(tmp_path, mpi_env):
    body = (
        "srun -N3 -n3 bash -c 'exit $((SLURM_PROCID * 2))'; echo rc=$?\n"  # highest task exit code: 4
        "srun -K -N2 -n2 bash -c 'if [ $SLURM_PROCID = 1 ]; then exit 3; fi; sleep 20; echo survived'; echo rc=$?\n"
        "srun -l -N2 -n2 echo hi\n"
    )
    r = run_batch(tmp_path, "#SBATCH -N3", body, ME, HOSTFILE, mpi_env)
    out = r.stdout.splitlines()
    assert out[:2] == ["rc=4", "rc=3"], r.stderr
    assert "survived" not in r.stdout
    assert sorted(out[2:]) == ["0: hi", "1: hi"]


def test_a_task_count_that_does_not_match_ntasks_per_node_is_spread_evenly(tmp_path, mpi_env):
    # srun 22.05 (src/srun/libsrun/opt.c): "can't honor --ntasks-per-node set to X which doesn't match the
    # requested tasks Y with the number of requested nodes Z. Ignoring --ntasks-per-node." and the tasks
    # are spread by the block layout (NERSC's user docs: 224 tasks on 4 nodes with 64 per node give 56
    # per node). Here 4 tasks on the job's 2 nodes with 4 per node: 2 and 2. Fewer tasks than nodes:
    # "can't run 1 processes on 2 nodes, setting nnodes to 1".
    hostfile = "g-node-0-0.g slots=4\ng-launcher-0-0.g slots=4\n"
    header = "#SBATCH -N2\n#SBATCH --ntasks-per-node=4"
    r = run_batch(tmp_path, header, "srun -n4 ./show\nsrun -n1 ./show\n", "g-launcher-0-0", hostfile, mpi_env)
    assert r.returncode == 0, r.stderr
    rows = task_lines(r.stdout)
    assert [(x["S"], x["P"], x["L"], x["N"], x["H"]) for x in rows] == [
        ("0", "0", "0", "0", "g-launcher-0-0.g"),
        ("0", "1", "1", "0", "g-launcher-0-0.g"),
        ("0", "2", "0", "1", "g-node-0-0.g"),
        ("0", "3", "1", "1", "g-node-0-0.g"),
        ("1", "0", "0", "0", "local"),
    ]
    assert "can't honor --ntasks-per-node set to 4 which doesn't match the requested tasks 4" in r.stderr
    assert "can't run 1 processes on 2 nodes, setting nnodes to 1" in r.stderr


def test_foreign_host_list_multi_prog_and_set_eu_across_pods(tmp_path, mpi_env):
    # -w naming hosts that are not in the allocation (the original cluster's names): as many nodes as it
    # names, taken in allocation order. --multi-prog reaches the remote task through mpirun.
    (tmp_path / "mp.conf").write_text("0 echo head %t\n* echo worker %t %o\n")
    body = (
        "set -euo pipefail\n"
        "srun -w 'gpu[07-08]' -n2 ./show\n"
        "srun -N2 -n2 --multi-prog mp.conf\n"
        'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)\n'
        'srun -N1 -n1 -w "$head" bash -c \'echo "ran on $SLURMD_NODENAME"\'\n'
    )
    r = run_batch(tmp_path, "#SBATCH -N3", body, ME, HOSTFILE, mpi_env)
    assert r.returncode == 0, r.stderr
    rows = task_lines(r.stdout)
    assert layout(rows) == [("0", "0", "0", L, L), ("1", "0", "1", N0, N0)]
    rest = [line for line in r.stdout.splitlines() if not line.startswith("P=")]
    # task 1 matches `*` (task 0 matched the line before): offset = its position in all tasks
    assert sorted(rest[:2]) == ["head 0", "worker 1 1"]
    assert rest[2:] == [f"ran on {L}"]
