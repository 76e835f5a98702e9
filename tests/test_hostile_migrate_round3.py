"""migrate under attack, round 3 (issue 23): `--follow-symlinks` never enters /proc, /sys or /dev, also
through a link whose end looks harmless (/proc/self/root is `/`); two runs into one OUT never both
write (a lock); a damaged manifest or report nested 100,000 deep is refused with its code, not an
internal error; a disk that fills up mid-run leaves OUT consistent (every output migrate wrote is in
the manifest, so a re-run finishes the job and a later run can remove them)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import strategies as S

GOOD = "#!/bin/bash\n#SBATCH --job-name={name}\n#SBATCH -N 1\n#SBATCH -t 10\nsrun python train.py --tag {name}\n"


def cli(*args, timeout=120, cwd=None, prelude: str | None = None):
    """`slurm2kf ARGS` in a process of its own (with `prelude` Python run first, e.g. a patch)."""
    env = {**os.environ, "PYTHONPATH": str(S.REPO)}
    if prelude is None:
        cmd = [sys.executable, "-m", "translator", *map(str, args)]
    else:
        code = prelude + "\nimport runpy, sys\nsys.argv = ['slurm2kf', *sys.argv[1:]]\n"
        code += "runpy.run_module('translator', run_name='__main__')\n"
        cmd = [sys.executable, "-c", code, *map(str, args)]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd, env=env
    )


def report_of(out: Path) -> dict:
    return json.loads((out / "slurm2kf-report.json").read_text())


def no_traceback(proc) -> None:
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.returncode != 70, proc.stderr


# ---- --follow-symlinks: where a link leads AND the way it goes ----------------------------------


def _hostile_tree(tmp_path: Path) -> tuple[Path, Path]:
    """SRC with links that lead into the kernel's pseudo file systems (directly, or only on the way),
    links back up (loops), and 26 links fanning out to one outside folder that holds a hard link."""
    src, outside = tmp_path / "src", tmp_path / "outside"
    (src / "team").mkdir(parents=True)
    (src / "a.sbatch").write_text(GOOD.format(name="a"))
    (src / "team" / "b.sbatch").write_text(GOOD.format(name="b"))
    (outside / "shared").mkdir(parents=True)
    (outside / "shared" / "ext.sbatch").write_text(GOOD.format(name="ext"))
    os.link(outside / "shared" / "ext.sbatch", outside / "shared" / "hard.sbatch")  # the same file twice
    (outside / "hop").symlink_to("/proc/self/cwd")  # an innocent-looking folder whose way is /proc
    links = {
        "procroot": "/proc/self/root",  # ends at `/`: the whole host through /proc
        "proc": "/proc",
        "sys": "/sys/class",
        "dev": "/dev",
        "shm": "/dev/shm",  # a tmpfs mounted below /dev: a separate device, still /dev
        "via": str(outside / "hop"),
        "kmsg.sbatch": "/proc/kmsg",  # a "regular" file whose read blocks
        "rootfs": "/",  # holds SRC: a loop
        "parent": str(tmp_path),  # holds SRC: a loop
        "up": "..",
    }
    for name, target in links.items():
        (src / name).symlink_to(target)
    (src / "team" / "back").symlink_to("..")  # back to SRC: a loop
    (src / "team" / "self").symlink_to(".")
    for ch in "abcdefghijklmnopqrstuvwxyz":
        (src / f"fan_{ch}").symlink_to(outside / "shared")
    return src, outside


def test_follow_symlinks_never_passes_through_proc_sys_dev_and_converts_each_file_once(tmp_path):
    src, _outside = _hostile_tree(tmp_path)
    out = tmp_path / "out"
    trap = tmp_path / "cwd"  # the run's working folder: /proc/self/cwd of the migrate process
    trap.mkdir()
    (trap / "trap.sbatch").write_text(GOOD.format(name="trap"))
    t0 = time.monotonic()
    proc = cli("migrate", src, "-o", out, "--follow-symlinks", "-j", "1", timeout=60, cwd=trap)
    took = time.monotonic() - t0
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert took < 30, took  # the whole host would take minutes (issue 23: 26,876 scripts in 60 s)
    report = report_of(out)
    # Expected by hand: the two scripts of SRC and one copy of the outside folder's one real file, under
    # the first link's path in sorted order (fan_a); hard.sbatch is the same inode as ext.sbatch.
    assert sorted(s["path"] for s in report["scripts"]) == ["a.sbatch", "fan_a/ext.sbatch", "team/b.sbatch"]
    codes = {s["path"]: (s["code"], s["severity"]) for s in report["skipped"]}
    for name in ("procroot", "proc", "sys", "dev", "shm", "via", "kmsg.sbatch"):
        assert codes[name] == ("M619", "warning"), (name, codes.get(name))
    for name in ("rootfs", "parent", "up", "team/back", "team/self"):
        assert codes[name][0] == "M604", (name, codes.get(name))
    assert codes["fan_a/hard.sbatch"][0] == "M605"
    assert all(codes[f"fan_{ch}"][0] == "M605" for ch in "bcdefghijklmnopqrstuvwxyz")
    via = next(s for s in report["skipped"] if s["path"] == "via")
    assert "/proc" in via["message"]
    written = {p.relative_to(out).as_posix() for p in out.rglob("*.trainjob.yaml")}
    assert written == {"a.trainjob.yaml", "fan_a/ext.trainjob.yaml", "team/b.trainjob.yaml"}


def test_without_follow_pseudo_links_are_warnings_and_nothing_outside_is_read(tmp_path):
    src, _outside = _hostile_tree(tmp_path)
    out = tmp_path / "out"
    proc = cli("migrate", src, "-o", out, "-j", "1", timeout=60)
    assert proc.returncode == 0, proc.stderr
    report = report_of(out)
    assert sorted(s["path"] for s in report["scripts"]) == ["a.sbatch", "team/b.sbatch"]
    codes = {s["path"]: (s["code"], s["severity"]) for s in report["skipped"]}
    for name in ("procroot", "proc", "sys", "dev", "via", "kmsg.sbatch"):
        assert codes[name] == ("M619", "warning"), (name, codes.get(name))
    assert codes["fan_a"] == ("M619", "info")  # outside SRC, not followed


def test_resolve_link_sees_the_way_not_only_the_end(tmp_path):
    from translator.migrate.discover import _pseudo_devices, resolve_link

    pseudo = _pseudo_devices()
    (tmp_path / "hop").symlink_to("/proc/self/root")
    (tmp_path / "hop2").symlink_to(tmp_path / "hop")
    (tmp_path / "real").mkdir()
    (tmp_path / "ok").symlink_to("real")
    (tmp_path / "l1").symlink_to("l2")
    (tmp_path / "l2").symlink_to("l1")
    # os.path.realpath says "/" for /proc/self/root: the end alone looks harmless
    assert os.path.realpath(tmp_path / "hop") == "/"
    assert resolve_link(str(tmp_path / "hop2"), pseudo) == ("", "/proc")
    assert resolve_link(str(tmp_path / "ok"), pseudo) == (str(tmp_path / "real"), "")
    assert resolve_link(str(tmp_path / "l1"), pseudo) == ("", "")  # a loop: never resolved


# ---- one run at a time in OUT ---------------------------------------------------------------------


def _repo(root: Path, names) -> Path:
    root.mkdir()
    for n in names:
        (root / f"{n}.sbatch").write_text(GOOD.format(name=n))
    return root


def _flocked(path: Path) -> bool:
    """Whether some process holds a flock on `path` (the kernel's list, /proc/locks: "... FLOCK ... WRITE
    PID MAJ:MIN:INODE ..."), seen without taking a lock that could get in the holder's way."""
    try:
        ino = path.stat().st_ino
        locks = Path("/proc/locks").read_text()
    except OSError:
        return False
    return any(
        f.split()[1] == "FLOCK" and f.split()[5].rsplit(":", 1)[-1] == str(ino)
        for f in locks.splitlines()
        if len(f.split()) > 5
    )


def test_a_second_migrate_into_the_same_out_is_refused_while_the_first_runs(tmp_path):
    src_a = _repo(tmp_path / "a", [f"job{i:03d}" for i in range(60)])
    src_b = _repo(tmp_path / "b", ["only_in_b"])
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(S.REPO)}
    first = subprocess.Popen(
        [sys.executable, "-m", "translator", "migrate", str(src_a), "-o", str(out), "-j", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not _flocked(out / ".slurm2kf-migrate.lock"):
            assert first.poll() is None and time.monotonic() < deadline, "the first run ended before it was seen"
            time.sleep(0.005)
        os.killpg(first.pid, signal.SIGSTOP)  # the first run holds OUT for as long as the test needs
        try:
            second = cli("migrate", src_b, "-o", out, "-j", "1", timeout=60)
            check = cli("migrate", src_a, "-o", out, "--check", "-j", "1", timeout=60)
        finally:
            os.killpg(first.pid, signal.SIGCONT)
        _out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    no_traceback(second)
    assert second.returncode == 2, second.stderr
    assert "M622" in second.stderr and "another slurm2kf migrate" in second.stderr
    assert check.returncode == 2 and "M622" in check.stderr  # a --check reading a half-written OUT: refused too
    assert first.returncode == 0, err
    assert not list(out.rglob("only_in_b*"))  # the second run wrote nothing
    manifest = json.loads((out / ".slurm2kf-migrate.json").read_text())
    assert len([k for k in manifest["outputs"] if k.endswith(".trainjob.yaml")]) == 60
    for rel, digest in manifest["outputs"].items():
        assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == digest, rel
    assert not (out / ".slurm2kf-migrate.lock").exists()  # a finished run leaves no lock file
    # the lock is gone with the first run: the second one now goes ahead
    again = cli("migrate", src_b, "-o", out, "-j", "1", timeout=60)
    assert again.returncode == 0, again.stderr
    assert (out / "only_in_b.trainjob.yaml").is_file() and not (out / "job000.trainjob.yaml").exists()


def test_the_lock_is_released_when_a_run_stops_with_an_error(tmp_path):
    src = _repo(tmp_path / "src", ["one"])
    out = tmp_path / "out"
    assert cli("migrate", src, "-o", out, "-j", "1").returncode == 0
    (out / "slurm2kf-report.md").unlink()
    os.mkfifo(out / "slurm2kf-report.md")  # a blocked report stops the run (M618, exit 2)
    (src / "two.sbatch").write_text(GOOD.format(name="two"))
    stopped = cli("migrate", src, "-o", out, "-j", "1", timeout=60)
    assert stopped.returncode == 2 and "M618" in stopped.stderr, stopped.stderr
    # what the stopped run wrote before it stopped is recorded in the manifest
    assert "two.trainjob.yaml" in json.loads((out / ".slurm2kf-migrate.json").read_text())["outputs"]
    assert not (out / ".slurm2kf-migrate.lock").exists()
    (out / "slurm2kf-report.md").unlink()
    after = cli("migrate", src, "-o", out, "-j", "1", timeout=60)
    assert after.returncode == 0, after.stderr  # not M622: the stopped run released OUT


def test_a_lock_file_that_is_a_link_is_never_followed(tmp_path):
    src = _repo(tmp_path / "src", ["one"])
    out = tmp_path / "out"
    assert cli("migrate", src, "-o", out, "-j", "1").returncode == 0
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (out / ".slurm2kf-migrate.lock").symlink_to(victim)
    proc = cli("migrate", src, "-o", out, "-j", "1", timeout=60)
    no_traceback(proc)
    assert proc.returncode == 2 and "M618" in proc.stderr, proc.stderr
    assert victim.read_text() == "keep" and (out / ".slurm2kf-migrate.lock").is_symlink()


# ---- damaged JSON in OUT: the documented codes --------------------------------------------------

DEEP = 100_000


def test_a_deeply_nested_manifest_is_m613_not_an_internal_error(tmp_path):
    src = _repo(tmp_path / "src", ["one"])
    out = tmp_path / "out"
    out.mkdir()
    (out / ".slurm2kf-migrate.json").write_text(
        '{"format": "slurm2kf-migrate", "outputs": ' + "[" * DEEP + "]" * DEEP + "}"
    )
    proc = cli("migrate", src, "-o", out, "-j", "1", timeout=60)
    no_traceback(proc)
    assert proc.returncode == 2 and "M613" in proc.stderr, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [".slurm2kf-migrate.json"]  # OUT untouched


def test_a_deeply_nested_report_json_is_m614_not_an_internal_error(tmp_path):
    src = _repo(tmp_path / "src", ["one"])
    out = tmp_path / "out"
    assert cli("migrate", src, "-o", out, "-j", "1").returncode == 0
    (out / "slurm2kf-report.json").write_text(
        '{"format": "slurm2kf-report", "scripts": ' + "[" * DEEP + "]" * DEEP + "}"
    )
    proc = cli("report", out, timeout=60)
    no_traceback(proc)
    assert proc.returncode == 2 and "M614" in proc.stderr, proc.stderr


# ---- a disk that fills up mid-run ----------------------------------------------------------------

# A disk of BUDGET free bytes under OUT, for the migrate process: every os.write to a file in OUT uses
# space, and fails with ENOSPC (as write(2) does on a full file system) once it is used up; removing a
# file of OUT gives its space back. Everything else (the spool in TMPDIR) is unaffected.
DISK_FULL = """
import errno, os
OUT = os.path.realpath({out!r})
FREE = [{budget}]
_write, _unlink = os.write, os.unlink

def _in_out(fd):
    try:
        return os.readlink(f"/proc/self/fd/{{fd}}").startswith(OUT + "/")
    except OSError:
        return False

def write(fd, data):
    if _in_out(fd):
        n = len(data)
        if n > FREE[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        FREE[0] -= n
    return _write(fd, data)

def unlink(path, *, dir_fd=None):
    try:
        where = os.readlink(f"/proc/self/fd/{{dir_fd}}") if dir_fd is not None else os.path.dirname(os.path.realpath(path))
        if (where + "/").startswith(OUT + "/"):
            FREE[0] += os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_size
    except OSError:
        pass
    return _unlink(path, dir_fd=dir_fd)

os.write, os.unlink = write, unlink
"""


def _output_files(out: Path) -> dict[str, str]:
    names = (".trainjob.yaml", ".trainjob.py", "kustomization.yaml", "slurm2kf-report.md", "slurm2kf-report.html")
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in out.rglob("*")
        if p.is_file() and p.name.endswith(names + ("slurm2kf-report.json",))
    }


def test_disk_full_mid_run_leaves_every_written_output_in_the_manifest(tmp_path):
    src = tmp_path / "src"
    for team in ("t1", "t2", "t3"):
        (src / team).mkdir(parents=True)
        for i in range(12):
            (src / team / f"job{i:02d}.sbatch").write_text(GOOD.format(name=f"{team}-job{i:02d}"))
    out = tmp_path / "out"
    # budgets: the first scripts' outputs only; every script but not the reports (inline, and with two
    # worker processes, each of which inherits the full disk's budget)
    for budget, jobs in ((9_000, 1), (150_000, 1), (150_000, 2)):
        if out.exists():
            subprocess.run(["rm", "-rf", str(out)], check=True)
        prelude = DISK_FULL.format(out=str(out), budget=budget)
        full = cli("migrate", src, "-o", out, "-j", jobs, prelude=prelude)
        no_traceback(full)
        assert full.returncode == 2 and "M610" in full.stderr, (budget, full.stderr)
        manifest = json.loads((out / ".slurm2kf-migrate.json").read_text())
        on_disk = _output_files(out)
        if budget > 100_000:  # room for the manifest: the outputs stay and are listed
            assert len([k for k in on_disk if k.endswith(".trainjob.yaml")]) == 36, on_disk
        # every output on disk is listed, with the content it has (or, when even the manifest could not
        # be written, was removed to make room for it): none is unknown to the next run
        assert {k: manifest["outputs"].get(k) for k in on_disk} == on_disk, budget
        assert not list(out.rglob("*slurm2kf-tmp"))
        # a re-run with space completes the tree ...
        again = cli("migrate", src, "-o", out, "-j", "1")
        assert again.returncode == 0, again.stderr
        assert len(list(out.rglob("*.trainjob.yaml"))) == 36
        # ... and once the scripts are gone, a run removes every output: nothing was left unlisted
        for p in src.rglob("*.sbatch"):
            p.unlink()
        gone = cli("migrate", src, "-o", out, "-j", "1")
        assert gone.returncode == 0, gone.stderr
        assert not list(out.rglob("*.trainjob.*")), budget
        for team in ("t1", "t2", "t3"):
            for i in range(12):
                (src / team / f"job{i:02d}.sbatch").write_text(GOOD.format(name=f"{team}-job{i:02d}"))


def test_a_link_switched_after_discovery_is_not_read(tmp_path):
    """Discovery checked where the link led; a link re-pointed before the worker opens it (at
    /proc/kmsg, whose read blocks, or any other file) is refused, never read."""
    from translator.migrate.discover import Candidate
    from translator.migrate.worker import WorkContext, process
    from translator.pipeline import ConvertSettings

    (tmp_path / "outside.sbatch").write_text(GOOD.format(name="outside"))
    (tmp_path / "other.sbatch").write_text(GOOD.format(name="other"))
    link = tmp_path / "job.sbatch"
    link.symlink_to(tmp_path / "outside.sbatch")
    st = os.stat(link)
    found = Candidate("job.sbatch", str(link), "job", "", False, (st.st_dev, st.st_ino))
    ctx = WorkContext(out_dir=None, settings=ConvertSettings())
    assert process(found, ctx).kind == "script"  # unchanged: converted
    for target in ("/proc/kmsg", str(tmp_path / "other.sbatch")):
        link.unlink()
        link.symlink_to(target)
        r = process(found, ctx)
        assert r.kind == "unreadable" and r.skipped is not None and r.skipped["code"] == "M621", (target, r)


def test_a_source_tree_kept_in_dev_shm_is_converted(tmp_path):
    """/dev/shm is below /dev, but a tree the user chose to keep there is theirs: converted, with its
    links inside it; a link from it to elsewhere in /dev is still refused."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="slurm2kf-test-", dir="/dev/shm"))
    try:
        src = base / "src"
        (src / "team").mkdir(parents=True)
        (src / "a.sbatch").write_text(GOOD.format(name="a"))
        (src / "team" / "b.sbatch").write_text(GOOD.format(name="b"))
        (src / "alias.sbatch").symlink_to("a.sbatch")
        (src / "devnull.sbatch").symlink_to("/dev/null")
        (base / "elsewhere").mkdir()
        (base / "elsewhere" / "c.sbatch").write_text(GOOD.format(name="c"))
        (src / "elsewhere").symlink_to(base / "elsewhere")
        proc = cli("migrate", src, "-o", tmp_path / "out", "--follow-symlinks", "-j", "1", timeout=60)
        assert proc.returncode == 0, proc.stderr
        report = report_of(tmp_path / "out")
        assert sorted(s["path"] for s in report["scripts"]) == ["a.sbatch", "team/b.sbatch"]
        codes = {s["path"]: s["code"] for s in report["skipped"]}
        assert codes == {"alias.sbatch": "M605", "devnull.sbatch": "M619", "elsewhere": "M619"}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_run_held_half_way_through_its_start_is_reported_as_busy_not_foreign(tmp_path):
    """OUT as another run leaves it between taking the lock and writing its manifest (only the lock file
    and a temporary file): a second run says M622 (busy), not M613 (not ours), and changes nothing."""
    import fcntl

    src = _repo(tmp_path / "src", ["one"])
    out = tmp_path / "out"
    out.mkdir()
    (out / ".slurm2kf-migrate.json.4242.1.slurm2kf-tmp").write_text("{")
    with open(out / ".slurm2kf-migrate.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # this process is "the other run"
        proc = cli("migrate", src, "-o", out, "-j", "1", timeout=60)
    no_traceback(proc)
    assert proc.returncode == 2 and "M622" in proc.stderr, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        ".slurm2kf-migrate.json.4242.1.slurm2kf-tmp",
        ".slurm2kf-migrate.lock",
    ]
