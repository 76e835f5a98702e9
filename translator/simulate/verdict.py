"""Compare the training processes of the two sides: `equivalent`, or `differs` with each difference named.

What must match (the program cannot tell the two platforms apart otherwise):
- the multiset of training processes: program (relative to the working directory) and arguments;
- world size, the rank -> node layout and the number of processes per node;
- GPUs visible to each process;
- MASTER_ADDR/MASTER_PORT: one endpoint for all ranks of a side (an address that names a different
  node per process is a difference), and the same node on both sides;
- the environment the program reads: user-set variables. Launcher internals (SLURM_*, PET_*,
  TORCHELASTIC_*, OMPI_*, the rank variables themselves, which are compared as ranks) are not;
- failures on either side (a Slurm command in a pod, a launcher error, a time-out).
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

from translator.simulate.model import Failure, Process, Reason, SideResult, Verdict

INTERNAL_PREFIXES = (
    "SLURM_",
    "SLURMD_",
    "PET_",
    "TORCHELASTIC_",
    "OMPI_",
    "PMIX_",
    "PMI_",
    "KUBERNETES_",
    "JAX_",
    "DMLC_",
    "SLURM2KF_SIM_",
    "SLURM2KF_SECRET_",  # carries a command-line secret into `$(NAME)` (P447): the argv compares the value
    "MPI_LOCAL",
    "PRTE_",
    "OPAL_",
    "HYDRA_",
    "PIP_",
)  # package-install settings of a setup step, not read by the program
INTERNAL_NAMES = {
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "ROLE_RANK",
    "ROLE_NAME",
    "GROUP_WORLD_SIZE",
    "ROLE_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "CROSS_RANK",
    "CROSS_SIZE",
    "LOCAL_SIZE",
    "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "NVIDIA_VISIBLE_DEVICES",
    "HOSTNAME",
    "HOME",
    "PATH",
    "PWD",
    "OLDPWD",
    "SHLVL",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "TERM",
    "ENVIRONMENT",
    "TMPDIR",
    "_",
    "BASH_ENV",
    "JOB_COMPLETION_INDEX",
    "SSH_CONNECTION",
    "SSH_CLIENT",
    "MAIL",
    "LC_ALL",
    "PYTHONUNBUFFERED_",
}
SIDE_NAME = {"slurm": "Slurm", "kubeflow": "Kubeflow"}
MAX_LISTED = 4


def user_env(p: Process) -> dict[str, str]:
    jid = job_id_of(p)
    return {
        k: _norm_jobid(v, jid)
        for k, v in p.env
        if k not in INTERNAL_NAMES and not k.startswith(INTERNAL_PREFIXES) and k not in p.defaulted
    }


def job_id_of(p: Process) -> str | None:
    v = dict(p.env).get("SLURM_JOB_ID")
    return v if v and len(v) >= 3 else None


def _norm_jobid(text: str, jid: str | None) -> str:
    """A job id is different on every run: `results/4242/x` and `results/9134/x` are the same path."""
    return text.replace(jid, "$SLURM_JOB_ID") if jid else text


def program_of(p: Process) -> str:
    prog = p.program
    if p.cwd and prog.startswith(p.cwd.rstrip("/") + "/"):
        prog = prog[len(p.cwd.rstrip("/")) + 1 :]
    if prog.startswith("./") and not p.interpreter:
        prog = prog[2:]
    return prog


def interp_of(p: Process) -> str:
    i = os.path.basename(p.interpreter or "")
    return "python" if re.fullmatch(r"python[0-9.]*", i) else i


def command_of(p: Process) -> str:
    k = _key(p)
    words = ([k[0]] if k[0] else []) + [k[1]] + list(k[2])
    text = " ".join(_q(w) for w in words)
    return text if len(text) <= 160 else text[:157] + "..."


def _q(w: str) -> str:
    return w if re.fullmatch(r"[\w@%+=:,./-]+", w) else "'" + w.replace("'", "'\\''") + "'"


def _key(p: Process) -> tuple:
    jid = job_id_of(p)
    return (interp_of(p), _norm_jobid(program_of(p), jid), tuple(_norm_jobid(a, jid) for a in p.argv))


def _hosts_index(side: SideResult) -> list[tuple[str, int, str]]:
    return [tuple(h[:3]) for h in getattr(side, "hosts", ())]


def endpoint_node(addr: str | None, p: Process, hosts: Sequence[tuple[str, int, str]]) -> str | None:
    """Where MASTER_ADDR points: `node<k>` for an address of the side's nodes/pods, else the text."""
    if addr is None:
        return None
    a = addr.strip()
    if a in ("localhost", "::1", "") or a.startswith("127."):
        return f"node{p.node}"
    for name, node, ip in hosts:
        if a == name or a == ip or a.startswith(name + ".") or name.startswith(a + "."):
            return f"node{node}"
    return a


def _fmt_counter(c: Counter, unit: str = "") -> str:
    parts = []
    for value, n in sorted(c.items(), key=lambda kv: str(kv[0])):
        v = "unset" if value is None else str(value)
        parts.append(f"{v}{unit}" + (f" ×{n}" if n > 1 and len(c) > 1 else ""))
    return ", ".join(parts) if parts else "none"


def _per_node(procs: Sequence[Process]) -> str:
    c = Counter(p.node for p in procs)
    return ", ".join(f"node{n}: {c[n]}" for n in sorted(c)) or "none"


def _host_pattern(side: SideResult):
    """(one regex for every node's host name, FQDN and address of the side, {matched name or address: node})."""
    node_of: dict[str, int] = {}
    names, ips = [], []
    for name, node, ip in sorted(_hosts_index(side), key=lambda h: -len(h[0])):
        if name:
            names.append(re.escape(name))
            node_of.setdefault(name, node)
        if ip:
            ips.append(re.escape(ip))
            node_of.setdefault(ip, node)
    alts = []
    if names:
        alts.append(r"(?<![\w.-])(?P<name>" + "|".join(names) + r")(?:\.[A-Za-z0-9-]+)*(?![\w-])")
    if ips:
        alts.append(r"(?<![\d.])(?P<ip>" + "|".join(ips) + r")(?![\d])")
    return (re.compile("|".join(alts)) if alts else None), node_of


def normalized(side: SideResult) -> SideResult:
    """The side with its node host names and addresses written `<nodeN>` in arguments and user variables
    (`--master node01` and `--master job-node-0-0.job` name the same node), and the job id as
    `$SLURM_JOB_ID`."""
    from dataclasses import replace

    rx, node_of = _host_pattern(side)

    def node_ref(m) -> str:
        return f"<node{node_of[m.group('name') or m.group('ip')]}>"

    def norm(text: str, jid: str | None, ajid: str | None = None) -> str:
        text = _norm_jobid(_norm_jobid(text, ajid), jid)
        return rx.sub(node_ref, text) if rx is not None else text

    procs = []
    for p in side.processes:
        jid = job_id_of(p)
        # an array's job id differs on every submission as the job id does: the same placeholder
        ajid = dict(p.env).get("SLURM_ARRAY_JOB_ID")
        ajid = ajid if ajid and len(ajid) >= 3 else None
        env = tuple(
            (k, v if k in INTERNAL_NAMES or k.startswith(INTERNAL_PREFIXES) else norm(v, jid, ajid)) for k, v in p.env
        )
        procs.append(
            replace(p, program=norm(p.program, jid, ajid), argv=tuple(norm(a, jid, ajid) for a in p.argv), env=env)
        )
    return replace(side, processes=tuple(procs))


def failure_text(f: Failure) -> str:
    where = "pod" if f.side == "kubeflow" else "node"
    return f"{SIDE_NAME.get(f.side, f.side)}: `{f.command}` fails on {where} {f.node}: {f.reason}"


def compare(slurm: SideResult, kube: SideResult) -> list[str]:
    """Every failure of either side, then the differences between the training processes."""
    slurm, kube = normalized(slurm), normalized(kube)
    return [failure_text(f) for f in slurm.failures + kube.failures] + process_diffs(slurm, kube)


def process_diffs(slurm: SideResult, kube: SideResult) -> list[str]:
    """The differences between the training processes of two normalized sides."""
    diffs: list[str] = []
    sp, kp = list(slurm.processes), list(kube.processes)
    sc, kc = Counter(_key(p) for p in sp), Counter(_key(p) for p in kp)
    example: dict[tuple, Process] = {}  # one process per key, for naming the command
    for p in sp + kp:
        example.setdefault(_key(p), p)
    if sc != kc:
        if not sp and kp:
            diffs.append(f"Slurm starts no training process; Kubeflow starts {len(kp)} (`{command_of(kp[0])}`)")
        elif sp and not kp:
            diffs.append(f"Kubeflow starts no training process; Slurm starts {len(sp)} (`{command_of(sp[0])}`)")
        else:
            listed = 0
            for k in sorted(set(sc) | set(kc), key=str):
                if sc[k] != kc[k]:
                    if listed == MAX_LISTED:
                        diffs.append("… more programs differ")
                        break
                    diffs.append(f"`{command_of(example[k])}`: Slurm starts {sc[k]}, Kubeflow starts {kc[k]}")
                    listed += 1
    # layout, per program started on both sides
    for k in sorted(set(sc) & set(kc), key=str):
        s_ps = [p for p in sp if _key(p) == k]
        k_ps = [p for p in kp if _key(p) == k]
        name = f"`{command_of(example[k])}`" if len(set(sc) | set(kc)) > 1 else "the training"
        diffs.extend(_layout_diffs(name, s_ps, k_ps, slurm, kube))
    diffs.extend(split_rendezvous(slurm, kube)[0])
    return diffs


def split_rendezvous(slurm: SideResult, kube: SideResult) -> tuple[list[str], list[str]]:
    """(differences, shared): ranks of one training that do not share one MASTER_ADDR/PORT. The same split
    on both sides (each node its own address, on Slurm as in the pods) is not a difference between them:
    it is listed once, as shared."""
    s, k = _consistency("slurm", slurm.processes, slurm), _consistency("kubeflow", kube.processes, kube)
    diffs = [text for key, text in s.items() if key not in k] + [text for key, text in k.items() if key not in s]
    shared = ["both sides: " + text.split(": ", 1)[1] for key, text in s.items() if key in k]
    return diffs, shared


def _world(ps) -> Counter:
    return Counter(p.world_size if p.world_size is not None else (1 if len(ps) == 1 else None) for p in ps)


def _layout_diffs(name, s_ps, k_ps, slurm, kube) -> list[str]:
    out = []
    sw, kw = _world(s_ps), _world(k_ps)
    if sw != kw:
        out.append(f"{name}: world size on Slurm {_fmt_counter(sw)}, on Kubeflow {_fmt_counter(kw)}")
    if Counter(p.node for p in s_ps) != Counter(p.node for p in k_ps):
        out.append(f"{name}: processes per node on Slurm {_per_node(s_ps)}; on Kubeflow {_per_node(k_ps)}")
    else:
        s_map = _rank_nodes(s_ps)
        k_map = _rank_nodes(k_ps)
        if s_map is not None and k_map is not None and s_map != k_map:
            moved = [r for r in sorted(set(s_map) | set(k_map)) if s_map.get(r) != k_map.get(r)]
            r = moved[0]
            out.append(
                f"{name}: rank -> node layout differs (rank {r} on Slurm node {_n(s_map.get(r))}, "
                f"on Kubeflow node {_n(k_map.get(r))}; {len(moved)} rank(s) differ)"
            )
    sg, kg = Counter(p.gpus for p in s_ps), Counter(p.gpus for p in k_ps)
    if sg != kg:
        out.append(f"{name}: GPUs visible per process on Slurm {_fmt_counter(sg)}, on Kubeflow {_fmt_counter(kg)}")
    sm = {endpoint_node(p.master_addr, p, _hosts_index(slurm)) for p in s_ps}
    km = {endpoint_node(p.master_addr, p, _hosts_index(kube)) for p in k_ps}
    if len(sm) == 1 and len(km) == 1 and sm != km and None not in sm | km:
        out.append(f"{name}: MASTER_ADDR points to {_ep(sm)} on Slurm, to {_ep(km)} on Kubeflow")
    # MASTER_PORT: any free port works; only its consistency within a side matters (_consistency).
    # user-set environment, process by process in rank order
    pairs = zip(sorted(s_ps, key=_order), sorted(k_ps, key=_order))
    seen = {}
    for a, b in pairs:
        ea, eb = user_env(a), user_env(b)
        for var in sorted(set(ea) | set(eb)):
            if var not in seen and noticeable(ea.get(var), eb.get(var)):
                seen[var] = (ea.get(var), eb.get(var))
    for var, (va, vb) in list(seen.items())[:8]:
        out.append(f"{name}: environment variable {var} is {_val(va)} on Slurm, {_val(vb)} on Kubeflow")
    if len(seen) > 8:
        out.append(f"{name}: {len(seen) - 8} more environment variables differ")
    return out


_NODE_ONLY = re.compile(r"(?:<node\d+>|\d+)(?:[ ,:;]+(?:<node\d+>|\d+))*")


# the folders batch mode puts first on PATH (plan/batch_prologue.py COMMANDS, launchers/container.py stand-ins):
# a PATH-like variable built from $PATH carries them, and no program looks a tool up there but srun's own
_TOOL_DIRS = re.compile(r"[^:]*/slurm2kf-(?:steps\.[^/:]*/bin|bin):")


def noticeable(a: str | None, b: str | None) -> bool:
    """Whether a program could tell two values of a variable apart. Not so for a rendezvous helper that only
    one side sets and that names nothing but the side's nodes and ports (`HEAD_NODE=<node0>`, `NODES=<node0>
    <node1>`): the launcher gives the program its rendezvous on each side, and the helper names the same nodes."""
    if a == b:
        return False
    if a is not None and b is not None and _TOOL_DIRS.sub("", a) == _TOOL_DIRS.sub("", b):
        return False  # only the batch pod's own tool folders (srun/scontrol, container stand-ins) in a path list
    only = a if b is None else b if a is None else None
    return not (only is not None and "<node" in only and _NODE_ONLY.fullmatch(only.strip()))


def _order(p: Process):
    return (p.rank if p.rank is not None else -1, p.node, p.local_rank if p.local_rank is not None else -1)


def _rank_nodes(ps) -> dict[int, int] | None:
    if any(p.rank is None for p in ps):
        return None
    m: dict[int, int] = {}
    for p in ps:
        m.setdefault(p.rank, p.node)
    return m


def _consistency(side: str, ps: Sequence[Process], res: SideResult) -> dict[tuple, str]:
    """Within one side: all ranks of one training must agree on the rendezvous endpoint. {how the ranks
    split (the command, and which node names which endpoint or port): the sentence}."""
    out = {}
    groups = defaultdict(list)
    for p in ps:
        groups[_key(p)].append(p)
    for key, g in groups.items():
        eps = {(p.node, endpoint_node(p.master_addr, p, _hosts_index(res))) for p in g}
        if len(g) > 1 and len({e for _, e in eps}) > 1:
            out[(key, "addr", tuple(sorted(eps, key=str)))] = (
                f"{SIDE_NAME[side]}: the ranks of `{command_of(g[0])}` do not share one MASTER_ADDR "
                f"({', '.join(sorted(_ep({e}) for e in {e for _, e in eps}))}): they would not form one training"
            )
        ports = {(p.node, p.master_port) for p in g}
        if len(g) > 1 and len({q for _, q in ports}) > 1:
            out[(key, "port", tuple(sorted(ports, key=str)))] = (
                f"{SIDE_NAME[side]}: the ranks of `{command_of(g[0])}` do not share one MASTER_PORT "
                f"({', '.join(sorted(str(q) for q in {q for _, q in ports}))})"
            )
    return out


def _n(v) -> str:
    return "-" if v is None else str(v)


def _ep(s) -> str:
    v = next(iter(s))
    return "unset" if v is None else str(v)


def _val(v) -> str:
    return "unset" if v is None else repr(v) if len(v) <= 60 else repr(v[:57] + "...")


# ---------------------------------------------------------------- the verdict: which of the four, and why

R_TIMEOUT = "S806"  # time ran out on a side
R_PLACEHOLDER = "S807"  # the script has a placeholder to fill in (`<your-token>`)
R_UNSUPPORTED = "S808"  # a feature the simulation does not emulate (`srun --multi-prog`)
R_SITE_FILE = "S809"  # a file of the site (a script, a directory) is not here
R_SLURM_FAILS = "S810"  # the batch script fails here for another reason
R_BOTH_FAIL = "S811"  # both sides fail the same way before any training process starts
R_EMPTY = "S812"  # no training process on either side
R_REFUSED = "S813"  # convert refused the script: no TrainJob to compare

_LINE = re.compile(r"\bline (\d+)\b")
_SHELL_PREFIX = re.compile(r"^(?:\S*: )?(?:line \d+: )?")


def failure_key(f: Failure) -> tuple[str, str]:
    """What two failures must share to be the same failure: the command and the shell's message, without
    the script's name, its line (the TrainJob carries the script in another form) or the node."""
    reason = f.reason
    m = re.match(r"exited with status (\d+) \((.*)\)$", reason, re.S)
    if m:
        reason = f"status {m.group(1)}: " + _SHELL_PREFIX.sub("", m.group(2).strip())
    command = "" if f.kind == "exit" else f.command
    return command, reason


def split_failures(slurm: SideResult, kube: SideResult) -> tuple[list[Failure], list[Failure], list[Failure]]:
    """(shared, Slurm only, Kubeflow only). A failure both sides have is shared (listed once, from Slurm)."""
    skeys = {failure_key(f) for f in slurm.failures}
    kkeys = {failure_key(f) for f in kube.failures}
    shared = [f for f in slurm.failures if failure_key(f) in kkeys]
    s_only = [f for f in slurm.failures if failure_key(f) not in kkeys]
    k_only = [f for f in kube.failures if failure_key(f) not in skeys]
    return shared, s_only, k_only


def where_of(f: Failure) -> str:
    m = _LINE.search(f.reason)
    place = "batch script" if f.side == "slurm" and f.kind in ("exit", "timeout") else f.command
    host = f"pod {f.node}" if f.side == "kubeflow" else f"node {f.node}"
    return f"{place} on {host}" + (f", line {m.group(1)}" if m and f.side == "slurm" else "")


def _slurm_reason(fails: Sequence[Failure], blockers: Sequence[tuple[str, str]]) -> Reason:
    """Why the Slurm side cannot run here, most specific first."""
    if blockers:
        code, where = blockers[0]
        return Reason(code, _BLOCKER_TEXT.get(code, "the script cannot run here"), "slurm", where)
    f = fails[0]
    if f.kind == "unsupported" or "not emulated" in f.reason:
        return Reason(R_UNSUPPORTED, f"a feature the simulation does not emulate: {f.reason}", "slurm", where_of(f))
    if "No such file or directory" in f.reason or "not found" in f.reason.lower():
        return Reason(R_SITE_FILE, f"a file of the site is not here: {f.reason}", "slurm", where_of(f))
    return Reason(R_SLURM_FAILS, f"the batch script fails here: {f.reason}", "slurm", where_of(f))


_BLOCKER_TEXT = {
    R_PLACEHOLDER: "the script has a placeholder to fill in before it can run",
    R_UNSUPPORTED: "the script uses a feature the simulation does not emulate",
}


def _timeout_reason(fails: Sequence[Failure]) -> Reason | None:
    for f in fails:
        if f.kind == "timeout":
            return Reason(R_TIMEOUT, "time ran out before the side finished", f.side, where_of(f))
    return None


def decide(path: str, slurm: SideResult, kube: SideResult, blockers: Sequence[tuple[str, str]] = ()) -> Verdict:
    """equivalent / differs / inconclusive for two sides (`refused` is decided before, by `refused`)."""
    slurm, kube = normalized(slurm), normalized(kube)
    shared, s_only, k_only = split_failures(slurm, kube)
    diffs = [failure_text(f) for f in k_only] + process_diffs(slurm, kube)
    # a side that did not run to its end (more nodes than simulate runs, the overall deadline): never a verdict
    # (the node cap and the overall deadline first; a node's or pod's own time limit is S806, said where)
    incomplete = [(side.side, code, why) for side in (slurm, kube) for code, why in side.incomplete]
    whole = [x for x in incomplete if "its time limit" not in x[2]]
    reason = Reason(whole[0][1], whole[0][2], whole[0][0]) if whole else _timeout_reason(slurm.failures + kube.failures)
    if reason is None and incomplete:
        reason = Reason(incomplete[0][1], incomplete[0][2], incomplete[0][0])
    if reason is None and (s_only or blockers):
        reason = _slurm_reason(s_only, blockers)
    if reason is None and not diffs and not slurm.processes and not kube.processes:
        if shared:
            reason = Reason(R_BOTH_FAIL, "both sides fail the same way before training", "both", where_of(shared[0]))
        else:
            reason = Reason(R_EMPTY, "no training process on either side: nothing to compare", "both")
    kind = "inconclusive" if reason is not None else "differs" if diffs else "equivalent"
    once = tuple(failure_text(f) for f in shared) + tuple(split_rendezvous(slurm, kube)[1])
    return Verdict(path, kind, tuple(diffs), slurm, kube, reason=reason, shared=once)


def refused(path: str, slurm: SideResult, why: str) -> Verdict:
    return Verdict(
        path=path, verdict="refused", slurm=slurm, reason=Reason(R_REFUSED, f"convert refused the script: {why}")
    )
