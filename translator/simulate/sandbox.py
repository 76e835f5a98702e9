"""Run untrusted job scripts (or a pod's command) without performing any of their side effects.

Every external command is a recording stub (translator/simulate/stubs/sim_stub.py), whether called
by name or by absolute path, except an allow-list of pure text utilities. `unshare` gives fresh user,
mount, network and pid namespaces; process 1 (stubs/sim_init.py) builds a private root on a tmpfs
(system directories read-only, every bin directory a tmpfs of stub links, only the allow-listed host
programs under /.sim/real), pivots into it, drops capabilities in a nested user namespace and
applies limits (time, processes, file size, output). Nothing outside the sandbox's own tmpfs mounts
is reachable, and there is no network. When run as root, the namespaces are entered as an
unprivileged user id so that the process limit applies.

There is no weaker mode: where the namespaces cannot be had (Docker's default seccomp profile, many
CI runners) or the private root cannot be built, `run_units` raises SandboxUnavailable (S820) and
nothing of the job runs. The spec given to process 1 (it holds the job's environment) goes through
a pipe, never a file; `stop_all` ends every running sandbox (the CLI calls it on SIGTERM/SIGINT/SIGHUP),
and a sandbox also ends when the thread that started it dies (parent-death signal).
"""

from __future__ import annotations

from translator.simulate.stubs.names import COMMON_NAMES
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from collections.abc import Sequence

from translator.simulate import SimulateError

STUB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stubs")
BIN_DIRS = ("/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/usr/games", "/usr/local/games")
# Pure text utilities (and the shells/exec helpers, whose children are stubs again) that run for real.
ALLOW = (
    "bash",
    "sh",
    "echo",
    "printf",
    "seq",
    "expr",
    "basename",
    "dirname",
    "cut",
    "tr",
    "sed",
    "awk",
    "mawk",
    "gawk",
    "head",
    "tail",
    "wc",
    "sort",
    "uniq",
    "cat",
    "grep",
    "egrep",
    "fgrep",
    "true",
    "false",
    "test",
    "[",
    "xargs",
    "tee",
    "paste",
    "rev",
    "fold",
    "fmt",
    "nl",
    "tac",
    "comm",
    "join",
    "column",
    "printenv",
    "id",
    "readlink",
    "realpath",
    "pwd",
    "mktemp",
    "nproc",
    "bc",
    "dc",
    "numfmt",
    "stat",
    "ls",
    "find",
    "getconf",
    "od",
    "md5sum",
    "sha256sum",
    "base64",
    "which",
    "shuf",
    "yes",
    "jq",
)
SIM_ENV = "SLURM2KF_SIM_"
S820_REFUSED = "S820"
S821_CAPPED = "S821"
S822_TIME_LIMIT = "S822"
MAX_NODES = 128  # nodes (Slurm side) or pods (Kubeflow side) simulate runs; more: not run, inconclusive
RECORD_CAP = 8 * 1024 * 1024  # bytes of process/call records kept per side (a tmpfs of this size)
SETUP_FAILED = 3  # sim_init's exit status when the sandbox cannot be built

_NS_PROBE: list[str] = []  # [] not probed yet, else [""] (namespaces work) or [the reason they do not]
_HOST_NAMES: dict[str, list[str]] = {}
_HOST_NAMES_LOCK = threading.Lock()
_LIVE: set[subprocess.Popen] = set()  # the running sandboxes (`unshare` processes), for stop_all
_STOPPING = threading.Event()


class SandboxUnavailable(SimulateError):
    """This system cannot isolate a simulation: simulate refuses, and nothing of the job ran."""


class Interrupted(SimulateError):
    """The run was stopped by a signal (stop_all)."""


@dataclass
class Unit:
    """One command to run: the batch step of node 0, or one pod's container."""

    argv: Sequence[str]
    env: dict[str, str]
    hostname: str
    node: int = 0
    cwd: str = "/home/user"
    files: Sequence[tuple[str, str]] = ()
    config: dict[str, object] = field(default_factory=dict)  # extra stub configuration
    programs: Sequence[str] = ()  # the user's own programs run by path (./app): a recording stub each


@dataclass
class UnitResult:
    rc: int | None
    timed_out: bool
    stdout: str
    stderr: str


@dataclass
class SandboxResult:
    units: list[UnitResult]
    records: list[dict]
    isolation: str
    notes: list[str]
    # why the run is not complete, as (code, sentence): the overall deadline ended it, or the records
    # filled their cap. (A unit's own time-out is in `units`.) The verdict is then inconclusive.
    incomplete: list[tuple[str, str]] = field(default_factory=list)


def _python() -> str:
    """An interpreter the unprivileged sandbox user can execute, with its standard library under /usr."""
    for cand in (os.path.realpath(sys.executable), "/usr/bin/python3"):
        real = os.path.realpath(cand)
        if real.startswith("/usr/") and os.access(real, os.X_OK):
            return real
    return os.path.realpath(sys.executable)


def _host_names() -> dict[str, list[str]]:
    """The names in the host's bin directories (each gets a stub). Filled once, under a lock: the two
    sides of a simulation run in two threads, and one must not read the table while the other fills it
    ("dictionary changed size during iteration")."""
    with _HOST_NAMES_LOCK:
        if not _HOST_NAMES:
            found: dict[str, list[str]] = {}
            for d in BIN_DIRS:
                try:
                    found[d] = sorted(n for n in os.listdir(d) if "/" not in n)
                except OSError:
                    pass
            _HOST_NAMES.update(found or {"": []})
        return _HOST_NAMES


def _allowed_real() -> dict[str, str]:
    out = {}
    for name in ALLOW:
        p = shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
        if p:
            real = os.path.realpath(p)
            if real.startswith("/usr/"):
                out[name] = real
    return out


def _sandbox_ids() -> tuple[int | None, int | None]:
    """As root, enter the namespaces as an unprivileged id of our own (the process limit counts
    per user, and root is exempt from it)."""
    if os.geteuid() != 0 or not _python().startswith("/usr/"):
        return None, None  # (an interpreter only root can reach: stay root, pid namespace + time-out)
    uid = 180000 + os.getpid() % 20000
    return uid, uid


def _probe_namespaces() -> str:
    """'' when `unshare` can create the sandbox's namespaces here, else why not (one line)."""
    if not sys.platform.startswith("linux"):
        return "it needs Linux user namespaces"
    unshare = shutil.which("unshare")
    if not unshare:
        return "the `unshare` program (util-linux) is not installed"
    uid, gid = _sandbox_ids()
    try:
        r = subprocess.run(
            [unshare, "-Urmnpf", "--kill-child", "true"],
            capture_output=True,
            timeout=10,
            user=uid,
            group=gid,
            extra_groups=[] if uid is not None else None,
            cwd="/",
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"`unshare` could not run ({exc})"
    if r.returncode != 0:
        why = " ".join(r.stderr.decode("utf-8", "replace").split())[-200:]
        return "unprivileged user namespaces are not available" + (f" ({why})" if why else "")
    return ""


def namespaces_available() -> bool:
    if not _NS_PROBE:
        _NS_PROBE.append(_probe_namespaces())
    return _NS_PROBE[0] == ""


def refusal(reason: str) -> str:
    """The one line simulate prints when it cannot isolate (exit status 2)."""
    return (
        f"error {S820_REFUSED}: simulate refuses to run here: {reason}; it runs job scripts only inside "
        "user, mount, network and pid namespaces, and nothing was run"
    )


def check_isolation() -> None:
    """Raise SandboxUnavailable unless the sandbox's namespaces can be had on this system."""
    if not namespaces_available():
        raise SandboxUnavailable(refusal(_NS_PROBE[0]))


def stop_all() -> None:
    """End every running sandbox now (the process is stopping: a signal). Later runs are refused."""
    _STOPPING.set()
    for proc in list(_LIVE):
        _kill_init(proc)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(c) for c in fh.read().split()]
    except (OSError, ValueError):
        return []


def _kill_init(proc: subprocess.Popen) -> None:
    """SIGKILL the sandbox's process 1 (`unshare`'s child): the kernel then kills every process of its pid
    namespace, and `unshare` exits once they are all gone. (Killing `unshare` itself would leave that to
    happen after we returned.)"""
    kids = _children(proc.pid)
    for pid in kids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if not kids:
        try:
            proc.kill()
        except OSError:
            pass


def _end(proc: subprocess.Popen) -> None:
    """Kill the sandbox and wait until nothing of it is left."""
    _kill_init(proc)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _bashenv(stub: str) -> str:
    return f"""# slurm2kf simulate: names bash cannot find are recorded by the stub; `source` of a file that is not
# in the sandbox (a site module file, a virtualenv) is recorded and succeeds.
__slurm2kf_sim_stub={stub}
# $RANDOM: a fixed seed per node (or pod), so that a verdict is repeatable and a value drawn on each
# node separately still differs between nodes, as on a real cluster
RANDOM=$((7919 + 104729 * ${{SLURM2KF_SIM_NODE:-0}}))
command_not_found_handle() {{ SLURM2KF_SIM_ARGV0="$1" "$__slurm2kf_sim_stub" "${{@:2}}"; }}
source() {{ if [ -f "$1" ] && [ -r "$1" ]; then builtin source "$@"; else SLURM2KF_SIM_ARGV0=source "$__slurm2kf_sim_stub" "$@"; return 0; fi; }}
.() {{ if [ -f "$1" ] && [ -r "$1" ]; then builtin source "$@"; else SLURM2KF_SIM_ARGV0=source "$__slurm2kf_sim_stub" "$@"; return 0; fi; }}
"""


STUB_NAMES = COMMON_NAMES + ("prterun", "mpiexec.hydra", "docker", "podman")


def _etc_files(units: Sequence[Unit]) -> dict[str, str]:
    hosts = "127.0.0.1 localhost\n"
    return {
        "passwd": "root:x:0:0:root:/root:/bin/bash\nuser:x:1000:1000:user:/home/user:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n",
        "hosts": hosts,
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
    }


def _clean_cwd(cwd: str) -> str:
    cwd = os.path.normpath(cwd or "/home/user")
    top = cwd.strip("/").split("/")[0]
    if (
        not cwd.startswith("/")
        or top
        in ("", "usr", "proc", "dev", ".sim", "etc", "bin", "sbin", "lib", "lib64", "lib32", "libx32", "sys", "run")
        or ".." in cwd
    ):
        return "/home/user"
    return cwd


def run_units(
    units: Sequence[Unit],
    side: str,
    hosts: Sequence[tuple[str, int, str, int]],
    timeout: float = 5.0,
    extra_stub_paths: Sequence[str] = (),
    node_env: dict[str, dict[str, str]] | None = None,
    deadline: float | None = None,
) -> SandboxResult:
    """Run units one after another in one sandbox. `hosts` = [(hostname, node, ip, gpus)] of the side;
    `deadline` (time.monotonic()) ends the whole run, whatever the per-unit `timeout`. Raises
    SandboxUnavailable where the sandbox cannot be built (nothing ran), Interrupted after stop_all."""
    check_isolation()
    if _STOPPING.is_set():
        raise Interrupted("simulate was interrupted")
    budget = timeout * max(len(units), 1) + 1
    if deadline is not None:
        budget = min(budget, deadline - time.monotonic())
        if budget <= 0:
            return _not_run(units)
    tmp = tempfile.mkdtemp(prefix="slurm2kf-sim-")
    try:
        return _run_ns(tmp, units, side, hosts, timeout, budget, extra_stub_paths, node_env or {})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _not_run(units: Sequence[Unit]) -> SandboxResult:
    why = "not run: the simulation's overall deadline was reached"
    return SandboxResult(
        [UnitResult(None, True, "", why) for _ in units],
        [],
        ISOLATION,
        [],
        [(S822_TIME_LIMIT, f"the overall deadline was reached before {len(units)} node(s)/pod(s) could run")],
    )


ISOLATION = "namespaces (user+mount+net+pid; private read-only root, no network)"


def _unit_config(u: Unit, i: int, side: str, hosts, node_env, rec: str) -> dict:
    cfg = {
        "side": side,
        "unit": i,
        "node": u.node,
        "host": u.hostname,
        "hosts": [list(h) for h in hosts],
        "rec": rec,
        "node_env": node_env,
        "slurm": side == "slurm",
        "host_names": sorted({n for names in _host_names().values() for n in names}),
    }
    cfg.update(u.config)
    return cfg


def _base_env(u: Unit, stubpath_env: dict[str, str], cwd: str) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "HOME": cwd,
        "USER": "user",
        "LOGNAME": "user",
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "HOSTNAME": u.hostname,
    }
    env.update(u.env)
    env.update(stubpath_env)
    env[SIM_ENV + "NODE"] = str(u.node)
    env[SIM_ENV + "HOST"] = u.hostname
    return env


_SEP = re.compile(r"&&|\|\||[;|&(){}`]|\$\(|\b(?:then|do|else)\b")
_PREFIX_WORDS = ("exec", "time", "nohup", "command", "builtin", "!")


def program_paths(texts: Sequence[str]) -> list[str]:
    """Words in command position that name a program by path (`./app`, `bin/run.sh`, `/opt/x/bin/tool`):
    the user's own programs, which do not exist in the sandbox. Each gets a recording stub there, so that
    running it records a training process instead of failing with "No such file or directory"."""
    out: list[str] = []
    for text in texts:
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                continue
            for seg in _SEP.split(line):
                words = seg.strip().split()
                i = 0
                while i < len(words) and (re.fullmatch(r"[A-Za-z_]\w*=\S*", words[i]) or words[i] in _PREFIX_WORDS):
                    i += 1
                if i == len(words):
                    continue
                w = words[i]
                if "/" not in w or w.endswith("/") or not re.fullmatch(r"[\w./+@%-]+", w) or ".." in w.split("/"):
                    continue
                top = w.strip("/").split("/")[0] if w.startswith("/") else ""
                if w.startswith("/") and (not _file_ok(w) or top in ("etc", "tmp") or os.path.exists(w)):
                    continue
                if w not in out:
                    out.append(w)
    return out


def _program_stub(path: str, stub: str) -> str | None:
    """The file placed at a user's program path: None = a link to the stub (a known launcher or
    interpreter such as /opt/conda/bin/python), else a script recording a training process."""
    import shlex

    base = os.path.basename(path)
    if re.fullmatch(r"python[0-9.]*", base) or base in STUB_NAMES:
        return None
    return f'#!/bin/bash\nSLURM2KF_SIM_ARGV0={shlex.quote(path)} SLURM2KF_SIM_PROGRAM=1 exec {stub} "$@"\n'


def _file_ok(p: str) -> bool:
    """An absolute path the sandbox may create (not inside system directories)."""
    if not p.startswith("/") or ".." in p.split("/"):
        return False
    top = p.strip("/").split("/")[0]
    return top not in (
        "",
        "usr",
        "proc",
        "dev",
        ".sim",
        "bin",
        "sbin",
        "lib",
        "lib64",
        "lib32",
        "libx32",
        "sys",
        "run",
    ) and not p.startswith("/var/tmp")


_BYTECODE: dict[str, dict[str, bytes]] = {}


def _stub_bytecode(py: str) -> dict[str, bytes]:
    """The stubs compiled once per process by the sandbox's interpreter (unchecked hash-based .pyc, so
    copying the sources does not invalidate them). Empty if that fails: the stubs then compile in memory."""
    if py not in _BYTECODE:
        out: dict[str, bytes] = {}
        tmp = tempfile.mkdtemp(prefix="slurm2kf-simc-")
        try:
            for f in os.listdir(STUB_DIR):
                if f.endswith(".py"):
                    shutil.copy(os.path.join(STUB_DIR, f), tmp)
            code = (
                "import py_compile,sys,os,importlib.util as u\n"
                "for f in os.listdir(sys.argv[1]):\n"
                " if f.endswith('.py'):\n"
                "  s=os.path.join(sys.argv[1],f)\n"
                "  py_compile.compile(s,cfile=u.cache_from_source(s),doraise=True,"
                "invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n"
            )
            subprocess.run([py, "-I", "-S", "-c", code, tmp], check=True, capture_output=True, timeout=30)
            cache = os.path.join(tmp, "__pycache__")
            for f in os.listdir(cache):
                with open(os.path.join(cache, f), "rb") as fh:
                    out[f] = fh.read()
        except (OSError, subprocess.SubprocessError):
            out = {}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        _BYTECODE[py] = out
    return _BYTECODE[py]


def _copy_stubs(tmp: str, py: str) -> None:
    dest = os.path.join(tmp, "stubs")
    shutil.copytree(STUB_DIR, dest, ignore=shutil.ignore_patterns("__pycache__"))
    pyc = _stub_bytecode(py)
    if pyc:
        os.makedirs(os.path.join(dest, "__pycache__"))
        for f, data in pyc.items():
            with open(os.path.join(dest, "__pycache__", f), "wb") as fh:
                fh.write(data)


def _bin_dirs(allow: dict[str, str]) -> tuple[dict[str, dict[str, str]], dict[str, str], list[str]]:
    """(every bin directory -> {name: link target}, the top-level links such as /bin -> usr/bin, the
    top-level library directories bound read-only)."""
    host_names = _host_names()
    bin_dirs: dict[str, dict[str, str]] = {}
    for d in BIN_DIRS:
        if not os.path.isdir(d):
            continue
        names = {n: "/.sim/stub" for n in host_names.get(d, [])}
        names.update({n: "/.sim/stub" for n in STUB_NAMES if n not in names})
        for n in list(names):
            if n in allow:
                names[n] = "/.sim/real" + allow[n]
        if d == "/usr/bin":
            for n, real in allow.items():
                names[n] = "/.sim/real" + real
        bin_dirs[d] = names
    top_links, top_binds = {}, []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = "/" + name
        if os.path.islink(p):
            top_links[name] = os.readlink(p)
        elif os.path.isdir(p) and name.startswith("lib"):
            top_binds.append(p)
        elif os.path.isdir(p):  # a real /bin or /sbin (not merged into /usr): stub dir
            bin_dirs[p] = {n: "/.sim/stub" for n in os.listdir(p)}
            for n in bin_dirs[p]:
                if n in allow:
                    bin_dirs[p][n] = "/.sim/real" + allow[n]
    return bin_dirs, top_links, top_binds


def _unit_specs(units, side, hosts, node_env) -> tuple[list[dict], dict[str, str | None]]:
    """What process 1 needs for each unit, and the user's programs named by absolute path."""
    unit_specs = []
    programs_abs: dict[str, str | None] = {}
    for i, u in enumerate(units):
        cwd = _clean_cwd(u.cwd)
        env = _base_env(u, {"BASH_ENV": "/.sim/bashenv", SIM_ENV + "CONFIG": "/.sim/unit/config.json"}, cwd)
        if "HOME" in u.env and u.env["HOME"] != cwd:
            env["HOME"] = u.env["HOME"]
        files = [(p, c) for p, c in u.files if _file_ok(p)]
        for p in u.programs:
            if not p.startswith("/"):
                content = _program_stub(p, "/.sim/stub")
                files.append((os.path.join(cwd, p), content if content is not None else "@link"))
            elif _file_ok(p):
                programs_abs[p] = _program_stub(p, "/.sim/stub")
        unit_specs.append(
            {
                "argv": list(u.argv),
                "env": env,
                "hostname": u.hostname,
                "cwd": cwd,
                "files": [list(f) for f in files],
                "config": _unit_config(u, i, side, hosts, node_env, "/.sim/rec/records.jsonl"),
            }
        )
    return unit_specs, programs_abs


def _spec(tmp, units, side, hosts, timeout, budget, extra_stub_paths, node_env, py) -> dict:
    allow = _allowed_real()
    bin_dirs, top_links, top_binds = _bin_dirs(allow)
    unit_specs, programs_abs = _unit_specs(units, side, hosts, node_env)
    return {
        "tmp": tmp,
        "top_links": top_links,
        "top_binds": top_binds,
        "bin_dirs": bin_dirs,
        "real_files": sorted(set(allow.values()) | {py}),
        "extra_stub_paths": [
            p
            for p in extra_stub_paths
            if _file_ok(p) and not p.startswith(("/etc/", "/tmp/")) and p not in programs_abs
        ],
        "program_files": programs_abs,
        "stub_text": (
            f"#!/.sim/real{py} -IS\nimport sys\nsys.path.insert(0, '/.sim/stubs')\nimport sim_stub\nsim_stub.main()\n"
        ),
        "bashenv": _bashenv("/.sim/stub"),
        "etc_files": _etc_files(units),
        "units": unit_specs,
        "timeout": timeout,
        "timeout_total": budget,
        "output_cap": 64 * 1024,
        "record_cap": RECORD_CAP,
        "limits": {"nproc": 256, "fsize": 16 * 1024 * 1024, "cpu": int(timeout) + 5},
    }


def _die_with_parent():
    """A preexec function: SIGKILL the child when the thread that started it dies (even by SIGKILL), so
    that no sandbox outlives simulate. (It runs after the uid change, which would clear the setting;
    libc is loaded here, in the parent, not in the forked child.)"""
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def preexec() -> None:
        prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG

    return preexec


def _launch(cmd: list[str], spec: dict, uid, gid) -> tuple[int | None, bytes, bytes]:
    """Start the sandbox, hand it the spec on its standard input, wait for it (at most the run's time
    budget plus a margin for setup). (None, ...) when it was killed for taking too long."""
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd="/",
        user=uid,
        group=gid,
        extra_groups=[] if uid is not None else None,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        preexec_fn=_die_with_parent(),
    )
    _LIVE.add(proc)
    try:
        if _STOPPING.is_set():
            _kill_init(proc)
        out, err = proc.communicate(json.dumps(spec).encode("utf-8"), timeout=spec["timeout_total"] + 10)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        _end(proc)
        return None, b"", b""
    finally:
        if proc.poll() is None:
            _end(proc)
        _LIVE.discard(proc)


def _run_ns(tmp, units, side, hosts, timeout, budget, extra_stub_paths, node_env) -> SandboxResult:
    py = _python()
    uid, gid = _sandbox_ids()
    _copy_stubs(tmp, py)
    os.makedirs(os.path.join(tmp, "out"))
    os.makedirs(os.path.join(tmp, "root"))
    spec = _spec(tmp, units, side, hosts, timeout, budget, extra_stub_paths, node_env, py)
    if uid is not None and gid is not None:
        for base, _dirs, file_names in os.walk(tmp):
            os.chown(base, uid, gid)
            for nm in file_names:
                os.chown(os.path.join(base, nm), uid, gid)
    unshare = shutil.which("unshare") or "unshare"
    cmd = [unshare, "-Urmnpf", "--kill-child", py, "-I", "-S", os.path.join(tmp, "stubs", "sim_init.py")]
    rc, out, err = _launch(cmd, spec, uid, gid)
    if _STOPPING.is_set():
        raise Interrupted("simulate was interrupted")
    why = " ".join(err.decode("utf-8", "replace").split())[-300:]
    if rc is not None and not out:  # process 1 could not build the sandbox (or could not start at all)
        raise SandboxUnavailable(refusal(f"the sandbox cannot be built on this system ({why or rc})"))
    notes: list[str] = []
    try:
        res = json.loads(out.decode("utf-8", "replace"))
    except ValueError:
        res = {"units": [], "records": [], "notes": []}
        notes.append("sandbox killed after its time limit" if rc is None else f"sandbox failed: {why}")
    results = [
        UnitResult(r.get("rc"), bool(r.get("timed_out")), r.get("stdout", ""), r.get("stderr", ""))
        for r in res["units"]
    ]
    while len(results) < len(units):
        results.append(UnitResult(None, True, "", "the sandbox ended before this unit ran: " + " ".join(notes)))
    incomplete = _incomplete(res, len(units), rc is None)
    iso = ISOLATION[:-1] + (f", unprivileged uid {uid}" if uid is not None else "") + ")"
    return SandboxResult(results, res["records"], iso, notes + list(res.get("notes", [])), incomplete)


def _incomplete(res: dict, n_units: int, killed: bool) -> list[tuple[str, str]]:
    out = []
    cut = [r for r in res["units"] if r.get("cut_by_deadline") or r.get("not_run")]
    if killed or cut or len(res["units"]) < n_units:
        not_run = sum(1 for r in res["units"] if r.get("not_run")) + n_units - len(res["units"])
        out.append(
            (
                S822_TIME_LIMIT,
                "the overall deadline ended the run"
                + (f"; {not_run} of {n_units} node(s)/pod(s) did not run" if not_run else ""),
            )
        )
    if res.get("records_full"):
        out.append(
            (
                S821_CAPPED,
                f"the processes started filled the {RECORD_CAP >> 20} MiB kept per side; later ones are not counted",
            )
        )
    return out
