"""The recording stub behind every command name in the simulation sandbox (stdlib only).

It runs as `<python> -I -S` under the name it was called by (a symlink per command name, or
SLURM2KF_SIM_ARGV0 for names bash could not find). Launchers (srun, torchrun, mpirun, deepspeed,
accelerate, container wrappers) compute the processes they would start, exactly from their own
flags and environment, and start each one *in a forked child* with that environment: the user's
program itself never runs, a `process` record stands for it. Every other external command is
recorded (`call`) and succeeds without doing anything.

Records are JSON lines appended to the unit's record file (see `_config`).
"""

from __future__ import annotations

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import names  # noqa: E402


class _OnFirstUse:
    """A module imported when first used. The stub starts once per command the script runs (a `module load`,
    a `mkdir`), and most of them need neither `re` nor `json`: importing those costs more than the rest of
    the stub's start together, so only the commands that use them pay it."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(__import__(self._name), attr)


re = _OnFirstUse("re")
hostlist = _OnFirstUse("hostlist")
same_ranks = _OnFirstUse("same_ranks")

SIM_PREFIX = "SLURM2KF_SIM_"
_CFG = None

# Commands that exist only where Slurm (or an environment-module system) is installed.
SLURM_ONLY = {
    "srun",
    "sbatch",
    "salloc",
    "scontrol",
    "sinfo",
    "squeue",
    "sacct",
    "scancel",
    "sattach",
    "sbcast",
    "sstat",
    "sprio",
    "sshare",
    "sreport",
    "sacctmgr",
    "sdiag",
    "strigger",
    "module",
    "ml",
}
# Site tools of a login node (and of the Slurm nodes that share its software): not in a container image
# unless the image provides them (the unit's config "provides": pods_run.image_tools).
LOGIN_NODE_TOOLS = {"module", "ml", "conda", "shifter", "singularity", "apptainer", "enroot", "podman-hpc"}
# Programs whose launch is not a training process (utilities, package managers, setup commands).
PY_NON_TRAINING_MODULES = {
    "pip",
    "venv",
    "ensurepip",
    "site",
    "json.tool",
    "http.server",
    "compileall",
    "pip3",
    "pytest",
    "unittest",
    "timeit",
    "py_compile",
    "sysconfig",
    "platform",
}


# ---------------------------------------------------------------- configuration and records


def _config() -> dict:
    global _CFG
    if _CFG is None:
        path = os.environ.get(SIM_PREFIX + "CONFIG") or os.path.join(_simdir(), "unit", "config.json")
        try:
            with open(path, encoding="utf-8") as fh:
                _CFG = json_loads(fh.read())
        except (OSError, ValueError):
            _CFG = {}
    return _CFG


def json_loads(text: str):
    """JSON text -> value, with the C scanner the `json` package itself uses (CPython's `_json`), without
    importing the package (whose decoder imports `re`)."""
    import _json

    class Context:
        strict = True
        object_hook = object_pairs_hook = None
        parse_float, parse_int = float, int
        memo: dict = {}

        @staticmethod
        def parse_constant(name):
            return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]

    start = len(text) - len(text.lstrip())
    try:
        value, end = _json.make_scanner(Context)(text, start)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError("not JSON") from None
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value


def json_dumps(value) -> str:
    """value (dict, list, str, int, float, bool, None) -> JSON text with sorted keys, as `json.dumps(value,
    sort_keys=True)` writes it."""
    from _json import encode_basestring_ascii as quote

    if isinstance(value, str):
        return quote(value)
    if value is None or isinstance(value, bool):
        return "null" if value is None else "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        items = sorted((str(k), v) for k, v in value.items())
        return "{" + ", ".join(quote(k) + ": " + json_dumps(v) for k, v in items) + "}"
    return "[" + ", ".join(json_dumps(v) for v in value) + "]"


def _simdir() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def side() -> str:
    return _config().get("side", "slurm")


def this_node() -> int:
    try:
        return int(os.environ.get(SIM_PREFIX + "NODE", _config().get("node", 0)))
    except ValueError:
        return int(_config().get("node", 0))


def this_host() -> str:
    return os.environ.get(SIM_PREFIX + "HOST") or _config().get("host", "localhost")


def hosts() -> list:
    """[(name, node, ip, gpus)] of the side: allocation nodes or pods."""
    return [tuple(h) for h in _config().get("hosts", [])]


def host_info(name: str):
    """The (name, node, ip, gpus) entry a host name, FQDN or IP refers to, or None."""
    if name in ("localhost", "127.0.0.1", "::1", "") or name == this_host():
        for h in hosts():
            if h[0] == this_host():
                return h
        return (this_host(), this_node(), "127.0.0.1", node_gpus())
    for h in hosts():
        if name == h[0] or name == h[2] or name.startswith(h[0] + ".") or h[0].startswith(name + "."):
            return h
    return None


def node_gpus(node=None) -> int:
    node = this_node() if node is None else node
    for h in hosts():
        if h[1] == node:
            return int(h[3])
    return int(_config().get("gpus", 0))


def record(kind: str, **fields) -> None:
    rec = {"kind": kind, "unit": _config().get("unit", 0), "node": this_node(), "host": this_host()}
    rec.update(fields)
    _append(_rec_path(), (json_dumps(rec) + "\n").encode("utf-8"))


def _rec_path() -> str:
    """The unit's record file, or (SLURM2KF_SIM_REC) the file of a run that stands for several tasks."""
    return os.environ.get(SIM_PREFIX + "REC") or _config().get("rec") or os.path.join(_simdir(), "rec", "records.jsonl")


def _append(path: str, line: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError:
        pass


def clean_env(env) -> dict:
    return {k: v for k, v in env.items() if not k.startswith(SIM_PREFIX) and k not in ("BASH_ENV", "_")}


def fail(name: str, argv, reason: str, code: int = 1, message: str = "", category: str = "") -> int:
    record("failure", name=name, argv=list(argv), reason=reason, category=category)
    sys.stderr.write((message or f"{name}: {reason}") + "\n")
    return code


# ---------------------------------------------------------------- the training process record


def _first_int(env, *names):
    for n in names:
        v = env.get(n)
        if v is not None and _is_int(v):
            return int(v)
    return None


def _is_int(text: str) -> bool:
    """`12`, ` -3 ` (what `int()` reads, without `+`, `_` or non-ASCII digits)."""
    t = text.strip()
    t = t[1:] if t.startswith("-") else t
    return t.isascii() and t.isdigit()


def is_python(name: str) -> bool:
    """python, python3, python3.11"""
    rest = name[6:] if name.startswith("python") else "x"
    return all(c in "0123456789." for c in rest)


def visible_gpus(env, node=None) -> int:
    v = env.get("CUDA_VISIBLE_DEVICES")
    if v is None:
        return node_gpus(node)
    v = v.strip()
    if not v or v.lower() in ("nodevfiles", "none", "-1"):
        return 0
    return len([x for x in v.split(",") if x.strip()])


def record_process(program: str, argv, interpreter: str, env=None) -> None:
    env = dict(os.environ if env is None else env)
    fields = derived_fields(env)
    record(
        "process",
        program=program,
        argv=list(argv),
        interpreter=interpreter,
        launcher=env.get(SIM_PREFIX + "LAUNCHER", "direct"),
        env=clean_env(env),
        cwd=os.getcwd(),
        defaulted=[n for n in env.get(SIM_PREFIX + "DEFAULTED", "").split(",") if n],
        **fields,
    )


def derived_fields(env, node=None) -> dict:
    """What a program reads from its environment to place itself: rank, local rank, world size, rendezvous,
    visible GPUs. Slurm's task variables come last: a program that reads them (Lightning, JAX, submitit) gets
    its rank there when no launcher set RANK/OMPI_*; in the batch step they say rank 0 of SLURM_NTASKS."""
    return {
        "rank": _first_int(
            env, "RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "JAX_PROCESS_ID", "SLURM_PROCID"
        ),
        "local_rank": _first_int(env, "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"),
        "world_size": _first_int(
            env,
            "WORLD_SIZE",
            "OMPI_COMM_WORLD_SIZE",
            "PMI_SIZE",
            "JAX_NUM_PROCESSES",
            "SLURM_STEP_NUM_TASKS",
            "SLURM_NTASKS",
        ),
        "master_addr": env.get("MASTER_ADDR"),
        "master_port": env.get("MASTER_PORT"),
        "gpus": visible_gpus(env, node),
    }


# ---------------------------------------------------------------- starting child commands


def _which(name: str, env) -> str:
    if "/" in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else ""
    for d in env.get("PATH", "/usr/bin:/bin").split(":"):
        p = os.path.join(d or ".", name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return ""


PROGRAM_STUB_HEAD = b"#!/bin/bash\nSLURM2KF_SIM_ARGV0="


def _is_program_stub(path: str) -> bool:
    """A recording stub standing for one of the user's programs (sandbox.program_paths)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(PROGRAM_STUB_HEAD)) == PROGRAM_STUB_HEAD
    except OSError:
        return False


def _is_stub(path: str) -> bool:
    try:
        return os.path.realpath(path) == os.path.realpath(os.path.join(_simdir(), "stub"))
    except OSError:
        return False


def run_command(argv, env, launcher: str, node=None, host=None, stdout_fd=None, cwd=None) -> int:
    """Start `argv` as a launcher would (fork + env, in `cwd` when given). Stubbed names run in the
    child in-process; real (allow-listed) programs and scripts are exec'd; a program that does not
    exist in the sandbox is the user's program: a training process is recorded for it."""
    if not argv:
        return 0
    env = dict(env)
    env[SIM_PREFIX + "LAUNCHER"] = launcher
    if node is not None:
        env[SIM_PREFIX + "NODE"] = str(node)
    if host is not None:
        env[SIM_PREFIX + "HOST"] = host
        env["HOSTNAME"] = host
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if stdout_fd is not None:
                os.dup2(stdout_fd, 1)
            if cwd:
                try:
                    os.chdir(cwd)
                except OSError as exc:
                    os._exit(fail(os.path.basename(argv[0]), argv, f"cannot chdir to {cwd}: {exc.strerror}", 1))
            os.environ.clear()
            os.environ.update(env)
            name = os.path.basename(argv[0])
            path = _which(argv[0], env)
            if (path and _is_stub(path)) or (
                not path and "/" not in argv[0] and (handler_for(name) or name in KNOWN_NAMES)
            ):
                code = dispatch(name, list(argv[1:]), training_if_unknown=True, path=argv[0] if "/" in argv[0] else "")
            elif path and _is_program_stub(path):
                record_process(argv[0], argv[1:], "", env)  # what the stub script would record
                code = 0
            elif path:
                try:
                    os.execve(path, list(argv), env)
                except OSError as exc:
                    code = fail(name, argv, f"cannot execute: {exc.strerror}", 126)
            else:
                # Not in the sandbox: the user's own binary or script (./app, lmp, a.out).
                record_process(argv[0], argv[1:], "", env)
                code = 0
            sys.stdout.flush()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # a stub bug must not hide: record it
            fail(os.path.basename(argv[0]), argv, f"stub error: {exc!r}", 1)
        finally:
            try:
                sys.stdout.flush()
            except Exception:
                pass
            os._exit(code if isinstance(code, int) else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) if status else 0


def run_tasks(tasks, launcher: str, capture: bool = False):
    """Start each task (argv, env, node, host) as a launcher does, one after another; returns the exit codes
    and, with `capture`, each task's output (else it goes to our stdout). Tasks that provably behave alike
    (same_ranks) cost one run: its records and output are given to each task with the task's own values."""
    if len(tasks) > 2 and all(t[0] == tasks[0][0] for t in tasks):
        done = _run_alike(tasks, launcher, capture)
        if done is not None:
            return done
    codes, outputs = [], []
    for argv, env, node, host in tasks:
        fd = _capture_file() if capture else None
        codes.append(run_command(argv, env, launcher, node=node, host=host, stdout_fd=fd))
        if fd is not None:
            outputs.append(_read_back(fd))
    return codes, outputs


def _capture_file() -> int:
    """An unnamed file for a task's output (a file, not a pipe: a task may write more than a pipe holds)."""
    for n in range(1000):
        path = f"/tmp/.s2k-out-{os.getpid()}-{n}"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        os.unlink(path)
        return fd
    raise OSError("no temporary file for a task's output")


def _read_back(fd: int) -> str:
    os.lseek(fd, 0, 0)
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def _run_alike(tasks, launcher: str, capture: bool):
    """One run of the common command with a sentinel for each varying value; None when not provably alike."""
    envs = [dict(env, HOSTNAME=host) if host is not None else dict(env) for _, env, _, host in tasks]
    names = {n for n in same_ranks.varying(envs) if not n.startswith(SIM_PREFIX)}
    text = same_ranks.shell_text(tasks[0][0])
    host_varies = len({(t[2], t[3]) for t in tasks}) > 1
    if text is None or any(n not in e or not same_ranks.plain_value(e[n]) for e in envs for n in names):
        return None
    if not same_ranks.text_alike(text, names, host_varies):
        return None
    env0 = dict(envs[0], **{n: same_ranks.sentinel(n) for n in names})
    node0, host0 = tasks[0][2], tasks[0][3]
    env0.update(
        {SIM_PREFIX + "NODE": str(this_node() if node0 is None else node0), SIM_PREFIX + "HOST": host0 or this_host()}
    )
    env0[SIM_PREFIX + "REC"] = rec = os.path.join(os.path.dirname(_rec_path()), f"alike.{os.getpid()}.jsonl")
    fd = _capture_file()
    code = run_command(tasks[0][0], env0, launcher, stdout_fd=fd)
    out = _read_back(fd)
    records = _read_records(rec)
    if not same_ranks.records_alike(records):
        return None
    lines, outputs = [], []
    for (_, _, node, host), env in zip(tasks, envs):
        pairs = [(same_ranks.sentinel(n), env[n]) for n in names]
        node = this_node() if node is None else node
        for r in records:
            r = same_ranks.substitute(r, pairs)
            r.update(node=node, host=host or this_host(), **derived_fields(r.get("env", {}), node))
            lines.append(json_dumps(r) + "\n")
        outputs.append(same_ranks.substitute(out, pairs))
    _append(_rec_path(), "".join(lines).encode("utf-8"))
    if not capture:
        sys.stdout.write("".join(outputs))
        sys.stdout.flush()
    return [code] * len(tasks), outputs


def _read_records(path: str) -> list:
    try:
        with open(path, encoding="utf-8") as fh:
            data = fh.read()
        os.unlink(path)
    except OSError:
        return []
    out = []
    for line in data.splitlines():
        try:
            out.append(json_loads(line))
        except ValueError:
            return [{"kind": "malformed"}]  # not alike: run the tasks one by one
    return out


# ---------------------------------------------------------------- option scanning helper


def take_opts(args, with_value, flags, stop_at_positional=True, aliases=None):
    """Generic GNU-style scan. Returns (opts dict name->value/True, rest). Long names are given
    with `--`; `_` and `-` are the same in long names. Unknown `--x` options take no value
    unless written `--x=v`; unknown short options are flags."""
    aliases = aliases or {}

    def norm(o):
        o = o.replace("_", "-") if o.startswith("--") else o
        return aliases.get(o, o)

    wv = {norm(o) for o in with_value}
    fl = {norm(o) for o in flags}
    opts, i = {}, 0
    rest = []
    while i < len(args):
        a = args[i]
        if a == "--":
            rest.extend(args[i + 1 :])
            break
        whole = norm(a.partition("=")[0]) if a.startswith("-") and not a.startswith("--") and len(a) > 2 else None
        if whole is not None and (whole in wv or whole in fl):
            # a single-dash long option (-np, -hostfile, -genv): the whole word names it
            name, eq, val = a.partition("=")
            if whole in fl:
                opts[whole] = True
            elif eq:
                opts[whole] = val
            elif i + 1 < len(args):
                i += 1
                opts[whole] = args[i]
        elif a.startswith("--") and len(a) > 2:
            name, eq, val = a.partition("=")
            name = norm(name)
            if eq:
                opts[name] = val
            elif name in wv and i + 1 < len(args):
                i += 1
                opts[name] = args[i]
            else:
                opts[name] = True
        elif a.startswith("-") and len(a) > 1 and not re.fullmatch(r"-\d+", a):
            name = norm(a[:2])
            if name in wv:
                if len(a) > 2:
                    opts[name] = a[2:].lstrip("=")
                elif i + 1 < len(args):
                    i += 1
                    opts[name] = args[i]
            else:
                # bundled short flags (-lv); a value-taking one ends the bundle
                j = 1
                while j < len(a):
                    n = norm("-" + a[j])
                    if n in wv:
                        rest_val = a[j + 1 :]
                        if rest_val:
                            opts[n] = rest_val.lstrip("=")
                        elif i + 1 < len(args):
                            i += 1
                            opts[n] = args[i]
                        break
                    opts[n] = True
                    j += 1
        else:
            if stop_at_positional:
                rest.extend(args[i:])
                break
            rest.append(a)
        i += 1
    return opts, rest


def _int(v, default=None):
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return default


# ---------------------------------------------------------------- Slurm: srun, scontrol, ...

SRUN_VALUE = [
    "-A",
    "--account",
    "-c",
    "--cpus-per-task",
    "-C",
    "--constraint",
    "-D",
    "--chdir",
    "-d",
    "--dependency",
    "-e",
    "--error",
    "-G",
    "--gpus",
    "-i",
    "--input",
    "-J",
    "--job-name",
    "-L",
    "--licenses",
    "-m",
    "--distribution",
    "-N",
    "--nodes",
    "-n",
    "--ntasks",
    "-o",
    "--output",
    "-p",
    "--partition",
    "-q",
    "--qos",
    "-r",
    "--relative",
    "-S",
    "--core-spec",
    "-T",
    "--threads",
    "-t",
    "--time",
    "-w",
    "--nodelist",
    "-W",
    "--wait",
    "-x",
    "--exclude",
    "-B",
    "--extra-node-info",
    "--ntasks-per-node",
    "--gpus-per-task",
    "--gpus-per-node",
    "--gres",
    "--mem",
    "--mem-per-cpu",
    "--mem-per-gpu",
    "--cpus-per-gpu",
    "--mpi",
    "--export",
    "--cpu-bind",
    "--gpu-bind",
    "--mem-bind",
    "--container-image",
    "--container-mounts",
    "--container-workdir",
    "--container-name",
    "--container-env",
    "--container-save",
    "--kill-on-bad-exit",
    "-K",
    "--signal",
    "--time-min",
    "--network",
    "--tres-per-task",
    "--ntasks-per-gpu",
    "--ntasks-per-socket",
    "--ntasks-per-core",
    "--het-group",
    "--jobid",
    "--task-epilog",
    "--task-prolog",
    "--epilog",
    "--prolog",
    "--comment",
    "--hint",
    "--open-mode",
    "--propagate",
    "--reservation",
    "--begin",
    "--deadline",
    "--nice",
    "--gres-flags",
    "--cores-per-socket",
    "--sockets-per-node",
    "--threads-per-core",
    "--switches",
    "--wckey",
    "--uid",
    "--gid",
    "--tmp",
    "--mincpus",
    "--profile",
    "--slurmd-debug",
    "--cpu-freq",
    "--accel-bind",
    "--bcast",
    "--compress",
    "--resv-ports",
    "--tres-bind",
    "--container",
    "--container-id",
    "-F",
    "--nodefile",
    "--exact-cpus",
]
SRUN_FLAGS = [
    "-l",
    "--label",
    "-u",
    "--unbuffered",
    "-v",
    "--verbose",
    "-Q",
    "--quiet",
    "-E",
    "--preserve-env",
    "-k",
    "--no-kill",
    "-O",
    "--overcommit",
    "-s",
    "--oversubscribe",
    "--exclusive",
    "--overlap",
    "--exact",
    "-X",
    "--disable-status",
    "-Z",
    "--no-allocate",
    "-I",
    "--immediate",
    "-H",
    "--hold",
    "--pty",
    "--multi-prog",
    "--no-container-mount-home",
    "--container-writable",
    "--container-remap-root",
    "--no-container-remap-root",
    "--container-mount-home",
    "--test-only",
    "--spread-job",
    "--use-min-nodes",
    "--contiguous",
    "--quit-on-interrupt",
]


def _gpu_count(spec):
    """`4`, `a100:4`, `gpu:a100:2` -> 4, 4, 2."""
    if spec is None:
        return None
    last = str(spec).split(",")[0].split(":")[-1]
    return _int(last, 1)


def task_gpus(local, tasks_here, gpt, gpn_step, ngpu, bind=None) -> list:
    """The GPUs one srun task sees (srun.1 --gpus-per-task, --gpu-bind). --gpus-per-task gives each task
    its own; otherwise every task sees all GPUs of the step on its node, unless --gpu-bind narrows it:
    `single:N` (tasks 0..N-1 the first GPU, ...), `map_gpu:L` (task i the i-th of L, cycling), `mask_gpu:M`
    (the bits of the i-th hex mask), `none` (all; with --gpus-per-task, all the step's GPUs on the node).
    `closest` needs the node's topology: not narrowed."""
    kind, _, arg = str(bind or "").partition(":")
    kind = kind.split(",")[-1].strip().lower()  # `verbose,single:1`
    if gpt and kind != "none":  # --gpus-per-task implies --gpu-bind=per_task:N unless one is given
        return [str(local * gpt + g) for g in range(gpt)]
    if gpt:
        return [str(g) for g in range(min(gpt * tasks_here, ngpu) if ngpu else gpt * tasks_here)]
    avail = [str(g) for g in range(gpn_step if gpn_step is not None else ngpu)]
    if not avail or kind not in ("single", "map_gpu", "mask_gpu"):
        return avail
    if kind == "single":
        per = max(_int(arg, 1) or 1, 1)
        return [avail[min(local // per, len(avail) - 1)]]
    items = [x.split("*")[0] for x in arg.split(",") if x]
    if not items:
        return avail
    item = items[local % len(items)]
    if kind == "map_gpu":
        return [item] if item.isdigit() else avail
    try:
        mask = int(item, 16)
    except ValueError:
        return avail
    return [str(g) for g in range(max(len(avail), mask.bit_length())) if mask >> g & 1]


def srun(args) -> int:
    env = dict(os.environ)
    opts, cmd = take_opts(args, SRUN_VALUE, SRUN_FLAGS)
    alloc = [h[0] for h in hosts()]
    if not alloc:
        alloc = hostlist.expand(env.get("SLURM_JOB_NODELIST", this_host()))
    n_alloc = len(alloc)
    if "--multi-prog" in opts:
        return fail("srun", args, "--multi-prog is not emulated", 1, category="unsupported")
    if not cmd:
        return fail("srun", args, "no command given", 1, "srun: fatal: No command given to execute.")

    # srun.1 INPUT ENVIRONMENT: the allocation's shape is inherited through SLURM_* variables.
    n_cli = _int(opts.get("-N") or opts.get("--nodes"))
    nodes_spec = opts.get("-N") or opts.get("--nodes")
    if nodes_spec and "-" in str(nodes_spec):
        n_cli = _int(str(nodes_spec).split("-")[-1])
    t_cli = _int(opts.get("-n") or opts.get("--ntasks"))
    tpn = _int(opts.get("--ntasks-per-node") or env.get("SLURM_NTASKS_PER_NODE"))
    ntasks = t_cli if t_cli is not None else _int(env.get("SLURM_NTASKS") or env.get("SLURM_NPROCS"))
    if ntasks is not None and t_cli is None and opts.get("--ntasks-per-node") and n_cli:
        ntasks = None  # explicit -N/--ntasks-per-node on srun: the inherited -n does not bind
    nnodes = n_cli if n_cli is not None else _int(env.get("SLURM_NNODES") or env.get("SLURM_JOB_NUM_NODES"), n_alloc)
    wlist = opts.get("-w") or opts.get("--nodelist")
    relative = _int(opts.get("-r") or opts.get("--relative"), 0)
    if wlist:
        try:
            wanted = hostlist.expand(str(wlist))
        except ValueError as exc:
            return fail("srun", args, f"invalid node list: {exc}", 1)
        bad = [w for w in wanted if w not in alloc]
        if bad:
            return fail(
                "srun",
                args,
                f"requested node {bad[0]} is not in the allocation",
                1,
                f"srun: error: Requested node configuration is not available ({bad[0]})",
            )
        pool = [w for w in alloc if w in wanted] + [w for w in alloc if w not in wanted]
        if n_cli is None:
            nnodes = max(len(wanted), 1)
    else:
        if relative >= n_alloc:
            return fail("srun", args, f"--relative={relative} is beyond the {n_alloc} allocated nodes", 1)
        pool = alloc[relative:]
    if ntasks is not None and ntasks < nnodes:
        nnodes = max(ntasks, 1)  # "can't run N processes on M nodes, setting nnodes to N"
    if ntasks is None:
        ntasks = nnodes * (tpn or 1)
    if tpn and t_cli is not None and n_cli is None and not wlist:
        nnodes = min(nnodes, max(1, -(-ntasks // tpn))) if ntasks >= tpn else nnodes
    if nnodes > len(pool):
        return fail(
            "srun",
            args,
            f"{nnodes} nodes asked for, only {len(pool)} allocated",
            1,
            f"srun: error: Only allocated {len(pool)} nodes asked for {nnodes}",
        )
    step_nodes = pool[:nnodes]
    if wlist:
        step_nodes = [w for w in alloc if w in step_nodes]  # the step's nodes keep allocation order
    counts = block_counts(ntasks, nnodes, tpn, bool(opts.get("-O") or opts.get("--overcommit")))
    if counts is None:
        return fail(
            "srun",
            args,
            f"{ntasks} tasks do not fit {nnodes} nodes x {tpn} tasks per node",
            1,
            "srun: error: Unable to create step for job: More processors requested than permitted",
        )
    step_id = _next_step_id()
    label = bool(opts.get("-l") or opts.get("--label"))
    tasks = srun_tasks(cmd, env, opts, alloc, step_nodes, counts, step_id)
    codes, outputs = run_tasks(tasks, "srun", capture=label)
    for task_id, data in enumerate(outputs):  # -l: each line of task N's output as "N: line"
        for line in data.splitlines():
            sys.stdout.write(f"{task_id}: {line}\n")
    sys.stdout.flush()
    rc = max(codes, default=0)
    record("call", name="srun", argv=list(args), step=step_id, nodes=step_nodes, tasks=counts)
    return rc


def srun_tasks(cmd, env, opts, alloc, step_nodes, counts, step_id) -> list:
    """(argv, env, node, host) of each task of an srun step: the step's and the task's SLURM_* variables
    (srun.1 OUTPUT ENVIRONMENT), --export, --mpi, and the task's GPUs."""
    nnodes, ntasks = len(step_nodes), sum(counts)
    gpt = _gpu_count(opts.get("--gpus-per-task") or env.get("SLURM_GPUS_PER_TASK"))
    gpn_step = _gpu_count(
        opts.get("--gpus-per-node")
        or (opts.get("--gres") if opts.get("--gres") and "gpu" in str(opts.get("--gres")) else None)
    )
    cpt = opts.get("-c") or opts.get("--cpus-per-task")
    step_list = hostlist.compress(step_nodes)
    tid = 0
    ips = {h[0]: h[2] for h in hosts()}
    gtids_all = []
    tasks: list = []
    t = 0
    for c in counts:
        gtids_all.append(list(range(t, t + c)))
        t += c
    step_env = {
        "SLURM_STEP_ID": str(step_id),
        "SLURM_STEPID": str(step_id),
        "SLURM_STEP_NODELIST": step_list,
        "SLURM_NODELIST": step_list,
        "SLURM_STEP_NUM_NODES": str(nnodes),
        "SLURM_NNODES": str(nnodes),
        "SLURM_STEP_NUM_TASKS": str(ntasks),
        "SLURM_NTASKS": str(ntasks),
        "SLURM_NPROCS": str(ntasks),
        "SLURM_STEP_TASKS_PER_NODE": hostlist.counts_form(counts),
        "SLURM_TASKS_PER_NODE": hostlist.counts_form(counts),
        "SLURM_LAUNCH_NODE_IPADDR": ips.get(alloc[0], "10.0.0.1"),
        "SLURM_CPU_BIND": "quiet,mask_cpu:0x1",
        "SLURM_DISTRIBUTION": "block",
    }
    if cpt:
        step_env["SLURM_CPUS_PER_TASK"] = str(cpt)
    for nid, host in enumerate(step_nodes):
        node = alloc.index(host)
        ngpu = node_gpus(node)
        for local in range(counts[nid]):
            tenv = dict(env, **step_env)
            tenv.update(
                {
                    "SLURM_PROCID": str(tid),
                    "SLURM_LOCALID": str(local),
                    "SLURM_NODEID": str(nid),
                    "SLURM_GTIDS": ",".join(map(str, gtids_all[nid])),
                    "SLURMD_NODENAME": host,
                    "SLURM_TOPOLOGY_ADDR": host,
                    "SLURM_TASK_PID": str(4000 + tid),
                }
            )
            tenv = srun_export(tenv, opts.get("--export"))
            mpi = str(opts.get("--mpi") or "")
            if mpi.startswith("pmix"):
                tenv.update({"PMIX_RANK": str(tid)})
            elif mpi.startswith("pmi2"):
                tenv.update({"PMI_RANK": str(tid), "PMI_SIZE": str(ntasks)})
            devs = task_gpus(local, counts[nid], gpt, gpn_step, ngpu, opts.get("--gpu-bind"))
            set_devices(tenv, devs, clear=gpt is not None or gpn_step is not None or bool(ngpu))
            tasks.append((cmd, tenv, node, host))
            tid += 1
    return tasks


def block_counts(ntasks: int, nnodes: int, tpn, overcommit: bool):
    """Tasks per node of the block distribution (slurm_step_layout.c _task_layout_block): handed out
    round-robin, capped by --ntasks-per-node (unless --overcommit); task ids then run node by node.
    None when the tasks do not fit."""
    counts = [0] * nnodes
    left, capped = ntasks, False
    while left > 0:
        progressed = False
        for i in range(nnodes):
            if left == 0:
                break
            if tpn and counts[i] >= tpn and not capped:
                continue
            counts[i] += 1
            left -= 1
            progressed = True
        if not progressed:
            if not overcommit:
                return None
            capped = True
    return counts


def srun_export(tenv: dict, export) -> dict:
    """srun.1 --export: ALL (default), NONE (only SLURM_* reach the task), or a list of names and NAME=value
    items, with ALL keeping the rest."""
    if not export:
        return tenv
    items = str(export).split(",")
    if "ALL" not in items:
        keep = ("PATH", "HOME", "HOSTNAME")
        tenv = {k: v for k, v in tenv.items() if k.startswith(("SLURM_", SIM_PREFIX)) or k in keep or k in items}
    for it in items:
        k, eq, v = it.partition("=")
        if eq:
            tenv[k] = v
    return tenv


def set_devices(tenv: dict, devs, clear: bool) -> None:
    """The GPUs a task sees (task_gpus); none: CUDA_VISIBLE_DEVICES removed where the job has GPUs."""
    if devs:
        tenv["CUDA_VISIBLE_DEVICES"] = tenv["SLURM_STEP_GPUS"] = tenv["GPU_DEVICE_ORDINAL"] = ",".join(devs)
    elif clear:
        tenv.pop("CUDA_VISIBLE_DEVICES", None)


def _next_step_id() -> int:
    path = os.path.join(
        os.path.dirname(_config().get("rec") or os.path.join(_simdir(), "rec", "x")),
        f"steps.{_config().get('unit', 0)}",
    )
    n = 0
    try:
        with open(path) as fh:
            n = int(fh.read().strip() or 0)
    except (OSError, ValueError):
        n = 0
    try:
        with open(path, "w") as fh:
            fh.write(str(n + 1))
    except OSError:
        pass
    return n


def scontrol(args) -> int:
    record("call", name="scontrol", argv=list(args))
    words = [a for a in args if not a.startswith("-")]
    if len(words) >= 2 and words[0] == "show" and words[1] in ("hostnames", "hostname"):
        spec = words[2] if len(words) > 2 else os.environ.get("SLURM_JOB_NODELIST", "")
        try:
            for h in hostlist.expand(spec):
                print(h)
        except ValueError as exc:
            return fail("scontrol", args, f"invalid hostlist: {exc}", 1)
        return 0
    if len(words) >= 2 and words[0] == "show" and words[1] in ("hostlist", "hostlistsorted"):
        names = []
        for w in words[2:]:
            names.extend(hostlist.expand(w))
        print(hostlist.compress(names))
        return 0
    if len(words) >= 2 and words[0] == "show" and words[1] == "job":
        e = os.environ
        print(
            f"JobId={e.get('SLURM_JOB_ID', '')} JobName={e.get('SLURM_JOB_NAME', '')}\n"
            f"   NumNodes={e.get('SLURM_JOB_NUM_NODES', '')} NodeList={e.get('SLURM_JOB_NODELIST', '')}"
        )
        return 0
    return 0


def hostname_cmd(args) -> int:
    host = this_host()
    info = host_info(host)
    ip = info[2] if info else "127.0.0.1"
    if any(a in ("-i", "--ip-address", "-I", "--all-ip-addresses") for a in args):
        print(ip)
    elif any(a in ("-s", "--short") for a in args):
        print(host.split(".")[0])
    else:
        print(host)
    return 0


def nvidia_smi(args) -> int:
    record("call", name="nvidia-smi", argv=list(args))
    env = os.environ
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    n = visible_gpus(env)
    ids = [x.strip() for x in cvd.split(",")] if cvd and n else [str(i) for i in range(n)]
    if n == 0:
        sys.stderr.write("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
        return 9
    if any(a in ("-L", "--list-gpus") for a in args):
        for i, d in enumerate(ids):
            print(
                f"GPU {i}: NVIDIA A100-SXM4-80GB (UUID: GPU-00000000-0000-0000-0000-{int(d) if d.isdigit() else i:012d})"
            )
        return 0
    q = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
    if q is not None:
        for i, _ in enumerate(ids):
            vals = []
            for f in q.split(","):
                f = f.strip()
                vals.append(
                    {
                        "index": str(i),
                        "name": "NVIDIA A100-SXM4-80GB",
                        "count": str(n),
                        "memory.total": "81920 MiB",
                        "uuid": f"GPU-{i:08d}",
                    }.get(f, "N/A")
                )
            print(", ".join(vals))
        return 0
    print(f"(simulated nvidia-smi: {n} GPU(s) visible)")
    return 0


# ---------------------------------------------------------------- python and torchrun


def python(name, args) -> int:
    i, code, module = 0, None, None
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-") or a == "-":
            break
        if a.startswith("--"):  # --version, --help, --check-hash-based-pycs x
            if a == "--check-hash-based-pycs":
                i += 1
            i += 1
            if a in ("--version", "--help"):
                print("Python 3.11.0") if a == "--version" else None
                return 0
            continue
        j = 1
        stop = False
        while j < len(a):
            ch = a[j]
            if ch in "cm":
                val = a[j + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
                if not a[j + 1 :]:
                    i += 1
                if ch == "c":
                    code = val
                else:
                    module = val
                stop = True
                break
            if ch in "WXQ":
                if not a[j + 1 :]:
                    i += 1
                break
            if ch == "V":
                print("Python 3.11.0")
                return 0
            j += 1
        i += 1
        if stop:
            break
    rest = args[i:]
    if code is not None:
        record("call", name=name, argv=["-c", code] + rest)
        if "device_count" in code:
            print(visible_gpus(os.environ))
        elif re.search(r"__version__", code) and "torch" in code:
            print("2.3.0")
        return 0
    if module is not None:
        if module in ("torch.distributed.run", "torch.distributed.launch"):
            return torchrun(rest, legacy_launch=(module == "torch.distributed.launch"))
        if module in ("deepspeed", "deepspeed.launcher.runner"):
            return deepspeed(rest)
        if module in ("accelerate.commands.launch",):
            return accelerate(["launch"] + rest)
        if module == "accelerate.commands.accelerate_cli":
            return accelerate(rest)
        if module.split(".")[0] in PY_NON_TRAINING_MODULES or module in PY_NON_TRAINING_MODULES:
            record("call", name=name, argv=["-m", module] + rest)
            return 0
        if module == "mpi4py" or module.startswith("mpi4py."):
            mopts, mrest = take_opts(rest, ["--rc"], [], True)
            if mrest and mrest[0] in ("-m",) and len(mrest) > 1:
                record_process("-m " + mrest[1], mrest[2:], _interp(name))
            elif mrest:
                record_process(mrest[0], mrest[1:], _interp(name))
            return 0
        record_process("-m " + module, rest, _interp(name))
        return 0
    if not rest or rest[0] == "-":
        record("call", name=name, argv=list(args), note="program read from standard input")
        return 0
    record_process(rest[0], rest[1:], _interp(name))
    return 0


def _with_torch_defaults(wenv: dict) -> dict:
    """What torchrun sets for its workers when the user did not (TORCH_NCCL_ASYNC_ERROR_HANDLING=1, and
    OMP_NUM_THREADS=1 for several workers), named in SLURM2KF_SIM_DEFAULTED: not compared as user settings."""
    defaulted = []
    several = _int(wenv.get("LOCAL_WORLD_SIZE"), 1) > 1
    for var, val, when in (("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", True), ("OMP_NUM_THREADS", "1", several)):
        if when and var not in wenv:
            wenv[var] = val
            defaulted.append(var)
    if defaulted:
        wenv[SIM_PREFIX + "DEFAULTED"] = ",".join(defaulted)
    return wenv


def _interp(name: str) -> str:
    return "python" if is_python(name) else name


TORCHRUN_VALUE = [
    "--nnodes",
    "--nproc-per-node",
    "--rdzv-backend",
    "--rdzv-endpoint",
    "--rdzv-id",
    "--rdzv-conf",
    "--max-restarts",
    "--monitor-interval",
    "--start-method",
    "--role",
    "--node-rank",
    "--master-addr",
    "--master-port",
    "--local-addr",
    "--log-dir",
    "-r",
    "--redirects",
    "-t",
    "--tee",
    "--local-ranks-filter",
    "--logs-specs",
    "--numa-binding",
    "--event-log-handler",
    "--signals-to-handle",
    "--virtual-local-rank-rank",
]
TORCHRUN_FLAGS = [
    "--standalone",
    "-m",
    "--module",
    "--no-python",
    "--run-path",
    "--use-env",
    "--virtual-local-rank",
    "--duplicate-stdout-filters",
]


def torchrun(args, legacy_launch=False) -> int:
    opts, rest = take_opts(
        args,
        TORCHRUN_VALUE,
        TORCHRUN_FLAGS,
        aliases={"--nproc_per_node": "--nproc-per-node", "--local_rank": "--local-rank"},
    )
    env = dict(os.environ)

    # torch/distributed/argparse_util.py `env`: every option defaults to $PET_<DEST>.
    def opt(name, default=None):
        if name in opts:
            return opts[name]
        pet = "PET_" + name.lstrip("-").replace("-", "_").upper()
        return env.get(pet, default)

    if not rest:
        return fail(
            "torchrun",
            args,
            "no training script given",
            2,
            "torchrun: error: the following arguments are required: training_script",
        )
    script, sargs = rest[0], rest[1:]
    nnodes_s = str(opt("--nnodes", "1:1"))
    nnodes = _int(nnodes_s.split(":")[-1], 1)
    nproc_s = str(opt("--nproc-per-node", "1"))
    standalone = opts.get("--standalone") is True or env.get("PET_STANDALONE", "") not in ("", "0", "False")
    backend = str(opt("--rdzv-backend", "static"))
    endpoint = str(opt("--rdzv-endpoint", ""))
    if standalone:
        backend, endpoint, nnodes = "c10d", "localhost:29400", 1
    gpus = visible_gpus(env)
    if nproc_s in ("gpu",):
        if not gpus:
            return fail(
                "torchrun", args, "--nproc-per-node=gpu but no GPU is visible", 1, "ValueError: Cuda is not available."
            )
        nproc = gpus
    elif nproc_s == "auto":
        nproc = gpus or 1
    elif nproc_s == "cpu":
        nproc = int(_config().get("cpus", 1))
    else:
        nproc = _int(nproc_s)
        if nproc is None or nproc < 1:
            return fail("torchrun", args, f"invalid --nproc-per-node {nproc_s!r}", 2)
    if backend == "static":
        node_rank = _int(opt("--node-rank", "0"), 0)
        maddr = str(opt("--master-addr", "127.0.0.1"))
        mport = str(opt("--master-port", "29500"))
    else:
        # c10d/etcd: node ranks follow arrival order; emulated as the node's index in the step.
        node_rank = _int(env.get("SLURM_NODEID"), None) if "SLURM_STEP_ID" in env else None
        if node_rank is None:
            node_rank = this_node()
        host, _, port = endpoint.rpartition(":") if ":" in endpoint else (endpoint, "", "")
        maddr = host or "localhost"
        mport = port or "29400"
    if node_rank >= nnodes:
        return fail("torchrun", args, f"node rank {node_rank} is not below --nnodes {nnodes}", 1)
    world = nnodes * nproc
    module = opts.get("-m") is True or opts.get("--module") is True or env.get("PET_MODULE") in ("1", "True")
    nopy = opts.get("--no-python") is True or env.get("PET_NO_PYTHON") in ("1", "True")
    use_env = opts.get("--use-env") is True or not legacy_launch
    record("call", name="torchrun", argv=list(args), nnodes=nnodes, nproc=nproc, node_rank=node_rank, backend=backend)
    common = {
        "GROUP_RANK": str(node_rank),
        "ROLE_NAME": "default",
        "LOCAL_WORLD_SIZE": str(nproc),
        "WORLD_SIZE": str(world),
        "GROUP_WORLD_SIZE": str(nnodes),
        "ROLE_WORLD_SIZE": str(world),
        "MASTER_ADDR": maddr,
        "MASTER_PORT": mport,
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": str(opt("--max-restarts", "0")),
        "TORCHELASTIC_RUN_ID": str(opt("--rdzv-id", "none")),
        "TORCHELASTIC_USE_AGENT_STORE": str(backend == "static"),
    }
    rc, tasks = 0, []
    for local in range(nproc):
        rank = node_rank * nproc + local
        wenv = _with_torch_defaults(dict(env, LOCAL_RANK=str(local), RANK=str(rank), ROLE_RANK=str(rank), **common))
        extra = [] if use_env else [f"--local-rank={local}"]
        if nopy:
            argv = [script] + extra + sargs
        elif module:
            argv = ["python", "-m", script] + extra + sargs
        else:
            argv = ["python", script] + extra + sargs
        tasks.append((argv, wenv, None, None))
    codes, _ = run_tasks(tasks, "torchrun")
    return max([rc] + codes)


# composer/cli/launcher.py (MosaicML Composer): -n/--nproc processes on this node; --world_size,
# --base_rank, --node_rank, --master_addr, --master_port default to WORLD_SIZE, BASE_RANK, NODE_RANK,
# MASTER_ADDR, MASTER_PORT; several nodes when world_size > nproc.
COMPOSER_VALUE = [
    "-n",
    "--nproc",
    "--stdout",
    "--stderr",
    "--world-size",
    "--base-rank",
    "--node-rank",
    "--master-addr",
    "--master-port",
]
COMPOSER_FLAGS = ["-v", "--verbose", "-m", "--module-mode", "-c", "--command-mode"]


def composer(args) -> int:
    opts, rest = take_opts(args, COMPOSER_VALUE, COMPOSER_FLAGS, aliases={"--nproc": "-n"})
    env = dict(os.environ)

    def opt(name, var):
        return opts[name] if name in opts else env.get(var)

    if not rest:
        return fail(
            "composer",
            args,
            "no training script given",
            2,
            "composer: error: the following arguments are required: training_script",
        )
    script, sargs = rest[0], rest[1:]
    nproc = _int(opt("-n", "LOCAL_WORLD_SIZE"))
    if nproc is None:
        nproc = visible_gpus(env) or 1
    world = _int(opt("--world-size", "WORLD_SIZE"), nproc)
    base, node_rank = _int(opt("--base-rank", "BASE_RANK")), _int(opt("--node-rank", "NODE_RANK"))
    maddr, mport = opt("--master-addr", "MASTER_ADDR"), opt("--master-port", "MASTER_PORT")
    if nproc < 1 or world < nproc:
        return fail("composer", args, f"world_size({world}) cannot be less than nproc({nproc})", 1)
    if world > nproc:
        if base is None and node_rank is None:
            return fail(
                "composer",
                args,
                "In a multi-node environment, at least one of node_rank and base_rank must be provided.",
                1,
            )
        node_rank = base // nproc if node_rank is None else node_rank
        base = node_rank * nproc if base is None else base
        if base + nproc > world or maddr is None or mport is None:
            return fail(
                "composer", args, "multi-node composer needs ranks below world_size, master_addr and master_port", 1
            )
    else:
        base, node_rank = 0, 0
        maddr, mport = maddr or "127.0.0.1", mport or "29500"
    record("call", name="composer", argv=list(args), nproc=nproc, world_size=world, node_rank=node_rank)
    rc = 0
    for local in range(nproc):
        wenv = dict(env)
        wenv.update(
            {
                "RANK": str(base + local),
                "WORLD_SIZE": str(world),
                "LOCAL_RANK": str(local),
                "LOCAL_WORLD_SIZE": str(nproc),
                "NODE_RANK": str(node_rank),
                "MASTER_ADDR": str(maddr),
                "MASTER_PORT": str(mport),
                "PYTHONUNBUFFERED": "1",
                "NCCL_ASYNC_ERROR_HANDLING": "1",
            }
        )
        if opts.get("-c") is True or opts.get("--command-mode") is True:
            argv = [script] + sargs
        elif opts.get("-m") is True or opts.get("--module-mode") is True:
            argv = ["python", "-m", script] + sargs
        else:
            argv = ["python", script] + sargs
        rc = max(rc, run_command(argv, wenv, "composer"))
    return rc


# ---------------------------------------------------------------- MPI

MPIRUN_VALUE = [
    "-n",
    "-np",
    "-c",
    "--np",
    "-N",
    "--npernode",
    "-npernode",
    "-ppn",
    "--ppn",
    "-H",
    "--host",
    "-host",
    "-hosts",
    "--hostfile",
    "-hostfile",
    "--machinefile",
    "-machinefile",
    "-f",
    "-x",
    "--mca",
    "-mca",
    "--bind-to",
    "-bind-to",
    "--map-by",
    "-map-by",
    "--rank-by",
    "-rank-by",
    "-wdir",
    "--wdir",
    "-wd",
    "--prefix",
    "-output-filename",
    "--output-filename",
    "-genv",
    "-env",
    "--launch-agent",
    "--report-bindings-file",
    "--cpus-per-proc",
    "--cpus-per-rank",
    "-bootstrap",
    "--bootstrap",
    "-iface",
    "-genvlist",
    "--personality",
    "--output",
    "--display",
    "--runtime-options",
    "--pmixmca",
    "--gmca",
    "--am",
    "--tune",
    "--path",
    "-path",
    "-launcher",
    "-rmk",
    "-env-file",
]
MPIRUN_FLAGS = [
    "--oversubscribe",
    "-oversubscribe",
    "--allow-run-as-root",
    "--tag-output",
    "-tag-output",
    "--display-map",
    "-display-map",
    "--report-bindings",
    "-report-bindings",
    "-q",
    "--quiet",
    "-v",
    "--verbose",
    "--timestamp-output",
    "-genvall",
    "-genvnone",
    "--bind-to-core",
    "--bind-to-socket",
    "-l",
    "-prepend-rank",
    "--noprefix",
    "--nolocal",
    "-nolocal",
    "--use-hwthread-cpus",
    "--display-allocation",
    "-print-rank-map",
]


def _three_arg(args):
    """-genv/-env/--mca take two values: fold them into one so the scanner stays simple."""
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if (
            a in ("-genv", "-env", "--mca", "-mca", "--gmca", "--pmixmca")
            and i + 2 < len(args)
            and "=" not in args[i + 1]
        ):
            out += [a, args[i + 1] + "=" + args[i + 2]]
            i += 3
            continue
        out.append(a)
        i += 1
    return out


def read_hostfile(path):
    """Open MPI (`host slots=N`), MPICH (`host:N`) and DeepSpeed (`host slots=N`) hostfiles."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            host, slots = parts[0], None
            if ":" in host and host.rsplit(":", 1)[1].isdigit():
                host, s = host.rsplit(":", 1)
                slots = int(s)
            for p in parts[1:]:
                if p.startswith("slots="):
                    slots = _int(p[6:], 1)
            out.append([host, slots])
    return out


def _multi_opts(args, names):
    vals, i = [], 0
    while i < len(args):
        if args[i] in names and i + 1 < len(args):
            vals.append(args[i + 1])
            i += 2
            continue
        for n in names:
            if n.startswith("--") and args[i].startswith(n + "="):
                vals.append(args[i].split("=", 1)[1])
        i += 1
    return vals


def mpirun(name, args) -> int:
    args = _three_arg(args)
    opts, cmd = take_opts(args, MPIRUN_VALUE, MPIRUN_FLAGS)
    head = args[: len(args) - len(cmd)]
    env = dict(os.environ)
    if not cmd:
        return fail(name, args, "no program given", 1)
    np_ = _int(opts.get("-n") or opts.get("-np") or opts.get("--np") or opts.get("-c"))
    ppn = _int(
        opts.get("-N") or opts.get("--npernode") or opts.get("-npernode") or opts.get("-ppn") or opts.get("--ppn")
    )
    mapby = str(opts.get("--map-by") or opts.get("-map-by") or "")
    m = re.match(r"ppr:(\d+):node", mapby)
    if m:
        ppn = int(m.group(1))
    hostfile = (
        opts.get("--hostfile")
        or opts.get("-hostfile")
        or opts.get("--machinefile")
        or opts.get("-machinefile")
        or opts.get("-f")
        or env.get("OMPI_MCA_orte_default_hostfile")
        or env.get("OMPI_MCA_rmaps_base_default_hostfile")
        or env.get("PRTE_MCA_prte_default_hostfile")
    )
    hlist = opts.get("-H") or opts.get("--host") or opts.get("-host") or opts.get("-hosts")
    slots = []  # [(host, slots)]
    remote_env = side() != "slurm"  # ssh (pods) vs Slurm's own launcher (srun) for remote daemons
    if hlist:
        for item in str(hlist).split(","):
            h, _, s = item.partition(":")
            slots.append([h, _int(s, 1)])
    elif hostfile:
        try:
            slots = read_hostfile(hostfile)
        except OSError as exc:
            return fail(
                name, args, f"hostfile {hostfile}: {exc.strerror}", 1, f"{name}: cannot open hostfile {hostfile}"
            )
        for s in slots:
            if s[1] is None:
                s[1] = 1
    elif env.get("SLURM_JOB_NODELIST") and _config().get("slurm", side() == "slurm"):
        # Open MPI's ras/slurm: the allocation's nodes, slots from SLURM_TASKS_PER_NODE.
        names = hostlist.expand(env.get("SLURM_STEP_NODELIST") or env["SLURM_JOB_NODELIST"])
        try:
            per = hostlist.parse_counts_form(env.get("SLURM_TASKS_PER_NODE", "1"))
        except ValueError:
            per = [1]
        per = per + [per[-1]] * (len(names) - len(per))
        slots = [[n, per[i]] for i, n in enumerate(names)]
    else:
        slots = [[this_host(), max(node_gpus(), 1) if np_ is None else max(np_, 1)]]
    if not slots:
        return fail(name, args, "empty host list", 1, f"{name}: no hosts to run on")
    if ppn:
        layout = [(h, ppn) for h, _ in slots]
        total = ppn * len(slots)
        if np_ is None:
            np_ = total
        elif np_ > total:
            return fail(name, args, f"-np {np_} exceeds {ppn} per node x {len(slots)} nodes", 1)
    else:
        total = sum(s for _, s in slots)
        if np_ is None:
            np_ = total
        if np_ > total and not (opts.get("--oversubscribe") or opts.get("-oversubscribe")):
            return fail(
                name,
                args,
                f"{np_} ranks but only {total} slots",
                1,
                f"There are not enough slots available in the system to satisfy the {np_} slots "
                f"that were requested by the application",
            )
        layout = [(h, s) for h, s in slots]
    # Placement: by slot (fill each host's slots in order), or round-robin with --map-by node.
    placement: list[str] = []
    if mapby.startswith("node"):
        i = 0
        while len(placement) < np_:
            placement.append(layout[i % len(layout)][0])
            i += 1
    else:
        for h, s in layout:
            placement.extend([h] * s)
        while len(placement) < np_:
            placement.extend(h for h, _ in layout)
        placement = placement[:np_]
    exported = {}
    for x in _multi_opts(head, ["-x"]):
        k, eq, v = x.partition("=")
        if eq or k in env:  # `-x NAME` of an unset variable passes nothing
            exported[k] = v if eq else env[k]
    for x in _multi_opts(head, ["-genv", "-env"]):
        k, _, v = x.partition("=")
        exported[k] = v
    local_counts: dict[str, int] = {}
    order = []
    for h in placement:
        if h not in order:
            order.append(h)
    record("call", name=name, argv=list(args), np=np_, hosts=order)
    # --wdir/-wdir/-wd (Open MPI 4), --wd: each rank starts there (relative: from mpirun's directory)
    wdir = opts.get("--wdir") or opts.get("-wdir") or opts.get("-wd") or opts.get("--wd")
    wdir = os.path.join(os.getcwd(), str(wdir)) if isinstance(wdir, str) and wdir else None
    rc = 0
    node_envs = _config().get("node_env", {})
    for rank, h in enumerate(placement):
        info = host_info(h)
        if info is None:
            return fail(name, args, f"host {h} does not resolve", 1, f"ssh: Could not resolve hostname {h}")
        lr = local_counts.get(h, 0)
        local_counts[h] = lr + 1
        is_local = info[0] == this_host()
        if remote_env and not is_local:
            renv = dict(
                node_envs.get(info[0], {"PATH": env.get("PATH", "/usr/bin:/bin"), "HOME": env.get("HOME", "/")})
            )
            renv.update(exported)
            for k, v in env.items():  # Open MPI forwards its own MCA settings
                if k.startswith("OMPI_MCA_"):
                    renv.setdefault(k, v)
        else:
            renv = dict(env)
            renv.update(exported)
        renv.update(
            {
                "OMPI_COMM_WORLD_RANK": str(rank),
                "OMPI_COMM_WORLD_SIZE": str(np_),
                "OMPI_COMM_WORLD_LOCAL_RANK": str(lr),
                "OMPI_COMM_WORLD_LOCAL_SIZE": str(placement.count(h)),
                "OMPI_COMM_WORLD_NODE_RANK": str(order.index(h)),
                "OMPI_UNIVERSE_SIZE": str(np_),
                "PMIX_RANK": str(rank),
                "PMI_RANK": str(rank),
                "PMI_SIZE": str(np_),
            }
        )
        for k in list(renv):
            if k.startswith(SIM_PREFIX):
                renv[k] = env.get(k, renv[k])
        rc = max(rc, run_command(cmd, renv, name, node=info[1], host=info[0], cwd=wdir))
    return rc


# ---------------------------------------------------------------- DeepSpeed and Accelerate

DS_VALUE = [
    "-H",
    "--hostfile",
    "-i",
    "--include",
    "-e",
    "--exclude",
    "--num_nodes",
    "--num-nodes",
    "--num_gpus",
    "--num-gpus",
    "--num_accelerators",
    "--master_port",
    "--master_addr",
    "--launcher",
    "--launcher_args",
    "--module",
    "--elastic_training",
    "--min_elastic_nodes",
    "--max_elastic_nodes",
    "--ssh_port",
    "--comment",
    "--venv_script",
    "--autotuning",
    "--bind_core_list",
    "--save_pid",
    "--node_rank",
]
DS_FLAGS = [
    "--no_ssh_check",
    "--force_multi",
    "--no_python",
    "--no_local_rank",
    "--no_ssh",
    "--enable_each_rank_log",
    "--bind_cores_to_rank",
    "--use_env",
]
# deepspeed/launcher/constants.py: variables the multi-node runner exports to every node.
DS_EXPORT_PREFIXES = ("MLFLOW", "NCCL", "PYTHON", "MV2", "UCX")


def deepspeed(args) -> int:
    # `--module` is a flag in DeepSpeed; keep it out of the value list.
    vals = [v for v in DS_VALUE if v != "--module"]
    opts, rest = take_opts(
        args, vals, DS_FLAGS + ["--module"], aliases={"--num-nodes": "--num-nodes", "--num-gpus": "--num-gpus"}
    )

    def g(*names):
        return next((opts[n] for n in names if n in opts), None)

    env = dict(os.environ)
    if not rest:
        return fail("deepspeed", args, "no user script given", 2)
    script, sargs = rest[0], rest[1:]
    hostfile = g("-H", "--hostfile") or "/job/hostfile"
    pool = []
    if os.path.isfile(hostfile):
        try:
            pool = [[h, s if s is not None else 1] for h, s in read_hostfile(hostfile)]
        except OSError:
            pool = []
    if not pool:
        pool = [["localhost", max(visible_gpus(env), 1)]]
    n_nodes = _int(g("--num-nodes"), -1)
    n_gpus = _int(g("--num-gpus", "--num-accelerators"), -1)
    if n_nodes and n_nodes > 0:
        pool = pool[:n_nodes]
    if n_gpus and n_gpus > 0:
        pool = [[h, n_gpus] for h, _ in pool]
    multi = len(pool) > 1 or opts.get("--force-multi") is True
    world = sum(s for _, s in pool)
    mport = str(g("--master-port") or "29500")
    maddr = g("--master-addr")
    if not maddr:
        if multi:
            first = host_info(pool[0][0])
            if first is None:
                return fail(
                    "deepspeed",
                    args,
                    f"host {pool[0][0]} does not resolve",
                    1,
                    f"ssh: Could not resolve hostname {pool[0][0]}",
                )
            maddr = first[2]  # runner.py: `ssh <first host> hostname -I`, first address
        else:
            maddr = "127.0.0.1"
    record("call", name="deepspeed", argv=list(args), hosts=[h for h, _ in pool], world=world)
    rank, rc = 0, 0
    for node_rank, (h, n) in enumerate(pool):
        info = host_info(h)
        if info is None:
            return fail("deepspeed", args, f"host {h} does not resolve", 1, f"ssh: Could not resolve hostname {h}")
        if multi:
            # pdsh/ssh starts the per-node launcher in a login environment: only the exported
            # prefixes and .deepspeed_env travel (deepspeed/launcher/multinode_runner.py).
            base = {"PATH": env.get("PATH", "/usr/bin:/bin"), "HOME": env.get("HOME", "/")}
            base.update({k: v for k, v in env.items() if k.startswith(DS_EXPORT_PREFIXES)})
            for p in (os.path.join(env.get("HOME", "/"), ".deepspeed_env"), ".deepspeed_env"):
                try:
                    with open(p) as fh:
                        for line in fh:
                            k, eq, v = line.strip().partition("=")
                            if eq and k:
                                base[k] = v
                except OSError:
                    pass
            for k, v in env.items():
                if k.startswith(SIM_PREFIX):
                    base[k] = v
        else:
            base = dict(env)
        for local in range(n):
            wenv = dict(base)
            wenv.update(
                {
                    "RANK": str(rank),
                    "LOCAL_RANK": str(local),
                    "WORLD_SIZE": str(world),
                    "LOCAL_SIZE": str(n),
                    "MASTER_ADDR": str(maddr),
                    "MASTER_PORT": mport,
                    "CROSS_RANK": str(node_rank),
                    "CROSS_SIZE": str(len(pool)),
                    "CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(n)),
                }
            )
            extra = [] if opts.get("--no-local-rank") is True else [f"--local_rank={local}"]
            if opts.get("--no-python") is True:
                argv = [script] + extra + sargs
            elif opts.get("--module") is True:
                argv = ["python", "-u", "-m", script] + extra + sargs
            else:
                argv = ["python", "-u", script] + extra + sargs
            rc = max(rc, run_command(argv, wenv, "deepspeed", node=info[1], host=info[0]))
            rank += 1
    return rc


ACC_FLAGS = [
    "--multi_gpu",
    "--cpu",
    "--use_deepspeed",
    "--use_fsdp",
    "--use_megatron_lm",
    "--use_xpu",
    "--tpu",
    "-m",
    "--module",
    "--no_python",
    "--debug",
    "-q",
    "--quiet",
    "--same_network",
    "--downcast_bf16",
    "--tpu_use_cluster",
    "--tpu_use_sudo",
    "--enable_cpu_affinity",
    "--ipex",
    "--use_cpu",
    "--fsdp_use_orig_params",
    "--fsdp_sync_module_states",
    "--fsdp_cpu_ram_efficient_loading",
    "--fsdp_offload_params",
    "--deepspeed_moe_layer_cls_names",
    "--monitor_interval",
]


def accelerate(args) -> int:
    if not args or args[0] != "launch":
        record("call", name="accelerate", argv=list(args))
        return 0
    args = args[1:]
    flags = [f for f in ACC_FLAGS if f not in ("--deepspeed_moe_layer_cls_names", "--monitor_interval")]
    i, opts, rest = 0, {}, []
    while i < len(args):
        a = args[i]
        if a.startswith("-") and a != "-":
            name, eq, val = a.partition("=")
            key = name.replace("-", "_") if name.startswith("--") else name
            key = "--" + key[2:] if name.startswith("--") else key
            if eq:
                opts[key] = val
            elif key in flags or name in flags:
                opts[key] = True
            elif i + 1 < len(args):
                i += 1
                opts[key] = args[i]
            i += 1
            continue
        rest = args[i:]
        break
    env = dict(os.environ)
    if not rest:
        return fail("accelerate", ["launch"] + args, "no training script given", 2)
    script, sargs = rest[0], rest[1:]
    nproc_total = _int(opts.get("--num_processes"))
    machines = _int(opts.get("--num_machines"), 1) or 1
    if nproc_total is None:
        nproc_total = visible_gpus(env) * machines if opts.get("--multi_gpu") else 1
    env2 = dict(env)
    if opts.get("--mixed_precision"):
        env2["ACCELERATE_MIXED_PRECISION"] = str(opts["--mixed_precision"])
    if opts.get("--use_deepspeed"):
        env2["ACCELERATE_USE_DEEPSPEED"] = "true"
    if opts.get("--use_fsdp"):
        env2["ACCELERATE_USE_FSDP"] = "true"
    record("call", name="accelerate", argv=["launch"] + list(args), num_processes=nproc_total, machines=machines)
    if nproc_total <= 1 and machines <= 1 and not opts.get("--multi_gpu"):
        argv = (
            [script]
            if opts.get("--no_python")
            else ["python", "-m", script]
            if opts.get("-m") or opts.get("--module")
            else ["python", script]
        ) + sargs
        return run_command(argv, env2, "accelerate")
    # accelerate/commands/launch.py multi_gpu_launcher -> torch.distributed.run with these values.
    targs = [
        "--nnodes",
        str(machines),
        "--nproc-per-node",
        str(max(nproc_total // machines, 1)),
        "--node-rank",
        str(opts.get("--machine_rank", "0")),
        "--rdzv-backend",
        str(opts.get("--rdzv_backend", "static")),
    ]
    ip, port = opts.get("--main_process_ip"), str(opts.get("--main_process_port", "29500"))
    if ip:
        targs += ["--master-addr", str(ip)]
    targs += ["--master-port", port]
    if str(opts.get("--rdzv_backend", "static")) != "static":
        targs += ["--rdzv-endpoint", f"{ip or 'localhost'}:{port}"]
    if opts.get("--no_python"):
        targs.append("--no-python")
    if opts.get("-m") or opts.get("--module"):
        targs.append("--module")
    os.environ.clear()
    os.environ.update(env2)
    return torchrun(targs + [script] + sargs)


# ---------------------------------------------------------------- containers and environments

APPTAINER_VALUE = [
    "-B",
    "--bind",
    "--env",
    "--env-file",
    "-H",
    "--home",
    "--pwd",
    "-W",
    "--workdir",
    "--overlay",
    "--network",
    "--network-args",
    "--security",
    "-S",
    "--scratch",
    "--app",
    "--mount",
    "--apply-cgroups",
    "--dns",
    "--hostname",
    "--add-caps",
    "--drop-caps",
    "--fusemount",
    "--keep-privs",
    "-o",
]


def container(name, args) -> int:
    env = dict(os.environ)
    if name in ("apptainer", "singularity"):
        if not args or args[0] not in ("exec", "run"):
            record("call", name=name, argv=list(args))
            return 0
        sub = args[0]
        opts, rest = take_opts(args[1:], APPTAINER_VALUE, [])
        if not rest:
            return fail(name, args, "no image given", 255)
        image, cmd = rest[0], rest[1:]
        if sub == "run" and not cmd:
            record("call", name=name, argv=list(args), note="runs the image's runscript")
            return 0
        if sub == "run":
            cmd = cmd  # the runscript usually execs its arguments
        inner = dict(env)
        if opts.get("-e") or opts.get("--cleanenv") or opts.get("-C") or opts.get("--containall"):
            keep = {k: v for k, v in env.items() if k.startswith(SIM_PREFIX)}
            inner = {
                "PATH": env.get("PATH", "/usr/bin:/bin"),
                "HOME": env.get("HOME", "/"),
                "HOSTNAME": env.get("HOSTNAME", this_host()),
            }
            inner.update(keep)
        for pre in ("APPTAINERENV_", "SINGULARITYENV_"):
            for k, v in env.items():
                if k.startswith(pre):
                    inner[k[len(pre) :]] = v
        for e in _multi_opts(args[1:], ["--env"]):
            for item in e.split(","):
                k, eq, v = item.partition("=")
                if eq:
                    inner[k] = v
        if opts.get("--nv") and "CUDA_VISIBLE_DEVICES" not in inner and "CUDA_VISIBLE_DEVICES" in env:
            inner["CUDA_VISIBLE_DEVICES"] = env["CUDA_VISIBLE_DEVICES"]
        record("call", name=name, argv=list(args), image=image)
        return _exec_inner(cmd, inner, name)
    if name == "shifter":
        opts, rest = take_opts(
            args,
            [
                "--image",
                "--volume",
                "-V",
                "--module",
                "-m",
                "--workdir",
                "-w",
                "--env",
                "-e",
                "--env-file",
                "--entrypoint",
            ],
            ["--clearenv", "-E"],
        )
        record("call", name=name, argv=list(args), image=opts.get("--image"))
        return _exec_inner(rest, env, name)
    if name in ("podman-hpc", "podman", "docker"):
        if not args or args[0] not in ("run", "exec"):
            record("call", name=name, argv=list(args))
            return 0
        opts, rest = take_opts(
            args[1:],
            [
                "-v",
                "--volume",
                "-e",
                "--env",
                "-w",
                "--workdir",
                "--net",
                "--network",
                "--ipc",
                "--shm-size",
                "--name",
                "--entrypoint",
                "-u",
                "--user",
                "--gpus",
                "--device",
                "--mount",
                "--env-file",
                "--hostname",
                "--cap-add",
                "--security-opt",
                "--ulimit",
                "--pid",
                "--userns",
            ],
            [
                "--rm",
                "-it",
                "-i",
                "-t",
                "--gpu",
                "--mpi",
                "--openmpi-pmi2",
                "--openmpi-pmix",
                "--cuda-mpi",
                "-d",
                "--privileged",
                "--init",
                "--nccl",
            ],
        )
        if not rest:
            return fail(name, args, "no image given", 125)
        inner = {"PATH": env.get("PATH", "/usr/bin:/bin"), "HOME": env.get("HOME", "/")}
        inner.update({k: v for k, v in env.items() if k.startswith(SIM_PREFIX)})
        for e in _multi_opts(args[1:], ["-e", "--env"]):
            k, eq, v = e.partition("=")
            inner[k] = v if eq else env.get(k, "")
        record("call", name=name, argv=list(args), image=rest[0])
        return _exec_inner(rest[1:], inner, name)
    if name == "enroot":
        if not args or args[0] not in ("start", "exec"):
            record("call", name=name, argv=list(args))
            return 0
        opts, rest = take_opts(
            args[1:], ["-m", "--mount", "-e", "--env", "-c", "--conf"], ["-r", "--root", "-w", "--rw"]
        )
        record("call", name=name, argv=list(args))
        return _exec_inner(rest[1:], env, name)
    record("call", name=name, argv=list(args))
    return 0


def _exec_inner(cmd, env, wrapper) -> int:
    if not cmd:
        record("call", name=wrapper, note="no inner command")
        return 0
    launcher = env.get(SIM_PREFIX + "LAUNCHER") or os.environ.get(SIM_PREFIX + "LAUNCHER")
    e = dict(env)
    for k, v in os.environ.items():
        if k.startswith(SIM_PREFIX):
            e.setdefault(k, v)
    return run_command(cmd, e, launcher or "direct")


def conda(name, args) -> int:
    record("call", name=name, argv=list(args))
    if args and args[0] == "run":
        opts, rest = take_opts(
            args[1:],
            ["-n", "--name", "-p", "--prefix", "--cwd"],
            ["--no-capture-output", "--live-stream", "-v", "--debug"],
        )
        env = dict(os.environ)
        return run_command(rest, env, env.get(SIM_PREFIX + "LAUNCHER", "direct"))
    return 0


def date_cmd(args) -> int:
    """A fixed clock, the same on both sides (a job's start time is not part of the launch)."""
    import time

    fmt = next((a[1:] for a in args if a.startswith("+")), "%a %b %d %H:%M:%S UTC %Y")
    if any(a in ("-d", "--date", "-r", "--reference") or a.startswith("--date=") for a in args):
        record("call", name="date", argv=list(args))
    print(time.strftime(fmt, time.gmtime(1767225600)))
    return 0


def needs_terminal(name, args) -> int:
    """`clear`/`tput` read the terminal type from TERM (not a terminal): without it they fail. With it,
    `tput cols`/`lines` print the terminfo size, or COLUMNS/LINES (80x24 for the common types)."""
    record("call", name=name, argv=list(args))
    if not os.environ.get("TERM"):
        sys.stderr.write("TERM environment variable not set.\n")
        return 1
    if name == "tput" and args and args[0] in ("cols", "lines"):
        print(os.environ.get("COLUMNS" if args[0] == "cols" else "LINES") or ("80" if args[0] == "cols" else "24"))
    return 0


def generic(name, args, training_if_unknown=False) -> int:
    record("call", name=name, argv=list(args))
    return 0


def make_paths(name, args) -> int:
    """`mkdir`/`touch`: recorded; done only inside the sandbox's own writable places (the working
    directory, HOME, /tmp), so that a later `> logs/x` or `cd dir` behaves as on a real node."""
    record("call", name=name, argv=list(args))
    for a in args:
        if a.startswith("-"):
            continue
        target = _own_path(a)
        if target is None:
            continue
        try:
            if name == "mkdir":
                os.makedirs(target, exist_ok=True)
            elif not os.path.exists(target):
                open(target, "a").close()
        except OSError:
            pass
    return 0


def _own_path(path: str) -> str | None:
    """`path` resolved, when it is inside the sandbox's own writable places (working directory, HOME, /tmp)."""
    roots = [os.path.realpath(p) for p in (os.getcwd(), os.environ.get("HOME", ""), "/tmp") if p]
    target = os.path.realpath(path)
    if any(target == r or target.startswith(r.rstrip("/") + "/") for r in roots if r != "/"):
        return target
    return None


def chmod_mv(name, args) -> int:
    """`chmod MODE FILE...` and `mv [-f] SRC DST`: recorded; done only on the sandbox's own files, so that a
    script that writes a helper, makes it executable and renames it into place can run it, as on a node."""
    record("call", name=name, argv=list(args))
    words = [a for a in args if not (a.startswith("-") and a not in ("-x", "-w", "-r"))]
    try:
        if name == "chmod" and len(words) >= 2:
            mode, files = words[0], words[1:]
            for f in files:
                target = _own_path(f)
                if target is None or not os.path.exists(target):
                    continue
                current = os.stat(target).st_mode & 0o7777
                if mode.isdigit():
                    os.chmod(target, int(mode, 8) & 0o777)
                elif "+" in mode and "x" in mode.split("+", 1)[1]:
                    os.chmod(target, current | 0o111)
        elif name == "mv" and len(words) == 2:
            src, dst = _own_path(words[0]), _own_path(words[1])
            if src is not None and dst is not None and os.path.exists(src):
                if os.path.isdir(dst):
                    dst = os.path.join(dst, os.path.basename(src))
                os.replace(src, dst)
    except OSError:
        pass
    return 0


def exec_wrapper(name, args) -> int:
    """env/timeout/nohup/nice/stdbuf/numactl/taskset: run the inner command (recorded as called)."""
    env = dict(os.environ)
    i = 0
    if name == "env":
        while i < len(args):
            a = args[i]
            if a in ("-i", "--ignore-environment", "-"):
                keep = {k: v for k, v in env.items() if k.startswith(SIM_PREFIX)}
                env = keep
            elif a in ("-u", "--unset") and i + 1 < len(args):
                i += 1
                env.pop(args[i], None)
            elif a.startswith("--unset="):
                env.pop(a.split("=", 1)[1], None)
            elif a in ("-C", "--chdir") and i + 1 < len(args):
                i += 1
            elif a in ("-S", "--split-string") and i + 1 < len(args):
                i += 1
                args = args[:i] + args[i].split() + args[i + 1 :]
                continue
            elif "=" in a and not a.startswith("-") and not a.startswith("="):
                k, _, v = a.partition("=")
                env[k] = v
            elif a.startswith("-") and a != "--":
                pass
            else:
                if a == "--":
                    i += 1
                break
            i += 1
        rest = args[i:]
        if not rest:
            for k, v in sorted(clean_env(env).items()):
                print(f"{k}={v}")
            return 0
    elif name == "timeout":
        opts, rest = take_opts(
            args, ["-s", "--signal", "-k", "--kill-after"], ["--preserve-status", "--foreground", "-v", "--verbose"]
        )
        rest = rest[1:]
    elif name == "nice":
        opts, rest = take_opts(args, ["-n", "--adjustment"], [])
    elif name == "stdbuf":
        opts, rest = take_opts(args, ["-i", "-o", "-e", "--input", "--output", "--error"], [])
    elif name == "taskset":
        opts, rest = take_opts(args, ["--cpu-list"], ["-c", "-a", "--all-tasks", "-p", "--pid"])
        rest = rest[1:] if rest and not opts.get("--cpu-list") else rest
    elif name == "numactl":
        opts, rest = take_opts(
            args,
            [
                "-C",
                "--physcpubind",
                "-N",
                "--cpunodebind",
                "-m",
                "--membind",
                "-p",
                "--preferred",
                "-i",
                "--interleave",
            ],
            ["-l", "--localalloc", "-H", "--hardware", "-s", "--show"],
        )
    else:  # nohup
        rest = list(args)
    record("call", name=name, argv=list(args))
    if not rest:
        return 0
    return run_command(rest, env, os.environ.get(SIM_PREFIX + "LAUNCHER", "direct"))


def env_runner(name, args) -> int:
    """`poetry run`, `uv run`, `pipenv run`, `pixi run`: the project's environment, then the command."""
    if not args or args[0] != "run":
        record("call", name=name, argv=list(args))
        return 0
    opts, rest = take_opts(
        args[1:],
        [
            "--with",
            "--python",
            "-p",
            "--directory",
            "--project",
            "--env-file",
            "--extra",
            "--group",
            "--package",
            "--environment",
            "-e",
            "--manifest-path",
        ],
        [
            "--no-sync",
            "--frozen",
            "--locked",
            "--isolated",
            "--all-extras",
            "-q",
            "--quiet",
            "--no-project",
            "--active",
        ],
    )
    record("call", name=name, argv=list(args))
    return run_command(rest, dict(os.environ), os.environ.get(SIM_PREFIX + "LAUNCHER", "direct"))


def uname(args) -> int:
    """The node's name for -n (each srun task's node), fixed values otherwise."""
    import platform

    vals = {
        "s": "Linux",
        "n": this_host(),
        "r": "5.15.0",
        "v": "#1 SMP",
        "m": platform.machine() or "x86_64",
        "p": platform.machine() or "x86_64",
        "i": platform.machine() or "x86_64",
        "o": "GNU/Linux",
    }
    longs = {
        "--kernel-name": "s",
        "--nodename": "n",
        "--kernel-release": "r",
        "--kernel-version": "v",
        "--machine": "m",
        "--processor": "p",
        "--hardware-platform": "i",
        "--operating-system": "o",
    }
    want = []
    for a in args:
        if a in ("-a", "--all"):
            want = list("snrvmo")
        elif a in longs:
            want.append(longs[a])
        elif a.startswith("-") and not a.startswith("--"):
            want.extend(c for c in a[1:] if c in vals)
    print(" ".join(vals[c] for c in (want or ["s"])))
    return 0


def whoami(name, args) -> int:
    print(os.environ.get("USER") or "user")
    return 0


# ---------------------------------------------------------------- dispatch


def handler_for(name: str):
    if is_python(name):
        return lambda a: python(name, a)
    table = {
        "srun": srun,
        "scontrol": scontrol,
        "hostname": hostname_cmd,
        "nvidia-smi": nvidia_smi,
        "torchrun": torchrun,
        "mpirun": lambda a: mpirun("mpirun", a),
        "mpiexec": lambda a: mpirun("mpiexec", a),
        "orterun": lambda a: mpirun("orterun", a),
        "prterun": lambda a: mpirun("prterun", a),
        # horovodrun takes mpirun's -np/-H host:slots/--hostfile and places ranks the same way
        "horovodrun": lambda a: mpirun("horovodrun", a),
        "mpiexec.hydra": lambda a: mpirun("mpiexec.hydra", a),
        "deepspeed": deepspeed,
        "accelerate": accelerate,
        "composer": composer,
        "date": date_cmd,
        "clear": lambda a: needs_terminal("clear", a),
        "tput": lambda a: needs_terminal("tput", a),
        "whoami": lambda a: whoami("whoami", a),
        "uname": uname,
        "mkdir": lambda a: make_paths("mkdir", a),
        "touch": lambda a: make_paths("touch", a),
        "chmod": lambda a: chmod_mv("chmod", a),
        "mv": lambda a: chmod_mv("mv", a),
    }
    if name in ("env", "timeout", "nohup", "nice", "stdbuf", "numactl", "taskset"):
        return lambda a: exec_wrapper(name, a)
    if name in table:
        return table[name]
    if name in ("apptainer", "singularity", "shifter", "podman-hpc", "podman", "docker", "enroot"):
        return lambda a: container(name, a)
    if name in ("conda", "mamba", "micromamba"):
        return lambda a: conda(name, a)
    if name in ("poetry", "uv", "pipenv", "pixi"):
        return lambda a: env_runner(name, a)
    return None


# Known tools that are not the user's program: recorded calls. (`source`/`.` of a file that is not here, and
# `deactivate`/`activate` of a virtualenv that is not here, come through bash's command_not_found_handle.)
KNOWN_NAMES = set(names.COMMON_NAMES) | {
    "chmod",
    "cp",
    "ln",
    "mkdir",
    "mv",
    "rm",
    "touch",
    "ulimit",
    "source",
    ".",
    "activate",
    "deactivate",
}


def dispatch(name: str, args, training_if_unknown=False, path: str = "") -> int:
    """Run the stub of `name` (`path`: how it was called, when by path). A name that is not a known tool
    nor a program of the host is the user's program (`lmp`, `/home/u/bin/train`): a training process."""
    if side() != "slurm" and (name in SLURM_ONLY or _login_tool_absent(name)):
        return fail(
            name, args, "command not found in the container", 127, f"bash: {name}: command not found", "not-found"
        )
    h = handler_for(name)
    if h is not None:
        return h(list(args))
    if name in ("module", "ml", "spack", "sleep", "sbatch", "scancel", "sinfo", "squeue", "sacct", "sstat"):
        record("call", name=name, argv=list(args))
        return 0
    if name not in KNOWN_NAMES and not _on_host(name):
        record_process(path or name, args, "")  # a program that is not a known tool: the user's own
        return 0
    return generic(name, args)


def _on_host(name: str) -> bool:
    return name in set(_config().get("host_names", ()))


def _login_tool_absent(name: str) -> bool:
    return name in LOGIN_NODE_TOOLS and name not in set(_config().get("provides", ()))


def main() -> None:
    name = os.environ.pop(SIM_PREFIX + "ARGV0", "") or os.path.basename(sys.argv[0])
    if os.environ.pop(SIM_PREFIX + "PROGRAM", "") == "1":  # the user's own program, run by path
        record_process(name, sys.argv[1:], "")
        sys.exit(0)
    try:
        called = sys.argv[0] if "/" in sys.argv[0] and not sys.argv[0].startswith("/.sim/") else ""
        code = dispatch(name, sys.argv[1:], path=called if os.path.basename(called) == name else "")
    except BrokenPipeError:
        code = 141
    except SystemExit:
        raise
    except BaseException as exc:
        fail(name, sys.argv[1:], f"stub error: {exc!r}", 1)
        code = 1
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    sys.exit(code)


if __name__ == "__main__":
    main()
