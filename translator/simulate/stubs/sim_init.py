"""Process 1 of the simulation sandbox (stdlib only; runs inside fresh user+mount+net+pid namespaces).

Builds a private root on a tmpfs: /usr read-only with every bin directory replaced by a tmpfs of
stub links (and the allow-listed real text utilities), a private /etc, /dev, /proc and /tmp, and
for each *unit* (the batch step, or one pod) a fresh mount+UTS namespace with its own hostname,
/etc, working directory (tmpfs) and files. The unit's command runs after pivot_root (the host's
file system is gone from its view), in a nested user namespace (no capabilities), with resource
limits. Process 1 kills everything left when a unit ends or its time is up, then copies the
bounded records and outputs to the host directory.

Usage: python -I -S sim_init.py SPEC.json
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


def main():
    spec = json.load(open(sys.argv[1]))
    T = spec["tmp"]
    R = os.path.join(T, "root")
    notes = []
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
        ".sim/real/usr",
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
    bind_ro("/usr", R + "/.sim/real/usr")
    for d, names in spec["bin_dirs"].items():
        if not os.path.isdir(R + d):
            continue
        tmpfs(R + d, size="4m", inodes=32768)
        for name, target in names.items():
            os.symlink(target, os.path.join(R + d, name))
    for d in spec.get("extra_stub_dirs", []):
        os.makedirs(R + d, exist_ok=True)
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
    # /dev
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
    have_proc = True
    try:
        mount("proc", R + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError as exc:
        have_proc = False
        notes.append(f"no /proc in the sandbox ({exc.strerror if hasattr(exc, 'strerror') else exc})")
    tmpfs(R + "/.sim/rec", size="8m", inodes=4096)
    os.chmod(R + "/.sim/rec", 0o777)
    units = spec["units"]
    for u in units:
        for d in [u["cwd"]] + [os.path.dirname(p) for p, _ in u["files"]]:
            top = d.strip("/").split("/")[0] if d.strip("/") else ""
            if top and top not in ("usr", "proc", "dev", ".sim", "etc", "tmp") and not os.path.islink(R + "/" + top):
                os.makedirs(R + d, exist_ok=True)
    mount(None, R, None, MS_REMOUNT | MS_RDONLY, None)
    out_dir = os.path.join(T, "out")
    results = []
    deadline_total = time.monotonic() + spec["timeout_total"]
    for i, u in enumerate(units):
        results.append(run_unit(spec, R, out_dir, i, u, have_proc, deadline_total))
    records = []
    try:
        with open(R + "/.sim/rec/records.jsonl", "rb") as fh:
            data = fh.read(spec["record_cap"])
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                notes.append("a malformed record line was ignored")
    except OSError:
        pass
    with open(os.path.join(out_dir, "result.json"), "w") as fh:
        json.dump({"units": results, "records": records, "notes": notes}, fh)


def run_unit(spec, R, out_dir, i, u, have_proc, deadline_total):
    out_path = os.path.join(out_dir, f"u{i}.out")
    err_path = os.path.join(out_dir, f"u{i}.err")
    outfd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    errfd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    pid = os.fork()
    if pid == 0:
        try:
            child(spec, R, u, outfd, errfd, have_proc)
        except BaseException as exc:
            os.write(errfd, f"slurm2kf sandbox: {exc}\n".encode())
        os._exit(125)
    os.close(outfd)
    os.close(errfd)
    deadline = min(time.monotonic() + u.get("timeout", spec["timeout"]), deadline_total)
    rc, timed_out = None, False
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
    # whatever the unit left running (background jobs, fork loops) ends with it
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
    res: dict[str, object] = {"rc": rc, "timed_out": timed_out}
    for key, p in (("stdout", out_path), ("stderr", err_path)):
        with open(p, "rb") as fh:
            data = fh.read(cap + 1)
        res[key] = data[:cap].decode("utf-8", "replace")
        res[key + "_truncated"] = len(data) > cap
    return res


def child(spec, R, u, outfd, errfd, have_proc):
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
    if have_proc:
        # a nested user namespace: the command runs as an ordinary user (uid 1000) with no
        # capability over the mounts above, so it cannot undo them
        if libc.unshare(CLONE_NEWUSER) == 0:
            for fname, text in (("setgroups", "deny"), ("uid_map", "1000 0 1"), ("gid_map", "1000 0 1")):
                try:
                    with open(f"/proc/self/{fname}", "w") as fh:
                        fh.write(text)
                except OSError:
                    pass
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
