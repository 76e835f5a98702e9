"""What a Slurm node gave the script that a pod does not have (issue 19.6), found in the script text of
every conversion, whatever the launcher family:

- P460 network-interface names of the Slurm nodes (`NCCL_SOCKET_IFNAME=ib0`, `GLOO_SOCKET_IFNAME`,
  `OMPI_MCA_btl_tcp_if_include`, `UCX_NET_DEVICES=mlx5_0:1`): a pod has `eth0` and `lo`;
- L348 variables the script reads but never sets (and Slurm, bash and the pod do not set): on Slurm
  they came from the submission environment, which sbatch exports (the launch line's own are already
  reported by launchline.py; the rest of the script is checked here);
- P461 site or home files the script sources (`source /etc/profile.d/modules.sh`, `. /opt/site/env.sh`,
  `source ~/.bashrc`) where the command is carried into the pod;
- P462 terminal commands (`clear`, `tput`, `reset`): a pod has no terminal (L345 is the `set -e` case
  of the script fallback);
- P463 an array subscript naming a variable the TrainJob does not set (`${aug[i]}` without `i=…`,
  `${arr[$SLURM_ARRAY_TASK_ID]}` when one TrainJob stands for the whole array): bash reads element 0;
- P464 a GPU training (NCCL variables, `GPUS_PER_NODE=8`, `--gpus 8`, `--nproc_per_node=gpu`,
  `torch.cuda`, or 8 processes per node on an `--exclusive` node) with no GPU request: on Slurm the
  partition gave the node's GPUs; a pod without `nvidia.com/gpu` gets none.

Each finding names its lines and a fix. Lines another finding already covers for the same command
(dropped commands: P435/P436/P440; L345) are not reported again.
"""

from __future__ import annotations

import re

from translator.diagnostics import WARNING
from translator.plan.model import Finding
from translator.read.ast import CONDA, SOURCE, VENV, Assignment, Block, Command

# ---- walking the body -----------------------------------------------------------------------------


def _statements(body, out: list, in_block: bool = False) -> list:
    """(statement, inside a block) for every command, assignment and block header, in order (here-document
    bodies are text, not commands: left out)."""
    for st in body:
        if isinstance(st, Block):
            out.append((st, in_block))
            if st.command is not None:
                out.append((st.command, in_block or st.kind != "heredoc"))
            if st.kind != "heredoc" and st.children:
                _statements(st.children, out, True)
        else:
            out.append((st, in_block))
            if st.__class__ is Command and st.prefix_assignments:
                out.extend([(a, in_block) for a in st.prefix_assignments])
    return out


def _expanded_text(raw: str) -> str:
    """`raw` without the parts bash does not expand: single-quoted strings outside double quotes, `\\$`
    and comments."""
    if "'" not in raw and "\\" not in raw and "#" not in raw:
        return raw  # (most words: nothing to take out)
    out = []
    i, n, dq = 0, len(raw), False
    while i < n:
        ch = raw[i]
        if ch == "\\" and i + 1 < n:
            i += 2
            continue
        if ch == '"':
            dq = not dq
        elif ch == "'" and not dq:
            end = raw.find("'", i + 1)
            i = n if end < 0 else end + 1
            continue
        elif ch == "#" and not dq and (i == 0 or raw[i - 1] in " \t;"):
            break
        out.append(ch)
        i += 1
    return "".join(out)


def _text(st) -> str:
    """What bash expands of a statement: an assignment's value, a command's words (prefix assignments are
    statements of their own)."""
    if isinstance(st, Assignment):
        return _expanded_text(st.value.raw)
    if isinstance(st, Command):
        return _expanded_text(" ".join(w.raw for w in st.words))
    return ""


# ---- names the script sets ------------------------------------------------------------------------

_FOR = re.compile(r"^\s*for\s+([A-Za-z_]\w*)\s+in\b")
_C_FOR = re.compile(r"^\s*for\s*\(\((.*?)\)\)")
_ARITH_SET = re.compile(r"([A-Za-z_]\w*)\s*(?:[-+*/%]?=(?!=)|\+\+|--)")
_READ_VALUE_OPTS = {"-p", "-d", "-n", "-N", "-t", "-u", "-i"}
_DECLARERS = {"local", "declare", "typeset", "export", "readonly"}


def _names_set(statements) -> tuple[set[str], set[str]]:
    """(names assigned anywhere in the script, names assigned only inside blocks)."""
    top: set[str] = set()
    anywhere: set[str] = set()
    for st, in_block, _ in statements:
        names: list[str] = []
        if isinstance(st, Assignment):
            names = [st.name]
        elif isinstance(st, Block):
            m = _FOR.match(st.text)
            if m:
                names = [m.group(1)]
            m = _C_FOR.match(st.text)
            if m:
                names = _ARITH_SET.findall(m.group(1))
        elif isinstance(st, Command) and st.words:
            names = _command_sets(st)
        anywhere.update(names)
        if not in_block and not isinstance(st, Block):  # (a loop's variable is set inside the loop)
            top.update(names)
    return anywhere, anywhere - top


def _command_sets(cmd: Command) -> list[str]:
    w = [x.value for x in cmd.words]
    name = w[0].rsplit("/", 1)[-1]
    if name in ("read", "mapfile", "readarray", "getopts"):
        out, skip = [], False
        args = w[2:] if name == "getopts" else w[1:]
        for i, a in enumerate(args):
            if skip:
                skip = False
            elif a == "-a" and i + 1 < len(args):
                out.append(args[i + 1])
                skip = True
            elif a in _READ_VALUE_OPTS:
                skip = True
            elif not a.startswith("-"):
                out.append(a)
        return [n for n in out if re.fullmatch(r"[A-Za-z_]\w*", n)]
    if name in _DECLARERS:
        return [a.split("=", 1)[0] for a in w[1:] if re.fullmatch(r"[A-Za-z_]\w*(=.*)?", a, re.S)]
    if name == "printf" and len(w) > 2 and w[1] == "-v":
        return [w[2]]
    if name == "let":
        return [n for a in w[1:] for n in _ARITH_SET.findall(a)]
    if w[0].startswith("(("):
        return _ARITH_SET.findall(cmd.text)
    return []


# ---- the findings -----------------------------------------------------------------------------------


def findings(script, job, intent, existing, array_expanded: bool) -> list[Finding]:
    """The findings of this module for one job (see the module docstring). `existing`: the findings made so
    far (not repeated); `array_expanded`: one TrainJob per array index (SLURM_ARRAY_TASK_ID is set)."""
    # (statement, inside a block, its expanded text), the text computed once for every check
    statements = [(st, b, _text(st)) for st, b in _statements(script.body, [])]
    return _findings(statements, job, intent, existing, array_expanded)


def _findings(statements, job, intent, existing, array_expanded: bool) -> list[Finding]:
    covered = {(f.code, f.line) for f in existing}
    out: list[Finding] = []
    out += _interfaces(statements)
    native = getattr(intent, "family", "script") != "script"
    names = _names_set(statements)
    if native:
        # a native family runs the launch command only (the other commands are dropped and reported as
        # such): what the launch line reads is checked by launchline.py; subscripts on its lines here
        lines = set(getattr(intent, "consumed_lines", ()) or ()) | {getattr(intent, "line", None)}
        carried = [e for e in statements if getattr(e[0], "line", None) in lines]
    else:
        out += _submission_env(statements, names, existing, job)
        carried = statements
    out += _sourced_files(statements, covered)
    if not any(f.code == "L345" for f in existing):  # (the fallback under `set -e` makes them no-ops)
        out += _terminal(statements, covered)
    out += _subscripts(statements, carried, names, job, native, array_expanded)
    out += _gpu_without_request(statements, job)
    return out


# P460 -------------------------------------------------------------------------------------------------

_IFACE_VARS = (
    "NCCL_SOCKET_IFNAME",
    "GLOO_SOCKET_IFNAME",
    "TP_SOCKET_IFNAME",
    "OMPI_MCA_btl_tcp_if_include",
    "OMPI_MCA_oob_tcp_if_include",
    "UCX_NET_DEVICES",
)
_MCA_IFACE = re.compile(r"(?:^|\s)--?mca\s+((?:btl|oob)_tcp_if_include)\s+(\S+)")
_POD_IFACE = re.compile(r"^(eth\d*|lo)$")


def _foreign_interfaces(name: str, value: str) -> list[str]:
    """The interfaces (or subnets) of `value` that a pod does not have (it has eth0 and lo)."""
    value = value.strip().strip("\"'")
    if not value or "$" in value or "`" in value or value.startswith("^") or value == "all":
        return []  # unknown, an exclusion list, or every device
    out = []
    for item in value.lstrip("=").split(","):
        item = item.strip()
        if name == "UCX_NET_DEVICES":
            item = item.split(":", 1)[0]
        if item and not _POD_IFACE.match(item):
            out.append(item)
    return out


def _interfaces(statements) -> list[Finding]:
    out = []
    for st, _, text in statements:
        pairs: list[tuple[str, str]] = []
        if isinstance(st, Assignment) and st.name in _IFACE_VARS and st.value.literal:
            pairs = [(st.name, st.value.value)]
        elif isinstance(st, Command) and st.words and ("_if_" in text or "IFNAME" in text or "UCX_NET" in text):
            words = [w.value for w in st.words if w.literal]
            text = " ".join(words)
            pairs = [(f"OMPI_MCA_{m.group(1)}", m.group(2)) for m in _MCA_IFACE.finditer(text)]
            pairs += [
                tuple(w.split("=", 1))  # type: ignore[misc]
                for w in words
                if w.split("=", 1)[0] in _IFACE_VARS and "=" in w
            ]
        for name, value in pairs:
            bad = _foreign_interfaces(name, value)
            if bad:
                out.append(
                    Finding(
                        WARNING,
                        "P460",
                        f"{name}={value} names network interfaces of the Slurm nodes ({', '.join(bad)}); a pod "
                        "has only eth0 and lo, so the library finds no such interface and fails or hangs",
                        st.line,
                        f"remove {name} (the library then picks the pod's interface) or set it to eth0",
                    )
                )
    return out


# L348 -------------------------------------------------------------------------------------------------

# `$NAME`, `${NAME}`, `${NAME[…]}`, `${NAME%…}` and the other forms that read NAME without a default
_READ = re.compile(r"\$(?:\{([A-Za-z_]\w*)(?:\[[^\]]*\])?(?:[#%/^,][^}]*)?\}|([A-Za-z_]\w*))")
# Set in every pod or by bash itself, by Slurm/the Trainer runtime inside the tasks, or harmless when empty
# (path lists the script extends).
_PROVIDED = frozenset(
    (
        "HOME PATH PWD OLDPWD HOSTNAME HOSTTYPE OSTYPE MACHTYPE SHELL SHLVL BASH BASH_VERSION BASH_SOURCE "
        "BASH_REMATCH BASH_LINENO BASH_ARGV BASH_ARGC BASH_COMMAND BASH_SUBSHELL BASH_VERSINFO BASHPID "
        "BASHOPTS SHELLOPTS PIPESTATUS GROUPS FUNCNAME LINENO RANDOM SRANDOM SECONDS EPOCHSECONDS "
        "EPOCHREALTIME UID EUID PPID IFS REPLY OPTARG OPTIND OPTERR DIRSTACK HISTFILE HISTSIZE COLUMNS LINES "
        "PS1 PS2 PS4 TERM LANG LANGUAGE TZ TMPDIR CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL ROCR_VISIBLE_DEVICES "
        "MASTER_ADDR MASTER_PORT WORLD_SIZE RANK LOCAL_RANK NODE_RANK GROUP_RANK LOCAL_WORLD_SIZE "
        "JOB_COMPLETION_INDEX VIRTUAL_ENV"
    ).split()
)
_PROVIDED_PREFIX = ("SLURM", "SBATCH_", "SRUN_", "SALLOC_", "PMI", "OMPI_", "PET_", "KUBERNETES_", "CONDA", "MAMBA")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_MODULE_LIKE = re.compile(r"^(EB|CRAY_|PE_|LMOD|MODULE)|_(ROOT|HOME|DIR|PREFIX|VERSION|BASE|INC|LIB)$")


def _not_from_submission(n: str, anywhere, modules: bool) -> bool:
    """True when `n` is set by the script, bash, Slurm, the pod or a module, or is not an environment-style
    (upper-case) name: then its value does not come from the submission environment."""
    return (
        n in anywhere
        or not _ENV_NAME.fullmatch(n)
        or n in _PROVIDED
        or n.startswith(_PROVIDED_PREFIX)
        or n.endswith("PATH")
        or bool(modules and _MODULE_LIKE.search(n))
    )


def _exported(job) -> tuple[bool, set[str], set[str]]:
    """What sbatch's `--export` lets through (sbatch(1)): (the whole submission environment, the names it
    passes on, the names it sets itself with NAME=value)."""
    value = getattr(getattr(job, "fields", None), "export", None) or "ALL"
    items = [i for i in value.split(",") if i]
    everything = bool(items) and items[0].upper() == "ALL"
    given = {i.split("=", 1)[0] for i in items if "=" in i}
    named = {i for i in items if "=" not in i and i.upper() not in ("ALL", "NONE", "NIL")}
    return everything, named, given


def _submission_env(statements, names, existing, job) -> list[Finding]:
    everything, named, given = _exported(job)
    if not everything and not named:
        return []  # --export=NONE: nothing came from the submission environment
    commands = [st for st, _, _ in statements if isinstance(st, Command) and st.words]
    if any(c.kind == SOURCE or c.words[0].value == "eval" for c in commands):
        return []  # a sourced file or an eval may set anything: not guessed
    modules = any(c.kind == "module" for c in commands)
    anywhere, _ = names
    reported = {f.message for f in existing if f.code == "L348"}
    reads: dict[str, dict[int, None]] = {}
    decided: dict[str, bool] = {}  # name -> not a submission-environment variable
    for st, _, text in statements:
        if "$" not in text:
            continue
        for m in _READ.finditer(text):
            n = m.group(1) or m.group(2)
            skip = decided.get(n)
            if skip is None:
                skip = decided[n] = (
                    _not_from_submission(n, anywhere, modules) or n in given or not (everything or n in named)
                )
            if not skip:
                reads.setdefault(n, {})[st.line] = None  # (a dict: the lines in order, each once)
    out = []
    for n, seen in reads.items():
        lines = list(seen)
        if any(f"${n}," in m or f"${n} " in m for m in reported):
            continue  # the launch line's own finding says it
        where = ", ".join(str(x) for x in lines[:5]) + (" …" if len(lines) > 5 else "")
        out.append(
            Finding(
                WARNING,
                "L348",
                f"${n} is read (line {where}) but the script never sets it: on Slurm it came from the submission "
                "environment (sbatch exports it); in a pod it is unset",
                lines[0],
                f"set {n} in the script, or add it to the TrainJob env",
            )
        )
    return out


# P461 -------------------------------------------------------------------------------------------------

_SITE_FILE = re.compile(
    r"^(~|\$HOME\b|\$\{HOME\}|/etc/profile\.d/|/etc/(bashrc|bash\.bashrc|environment)$|/opt/|/apps?/|/sw/|/share/|/global/|/cvmfs/|/usr/share/(lmod|modules|Modules)/|\$MODULESHOME|\$\{MODULESHOME\})"
)
_ACTIVATION = re.compile(r"(conda|mamba)\.sh$|/activate$")


def _sourced_files(statements, covered) -> list[Finding]:
    out = []
    for st, _, _ in statements:
        if not isinstance(st, Command) or st.kind in (CONDA, VENV) or len(st.words) < 2:
            continue
        if st.words[0].value not in ("source", ".") or ("P440", st.line) in covered:
            continue
        path = st.words[1].raw.strip("\"'")
        if not _SITE_FILE.match(path) or _ACTIVATION.search(path):
            continue
        home = path.startswith(("~", "$HOME", "${HOME}"))
        out.append(
            Finding(
                WARNING,
                "P461",
                f"`{st.text.strip()}` reads a file of the "
                + ("user's home directory on the cluster" if home else "Slurm site (its module system or setup)")
                + ", which the pod's image does not have: `source` fails there (and stops a `set -e` script), "
                "and what the file set up is missing",
                st.line,
                "build what the file sets up into the image and remove the line",
            )
        )
    return out


# P462 -------------------------------------------------------------------------------------------------

_TERMINAL = ("clear", "tput", "reset")
_TERMINAL_SUB = re.compile(r"(\$\(|`)\s*(clear|tput|reset)\b")


def _terminal(statements, covered) -> list[Finding]:
    out = []
    for st, _, text in statements:
        used = None
        if isinstance(st, Command) and st.words and st.words[0].value in _TERMINAL:
            used = st.words[0].value
        else:
            m = _TERMINAL_SUB.search(text)
            used = m.group(2) if m else None
        if used is None or any((c, st.line) in covered for c in ("L345", "P435", "P436")):
            continue
        out.append(
            Finding(
                WARNING,
                "P462",
                f"`{used}` needs a terminal; a pod has none (TERM is unset): it prints an error and fails "
                "(which stops a `set -e` script), and `$(tput …)` expands empty",
                st.line,
                f"remove `{used}` from the script",
            )
        )
    return out


# P463 -------------------------------------------------------------------------------------------------

_SUBSCRIPT = re.compile(r"\$\{([A-Za-z_]\w*)\[\s*\$?\{?([A-Za-z_]\w*)\}?\s*\]\}")


def _subscripts(statements, carried, names, job, native: bool, array_expanded: bool) -> list[Finding]:
    """P463 for the subscripts of the `carried` statements (`statements`: the whole body; `names`: what
    _names_set says of it)."""
    anywhere, block_only = names
    from_array_id = {
        st.name
        for st, _, _ in statements
        if isinstance(st, Assignment) and re.fullmatch(r'"?\$\{?SLURM_ARRAY_TASK_ID\}?"?', st.value.raw)
    }
    array_job = bool(getattr(getattr(job, "fields", None), "array", None))
    out = []
    for st, _, text in carried:
        for m in _SUBSCRIPT.finditer(text):
            arr, var = m.group(1), m.group(2)
            why = None
            if var == "SLURM_ARRAY_TASK_ID" or var in from_array_id:
                if array_job and not array_expanded:
                    why = (
                        "SLURM_ARRAY_TASK_ID, which the one TrainJob standing for the whole array does not set, "
                        "so every run reads element 0"
                    )
            elif var.startswith("SLURM"):
                continue
            elif var not in anywhere:
                why = f"{var}, which the script never sets, so bash reads element 0"
            elif native and var in block_only:
                why = f"{var}, which only a loop or block of the script sets, and the TrainJob does not run it"
            if why:
                out.append(
                    Finding(
                        WARNING,
                        "P463",
                        f"`{m.group(0)}` selects an element of {arr} by {why}",
                        st.line,
                        "write the element's value, or use --array-mode expand for array jobs",
                    )
                )
    return out


# P464 -------------------------------------------------------------------------------------------------

_GPU_VAR = re.compile(r"^(GPUS_PER_NODE|NUM_GPUS|N_GPUS|NGPUS|GPUS|NUM_GPUS_PER_NODE|GPU_PER_NODE)$")
_GPU_ARG = re.compile(r"(?:^|\s)--(?:gpus|num_gpus|num-gpus|ngpus|n_gpus|gpus_per_node|gpus-per-node)[= ](\d+)")
_NPROC = re.compile(r"--nproc[_-]per[_-]node[= ](\S+)")


def _gpu_signals(statements) -> list[tuple[str, int]]:
    signals: list[tuple[str, int]] = []
    for st, _, text in statements:
        if isinstance(st, Assignment):
            if st.name.startswith("NCCL_"):
                signals.append((f"{st.name} (NCCL runs on GPUs only)", st.line))
            elif _GPU_VAR.match(st.name) and st.value.literal and st.value.value.isdigit() and int(st.value.value):
                signals.append((f"{st.name}={st.value.value}", st.line))
            continue
        if not text or not isinstance(st, Command):
            continue
        m = _GPU_ARG.search(text)
        if m and int(m.group(1)) > 0:
            signals.append((m.group(0).strip(), st.line))
        m = _NPROC.search(text)
        if m and m.group(1).strip("\"'") == "gpu":
            signals.append((m.group(0), st.line))
        if "torch.cuda" in text or re.search(r"backend[= ]nccl\b", text):
            signals.append(("CUDA/NCCL in the command", st.line))
    return signals


def _gpu_without_request(statements, job) -> list[Finding]:
    from translator.launchers.common import job_shape

    fields = getattr(job, "fields", None)
    if fields is None or job_shape(fields).gpus_per_node:
        return []
    signals = _gpu_signals(statements)
    if not signals and getattr(fields, "exclusive", None):
        # 2 or more processes per node on a whole node: the partition's GPUs
        for st, _, text in statements:
            m = _NPROC.search(text) if isinstance(st, Command) else None
            if m and m.group(1).isdigit() and int(m.group(1)) >= 2:
                signals.append((f"{m.group(0)} on an --exclusive node", st.line))
                break
    if not signals:
        return []
    listed = "; ".join(f"{s} (line {ln})" for s, ln in signals[:4])
    return [
        Finding(
            WARNING,
            "P464",
            f"the script trains on GPUs ({listed}) but requests none: on Slurm the partition gave the node's "
            "GPUs; a pod without a GPU request gets no GPU",
            signals[0][1],
            "add `#SBATCH --gpus-per-node=N` (or `--gres=gpu:N`), or map the partition to GPUs in a site profile",
        )
    ]
