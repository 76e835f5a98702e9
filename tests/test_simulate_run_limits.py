"""simulate's promises about a whole run (issue 23, points 1, 7 and 8), tried as an attacker would.

* Where it cannot isolate (no unprivileged user namespaces: here a stand-in `unshare` that fails as it
  does under Docker's default seccomp profile), it refuses with one line and exit 2, and runs nothing.
* A whole run has a deadline, and the node/pod count a cap; both are reported (`inconclusive`), never a
  silent cut.
* SIGTERM/SIGINT/SIGHUP to a running `slurm2kf simulate` end every sandbox process and leave nothing in
  the temporary directory; even SIGKILL leaves no sandbox process (parent-death signal).
* `--trainjob`'s source annotation is confined to the YAML's folder.
* The host-name table is filled once, completely, when both sides ask for it at the same time (the
  `-N 500` "dictionary changed size during iteration").
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from translator.simulate import sandbox as sb

REPO = Path(__file__).resolve().parents[1]
SLOW_SCRIPT = (
    "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
    "export WANDB_API_KEY=wandb_secret_value_0123456789\n"
    "while :; do :; done\nsrun python train.py\n"
)


@pytest.fixture
def private_tmp():
    """TMPDIR for a child `slurm2kf` of this test only (other runs on the machine share /tmp)."""
    d = tempfile.mkdtemp(prefix="slurm2kf-test-tmp-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _env(tmpdir: str, path_first: str | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), TMPDIR=tmpdir)
    if path_first:
        env["PATH"] = path_first + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    return env


def _slurm2kf(*args, env, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "translator", *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout
    )


# ---------------------------------------------------------------- refusal without isolation


@pytest.fixture
def no_userns():
    """A PATH directory whose `unshare` fails as util-linux's does where user namespaces are denied
    (readable by the sandbox's unprivileged user, who runs the probe)."""
    d = tempfile.mkdtemp(prefix="slurm2kf-test-bin-", dir="/tmp")
    os.chmod(d, 0o755)
    fake = Path(d) / "unshare"
    fake.write_text("#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
    fake.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_without_user_namespaces_simulate_refuses_and_runs_nothing(tmp_path, no_userns, private_tmp):
    canary = tmp_path / "canary"
    canary.write_text("keep\n")
    script = tmp_path / "job.sbatch"
    script.write_text(f"#!/bin/bash\n#SBATCH --nodes=1\nrm -f {canary}\ntouch {tmp_path}/created\nsrun python t.py\n")
    env = _env(private_tmp, no_userns)
    for args in (["simulate", script], ["simulate", "--json", script, script], ["simulate", "-v", script]):
        r = _slurm2kf(*args, env=env)
        assert r.returncode == 2, r
        assert r.stdout == ""
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and "S820" in lines[0] and "refuses" in lines[0], r.stderr
        assert "Operation not permitted" in lines[0] and "Traceback" not in r.stderr
    # --trainjob refuses the same way, before reading the script
    conv = _slurm2kf("convert", script, env=env)
    tj = tmp_path / "job.yaml"
    tj.write_text(conv.stdout)
    r = _slurm2kf("simulate", "--trainjob", tj, "--script", script, env=env)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "S820" in r.stderr
    # convert --simulate still converts, and says the simulation did not run and why
    r = _slurm2kf("convert", "--simulate", script, env=env)
    assert r.returncode == 0 and "S803" in r.stderr and "S820" in r.stderr and "kind: TrainJob" in r.stdout
    assert canary.read_text() == "keep\n" and not (tmp_path / "created").exists()
    assert os.listdir(private_tmp) == []


def test_run_units_raises_instead_of_a_weaker_mode(monkeypatch):
    monkeypatch.setattr(sb, "_NS_PROBE", ["unprivileged user namespaces are not available"])
    unit = sb.Unit(argv=["/bin/bash", "-c", "echo ran"], env={}, hostname="node01")
    with pytest.raises(sb.SandboxUnavailable, match="S820"):
        sb.run_units([unit], "slurm", [("node01", 0, "10.0.0.1", 0)])


def test_a_sandbox_that_cannot_be_built_is_a_refusal_not_a_result(monkeypatch):
    """Namespaces work, but process 1 cannot start: here the temporary directory sits under a folder
    (mode 0700) that the sandbox's unprivileged user cannot enter. Nothing runs; simulate refuses."""
    outer = tempfile.mkdtemp(prefix="slurm2kf-test-private-", dir="/tmp")
    os.chmod(outer, 0o700)
    inner = os.path.join(outer, "tmp")
    os.mkdir(inner, 0o755)
    monkeypatch.setattr(tempfile, "tempdir", inner)
    unit = sb.Unit(argv=["/bin/bash", "-c", "echo ran"], env={}, hostname="node01")
    try:
        assert os.geteuid() == 0  # (as root the sandbox runs as its own uid, which 0700 keeps out)
        with pytest.raises(sb.SandboxUnavailable, match="S820.*cannot be built"):
            sb.run_units([unit], "slurm", [("node01", 0, "10.0.0.1", 0)])
        assert os.listdir(inner) == []
    finally:
        shutil.rmtree(outer, ignore_errors=True)


# ---------------------------------------------------------------- deadline and cap


def test_overall_deadline_ends_the_run_and_says_how_much_did_not_run():
    # 4 pods that never end, 2 s each, but 3 s for the whole side: the first is ended by its own limit,
    # the second by the deadline, the last two never start.
    units = [sb.Unit(argv=["/bin/bash", "-c", "while :; do :; done"], env={}, hostname=f"p{i}") for i in range(4)]
    hosts = [(f"p{i}", i, f"10.244.{i}.10", 0) for i in range(4)]
    t0 = time.monotonic()
    res = sb.run_units(units, "kubeflow", hosts, timeout=2.0, deadline=time.monotonic() + 3.0)
    elapsed = time.monotonic() - t0
    assert elapsed < 8.0, elapsed  # without the deadline: 4 x 2 s at least (and setup, on a busy machine)
    assert [u.timed_out for u in res.units] == [True, True, True, True]
    assert [code for code, _ in res.incomplete] == ["S822"]
    assert "2 of 4 node(s)/pod(s) did not run" in res.incomplete[0][1]


def test_deadline_option_gives_an_inconclusive_verdict(tmp_path, cli):
    script = tmp_path / "job.sbatch"
    script.write_text(SLOW_SCRIPT)
    t0 = time.monotonic()
    r = cli("simulate", "--json", "--timeout", "30", "--deadline", "2", script)
    assert time.monotonic() - t0 < 20  # the batch script alone would run for its 30 s
    obj = json.loads(r.stdout)
    assert obj["verdict"] == "inconclusive" and r.exit_code == 3  # (docs/simulate.md: 3 = inconclusive)
    assert obj["reason"]["code"] == "S822" and obj["reason"]["side"] == "slurm", obj["reason"]


@pytest.mark.parametrize("opts", [["-N", "1000"], ["--nodes=100000"]])
def test_huge_node_counts_are_capped_and_reported_fast(tmp_path, cli, opts):
    script = tmp_path / "job.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --ntasks-per-node=1\nsrun python train.py\n")
    t0 = time.monotonic()
    r = cli("simulate", "--json", script, "--", *opts)
    assert time.monotonic() - t0 < 15
    obj = json.loads(r.stdout)
    n = opts[-1].split("=")[-1]
    assert obj["verdict"] == "inconclusive" and r.exit_code == 3  # (docs/simulate.md: 3 = inconclusive)
    assert obj["reason"]["code"] == "S821" and obj["reason"]["side"] == "slurm", obj["reason"]
    assert obj["reason"]["text"] == f"the job asks for {n} nodes; simulate runs at most 128 per side"
    assert (
        f"not run: the TrainJob starts {n} pods; simulate runs at most 128 per side (S821)" in obj["notes"]["kubeflow"]
    )
    human = cli("simulate", script, "--", *opts)
    assert "inconclusive" in human.stdout.splitlines()[0] and "S821" in human.stdout


def test_a_trainjob_file_with_a_huge_pod_count_is_not_expanded(tmp_path, cli):
    script = tmp_path / "job.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --nodes=2\nsrun python train.py\n")
    conv = cli("convert", script)
    tj = tmp_path / "job.yaml"
    tj.write_text(conv.stdout.replace("numNodes: 2", "numNodes: 1000000000"))
    t0 = time.monotonic()
    r = cli("simulate", "--json", "--trainjob", tj, "--script", script)
    assert time.monotonic() - t0 < 15
    obj = json.loads(r.stdout)
    assert obj["verdict"] == "inconclusive"
    assert obj["reason"] == {
        "code": "S821",
        "text": "the TrainJob starts 1000000000 pods; simulate runs at most 128 per side",
        "side": "kubeflow",
        "where": "",
    }


# ---------------------------------------------------------------- signals


def _sandbox_processes(uid: int) -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.stat(f"/proc/{pid}").st_uid == uid:
                    out.append(int(pid))
            except OSError:
                pass
    return out


def _start_slow_simulate(tmp_path, tmpdir) -> tuple[subprocess.Popen, int]:
    script = tmp_path / "job.sbatch"
    script.write_text(SLOW_SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "translator", "simulate", "--timeout", "30", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmpdir),
    )
    uid = 180000 + proc.pid % 20000  # sandbox._sandbox_ids: the unprivileged id of this run (we are root)
    limit = time.monotonic() + 20
    while not (glob.glob(os.path.join(tmpdir, "slurm2kf-sim-*")) and _sandbox_processes(uid)):
        assert time.monotonic() < limit, "the sandbox never started"
        time.sleep(0.05)
    time.sleep(0.5)  # both sides running
    return proc, uid


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_mid_run_ends_every_sandbox_and_removes_its_files(tmp_path, private_tmp, sig):
    assert os.geteuid() == 0  # the test machine runs the suite as root: the sandbox has its own uid
    proc, uid = _start_slow_simulate(tmp_path, private_tmp)
    assert _sandbox_processes(uid)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert err.decode().strip() == f"simulate: stopped by {sig.name}; every sandbox was ended"
    assert _sandbox_processes(uid) == []
    assert os.listdir(private_tmp) == []


def test_sigkill_leaves_no_sandbox_process_and_no_secret_on_disk(tmp_path, private_tmp):
    proc, uid = _start_slow_simulate(tmp_path, private_tmp)
    proc.kill()
    proc.wait(timeout=10)
    limit = time.monotonic() + 5
    while _sandbox_processes(uid) and time.monotonic() < limit:
        time.sleep(0.05)
    assert _sandbox_processes(uid) == []
    # a killed process cannot clean up: what it leaves is the stub programs, never the job's text or env
    for base, _dirs, files in os.walk(private_tmp):
        for f in files:
            data = Path(base, f).read_bytes()
            assert b"wandb_secret_value" not in data and b"while :" not in data, f


# ---------------------------------------------------------------- --trainjob's source annotation


def _trainjob_with_source(cli, folder: Path, source: str) -> Path:
    script = REPO / "examples" / "srun_python_per_gpu" / "job.sbatch"
    text = cli("convert", script).stdout
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if "slurm2kf.io/source:" in ln)
    lines[i] = lines[i].split("slurm2kf.io/source:")[0] + "slurm2kf.io/source: " + json.dumps(source)
    tj = folder / "job.yaml"
    tj.write_text("\n".join(lines) + "\n")
    return tj


def test_source_annotation_resolves_in_the_yaml_folder(tmp_path, cli, monkeypatch):
    folder = tmp_path / "k8s"
    (folder / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "srun_python_per_gpu" / "job.sbatch", folder / "scripts" / "job.sbatch")
    tj = _trainjob_with_source(cli, folder, "scripts/job.sbatch")
    monkeypatch.chdir(tmp_path)  # a `scripts/job.sbatch` here must not be the one read
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "job.sbatch").write_text("#!/bin/bash\nsrun python other.py\n")
    r = cli("simulate", "--json", "--trainjob", tj)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["verdict"] == "equivalent"


@pytest.mark.parametrize("kind", ["absolute", "dot-dot", "symlink-file", "symlink-dir"])
def test_source_annotation_cannot_leave_the_yaml_folder(tmp_path, cli, kind):
    folder = tmp_path / "k8s"
    folder.mkdir()
    outside = tmp_path / "outside.sbatch"
    shutil.copy(REPO / "examples" / "srun_python_per_gpu" / "job.sbatch", outside)
    if kind == "absolute":
        source = str(outside)
    elif kind == "dot-dot":
        source = "../outside.sbatch"
    elif kind == "symlink-file":
        (folder / "job.sbatch").symlink_to(outside)
        source = "job.sbatch"
    else:
        (folder / "up").symlink_to(tmp_path)
        source = "up/outside.sbatch"
    tj = _trainjob_with_source(cli, folder, source)
    r = cli("simulate", "--trainjob", tj)
    assert r.exit_code == 2 and r.stdout == ""
    line = next(i + 1 for i, ln in enumerate(tj.read_text().splitlines()) if "slurm2kf.io/source" in ln)
    assert r.stderr.startswith(f"{tj}:{line}: error S823: the slurm2kf.io/source annotation "), r.stderr
    assert "--script" in r.stderr and "Traceback" not in r.stderr
    # --script still works for the same file
    assert cli("simulate", "--trainjob", tj, "--script", outside).exit_code == 0


# ---------------------------------------------------------------- the two sides fill the host-name table at once


def test_host_name_table_is_complete_when_both_sides_ask_at_once(monkeypatch):
    monkeypatch.setattr(sb, "_HOST_NAMES", {})
    real_listdir = os.listdir

    def slow_listdir(path):
        time.sleep(0.02)  # (a slow disk): the other side asks while the first is still filling the table
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", slow_listdir)
    seen: list[list[str]] = []
    errors: list[BaseException] = []

    def side():
        try:
            seen.append(sorted({n for names in sb._host_names().values() for n in names}))
        except BaseException as exc:  # "dictionary changed size during iteration"
            errors.append(exc)

    threads = [threading.Thread(target=side) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(seen) == 4 and all(s == seen[0] for s in seen)
    assert {"rm", "ls", "bash"} <= set(seen[0])  # every bin directory was read (Debian: /usr/bin)
