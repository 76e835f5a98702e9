"""Run untrusted job scripts (or a pod's command) without performing any of their side effects.

Every external command is a recording stub (translator/simulate/stubs/sim_stub.py), whether called
by name or by absolute path, except an allow-list of pure text utilities. Isolation, best first:

* `namespaces`: `unshare` gives fresh user, mount, network and pid namespaces; process 1
  (stubs/sim_init.py) builds a private root on a tmpfs (system directories read-only, every bin
  directory a tmpfs of stub links), pivots into it, drops capabilities in a nested user namespace
  and applies limits (time, processes, file size, output). Nothing outside the sandbox's own
  tmpfs mounts is reachable, and there is no network. When run as root, the namespaces are
  entered as an unprivileged user id so that the process limit applies.
* `path-only` (no user namespaces on this platform): PATH holds only the stub links, absolute
  program paths are shadowed by shell functions, the working directory and HOME are a temporary
  directory and the same limits apply, but the file system is NOT protected from a script that
  uses a shell builtin redirection outside it. Reported in every result.
"""

from __future__ import annotations

from translator.simulate.stubs.names import COMMON_NAMES
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from collections.abc import Sequence

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
# Utilities that can write files or start programs by path are real only inside the namespace
# sandbox, where every writable place is a throw-away tmpfs; in the weaker mode they are stubs.
FILE_CHANGING = {"mktemp", "tee", "xargs", "find"}
SIM_ENV = "SLURM2KF_SIM_"

_NS_OK: bool | None = None
_HOST_NAMES: dict[str, list[str]] | None = None


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


def _python() -> str:
    """An interpreter the unprivileged sandbox user can execute, with its standard library under /usr."""
    for cand in (os.path.realpath(sys.executable), "/usr/bin/python3"):
        real = os.path.realpath(cand)
        if real.startswith("/usr/") and os.access(real, os.X_OK):
            return real
    return os.path.realpath(sys.executable)


def _host_names() -> dict[str, list[str]]:
    global _HOST_NAMES
    if _HOST_NAMES is None:
        _HOST_NAMES = {}
        for d in BIN_DIRS:
            try:
                _HOST_NAMES[d] = sorted(n for n in os.listdir(d) if "/" not in n)
            except OSError:
                pass
    return _HOST_NAMES


def _allowed_real(ns: bool) -> dict[str, str]:
    out = {}
    for name in ALLOW:
        if not ns and name in FILE_CHANGING:
            continue
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


def namespaces_available() -> bool:
    global _NS_OK
    if _NS_OK is None:
        if (
            os.environ.get("SLURM2KF_SIM_FORCE_WEAK") == "1"
            or not shutil.which("unshare")
            or not sys.platform.startswith("linux")
        ):
            _NS_OK = False
        else:
            uid, gid = _sandbox_ids()
            try:
                r = subprocess.run(
                    ["unshare", "-Urmnpf", "--kill-child", "true"],
                    capture_output=True,
                    timeout=10,
                    user=uid,
                    group=gid,
                    extra_groups=[] if uid is not None else None,
                    cwd="/",
                )
                _NS_OK = r.returncode == 0
            except (OSError, subprocess.SubprocessError):
                _NS_OK = False
    return _NS_OK


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
) -> SandboxResult:
    """Run units one after another in one sandbox. `hosts` = [(hostname, node, ip, gpus)] of the side."""
    tmp = tempfile.mkdtemp(prefix="slurm2kf-sim-")
    try:
        ns = namespaces_available()
        if ns:
            return _run_ns(tmp, units, side, hosts, timeout, extra_stub_paths, node_env or {})
        return _run_weak(tmp, units, side, hosts, timeout, node_env or {})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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


def _run_ns(tmp, units, side, hosts, timeout, extra_stub_paths, node_env) -> SandboxResult:
    py = _python()
    uid, gid = _sandbox_ids()
    _copy_stubs(tmp, py)
    os.makedirs(os.path.join(tmp, "out"))
    os.makedirs(os.path.join(tmp, "root"))
    allow = _allowed_real(ns=True)
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
    stub_text = (
        f"#!/.sim/real{py} -IS\nimport sys\nsys.path.insert(0, '/.sim/stubs')\nimport sim_stub\nsim_stub.main()\n"
    )
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
    spec = {
        "tmp": tmp,
        "top_links": top_links,
        "top_binds": top_binds,
        "bin_dirs": bin_dirs,
        "extra_stub_paths": [
            p
            for p in extra_stub_paths
            if _file_ok(p) and not p.startswith(("/etc/", "/tmp/")) and p not in programs_abs
        ],
        "program_files": programs_abs,
        "stub_text": stub_text,
        "bashenv": _bashenv("/.sim/stub"),
        "etc_files": _etc_files(units),
        "units": unit_specs,
        "timeout": timeout,
        "timeout_total": timeout * max(len(units), 1) + 1,
        "output_cap": 64 * 1024,
        "record_cap": 8 * 1024 * 1024,
        "limits": {"nproc": 256, "fsize": 16 * 1024 * 1024, "cpu": int(timeout) + 5},
    }
    with open(os.path.join(tmp, "spec.json"), "w") as fh:
        json.dump(spec, fh)
    if uid is not None and gid is not None:
        for base, _dirs, file_names in os.walk(tmp):
            os.chown(base, uid, gid)
            for nm in file_names:
                os.chown(os.path.join(base, nm), uid, gid)
    cmd = [
        "unshare",
        "-Urmnpf",
        "--kill-child",
        py,
        "-I",
        "-S",
        os.path.join(tmp, "stubs", "sim_init.py"),
        os.path.join(tmp, "spec.json"),
    ]
    notes = []
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            timeout=spec["timeout_total"] + 10,
            cwd="/",
            user=uid,
            group=gid,
            extra_groups=[] if uid is not None else None,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
        if proc.returncode != 0:
            notes.append("sandbox setup failed: " + proc.stderr.decode("utf-8", "replace")[-500:].strip())
    except subprocess.TimeoutExpired:
        notes.append("sandbox killed after its time limit")
    try:
        with open(os.path.join(tmp, "out", "result.json")) as fh:
            res = json.load(fh)
    except (OSError, ValueError):
        res = {"units": [], "records": [], "notes": []}
    results = [
        UnitResult(r.get("rc"), bool(r.get("timed_out")), r.get("stdout", ""), r.get("stderr", ""))
        for r in res["units"]
    ]
    while len(results) < len(units):
        results.append(UnitResult(125, False, "", "the sandbox could not start: " + " ".join(notes)[-300:]))
    iso = (
        "namespaces (user+mount+net+pid; private read-only root, no network"
        + (f", unprivileged uid {uid}" if uid is not None else "")
        + ")"
    )
    return SandboxResult(results, res["records"], iso, notes + list(res.get("notes", [])))


def _run_weak(tmp, units, side, hosts, timeout, node_env) -> SandboxResult:
    """No namespaces: PATH-only stubs (reported as such)."""
    import resource

    py = _python()
    _copy_stubs(tmp, py)
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    os.makedirs(os.path.join(tmp, "rec"))
    os.makedirs(os.path.join(tmp, "unit"))
    stub = os.path.join(tmp, "stub")
    with open(stub, "w") as fh:
        fh.write(
            f"#!{py} -IS\nimport sys\nsys.path.insert(0, {os.path.join(tmp, 'stubs')!r})\n"
            "import sim_stub\nsim_stub.main()\n"
        )
    os.chmod(stub, 0o755)
    allow = _allowed_real(ns=False)
    names = {n for ns in _host_names().values() for n in ns} | set(STUB_NAMES)
    for n in names:
        target = allow.get(n, stub)
        try:
            os.symlink(target, os.path.join(bindir, n))
        except OSError:
            pass
    shadow = []
    for d, ns in _host_names().items():
        for n in ns:
            if n in allow or not all(c.isalnum() or c in "._+-" for c in n):
                continue
            for prefix in (d, d.replace("/usr", "", 1) if d in ("/usr/bin", "/usr/sbin") else None):
                if prefix:
                    shadow.append(f'function {prefix}/{n} {{ SLURM2KF_SIM_ARGV0={n} {stub} "$@"; }}')
    bashenv = os.path.join(tmp, "bashenv")
    with open(bashenv, "w") as fh:
        fh.write(_bashenv(stub) + "\n".join(shadow) + "\n")
    results: list[UnitResult] = []
    notes: list[str] = []
    uid, gid = _sandbox_ids()
    for i, u in enumerate(units):
        work = os.path.join(tmp, f"work{i}")
        os.makedirs(work)
        cfg = _unit_config(u, i, side, hosts, node_env, os.path.join(tmp, "rec", "records.jsonl"))
        with open(os.path.join(tmp, "unit", "config.json"), "w") as fh:
            json.dump(cfg, fh)
        for p, c in u.files:
            rel = p.lstrip("/")
            dest = os.path.join(work, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "w") as fh:
                fh.write(c)
        for p in u.programs:
            if p.startswith("/"):
                continue
            dest = os.path.join(work, p)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            content = _program_stub(p, stub)
            if content is None:
                os.symlink(stub, dest)
            else:
                with open(dest, "w") as fh:
                    fh.write(content)
                os.chmod(dest, 0o755)
        env = _base_env(u, {"BASH_ENV": bashenv, SIM_ENV + "CONFIG": os.path.join(tmp, "unit", "config.json")}, work)
        env["PATH"] = bindir
        if uid is not None and gid is not None:
            for base, _dirs, files in os.walk(tmp):
                os.chown(base, uid, gid)
                for f in files:
                    os.chown(os.path.join(base, f), uid, gid)

        def limits():
            os.setsid()
            resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))
            resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, 16 << 20))
            resource.setrlimit(resource.RLIMIT_CPU, (int(timeout) + 5, int(timeout) + 5))

        try:
            placed = {path: os.path.join(work, path.lstrip("/")) for path, _ in u.files}
            argv = [placed.get(a, a) for a in u.argv]  # files given by absolute path live under `work` here
            p = subprocess.run(
                argv,
                env=env,
                cwd=work,
                capture_output=True,
                timeout=timeout,
                preexec_fn=limits,
                user=uid,
                group=gid,
                extra_groups=[] if uid is not None else None,
            )
            results.append(
                UnitResult(
                    p.returncode,
                    False,
                    p.stdout.decode("utf-8", "replace")[:65536],
                    p.stderr.decode("utf-8", "replace")[:65536],
                )
            )
        except subprocess.TimeoutExpired as exc:
            results.append(
                UnitResult(
                    None,
                    True,
                    (exc.stdout or b"").decode("utf-8", "replace")[:65536],
                    (exc.stderr or b"").decode("utf-8", "replace")[:65536],
                )
            )
        except OSError as exc:
            results.append(UnitResult(126, False, "", str(exc)))
    records = []
    try:
        with open(os.path.join(tmp, "rec", "records.jsonl"), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    records.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    iso = (
        "path-only (no user namespaces here: commands are stubs by name and by absolute path, but files "
        "outside the temporary directory are NOT protected)"
    )
    return SandboxResult(results, records, iso, notes)
