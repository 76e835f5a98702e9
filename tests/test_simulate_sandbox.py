"""The simulation sandbox never performs a script's side effects.

A hostile script tries to delete, overwrite and create files outside its temporary directory (by command
name, by absolute path, with shell redirections), to reach the network, and to fork without end. Canary
files outside the sandbox prove that nothing happened, and the run ends within its time limit.
"""

from __future__ import annotations

import os
import time

import pytest

from translator.simulate import sandbox as sb

HOSTS = [("node01", 0, "10.0.0.1", 4), ("node02", 1, "10.0.0.2", 4)]


def _bash(script: str, **kw) -> sb.Unit:
    return sb.Unit(argv=["/bin/bash", "--noprofile", "--norc", "-c", script], env={}, hostname="node01", node=0, **kw)


@pytest.fixture
def canaries(tmp_path):
    """Files and a directory outside the sandbox that the script attacks."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "keep.txt").write_text("precious\n")
    (d / "sub").mkdir()
    (d / "sub" / "deep.txt").write_text("deep\n")
    return d


def _assert_intact(d):
    assert (d / "keep.txt").read_text() == "precious\n"
    assert (d / "sub" / "deep.txt").read_text() == "deep\n"
    assert sorted(p.name for p in d.iterdir()) == ["keep.txt", "sub"]


def test_namespaces_are_available_here():
    # The test machine supports user namespaces; the strong mode must be the one these tests exercise.
    assert sb.namespaces_available()


def test_hostile_script_changes_nothing_outside(canaries, tmp_path):
    before_etc = sorted(os.listdir("/etc"))
    assert not os.path.exists("/data")
    marker = f"/tmp/slurm2kf-sim-canary-{os.getpid()}"
    assert not os.path.exists(marker)
    script = f"""
    rm -rf ~
    rm -rf {canaries}
    /bin/rm -rf {canaries}/keep.txt
    /usr/bin/rm -rf {canaries}/sub
    echo pwned > {canaries}/keep.txt
    echo pwned >> {canaries}/sub/deep.txt
    echo x > /etc/x
    echo x > {marker}
    mkdir /data
    touch {canaries}/new
    cp /etc/passwd {canaries}/copied
    find {canaries} -delete
    curl -s http://example.com -o {canaries}/download
    ssh node02 'rm -rf /'
    (echo hi > /dev/tcp/1.1.1.1/80) 2>/dev/null && echo NETWORK-REACHED
    python3 -c 'import shutil; shutil.rmtree("{canaries}")'
    f() {{ f | f & }}; f
    echo done
    """
    t0 = time.monotonic()
    res = sb.run_units([_bash(script)], "slurm", HOSTS, timeout=3.0)
    elapsed = time.monotonic() - t0
    _assert_intact(canaries)
    assert sorted(os.listdir("/etc")) == before_etc and not os.path.exists("/etc/x")
    assert not os.path.exists("/data")
    assert not os.path.exists(marker)
    assert "NETWORK-REACHED" not in res.units[0].stdout
    assert elapsed < 15, elapsed  # the fork loop is cut at the time limit
    assert res.isolation.startswith("namespaces")
    # the commands were recorded instead of run
    calls = [(r["name"], r["argv"]) for r in res.records if r["kind"] == "call"]
    names = [c[0] for c in calls]
    assert ("rm", ["-rf", str(canaries)]) in calls
    assert ("rm", ["-rf", f"{canaries}/keep.txt"]) in calls  # /bin/rm is the stub too
    assert "curl" in names and "ssh" in names
    assert ("mkdir", ["/data"]) in calls


def test_fork_loop_leaves_no_process_behind():
    uid, _ = sb._sandbox_ids()
    res = sb.run_units([_bash("f() { f | f & }; f; sleep 100")], "slurm", HOSTS, timeout=2.0)
    assert res.units[0].timed_out or res.units[0].rc is not None
    time.sleep(0.2)
    if uid is not None:
        left = []
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    if os.stat(f"/proc/{pid}").st_uid == uid:
                        left.append(pid)
                except OSError:
                    pass
        assert left == []


def test_time_limit_and_output_cap():
    res = sb.run_units([_bash("yes | head -c 1000000; while :; do :; done")], "slurm", HOSTS, timeout=1.0)
    u = res.units[0]
    assert u.timed_out
    assert len(u.stdout) == 64 * 1024  # the output cap


def test_working_directory_and_home_are_an_empty_private_directory():
    res = sb.run_units(
        [_bash('pwd; echo "$HOME"; ls -A | wc -l; id -u; hostname; mkdir -p logs; echo hi > logs/x; cat logs/x')],
        "slurm",
        HOSTS,
    )
    out = res.units[0].stdout.split()
    assert out == ["/home/user", "/home/user", "0", "1000", "node01", "hi"]


def test_unknown_commands_are_recorded_not_failed():
    res = sb.run_units([_bash("set -e; site-tool --flag; echo after")], "slurm", HOSTS)
    assert res.units[0].stdout == "after\n"
    # a name that is neither a known tool nor a program of the machine is the user's own program (issue 20)
    assert any(r["kind"] == "process" and r["program"] == "site-tool" and r["argv"] == ["--flag"] for r in res.records)


def test_killing_everything_or_filling_the_disk_stays_inside():
    # `kill -9 -1` reaches only the sandbox's own processes (pid namespace; kill(2) spares the caller, and
    # the namespace's process 1 cannot be killed from inside); a file stops growing at the 16 MiB file-size
    # limit, inside a tmpfs of 64 MiB, never on the host's disk.
    res = sb.run_units(
        [
            _bash(
                "head -c 200000000 /dev/zero > big; ls -s big | cut -d' ' -f1; "
                "cat /dev/zero > /tmp/fill; echo filled; sleep 30 & kill -9 -1; echo after-kill"
            )
        ],
        "slurm",
        HOSTS,
        timeout=5.0,
    )
    u = res.units[0]
    size_kib = int(u.stdout.split()[0])
    assert size_kib == 16 * 1024
    assert u.stdout.split()[1:] == ["filled", "after-kill"] and u.rc == 0 and not u.timed_out
    res = sb.run_units([_bash("kill -9 -1; exit 3"), _bash("echo second")], "slurm", HOSTS)
    assert res.units[0].rc == 3 and res.units[1].stdout == "second\n"
