"""An attacker's job script against simulate's sandbox (issue 23, point 1).

Every way a script can reach a real `rm` (a shell builtin prefix, an exec wrapper with an absolute inner
path, a child shell, awk's system(), sed's `e` command, a path spelt differently, /proc/self/root), every
utility that can write a file of its own (`sed -i`, `sort -o`, awk's `print >`), `/dev/tcp`, the host's
/tmp and background processes that try to outlive the run. Canary files and a canary TCP listener on the
host prove that nothing happened; the stub's records prove the calls were seen.
"""

from __future__ import annotations

import glob
import os
import socket
import threading
import time

import pytest

from translator.simulate import sandbox as sb

HOSTS = [("node01", 0, "10.0.0.1", 0)]

# (label, the shell line; {t} is the canary file it attacks)
RM_WAYS = [
    ("command", "command /usr/bin/rm -f {t}"),
    ("exec", "( exec /usr/bin/rm -f {t} )"),
    ("env", "env /usr/bin/rm -f {t}"),
    ("nohup", "nohup /usr/bin/rm -f {t}"),
    ("timeout", "timeout 5 /usr/bin/rm -f {t}"),
    ("sh -c", "sh -c '/usr/bin/rm -f {t}'"),
    ("awk system", "awk 'BEGIN {{ system(\"/usr/bin/rm -f {t}\") }}'"),
    ("sed e", "echo '/usr/bin/rm -f {t}' | sed e"),
    ("double slash", "//usr/bin/rm -f {t}"),
    ("dot-dot", "/usr/bin/../bin/rm -f {t}"),
    ("proc self root", "/proc/self/root/usr/bin/rm -f {t}"),
    ("plain", "/usr/bin/rm -f {t}; rm -f {t}; /bin/rm -f {t}"),
    ("xargs, find -exec", "echo {t} | xargs rm -f; find {t} -exec rm -f {{}} \\;"),
    ("host root through process 1", "/proc/1/root/usr/bin/rm -f /proc/1/root{t}"),
    ("the sandbox's private path", "/.sim/real/usr/bin/rm -f {t}; /.sim/real/bin/rm -f {t}"),
]


def _bash(script: str, env: dict | None = None) -> sb.Unit:
    return sb.Unit(argv=["/bin/bash", "--noprofile", "--norc", "-c", script], env=env or {}, hostname="node01")


@pytest.fixture
def private_tmp(monkeypatch):
    """A temporary directory of this test's own for the sandbox's files (other runs on the machine use
    /tmp too), which the sandbox's unprivileged user can traverse."""
    import shutil
    import tempfile

    d = tempfile.mkdtemp(prefix="slurm2kf-test-tmp-", dir="/tmp")
    os.chmod(d, 0o755)
    monkeypatch.setattr(tempfile, "tempdir", d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _sim_dirs(root: str) -> set[str]:
    return set(glob.glob(os.path.join(root, "slurm2kf-sim*")))


def test_no_way_of_calling_rm_deletes_a_host_file(tmp_path):
    canaries = {}
    lines = []
    for i, (label, line) in enumerate(RM_WAYS):
        t = tmp_path / f"canary{i}.txt"
        t.write_text(label)
        canaries[label] = t
        lines.append(line.format(t=t))
    res = sb.run_units([_bash("\n".join(lines) + "\necho finished")], "slurm", HOSTS, timeout=10)
    assert res.units[0].stdout.endswith("finished\n"), res.units[0]
    for label, t in canaries.items():
        assert t.exists() and t.read_text() == label, f"{label}: the host file was deleted"
    # the calls reached the recording stub, whichever way they were spelt
    rm_calls = [r for r in res.records if r.get("kind") == "call" and r.get("name") == "rm"]
    assert len(rm_calls) >= 12, rm_calls


def test_only_the_allow_listed_programs_are_real_in_the_sandbox():
    res = sb.run_units([_bash("ls /.sim/real/usr/bin; [ -e /.sim/real/bin ] || echo no-bin")], "slurm", HOSTS)
    words = res.units[0].stdout.split()
    assert words[-1] == "no-bin"
    names = set(words[:-1])
    assert "rm" not in names and "curl" not in names and "unshare" not in names
    allowed = set(sb.ALLOW) | {"dash", "mawk", "gawk", "python3"}  # (the real names behind sh, awk)
    assert all(n in allowed or n.startswith(("python3.", "which")) for n in names), names


def test_utilities_that_write_files_cannot_write_host_files(tmp_path):
    a, b, c = (tmp_path / n for n in ("sed.txt", "sort.txt", "awk.txt"))
    for f in (a, b, c):
        f.write_text("original\n")
    marker = f"/tmp/slurm2kf-attack-{os.getpid()}"
    script = f"""
    sed -i s/original/pwned/ {a}
    echo pwned | sort -o {b}
    awk 'BEGIN {{ print "pwned" > "{c}" }}'
    echo pwned > {c}
    touch {marker}-touch; mkdir -p {marker}-dir; echo x > {marker}-redirect
    cp /etc/hostname {marker}-cp; tee {marker}-tee < /dev/null
    echo done
    """
    res = sb.run_units([_bash(script)], "slurm", HOSTS)
    assert res.units[0].stdout.endswith("done\n")
    for f in (a, b, c):
        assert f.read_text() == "original\n", f
    assert glob.glob(marker + "*") == []


def test_dev_tcp_reaches_no_listener_on_the_host():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        port = srv.getsockname()[1]
        script = (
            f"(echo hello > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED; "
            f"(exec 3<>/dev/tcp/localhost/{port}) 2>/dev/null && echo CONNECTED; "
            f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'; "
            f"curl -s http://127.0.0.1:{port}/; echo done"
        )
        res = sb.run_units([_bash(script)], "slurm", HOSTS)
        srv.settimeout(0.3)
        with pytest.raises(socket.timeout):
            srv.accept()
    assert "CONNECTED" not in res.units[0].stdout and res.units[0].stdout.endswith("done\n")


def _processes_with(marker: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def test_background_processes_do_not_outlive_the_run(private_tmp):
    mark = f"slurm2kf-bg-{os.getpid()}"
    script = f"""
    (exec -a {mark}-amp tail -f /dev/null) &
    nohup bash -c 'exec -a {mark}-nohup tail -f /dev/null' > /dev/null 2>&1 &
    (exec -a {mark}-disown tail -f /dev/null) & disown
    setsid bash -c 'exec -a {mark}-setsid tail -f /dev/null' &
    (trap '' HUP TERM; exec -a {mark}-trap tail -f /dev/null) &
    echo started
    """
    res = sb.run_units([_bash(script)], "slurm", HOSTS)
    assert res.units[0].stdout == "started\n" and not res.units[0].timed_out
    time.sleep(0.2)
    assert _processes_with(mark) == []
    assert _sim_dirs(private_tmp) == set()  # the run's temporary directory is gone


def test_the_jobs_environment_is_never_written_to_a_file(private_tmp):
    """The spec (with the job's environment: tokens) goes to the sandbox through a pipe; while the job runs,
    no file under the sandbox's temporary directory holds it."""
    secret = f"hf_token_{os.getpid()}_do_not_store"
    seen: list[str] = []
    looked: set[str] = set()  # the sandbox directories the watcher saw (so that it did watch)
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            for d in _sim_dirs(private_tmp):
                looked.add(d)
                for base, _dirs, files in os.walk(d):
                    for f in files:
                        try:
                            with open(os.path.join(base, f), "rb") as fh:
                                if secret.encode() in fh.read():
                                    seen.append(os.path.join(base, f))
                        except OSError:
                            pass
            time.sleep(0.05)

    t = threading.Thread(target=watch)
    t.start()
    try:
        res = sb.run_units(
            [_bash('echo "$HF_TOKEN" > /tmp/copy; while :; do :; done', env={"HF_TOKEN": secret})],
            "slurm",
            HOSTS,
            timeout=1.5,
        )
    finally:
        stop.set()
        t.join()
    assert res.units[0].timed_out
    assert looked and seen == [] and _sim_dirs(private_tmp) == set()
