"""Process 1 of the simulation sandbox (stdlib only; runs inside fresh user+mount+net+pid namespaces).

Builds a private root on a tmpfs: /usr read-only with every bin directory replaced by a tmpfs of
stub links (and the allow-listed real text utilities), a private /etc, /dev, /proc and /tmp, and
for each *unit* (the batch step, or one pod) a fresh mount+UTS namespace with its own hostname,
/etc, working directory (tmpfs) and files. The unit's command runs after pivot_root (the host's
file system is gone from its view), in a nested user namespace (no capabilities), with resource
limits. Process 1 kills everything left when a unit ends or its time is up, then writes the
bounded records and outputs to its standard output as one JSON object.

The spec (which holds the job's environment) comes on standard input and is never written to a
file; the units' outputs are kept in a tmpfs of process 1's own mount namespace. Exit status 3
(SETUP_FAILED) means the sandbox could not be built here: nothing of the job ran.

Usage: python -I -S sim_init.py < SPEC.json
"""

import ctypes
import json
import os
import platform
import resource
import signal
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWUSER = 0x00020000, 0x04000000, 0x10000000
SETUP_FAILED = 3  # the exit status that tells the host the sandbox could not be built
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217}.get(platform.machine(), 155)


def _b(s):
    return s.encode() if isinstance(s, str) else s


def mount(src, tgt, fstype, flags=0, data=None):
    if libc.mount(_b(src), _b(tgt), _b(fstype), ctypes.c_ulong(flags), _b(data)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {src} on {tgt}: {os.strerror(e)}")


def bind_ro(src, tgt):
    mount(src, tgt, None, MS_BIND)
    st = os.statvfs(src)
    keep = 0
    for bit, flag in ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC)):
        if st.f_flag & bit:
            keep |= flag
    mount(None, tgt, None, MS_REMOUNT | MS_BIND | MS_RDONLY | keep)


def tmpfs(tgt, size="16m", mode="755", inodes=None):
    data = f"size={size},mode={mode}" + (f",nr_inodes={inodes}" if inodes else "")
    mount("slurm2kf-sim", tgt, "tmpfs", MS_NOSUID | MS_NODEV, data)


def write(path, content, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(content.encode("utf-8") if isinstance(content, str) else content)
    os.chmod(path, mode)


class SetupError(Exception):
    """The sandbox cannot be built here: simulate refuses (nothing of the job ran)."""


def build_root(spec, T, R, notes):
    """The private root: /usr read-only with stub bin directories, only the allow-listed host programs
    under /.sim/real, the stubs, /dev, /proc. Returns whether /proc could be mounted."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    tmpfs(R, size="32m", inodes=65536)
    for d in (
        "usr",
        "etc",
        "tmp",
        "proc",
        "dev",
        "run",
        "var",
        "home",
        ".sim/real",
        ".sim/rec",
        ".sim/unit",
        ".sim/stubs",
        ".sim/oldroot",
    ):
        os.makedirs(os.path.join(R, d), exist_ok=True)
    os.symlink("/tmp", os.path.join(R, "var/tmp"))
    for name, target in spec["top_links"].items():
        os.symlink(target, os.path.join(R, name))
    for d in spec["top_binds"]:
        os.makedirs(R + d, exist_ok=True)
        bind_ro(d, R + d)
    bind_ro("/usr", R + "/usr")
    real_programs(spec, R)
    for d, names in spec["bin_dirs"].items():
        if not os.path.isdir(R + d):
            continue
        tmpfs(R + d, size="4m", inodes=32768)
        for name, target in names.items():
            os.symlink(target, os.path.join(R + d, name))
    for path, content in spec.get("program_files", {}).items():
        os.makedirs(os.path.dirname(R + path), exist_ok=True)
        if not os.path.lexists(R + path):
            if content is None:
                os.symlink("/.sim/stub", R + path)
            else:
                write(R + path, content, 0o755)
    for path in spec.get("extra_stub_paths", []):
        os.makedirs(os.path.dirname(R + path), exist_ok=True)
        if not os.path.lexists(R + path):
            os.symlink("/.sim/stub", R + path)
    # the stub program and its bytecode (compiled once by the host, hash-based and unchecked)
    for sub in ("", "__pycache__"):
        src_dir = os.path.join(T, "stubs", sub)
        if not os.path.isdir(src_dir):
            continue
        for fname in os.listdir(src_dir):
            if fname.endswith((".py", ".pyc")):
                with open(os.path.join(src_dir, fname), "rb") as fh:
                    write(os.path.join(R, ".sim/stubs", sub, fname), fh.read())
    write(os.path.join(R, ".sim/stub"), spec["stub_text"], 0o755)
    write(os.path.join(R, ".sim/bashenv"), spec["bashenv"], 0o644)
    build_dev(R, notes)
    try:
        mount("proc", R + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError as exc:
        raise SetupError(f"cannot mount /proc in the sandbox ({exc.strerror})") from None
    tmpfs(R + "/.sim/rec", size=str(spec["record_cap"]), inodes=4096)
    os.chmod(R + "/.sim/rec", 0o777)
    for u in spec["units"]:
        for d in [u["cwd"]] + [os.path.dirname(p) for p, _ in u["files"]]:
            top = d.strip("/").split("/")[0] if d.strip("/") else ""
            if top and top not in ("usr", "proc", "dev", ".sim", "etc", "tmp") and not os.path.islink(R + "/" + top):
                os.makedirs(R + d, exist_ok=True)
    mount(None, R, None, MS_REMOUNT | MS_RDONLY, None)


def real_programs(spec, R):
    """/.sim/real holds only the host programs that may run for real (the text utilities, the shells,
    the stubs' interpreter), each bound read-only; /.sim/real/usr/<dir> for every other /usr
    directory (libraries, the interpreter's standard library) is a link to /usr/<dir>."""
    base = R + "/.sim/real"
    tmpfs(base, size="1m", inodes=4096)
    for path in spec["real_files"]:
        os.makedirs(os.path.dirname(base + path), exist_ok=True)
        open(base + path, "w").close()
        bind_ro(path, base + path)
    for top in ("/usr", "/usr/local"):
        os.makedirs(base + top, exist_ok=True)
        for name in os.listdir(top) if os.path.isdir(top) else ():
            path = top + "/" + name
            if path not in spec["bin_dirs"] and path != "/usr/local" and not os.path.lexists(base + path):
                os.symlink(path, base + path)
    mount(None, base, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def build_dev(R, notes):
    tmpfs(R + "/dev", size="64k")
    for dev in ("null", "zero", "full", "random", "urandom"):
        p = os.path.join(R, "dev", dev)
        open(p, "w").close()
        try:
            mount("/dev/" + dev, p, None, MS_BIND)
        except OSError as exc:
            notes.append(str(exc))
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(target, os.path.join(R, "dev", name))
    os.makedirs(R + "/dev/shm")


def check_drop_privileges():
    """The unit's command must run without capabilities (a nested user namespace as uid 1000); a
    platform that does not allow it cannot isolate, so the sandbox is not built at all."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            enter_unprivileged()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SetupError("a nested user namespace (to drop privileges) is not allowed here")


def enter_unprivileged():
    if libc.unshare(CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "unshare(user)")
    for fname, text in (("setgroups", "deny"), ("uid_map", "1000 0 1"), ("gid_map", "1000 0 1")):
        with open(f"/proc/self/{fname}", "w") as fh:
            fh.write(text)


def main():
    spec = json.load(sys.stdin.buffer)
    T = spec["tmp"]
    R = os.path.join(T, "root")
    out_dir = os.path.join(T, "out")
    notes: list[str] = []
    try:
        build_root(spec, T, R, notes)
        check_drop_privileges()
        # the units' outputs live in a tmpfs of this mount namespace only: nothing the job prints
        # reaches the host's file system
        tmpfs(out_dir, size="40m", mode="700", inodes=256)
    except (OSError, SetupError) as exc:
        sys.stderr.write(f"{exc}\n")
        sys.exit(SETUP_FAILED)
    results = []
    deadline_total = time.monotonic() + spec["timeout_total"]
    for i, u in enumerate(spec["units"]):
        if time.monotonic() >= deadline_total:
            results.append({"rc": None, "timed_out": True, "not_run": True, "stdout": "", "stderr": ""})
            continue
        results.append(run_unit(spec, R, out_dir, i, u, deadline_total))
    records, full = read_records(R + "/.sim/rec/records.jsonl", spec["record_cap"], notes)
    out = {"units": results, "records": records, "records_full": full, "notes": notes}
    sys.stdout.write(json.dumps(out))
    sys.stdout.flush()


def read_records(path, cap, notes):
    """The records the stubs wrote, and whether their tmpfs filled up (later records were lost)."""
    records: list[dict] = []
    try:
        with open(path, "rb") as fh:
            data = fh.read(cap)
        st = os.statvfs(os.path.dirname(path))
    except OSError:
        return records, False
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            notes.append("a malformed record line was ignored")
    return records, st.f_bavail * st.f_frsize < 64 * 1024


def run_unit(spec, R, out_dir, i, u, deadline_total):
    out_path = os.path.join(out_dir, f"u{i}.out")
    err_path = os.path.join(out_dir, f"u{i}.err")
    outfd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    errfd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    pid = os.fork()
    if pid == 0:
        try:
            child(spec, R, u, outfd, errfd)
        except BaseException as exc:
            os.write(errfd, f"slurm2kf sandbox: {exc}\n".encode())
        os._exit(125)
    os.close(outfd)
    os.close(errfd)
    deadline = min(time.monotonic() + u.get("timeout", spec["timeout"]), deadline_total)
    rc, timed_out = None, False
    cut = deadline == deadline_total  # the overall deadline, not the unit's own limit, ends it
    while True:
        try:
            wpid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if wpid == pid:
            rc = os.waitstatus_to_exitcode(status)
            break
        if wpid == 0:
            if time.monotonic() > deadline:
                timed_out = True
                os.kill(-1, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                rc = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.002)
    # Background steps the script started just before it ended get a moment to start their tasks: the
    # stubs take no time (`sleep` returns at once), so without this a step launched behind `&` is cut
    # before its tasks run, where on a cluster the script's own sleeps gave it time. Then whatever the
    # unit left running (background jobs, fork loops) ends with it.
    if not timed_out:
        _drain(min(deadline, time.monotonic() + DRAIN_SECONDS))
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    cap = spec["output_cap"]
    res: dict[str, object] = {"rc": rc, "timed_out": timed_out, "cut_by_deadline": timed_out and cut}
    for key, p in (("stdout", out_path), ("stderr", err_path)):
        with open(p, "rb") as fh:
            data = fh.read(cap + 1)
        os.unlink(p)
        res[key] = data[:cap].decode("utf-8", "replace")
        res[key + "_truncated"] = len(data) > cap
    return res


DRAIN_SECONDS = 1.0


def _drain(until: float) -> None:
    """Reap the unit's remaining processes as they end, until none is left or `until` (time.monotonic())."""
    while time.monotonic() < until:
        try:
            wpid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # process 1 has no child left, so nothing runs in the namespace
        if wpid == 0:
            time.sleep(0.002)


def child(spec, R, u, outfd, errfd):
    if libc.unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(mount, uts)")
    host = u["hostname"].encode()[:64]
    libc.sethostname(host, len(host))
    tmpfs(R + "/etc", size="2m")
    for name, content in spec["etc_files"].items():
        write(R + "/etc/" + name, content)
    tmpfs(R + "/.sim/unit", size="1m")
    write(R + "/.sim/unit/config.json", json.dumps(u["config"]))
    tmpfs(R + "/tmp", size="64m", mode="1777", inodes=8192)
    cwd = u["cwd"]
    if not (cwd.startswith("/tmp/") or cwd == "/tmp"):
        tmpfs(R + cwd, size="64m", mode="755", inodes=8192)
    else:
        os.makedirs(R + cwd, exist_ok=True)
    mounted = {"/etc", "/tmp", cwd}
    for path, content in u["files"]:
        parent = os.path.dirname(path)
        if not any(parent == m or parent.startswith(m.rstrip("/") + "/") for m in mounted):
            tmpfs(R + parent, size="4m")
            mounted.add(parent)
        if content == "@link":
            os.makedirs(os.path.dirname(R + path), exist_ok=True)
            if not os.path.lexists(R + path):
                os.symlink("/.sim/stub", R + path)
        elif content.startswith("#!/bin/bash\nSLURM2KF_SIM_ARGV0="):
            write(R + path, content, 0o755)
        else:
            write(R + path, content, 0o644)
    for d in (cwd,):
        os.chmod(R + d, 0o755)
    os.chdir(R)
    if libc.syscall(SYS_PIVOT_ROOT, b".", b".sim/oldroot") != 0:
        raise OSError(ctypes.get_errno(), "pivot_root")
    os.chdir("/")
    if libc.umount2(b"/.sim/oldroot", MNT_DETACH) != 0:
        raise OSError(ctypes.get_errno(), "umount old root")
    # a nested user namespace: the command runs as an ordinary user (uid 1000) with no capability
    # over the mounts above, so it cannot undo them (and cannot reach process 1's view of the host)
    enter_unprivileged()
    os.chdir(cwd)
    lim = spec["limits"]
    for res_name, value in (
        ("RLIMIT_NPROC", lim["nproc"]),
        ("RLIMIT_FSIZE", lim["fsize"]),
        ("RLIMIT_CPU", lim["cpu"]),
        ("RLIMIT_CORE", 0),
    ):
        try:
            resource.setrlimit(getattr(resource, res_name), (value, value))
        except (ValueError, OSError):
            pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.setsid()
    devnull = os.open("/dev/null", os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(outfd, 1)
    os.dup2(errfd, 2)
    env = dict(u["env"])
    try:
        os.execvpe(u["argv"][0], u["argv"], env)
    except OSError as exc:
        os.write(2, f"exec: {u['argv'][0]}: {exc.strerror} (executable file not found in $PATH)\n".encode())
        os._exit(127)


if __name__ == "__main__":
    main()
