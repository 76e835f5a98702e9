"""The Slurm side: run the batch script as slurmd runs the batch step on node 0 of the allocation.

The environment is the one sbatch and slurmd give the batch step (env.c `env_array_for_batch_job`,
sbatch.1 OUTPUT ENVIRONMENT VARIABLES; facts collected in docs/sbatch-semantics.md §12): job
identity, node list in hostlist form, task counts only when requested, GPU variables for the
node's GPUs, array variables for one index, and SLURM_PROCID/LOCALID/NODEID = 0. The script itself
is copied where slurmd keeps it (`/var/spool/slurmd/job<ID>/slurm_script`, which is what `$0` is)
and run by its `#!` interpreter with the script arguments.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from collections.abc import Sequence

from translator.simulate.model import SideResult
from translator.simulate.stubs import hostlist

JOB_ID = 4242
SUBMIT_DIR = "/home/user"  # the user's home, where the job is submitted from (both sides run there)
SUBMIT_HOST = "login01"
CLUSTER = "cluster"
# The login shell's environment that sbatch propagates with --export=ALL (the default) beyond what both
# sides share (USER, HOME, PATH, SHELL, LANG): the terminal type of the shell sbatch was typed in.
SUBMIT_ENV = {"TERM": "xterm-256color"}
_PLACEHOLDER = re.compile(r"(?<![<\w$])<([A-Za-z][\w./:-]*)>(?!>)")


@dataclass(frozen=True)
class Allocation:
    hosts: tuple[str, ...]
    gpus_per_node: int
    tasks_per_node: tuple[int, ...]
    cpus_per_node: int

    def host_table(self):
        """[(hostname, node, ip, gpus)] for the stubs."""
        return [(h, i, f"10.0.0.{i + 1}", self.gpus_per_node) for i, h in enumerate(self.hosts)]


def _int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def node_count(job) -> int:
    """The nodes slurmctld would grant: the minimum of a range, else what -n/--ntasks-per-node need."""
    f = job.fields
    nodes = f.nodes_min or 0
    if not nodes:
        if f.ntasks and f.ntasks_per_node:
            nodes = -(-f.ntasks // f.ntasks_per_node)
        else:
            nodes = 1
    return max(1, nodes)


def allocation(job) -> Allocation:
    """The nodes, GPUs and task layout slurmctld would grant (`node_count`; the caller checks the cap)."""
    f = job.fields
    nodes = node_count(job)
    width = max(2, len(str(nodes)))
    names = tuple(f"node{i + 1:0{width}d}" for i in range(nodes))
    if f.gpus_per_node is not None:
        gpn = f.gpus_per_node
    elif f.gpus_per_task is not None:
        tpn = f.ntasks_per_node or (-(-f.ntasks // nodes) if f.ntasks else 1)
        gpn = f.gpus_per_task * tpn
    elif f.gpus_total is not None:
        gpn = -(-f.gpus_total // nodes)
    else:
        gpn = 0
    if f.ntasks is not None:
        base, extra = divmod(f.ntasks, nodes)
        tpn_list = tuple(base + (1 if i < extra else 0) for i in range(nodes))
    elif f.ntasks_per_node is not None:
        tpn_list = (f.ntasks_per_node,) * nodes
    else:
        tpn_list = (1,) * nodes
    cpus = max(t * (f.cpus_per_task or 1) for t in tpn_list) if tpn_list else 1
    return Allocation(names, int(gpn), tpn_list, cpus)


def array_env(spec: str | None, index: int | None) -> tuple[dict[str, str], str | None]:
    """SLURM_ARRAY_* for one element (sbatch.1); returns (env, problem)."""
    if not spec:
        return {}, ("--array-index given but the job is not an array" if index is not None else None)
    from translator.slurm.values import array_indexes, split_array

    body, _ = split_array(spec)
    idx, problems = array_indexes(body)
    if not idx:
        return {}, "the array has no valid index"
    if index is None:
        index = idx[0]
    elif index not in idx:
        return {}, f"index {index} is not in the array {spec}"
    m = re.fullmatch(r"\s*\d+-\d+:(\d+)\s*", body)
    env = {
        "SLURM_ARRAY_JOB_ID": str(JOB_ID),
        "SLURM_ARRAY_TASK_ID": str(index),
        "SLURM_ARRAY_TASK_COUNT": str(len(idx)),
        "SLURM_ARRAY_TASK_MIN": str(idx[0]),
        "SLURM_ARRAY_TASK_MAX": str(idx[-1]),
        "SLURM_ARRAY_TASK_STEP": m.group(1) if m else "1",
    }
    return env, None


def batch_env(job, alloc: Allocation, array_index: int | None = None) -> tuple[dict[str, str], list[str]]:
    f = job.fields
    notes: list[str] = []
    aenv, problem = array_env(f.array, array_index)
    if problem:
        notes.append(problem)
    job_id = JOB_ID + (list(range(0, 1))[0] if not aenv else 0)
    if aenv:
        job_id = JOB_ID + 1 + int(aenv["SLURM_ARRAY_TASK_ID"]) - int(aenv["SLURM_ARRAY_TASK_MIN"])
    n = len(alloc.hosts)
    nodelist = hostlist.compress(list(alloc.hosts))
    name = f.job_name or os.path.basename(job.path) or "sbatch"
    env = {
        "SLURM_JOB_ID": str(job_id),
        "SLURM_JOBID": str(job_id),
        "SLURM_JOB_NAME": name,
        "SLURM_JOB_PARTITION": f.partition or "batch",
        "SLURM_CLUSTER_NAME": CLUSTER,
        "SLURM_SUBMIT_DIR": SUBMIT_DIR,
        "SLURM_SUBMIT_HOST": SUBMIT_HOST,
        "SLURMD_NODENAME": alloc.hosts[0],
        "ENVIRONMENT": "BATCH",
        "SLURM_JOB_NUM_NODES": str(n),
        "SLURM_NNODES": str(n),
        "SLURM_JOB_NODELIST": nodelist,
        "SLURM_NODELIST": nodelist,
        "SLURM_JOB_CPUS_PER_NODE": hostlist.counts_form([alloc.cpus_per_node] * n),
        "SLURM_CPUS_ON_NODE": str(alloc.cpus_per_node),
        "SLURM_TASKS_PER_NODE": hostlist.counts_form(list(alloc.tasks_per_node)),
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "SLURM_NODEID": "0",
        "SLURM_GTIDS": "0",
        "SLURM_TASK_PID": "4000",
        "SLURM_TOPOLOGY_ADDR": alloc.hosts[0],
        "SLURM_JOB_USER": "user",
        "SLURM_JOB_UID": "1000",
        "SLURM_JOB_GID": "1000",
        "SLURM_CONF": "/etc/slurm/slurm.conf",
    }
    if f.account:
        env["SLURM_JOB_ACCOUNT"] = f.account
    if f.qos:
        env["SLURM_JOB_QOS"] = f.qos
    # SLURM_NTASKS only when -n was given or derived from --ntasks-per-node x nodes (sbatch.1)
    if f.ntasks is not None:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(f.ntasks)
    elif f.ntasks_per_node is not None:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(f.ntasks_per_node * n)
    if f.ntasks_per_node is not None:
        env["SLURM_NTASKS_PER_NODE"] = str(f.ntasks_per_node)
    if f.cpus_per_task is not None:
        env["SLURM_CPUS_PER_TASK"] = str(f.cpus_per_task)
    opts = job.options
    if "gpus" in opts:
        env["SLURM_GPUS"] = str(opts["gpus"])
    if "gpus-per-node" in opts:
        env["SLURM_GPUS_PER_NODE"] = str(opts["gpus-per-node"])
    if "gpus-per-task" in opts:
        env["SLURM_GPUS_PER_TASK"] = str(opts["gpus-per-task"])
    if "cpus-per-gpu" in opts:
        env["SLURM_CPUS_PER_GPU"] = str(opts["cpus-per-gpu"])
    if f.mem_per_node_mb is not None:
        env["SLURM_MEM_PER_NODE"] = str(f.mem_per_node_mb)
    elif f.mem_per_cpu_mb is not None:
        env["SLURM_MEM_PER_CPU"] = str(f.mem_per_cpu_mb)
    if f.mem_per_gpu_mb is not None:
        env["SLURM_MEM_PER_GPU"] = str(f.mem_per_gpu_mb)
    if f.dependency:
        env["SLURM_JOB_DEPENDENCY"] = f.dependency
    if alloc.gpus_per_node:
        devs = ",".join(str(i) for i in range(alloc.gpus_per_node))
        env.update(
            {
                "SLURM_GPUS_ON_NODE": str(alloc.gpus_per_node),
                "SLURM_JOB_GPUS": devs,
                "CUDA_VISIBLE_DEVICES": devs,
                "GPU_DEVICE_ORDINAL": devs,
            }
        )
    env.update(aenv)
    return env, notes


def submit_env(export: str | None) -> dict[str, str]:
    """What sbatch propagates from the submit shell (sbatch.1 --export; sbatch-semantics.md §5): everything
    with ALL (the default), nothing with NONE/NIL, only the listed names otherwise; NAME=value items are set."""
    items = [i.strip() for i in (export or "ALL").split(",") if i.strip()]
    if not items or items[0].upper() in ("NONE", "NIL"):
        return {}
    out = dict(SUBMIT_ENV) if "ALL" in (i.upper() for i in items) else {}
    for it in items:
        name, eq, value = it.partition("=")
        if eq:
            out.setdefault(name, value)  # with ALL,VAR=val the caller's own value wins (sbatch.1)
        elif name in SUBMIT_ENV:
            out[name] = SUBMIT_ENV[name]
    return out


def placeholders(text: str) -> list[tuple[str, str]]:
    """`<your-token>`-style placeholders in command lines (not comments): the script cannot run as written."""
    from translator.simulate.verdict import R_PLACEHOLDER

    out = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split(" #", 1)[0]
        if code.lstrip().startswith("#"):
            continue
        m = _PLACEHOLDER.search(code)
        if m:
            out.append((R_PLACEHOLDER, f"line {n}: {m.group(0)}"))
    return out


def interpreter_argv(text: str, script_path: str) -> tuple[list[str], str | None]:
    """How slurmd (the kernel, via `#!`) runs the script. Any shell runs as bash --noprofile --norc."""
    first = text.split("\n", 1)[0]
    if not first.startswith("#!"):
        return ["/bin/bash", "--noprofile", "--norc", script_path], None
    words = first[2:].strip().split(None, 1)
    interp = os.path.basename(words[0]) if words else "sh"
    arg = words[1].strip() if len(words) > 1 else ""
    if interp == "env" and arg:  # `#!/usr/bin/env bash`, `#!/usr/bin/env -S bash -e`
        parts = arg.split()
        if parts and parts[0] == "-S":
            parts = parts[1:]
        interp, arg = (os.path.basename(parts[0]), " ".join(parts[1:])) if parts else ("sh", "")
    if interp in ("bash", "sh", "dash", "ksh", "zsh"):
        opts = [arg] if arg else []  # the kernel passes everything after the interpreter as one argument
        return ["/bin/bash", "--noprofile", "--norc"] + opts + [script_path], None
    if re.fullmatch(r"python[0-9.]*", interp):
        return ["python3"] + ([arg] if arg else []) + [script_path], None
    return ["/bin/bash", "--noprofile", "--norc", script_path], f"interpreter {interp!r} run as bash"


_ABS_PROG = re.compile(r"(?<![\w$/.-])(/(?:[\w.+-]+/)+bin/[\w.+-]+)")


def absolute_programs(text: str) -> list[str]:
    """Absolute program paths written in the script (/opt/conda/bin/python): stubs are put there."""
    return sorted({m.group(1) for m in _ABS_PROG.finditer(text)})


def run(
    job,
    text: str,
    script_args: Sequence[str] = (),
    array_index: int | None = None,
    timeout: float = 5.0,
    deadline: float | None = None,
):
    """Run the batch script in the sandbox; returns (SideResult, Allocation). A job on more nodes than
    simulate runs (sandbox.MAX_NODES) is not run: its SideResult says so in `incomplete` (S821)."""
    from translator.simulate import sandbox
    from translator.simulate.collect import side_result

    sandbox.check_isolation()
    nodes = node_count(job)
    if nodes > sandbox.MAX_NODES:
        why = f"the job asks for {nodes} nodes; simulate runs at most {sandbox.MAX_NODES} per side"
        side = SideResult("slurm", notes=(f"not run: {why} ({sandbox.S821_CAPPED})",))
        return replace(side, incomplete=((sandbox.S821_CAPPED, why),)), Allocation(("node01",), 0, (1,), 1)
    alloc = allocation(job)
    env, notes = batch_env(job, alloc, array_index)
    spool = f"/var/spool/slurmd/job{env['SLURM_JOB_ID']}/slurm_script"
    argv, note = interpreter_argv(text, spool)
    if note:
        notes.append(note)
    argv += list(script_args)
    cwd = job.fields.chdir if job.fields.chdir and job.fields.chdir.startswith("/") else SUBMIT_DIR
    if sandbox._clean_cwd(cwd) != cwd:
        notes.append(f"--chdir={cwd} is a system directory here; the job runs in {SUBMIT_DIR}")
        cwd = SUBMIT_DIR
    env["PWD"] = cwd
    if sandbox.namespaces_available():  # (the weaker sandbox keeps HOME in its temporary directory)
        env["HOME"] = SUBMIT_DIR  # the user's home, also with --chdir
    env.update({k: v for k, v in submit_env(job.options.get("export")).items() if k not in env})
    files = [(spool, text)]
    if cwd != env.get("HOME", cwd):
        files.append((SUBMIT_DIR + "/.bashrc", ""))  # so that the home directory exists
    unit = sandbox.Unit(
        argv=argv,
        env=env,
        hostname=alloc.hosts[0],
        node=0,
        cwd=cwd,
        files=files,
        config={"gpus": alloc.gpus_per_node},
        programs=sandbox.program_paths([text]),
    )
    res = sandbox.run_units(
        [unit],
        "slurm",
        alloc.host_table(),
        timeout=timeout,
        extra_stub_paths=absolute_programs(text),
        deadline=deadline,
    )
    notes.append(
        f"allocation: {len(alloc.hosts)} node(s) {hostlist.compress(list(alloc.hosts))}, "
        f"{alloc.gpus_per_node} GPU(s) per node"
    )
    side = side_result("slurm", res, ["batch script"], [0], notes)
    return replace(side, blockers=tuple(placeholders(text))), alloc
