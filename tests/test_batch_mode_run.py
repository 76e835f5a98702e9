"""Converted batch-mode TrainJobs, run for real: the launcher pod's command once, its steps through Open MPI.

Each test converts a script, then runs the TrainJob's launcher command (`bash -c PROLOGUE+BODY slurm_script`,
after the kubelet's `$$` expansion) once, as the launcher pod would: with the hostfile the Trainer mounts
(node pods first, the launcher last; docs/kubeflow-trainer.md), `hostname` printing the pod's name, and
Debian's real `mpirun` starting each step's tasks on the other "pods" through the test ssh agent of
tests/batch_prologue_helpers.py. The fake programs record their arguments, their SLURM_* variables and
the pod they ran on. Expectations are Slurm's, derived by hand: the batch script runs once on node 0,
each srun starts its tasks over the step's nodes (srun(1), block distribution).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from translator.pipeline import ConvertSettings, convert
from translator.simulate.kubelet import expand_argv

FIXTURES = Path(__file__).parent / "fixtures" / "convert"
HEAD = "#!/bin/bash\n"

FAKE = (
    '#!/bin/bash\nf="$(mktemp "$FAKE_LOG.XXXXXX")"\n'
    '{ echo "CALL $(basename "$0")"; echo "HOST ${S2K_TEST_REAL_HOST:-$S2K_LAUNCHER}"; '
    'for a in "$@"; do echo "ARG $a"; done; '
    "env | grep -E '^SLURM' | sort | sed 's/^/ENV /'; } > \"$f\"\n"
)


def _plan(rel=None, text=None):
    if text is not None:
        return convert("job.sbatch", data=text.encode(), settings=ConvertSettings()).plans[0]
    return convert(str(FIXTURES / rel), settings=ConvertSettings()).plans[0]


def _pods(plan) -> tuple[str, list[str]]:
    """(launcher host, hostfile hosts) of a batch-mode TrainJob: numNodes - 1 node pods, then the launcher."""
    name = plan.name
    nodes = [f"{name}-node-0-{i}.{name}" for i in range(plan.num_nodes - 1)]
    launcher = f"{name}-launcher-0-0.{name}"
    return launcher, nodes + [launcher]


def run_launcher(plan, tmp_path: Path, env: dict, programs=("python",)):
    """Run the launcher pod's command once; returns (process, calls) with calls as dicts."""
    assert plan.runtime == f"{plan.name}-batch" and tuple(plan.command) == ("bash", "-c")
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    launcher, hosts = _pods(plan)
    for name in programs:
        (bindir / name).write_text(FAKE)
        (bindir / name).chmod(0o755)
    # `hostname` in a pod prints the pod's short name (the test agent names the pod a task runs on); a
    # function for bash only, so that Open MPI's own processes keep this machine's name
    bash_env = tmp_path / "bash_env"
    bash_env.write_text('hostname() { local h="${S2K_TEST_REAL_HOST:-$S2K_LAUNCHER}"; echo "${h%%.*}"; }\n')
    (tmp_path / "hostfile").write_text("".join(f"{h} slots=1\n" for h in hosts))
    log = tmp_path / "log"
    full = {
        "PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "FAKE_LOG": str(log),
        "S2K_LAUNCHER": launcher,
        "BASH_ENV": str(bash_env),
        "OMPI_MCA_orte_default_hostfile": str(tmp_path / "hostfile"),
        **env,
    }
    argv = list(expand_argv(list(plan.command) + list(plan.args), ()))  # the kubelet expansion of $$
    proc = subprocess.run(argv, capture_output=True, text=True, env=full, cwd=tmp_path, timeout=120)
    calls = []
    for rec in sorted(tmp_path.glob("log.*"), key=lambda r: r.stat().st_mtime_ns):
        call: dict = {"args": [], "env": {}}
        for line in rec.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "CALL":
                call["name"] = value
            elif key == "HOST":
                call["host"] = value
            elif key == "ARG":
                call["args"].append(value)
            elif key == "ENV":
                k, _, v = value.partition("=")
                call["env"][k] = v
        calls.append(call)
    return proc, calls


def test_loop_of_steps_runs_each_step_on_both_pods_once(tmp_path, mpi_env):
    # loop_steps: 2 nodes, 1 task per node, 3 steps: each step's 2 tasks (one per node), 6 calls in all
    plan = _plan("script/loop_steps.sbatch")
    proc, calls = run_launcher(plan, tmp_path, mpi_env)
    assert proc.returncode == 0, proc.stderr
    launcher, (node0, _) = _pods(plan)
    by_lr = {}
    for c in calls:
        by_lr.setdefault(c["args"][2], []).append((c["env"]["SLURM_PROCID"], c["env"]["SLURM_NODEID"], c["host"]))
    assert sorted(by_lr) == ["0.001", "0.01", "0.1"]
    for lr, tasks in by_lr.items():  # task 0 on node 0 (the batch pod), task 1 on node 1
        assert sorted(tasks) == [("0", "0", launcher), ("1", "1", node0)], lr
    step_ids = sorted({c["env"]["SLURM_STEP_ID"] for c in calls})
    assert step_ids == ["0", "1", "2"]  # one step per srun call, numbered from 0
    job_ids = {c["args"][4].split("/")[1] for c in calls}
    assert len(job_ids) == 1 and job_ids.pop().isdigit()
    # the batch step's echo ran once, on the batch pod, with the job's node list (the batch pod first)
    assert proc.stdout.count("sweep finished on") == 1
    assert f"sweep finished on {launcher},{node0}" in proc.stdout


def test_values_the_batch_shell_computes_are_computed_once(tmp_path, mpi_env):
    # MASTER=$(hostname) and PORT=$RANDOM... ran once in the batch shell on node 0; the three one-task steps
    # (`-w "$FIRST"`, `-w node01` twice) each ran on the first node: the batch pod.
    plan = _plan("equivalence/batch_once_values.sbatch")
    proc, calls = run_launcher(plan, tmp_path, mpi_env)
    assert proc.returncode == 0, proc.stderr
    launcher, _ = _pods(plan)
    assert [c["args"][0] for c in calls] == ["prep.py", "train.py", "eval.py"]
    assert {c["host"] for c in calls} == {launcher}
    masters = {c["args"][c["args"].index("--master") + 1] for c in calls}
    ports = {c["args"][c["args"].index("--port") + 1] for c in calls}
    # `hostname` on the batch pod gives the name every pod resolves (`<pod>.<trainjob>`): as a Slurm node's
    # name, it works as the rendezvous address from the other nodes (a pod's short name does not resolve there)
    assert masters == {launcher}
    assert len(ports) == 1 and 20000 <= int(ports.pop()) < 21000


def test_task_counts_cover_every_rank_once(tmp_path, mpi_env):
    # 2 nodes x 4 tasks: `srun -n 6` spreads 6 tasks as Slurm's block distribution does (3 + 3, ids 0-2 on
    # node 0, 3-5 on node 1); `srun --ntasks=1 --nodes=1` runs once, on node 0.
    text = (
        HEAD + "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n"
        "srun -n 6 app\nsrun --ntasks=1 --nodes=1 app once\nfor i in 1; do :; done\n"
    )
    plan = _plan(text=text)
    proc, calls = run_launcher(plan, tmp_path, mpi_env, programs=("app",))
    assert proc.returncode == 0, proc.stderr
    launcher, (node0, _) = _pods(plan)
    six = sorted((int(c["env"]["SLURM_PROCID"]), c["host"]) for c in calls if not c["args"])
    assert six == [(0, launcher), (1, launcher), (2, launcher), (3, node0), (4, node0), (5, node0)]
    once = [c for c in calls if c["args"] == ["once"]]
    assert len(once) == 1 and once[0]["host"] == launcher and once[0]["env"]["SLURM_NTASKS"] == "1"


def test_relative_nodes_and_the_task_environment(tmp_path, mpi_env):
    text = (
        HEAD + "#SBATCH -N 3\n#SBATCH --ntasks-per-node=2\n#SBATCH --cpus-per-task=3\n"
        "srun -N1 -n2 -r2 python rel.py\nfor i in 1; do srun -N2 -n3 python all.py; done\n"
    )
    plan = _plan(text=text)
    proc, calls = run_launcher(plan, tmp_path, mpi_env)
    assert proc.returncode == 0, proc.stderr
    launcher, (node0, node1, _) = _pods(plan)
    # -r2 -N1: the step's one node is node 2 of the allocation (the second node pod); 2 tasks per node
    rel = [c for c in calls if c["args"][0] == "rel.py"]
    assert [c["host"] for c in rel] == [node1, node1]
    # -N2 -n3: 2 tasks on node 0 (the batch pod) and 1 on node 1 (block distribution), ranks 0..2
    everyone = sorted((c["env"]["SLURM_PROCID"], c["host"]) for c in calls if c["args"][0] == "all.py")
    assert everyone == [("0", launcher), ("1", launcher), ("2", node0)]
    e = next(c["env"] for c in calls if c["args"][0] == "all.py")
    # srun(1) OUTPUT ENVIRONMENT VARIABLES and the job's own variables each task sees
    assert e["SLURM_NTASKS"] == "3" and e["SLURM_NNODES"] == "2" and e["SLURM_STEP_NUM_NODES"] == "2"
    assert e["SLURM_JOB_NUM_NODES"] == "3" and e["SLURM_CPUS_PER_TASK"] == "3"
    assert e["SLURM_JOB_NODELIST"] == f"{launcher},{node0},{node1}"
    assert e["SLURM_STEP_NODELIST"] == f"{launcher},{node0}"


def test_a_background_head_and_workers_pinned_with_w(tmp_path, mpi_env):
    # the Ray start-up pattern: the head on the first node, a worker on each other node (background steps),
    # then the driver once in the batch step
    text = (
        HEAD + "#SBATCH -N 3\n#SBATCH --ntasks-per-node=1\n"
        'nodes=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))\n'
        'srun -N1 -n1 -w "${nodes[0]}" ray start --head &\n'
        'for ((i = 1; i < SLURM_JOB_NUM_NODES; i++)); do srun -N1 -n1 -w "${nodes[$i]}" ray start --worker & done\n'
        "wait\npython driver.py\n"
    )
    plan = _plan(text=text)
    proc, calls = run_launcher(plan, tmp_path, mpi_env, programs=("ray", "python"))
    assert proc.returncode == 0, proc.stderr
    assert len(calls) == 4, proc.stdout + proc.stderr
    launcher, (node0, node1, _) = _pods(plan)
    got = sorted((c["name"], c["args"][-1], c["host"]) for c in calls)
    assert got == sorted(
        [
            ("ray", "--head", launcher),
            ("ray", "--worker", node0),
            ("ray", "--worker", node1),
            ("python", "driver.py", launcher),
        ]
    )
    driver = next(c for c in calls if c["name"] == "python")
    assert "SLURM_STEP_ID" not in driver["env"] and driver["env"]["SLURM_PROCID"] == "0"  # the batch step itself


def test_a_step_whose_pods_cannot_be_reached_fails(tmp_path, mpi_env):
    # srun exits non-zero when its tasks could not start (here ssh to the pods fails), as Slurm's srun does
    # when a step cannot be launched; the batch script sees it and `set -e` stops it
    text = HEAD + "#SBATCH -N 2\nset -e\nfor i in 1; do srun -N2 -n2 python t.py; done\necho unreachable\n"
    plan = _plan(text=text)
    env = dict(mpi_env, OMPI_MCA_plm_rsh_agent="/bin/false")
    proc, calls = run_launcher(plan, tmp_path, env)
    assert proc.returncode != 0 and "unreachable" not in proc.stdout
    assert [c["host"] for c in calls if c["host"] != _pods(plan)[0]] == []


def test_container_wrappers_of_steps_run_their_command_on_every_pod(tmp_path, mpi_env):
    # `srun apptainer exec IMG python t.py` on 2 nodes: each task runs `python t.py` in the pod, which already
    # runs the image (L360); the executable that stands in for apptainer exists on the other pod too
    text = HEAD + "#SBATCH -N 2\nfor s in a b; do srun apptainer exec docker://ghcr.io/x/train:1 python t.py $s; done\n"
    plan = _plan(text=text)
    assert plan.image == "ghcr.io/x/train:1"
    proc, calls = run_launcher(plan, tmp_path, mpi_env)
    assert proc.returncode == 0, proc.stderr
    launcher, (node0, _) = _pods(plan)
    got = sorted((c["args"][-1], c["host"]) for c in calls)
    assert got == [("a", launcher), ("a", node0), ("b", launcher), ("b", node0)]


def test_srun_started_by_another_program(tmp_path, mpi_env):
    # `timeout 85800 srun …`: timeout execs srun, which must therefore be a program too (it loads the batch
    # shell's definitions); the step is the job's second (SLURM_STEP_ID 1), its tasks on both pods
    text = (
        HEAD + "#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\n"
        "srun -N1 -n1 python prep.py\ntimeout 85800 srun python train.py\n"
    )
    plan = _plan(text=text)
    proc, calls = run_launcher(plan, tmp_path, mpi_env)
    assert proc.returncode == 0, proc.stderr
    launcher, (node0, _) = _pods(plan)
    train = sorted(
        (c["env"]["SLURM_PROCID"], c["host"], c["env"]["SLURM_STEP_ID"]) for c in calls if c["args"] == ["train.py"]
    )
    assert train == [("0", launcher, "1"), ("1", launcher, "1"), ("2", node0, "1"), ("3", node0, "1")]


def test_an_array_job_id_is_the_job_id(tmp_path, mpi_env):
    # sbatch(1): SLURM_ARRAY_JOB_ID is the array's job id, SLURM_ARRAY_TASK_ID the index; a run name built
    # from both (`run_${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}`) must not lose the first
    text = (
        HEAD + "#SBATCH -N 2\n#SBATCH --array=0-3\n"
        'RUN="run_${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"\n'
        'for s in 1; do srun python t.py --run "$RUN"; done\n'
    )
    plan = _plan(text=text)
    env = {e.name: e.value for e in plan.env}
    proc, calls = run_launcher(plan, tmp_path, dict(mpi_env, **env))
    assert proc.returncode == 0, proc.stderr
    runs = {c["args"][-1] for c in calls}
    assert len(runs) == 1
    _, job_id, index = runs.pop().split("_")
    assert job_id.isdigit() and job_id == calls[0]["env"]["SLURM_JOB_ID"] and index == "0"
