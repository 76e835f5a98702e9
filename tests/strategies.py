"""Hypothesis strategies that write sbatch scripts from the grammar's own vocabulary.

Used by the property tests (tests/test_fuzz_*.py), the injection tests and benchmarks/fuzz_long.py.

What is generated:
  * header directives built from Slurm 22.05's real `sbatch` option table (`sbatch --help` of the
    oracle's Slurm 22.05.8): long, short and abbreviated names, in `--opt=v`, `--opt v`, `-Xv` and
    `-X v` forms, with valid values of the right grammar (counts, ranges, memory sizes, times, gres,
    arrays, signals ...) or random/hostile text, quoted or backslash-escaped as sbatch's tokenizer
    reads them, with trailing comments;
  * odd prefixes sbatch does not apply (`# SBATCH`, `##SBATCH`, indented, `#SBATCh`, `#SBTACH`),
    `#SLURM`, `#PBS`, hetjob separators, CRLF and mixed line endings;
  * bodies: launch lines (srun, torchrun, python -m torch.distributed.run, mpirun, deepspeed,
    accelerate launch, python, apptainer/singularity exec, pyxis) with random flags, exports with
    hostile values, pip installs, module loads, conda/venv activation, heredocs (terminated or not),
    functions, loops, conditionals, nested to random depth;
  * raw bytes.

`tagged_scripts()` also returns the user-supplied strings it planted (each carries MARKER) so a test
can check where they end up in the emitted YAML and Python.

This module also holds the small adapters the hardening tests share (paths of the shared oracles,
in-process pipeline calls), because they are test infrastructure, not product code.
"""

from __future__ import annotations

import os
import shlex
import string
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

# --------------------------------------------------------------------------------------------------
# Paths and shared instruments
# --------------------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SLURM2KF_SHARED", str(REPO.parent / "shared")))
CRD = SHARED / "kubeflow" / "crds" / "trainer.kubeflow.org_trainjobs.yaml"
KF_ORACLE = SHARED / "kubeflow" / "oracle"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"

# A token planted in every user-supplied string of tagged scripts. Alphanumeric, so that no escaping
# (shell, sbatch tokenizer, YAML, Python repr) can split it: wherever it appears in an output, the
# user's text is there.
MARKER = "Zq9Xu"

# --------------------------------------------------------------------------------------------------
# sbatch 22.05 option table (from `sbatch --help` of Slurm 22.05.8, plus the options it accepts but
# does not list there). kind: "req" = required argument, "opt" = optional argument (needs `=`),
# "none" = flag. vtype picks the value grammar.
# --------------------------------------------------------------------------------------------------

OPTIONS: tuple[tuple[str, str, str, str], ...] = (
    # (long name, short letter or "", kind, value type)
    ("account", "A", "req", "word"),
    ("acctg-freq", "", "req", "word"),
    ("array", "a", "req", "array"),
    ("batch", "", "req", "word"),
    ("bb", "", "req", "text"),
    ("bbf", "", "req", "path"),
    ("begin", "b", "req", "begin"),
    ("chdir", "D", "req", "path"),
    ("cluster-constraint", "", "req", "word"),
    ("clusters", "M", "req", "word"),
    ("comment", "", "req", "text"),
    ("constraint", "C", "req", "constraint"),
    ("container", "", "req", "path"),
    ("contiguous", "", "none", ""),
    ("core-spec", "S", "req", "int"),
    ("cores-per-socket", "", "req", "int"),
    ("cpu-freq", "", "req", "word"),
    ("cpus-per-gpu", "", "req", "int"),
    ("cpus-per-task", "c", "req", "int"),
    ("deadline", "", "req", "begin"),
    ("delay-boot", "", "req", "int"),
    ("dependency", "d", "req", "dependency"),
    ("distribution", "m", "req", "word"),
    ("error", "e", "req", "pattern"),
    ("exclude", "x", "req", "hostlist"),
    ("exclusive", "", "opt", "exclusive"),
    ("export", "", "req", "export"),
    ("export-file", "", "req", "path"),
    ("extra-node-info", "B", "req", "word"),
    ("get-user-env", "", "opt", "word"),
    ("gid", "", "req", "word"),
    ("gpu-bind", "", "req", "word"),
    ("gpu-freq", "", "req", "word"),
    ("gpus", "G", "req", "gpus"),
    ("gpus-per-node", "", "req", "gpus"),
    ("gpus-per-socket", "", "req", "gpus"),
    ("gpus-per-task", "", "req", "gpus"),
    ("gres", "", "req", "gres"),
    ("gres-flags", "", "req", "word"),
    ("help", "h", "none", ""),
    ("hint", "", "req", "word"),
    ("hold", "H", "none", ""),
    ("ignore-pbs", "", "none", ""),
    ("input", "i", "req", "path"),
    ("job-name", "J", "req", "text"),
    ("kill-on-invalid-dep", "", "req", "yesno"),
    ("licenses", "L", "req", "word"),
    ("mail-type", "", "req", "mailtype"),
    ("mail-user", "", "req", "word"),
    ("mcs-label", "", "req", "word"),
    ("mem", "", "req", "mem"),
    ("mem-bind", "", "req", "word"),
    ("mem-per-cpu", "", "req", "mem"),
    ("mem-per-gpu", "", "req", "mem"),
    ("mincpus", "", "req", "int"),
    ("network", "", "req", "word"),
    ("nice", "", "opt", "int"),
    ("no-kill", "k", "opt", "word"),
    ("no-requeue", "", "none", ""),
    ("nodefile", "F", "req", "path"),
    ("nodelist", "w", "req", "hostlist"),
    ("nodes", "N", "req", "nodes"),
    ("ntasks", "n", "req", "int"),
    ("ntasks-per-core", "", "req", "int"),
    ("ntasks-per-gpu", "", "req", "int"),
    ("ntasks-per-node", "", "req", "int"),
    ("ntasks-per-socket", "", "req", "int"),
    ("open-mode", "", "req", "word"),
    ("output", "o", "req", "pattern"),
    ("overcommit", "O", "none", ""),
    ("oversubscribe", "s", "none", ""),
    ("parsable", "", "none", ""),
    ("partition", "p", "req", "word"),
    ("power", "", "req", "word"),
    ("priority", "", "req", "int"),
    ("profile", "", "req", "word"),
    ("propagate", "", "opt", "word"),
    ("qos", "q", "req", "word"),
    ("quiet", "Q", "none", ""),
    ("reboot", "", "none", ""),
    ("requeue", "", "opt", "word"),
    ("reservation", "", "req", "word"),
    ("signal", "", "req", "signal"),
    ("sockets-per-node", "", "req", "int"),
    ("spread-job", "", "none", ""),
    ("switches", "", "req", "word"),
    ("tasks-per-node", "", "req", "int"),
    ("test-only", "", "none", ""),
    ("thread-spec", "", "req", "int"),
    ("threads-per-core", "", "req", "int"),
    ("time", "t", "req", "time"),
    ("time-min", "", "req", "time"),
    ("tmp", "", "req", "mem"),
    ("uid", "", "req", "word"),
    ("use-min-nodes", "", "none", ""),
    ("verbose", "v", "none", ""),
    ("wait", "W", "none", ""),
    ("wait-all-nodes", "", "req", "int"),
    ("wckey", "", "req", "word"),
    # SPANK (pyxis) options: valid only where the plugin is installed
    ("container-image", "", "req", "image"),
    ("container-mounts", "", "req", "path"),
)
OPTION_NAMES = tuple(o[0] for o in OPTIONS)

# Characters that break naive readers/emitters: quotes, escapes, shell and YAML/Python syntax.
HOSTILE_FRAGMENTS = (
    "'",
    '"',
    "\\",
    "\\\\",
    "$(id)",
    "`id`",
    "${HOME}",
    "$HOME",
    ": ",
    "- ",
    "{",
    "}",
    "[",
    "]",
    "&anchor",
    "*anchor",
    "!!python/object:os.system",
    "!!python/name:os.system",
    "#",
    "# c",
    "%",
    "@",
    "|",
    ">",
    "<",
    "&",
    ";",
    "\t",
    "?",
    ",",
    "=",
    "~",
    "*",
    "\u00e9",
    "\u2028",
    "\u0085",
    "null",
    "true",
    "yes",
    "no",
    "on",
    "~",
    "0x1F",
    "1e3",
    "08",
    "'''",
    '"""',
    "\\n",
    "\\x00",
    "__import__('os').system('id')",
    "\"; import os; os.system('id') #",
    "'); exec('1') #",
    "{{nodes}}",
    "<netid>",
    "---",
    "...",
    "%YAML 1.1",
    "? ",
    "!",
    "\ufeff",
)

_PRINTABLE = string.ascii_letters + string.digits + "._-/+:@%,="


def hostile_text(min_size: int = 0, max_size: int = 40, allow_newline: bool = False):
    """Text mixing plain characters, hostile fragments and random unicode (no NUL; optional \\n)."""
    excluded = "\x00" if allow_newline else "\x00\n\r"
    return (
        st.lists(
            st.one_of(
                st.text(alphabet=_PRINTABLE, min_size=1, max_size=8),
                st.sampled_from(HOSTILE_FRAGMENTS),
                st.text(
                    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=excluded),
                    min_size=1,
                    max_size=4,
                ),
            ),
            min_size=0,
            max_size=max(1, max_size // 4),
        )
        .map("".join)
        .map(lambda s: s[:max_size])
        .filter(lambda s: len(s) >= min_size)
    )


# ---- option values --------------------------------------------------------------------------------

_ints = st.integers(min_value=0, max_value=4096).map(str)
_small = st.integers(min_value=1, max_value=64)


def _mem():
    return st.one_of(
        st.builds(
            lambda n, u, b: f"{n}{u}{b}",
            st.integers(0, 1 << 20),
            st.sampled_from(["", "K", "M", "G", "T", "k", "m", "g", "t"]),
            st.sampled_from(["", "", "B", "b"]),
        ),
        st.sampled_from(["0", "1.5G", "-1", "32GB", "4096MiB", "G", "99999999999999999999T", "1e3M"]),
    )


def _time():
    return st.one_of(
        st.integers(0, 100000).map(str),
        st.builds(lambda m, s: f"{m}:{s:02d}", st.integers(0, 999), st.integers(0, 99)),
        st.builds(lambda h, m, s: f"{h}:{m:02d}:{s:02d}", st.integers(0, 999), st.integers(0, 99), st.integers(0, 99)),
        st.builds(lambda d, h: f"{d}-{h}", st.integers(0, 365), st.integers(0, 99)),
        st.builds(lambda d, h, m: f"{d}-{h}:{m:02d}", st.integers(0, 365), st.integers(0, 99), st.integers(0, 99)),
        st.builds(
            lambda d, h, m, s: f"{d}-{h:02d}:{m:02d}:{s:02d}",
            st.integers(0, 365),
            st.integers(0, 99),
            st.integers(0, 99),
            st.integers(0, 99),
        ),
        st.sampled_from(["UNLIMITED", "unlimited", "INFINITE", "-1", "0", "1:2:3:4", "1-2-3", "1:00-2", "abc", ""]),
    )


def _nodes():
    return st.one_of(
        _small.map(str),
        st.builds(lambda a, b: f"{a}-{b}", _small, _small),
        st.sampled_from(["1k", "2m", "1,2,4", "2-8:2", "0", "-1", "x"]),
    )


def _gres():
    one = st.one_of(
        st.builds(lambda n: f"gpu:{n}", _small),
        st.builds(lambda t, n: f"gpu:{t}:{n}", st.sampled_from(["a100", "v100", "h100", "A100-80GB"]), _small),
        st.sampled_from(
            ["gpu", "gpu:a100", "gres/gpu:2", "none", "mps:100", "gpu:1k", "nvme:1", "gpu::2", "gpu:a100:"]
        ),
    )
    return st.lists(one, min_size=1, max_size=3).map(",".join)


def _gpus():
    return st.one_of(
        _small.map(str),
        st.builds(lambda t, n: f"{t}:{n}", st.sampled_from(["a100", "v100", "h100"]), _small),
        st.sampled_from(["a100:2,v100:1", "0", "x", ":4"]),
    )


def _array():
    tok = st.one_of(
        st.integers(0, 2000).map(str),
        st.builds(lambda a, b: f"{a}-{b}", st.integers(0, 1000), st.integers(0, 1000)),
        st.builds(lambda a, b, s: f"{a}-{b}:{s}", st.integers(0, 1000), st.integers(0, 1000), st.integers(0, 50)),
    )
    return st.builds(
        lambda toks, thr: ",".join(toks) + thr,
        st.lists(tok, min_size=1, max_size=4),
        st.one_of(st.just(""), st.integers(0, 20).map(lambda t: f"%{t}")),
    )


def _dependency():
    typ = st.sampled_from(["after", "afterany", "afterok", "afternotok", "aftercorr", "afterburstbuffer", "bogus"])
    clause = st.builds(
        lambda t, ids: f"{t}:" + ":".join(map(str, ids)), typ, st.lists(st.integers(1, 10**7), min_size=1, max_size=3)
    )
    return st.one_of(
        st.just("singleton"),
        st.lists(clause, min_size=1, max_size=3).map(",".join),
        st.lists(clause, min_size=2, max_size=3).map("?".join),
    )


# Digits that Python's str.isdigit()/int() treat as digits but C's isdigit()/strtol() (sbatch) do not:
# superscripts, Arabic-Indic, fullwidth, Devanagari.
_UNICODE_DIGITS = str.maketrans({"1": "\u00b9", "2": "\u00b2", "3": "\u0663", "4": "\uff14", "5": "\u096b"})


def value_for(vtype: str):
    """A value of the option's grammar (valid most of the time, sometimes invalid or hostile)."""
    if vtype in ("text", "word", "path"):
        return _value_for(vtype)
    return st.tuples(_value_for(vtype), st.integers(0, 9)).map(
        lambda t: t[0].translate(_UNICODE_DIGITS) if t[1] == 0 else t[0]
    )


def _value_for(vtype: str):
    by_type = {
        "int": st.one_of(_ints, st.sampled_from(["-1", "1.5", "x", "", "99999999999999999999"])),
        "mem": _mem(),
        "time": _time(),
        "nodes": _nodes(),
        "gres": _gres(),
        "gpus": _gpus(),
        "array": _array(),
        "dependency": _dependency(),
        "begin": st.sampled_from(["now+1hour", "16:00", "2026-01-01T10:00:00", "tomorrow", "midnight"]),
        "constraint": st.sampled_from(["a100", "a100&ib", "[rack1|rack2]", "gpu*2", "(a|b)&c"]),
        "exclusive": st.sampled_from(["user", "mcs", "topo", "bogus"]),
        "export": st.sampled_from(["ALL", "NONE", "NIL", "ALL,FOO=bar", "A,B=c"]),
        "hostlist": st.sampled_from(["node[01-04]", "gpu01,gpu02", "/tmp/hosts", "n[1-3,7]"]),
        "mailtype": st.sampled_from(["ALL", "BEGIN,END", "FAIL", "TIME_LIMIT_90", "NONE", "bogus"]),
        "signal": st.sampled_from(["USR1", "B:USR1@300", "R:10@60", "SIGTERM@120", "B:", "@x"]),
        "yesno": st.sampled_from(["yes", "no", "maybe"]),
        "pattern": st.one_of(
            st.sampled_from(["logs/%x-%j.out", "slurm-%A_%a.out", "%4j.log", "out\\_%j", "/dev/null"]),
            hostile_text(1, 30),
        ),
        "path": st.one_of(st.sampled_from(["/scratch/$USER", "~/work", "data dir/x", "/tmp/a b"]), hostile_text(1, 30)),
        "image": st.sampled_from(["nvcr.io#nvidia/pytorch:24.01-py3", "docker://ubuntu:22.04", "./img.sif"]),
        "word": st.one_of(st.text(alphabet=_PRINTABLE, min_size=1, max_size=12), hostile_text(1, 12)),
        "text": hostile_text(0, 40),
    }
    return by_type.get(vtype, by_type["word"])


# ---- directive words (as sbatch's tokenizer reads them) --------------------------------------------

_C_SPACE = " \t\n\v\f\r"  # C isspace() in the "C" locale


def sbatch_escape(value: str) -> str:
    """Write `value` so that sbatch's get_argument() yields exactly `value` as one word.

    In opt.c the word loop tests `quoted || !isspace(c)` before it looks at a backslash, so an
    unquoted `\\ ` ends the word; inside quotes a backslash still escapes the next character and
    `#` is literal. Hence: double quotes around the whole value, `\\` before `\\` and `"`.
    """
    if value and not any(c in _C_SPACE or c in "'\"#\\" for c in value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@st.composite
def directive_token(draw, value: str) -> str:
    """`value` as one directive word: escaped, quoted (when quoting yields it exactly) or raw."""
    how = draw(st.sampled_from(["escape", "escape", "dquote", "squote", "raw"]))
    if how == "dquote" and '"' not in value and "\\" not in value:
        return '"' + value + '"'
    if how == "squote" and "'" not in value and "\\" not in value:
        return "'" + value + "'"
    if how == "raw":
        return value  # may be split, truncated by `#`, or leave an unmatched quote: all legal inputs
    if how == "escape" and not any(c in _C_SPACE for c in value):
        return "".join("\\" + c if c in "'\"#\\" else c for c in value)
    return sbatch_escape(value)


def abbreviate(draw, name: str) -> str:
    """A getopt-style prefix of `name` (may be ambiguous, which sbatch reports as an error)."""
    if draw(st.integers(0, 4)) == 0 and len(name) > 3:
        return name[: draw(st.integers(2, len(name)))]
    return name


@st.composite
def option_words(draw) -> str:
    """One option with its argument in one of getopt's accepted (or nearly accepted) forms."""
    if draw(st.integers(0, 30)) == 0:  # unknown or mistyped option
        return draw(
            st.sampled_from(
                [
                    "--nodez=2",
                    "--gpu=4",
                    "-Z",
                    "--",
                    "-",
                    "---nodes=2",
                    "--=3",
                    "--mem-per=4G",
                    "--excl",
                    ":",
                    ":x",
                    "--exclusive user",
                    "hetjob",
                    "packjob",
                ]
            )
        )
    long, short, kind, vtype = draw(st.sampled_from(OPTIONS))
    name = abbreviate(draw, long)
    if kind == "none":
        return f"-{short}" if short and draw(st.booleans()) else f"--{name}"
    value = draw(value_for(vtype))
    if kind == "opt":
        return f"--{name}" if draw(st.booleans()) else f"--{name}=" + draw(directive_token(value))
    tok = draw(directive_token(value))
    forms = ["eq", "space"] + (["glued", "short_space"] if short else [])
    form = draw(st.sampled_from(forms))
    if form == "eq":
        return f"--{name}={tok}"
    if form == "space":
        return f"--{name} {tok}"
    if form == "glued":
        return f"-{short}{tok}"
    return f"-{short} {tok}"


PREFIXES = (
    "#SBATCH ",
    "#SBATCH ",
    "#SBATCH ",
    "#SBATCH",
    "#SBATCH\t",
    "#SLURM ",
    "# SBATCH ",
    "##SBATCH ",
    "  #SBATCH ",
    "\t#SBATCH ",
    "#SBATCh ",
    "#sbatch ",
    "#SBTACH ",
    "#PBS -l ",
    "#BSUB -n ",
)


@st.composite
def directive_line(draw) -> str:
    prefix = draw(st.sampled_from(PREFIXES))
    words = draw(st.lists(option_words(), min_size=1, max_size=3))
    line = prefix + " ".join(words)
    if draw(st.integers(0, 4)) == 0:
        line += draw(st.sampled_from(["  # trailing comment", " #", "# c: {x}", " # $(rm -rf /)"]))
    return line


@st.composite
def header_lines(draw) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.integers(0, 12))
        if kind == 0:
            lines.append("")
        elif kind == 1:
            lines.append("# " + draw(hostile_text(0, 30)))
        elif kind == 2:
            lines.append("#SBATCH hetjob" if draw(st.booleans()) else "#SBATCH packjob")
        else:
            lines.append(draw(directive_line()))
    return lines


# ---- body ------------------------------------------------------------------------------------------


def shell_quote(value: str) -> str:
    """Quote `value` so that bash reads it back as exactly `value` (no expansion)."""
    return shlex.quote(value)


_PY_FLAGS = (
    "--epochs 10",
    "--lr=3e-4",
    "--config cfg.yaml",
    "--data /scratch/$USER/data",
    "-v",
    "--seed=$RANDOM",
    '--out "$SLURM_SUBMIT_DIR/out"',
    "$@",
    '"$@"',
    "--name 'a b'",
)
_SRUN_FLAGS = (
    "-N2",
    "--nodes=2",
    "-n 8",
    "--ntasks-per-node=1",
    "--gpus-per-task=1",
    "--mpi=pmix",
    "--cpu-bind=cores",
    "--container-image=nvcr.io#nvidia/pytorch:24.01-py3",
    "--container-mounts=/data:/data",
    "-l",
    "--export=ALL",
    "--kill-on-bad-exit=1",
    "-u",
    "--overlap",
    '-w "$head"',
)
_TORCHRUN_FLAGS = (
    "--nnodes $SLURM_NNODES",
    "--nnodes=2",
    "--nproc_per_node 8",
    "--nproc-per-node=4",
    "--rdzv_backend c10d",
    "--rdzv_endpoint $MASTER_ADDR:29500",
    "--rdzv-id=$SLURM_JOB_ID",
    "--node_rank $SLURM_NODEID",
    "--master_addr $head",
    "--master_port=12345",
    "--standalone",
    "--max-restarts 3",
)
_MPI_FLAGS = (
    "-np 16",
    "-n $SLURM_NTASKS",
    "--hostfile hosts",
    "-x NCCL_DEBUG",
    "--bind-to none",
    "-map-by slot",
    "--mca btl ^openib",
    "-N 4",
)
_DS_FLAGS = (
    "--num_gpus 8",
    "--num_nodes 2",
    "--hostfile=hostfile",
    "--launcher slurm",
    "--master_addr $head",
    "--include localhost:0,1",
)
_ACC_FLAGS = (
    "--num_processes 16",
    "--num_machines $SLURM_NNODES",
    "--machine_rank $SLURM_NODEID",
    "--main_process_ip $head",
    "--main_process_port 29500",
    "--multi_gpu",
    "--mixed_precision bf16",
    "--config_file acc.yaml",
)
_CONTAINER_FLAGS = ("--nv", "--bind /scratch:/scratch", "-B /data", "--cleanenv", "--writable-tmpfs")


def _flags(pool):
    return st.lists(st.sampled_from(pool), max_size=5).map(" ".join)


@st.composite
def python_target(draw) -> str:
    target = draw(
        st.sampled_from(
            [
                "train.py",
                "-m pkg.train",
                "scripts/run.py",
                "-c 'import jax; jax.distributed.initialize()'",
                '"$SCRIPT"',
                "-u train.py",
            ]
        )
    )
    return f"{target} {draw(_flags(_PY_FLAGS))}".strip()


@st.composite
def launch_line(draw) -> str:
    family = draw(
        st.sampled_from(
            [
                "srun",
                "torchrun",
                "torchrun-m",
                "mpirun",
                "deepspeed",
                "accelerate",
                "python",
                "apptainer",
                "srun-torchrun",
                "srun-python",
                "pyxis",
                "srun-bash",
            ]
        )
    )
    py = draw(python_target())
    if family == "srun":
        return f"srun {draw(_flags(_SRUN_FLAGS))} ./app {draw(_flags(_PY_FLAGS))}"
    if family == "torchrun":
        return f"torchrun {draw(_flags(_TORCHRUN_FLAGS))} {py}"
    if family == "torchrun-m":
        mod = draw(st.sampled_from(["torch.distributed.run", "torch.distributed.launch"]))
        return f"python -m {mod} {draw(_flags(_TORCHRUN_FLAGS))} {py}"
    if family == "mpirun":
        return f"{draw(st.sampled_from(['mpirun', 'mpiexec']))} {draw(_flags(_MPI_FLAGS))} python {py}"
    if family == "deepspeed":
        return f"deepspeed {draw(_flags(_DS_FLAGS))} {py} --deepspeed ds.json"
    if family == "accelerate":
        return f"accelerate launch {draw(_flags(_ACC_FLAGS))} {py}"
    if family == "python":
        return f"{draw(st.sampled_from(['python', 'python3', 'python3.11']))} {py}"
    if family == "apptainer":
        tool = draw(st.sampled_from(["apptainer", "singularity"]))
        img = draw(st.sampled_from(["img.sif", "docker://nvcr.io/nvidia/pytorch:24.01-py3", "$IMG", "/shared/x.sif"]))
        return f"srun {tool} exec {draw(_flags(_CONTAINER_FLAGS))} {img} python {py}"
    if family == "srun-torchrun":
        return f"srun {draw(_flags(_SRUN_FLAGS))} torchrun {draw(_flags(_TORCHRUN_FLAGS))} {py}"
    if family == "srun-python":
        return f"srun {draw(_flags(_SRUN_FLAGS))} python {py}"
    if family == "pyxis":
        return f"srun --container-image=nvcr.io#nvidia/pytorch:24.01-py3 {draw(_flags(_SRUN_FLAGS))} python {py}"
    return f"srun bash -c 'torchrun --node_rank=$SLURM_NODEID {draw(_flags(_TORCHRUN_FLAGS))} {py}'"


_ENV_NAMES = (
    "NCCL_DEBUG",
    "OMP_NUM_THREADS",
    "MASTER_ADDR",
    "MASTER_PORT",
    "PYTHONPATH",
    "HF_HOME",
    "WANDB_PROJECT",
    "PET_NNODES",
    "OMPI_MCA_btl",
    "LD_LIBRARY_PATH",
    "X",
    "_x1",
    "data_dir",
)


@st.composite
def export_line(draw) -> str:
    name = draw(st.sampled_from(_ENV_NAMES))
    value = draw(hostile_text(0, 40, allow_newline=draw(st.integers(0, 5)) == 0))
    style = draw(st.sampled_from(["export_sq", "plain_sq", "export_dq", "raw", "declare"]))
    if style == "export_sq":
        return f"export {name}={shell_quote(value)}"
    if style == "plain_sq":
        return f"{name}={shell_quote(value)}"
    if style == "declare":
        return f"declare -x {name}={shell_quote(value)}"
    if style == "export_dq":
        return f'export {name}="' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"export {name}={value}"  # raw: may be broken shell, which the reader must survive


@st.composite
def simple_statement(draw) -> str:
    kind = draw(st.integers(0, 14))
    if kind <= 2:
        return draw(launch_line())
    if kind == 3:
        return draw(export_line())
    if kind == 4:
        pkgs = draw(
            st.lists(
                st.sampled_from(
                    [
                        "torch==2.3.0",
                        "transformers>=4.40",
                        "-r requirements.txt",
                        "numpy",
                        "--index-url https://example.org/simple",
                        "-U",
                        "'deepspeed[all]'",
                        "--extra-index-url=https://x.y/simple",
                        "-e .",
                    ]
                ),
                min_size=1,
                max_size=4,
            )
        )
        tool = draw(st.sampled_from(["pip install", "pip3 install", "python -m pip install", "pip install --user"]))
        return f"{tool} {' '.join(pkgs)}"
    if kind == 5:
        mods = draw(
            st.lists(
                st.sampled_from(["cuda/12.1", "nccl", "gcc/11", "openmpi/4.1", "anaconda3"]), min_size=1, max_size=3
            )
        )
        verb = draw(
            st.sampled_from(["module load", "module purge", "ml", "module use /opt/mods", "module swap gcc gcc/12"])
        )
        return f"{verb} {' '.join(mods)}" if verb in ("module load", "ml") else verb
    if kind == 6:
        return draw(
            st.sampled_from(
                [
                    "source ~/miniconda3/etc/profile.d/conda.sh",
                    "conda activate myenv",
                    "source activate env",
                    "source venv/bin/activate",
                    ". ./env.sh",
                    "mamba activate x",
                    "micromamba activate y",
                ]
            )
        )
    if kind == 7:
        return draw(
            st.sampled_from(
                [
                    "set -euo pipefail",
                    "cd $SLURM_SUBMIT_DIR",
                    'cd "/scratch/a b"',
                    "echo start",
                    "head=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)",
                    "wait",
                    "trap 'scontrol requeue $SLURM_JOB_ID' USR1",
                    "exit 0",
                    ":",
                    "nodes=( $(scontrol show hostnames $SLURM_JOB_NODELIST) )",
                    "sbatch next.sbatch",
                    'echo "unterminated',
                    "echo 'unterminated",
                    "x=$((1+2))",
                    "ls | grep x > out 2>&1 &",
                ]
            )
        )
    if kind == 8:
        return "# " + draw(hostile_text(0, 40))
    if kind == 9:
        return draw(launch_line()) + " &"
    if kind == 10:
        return draw(launch_line()) + " \\\n    " + draw(_flags(_PY_FLAGS))
    if kind == 11:
        return draw(launch_line()) + draw(
            st.sampled_from([" > log.txt 2>&1", " | tee out.log", " && echo ok", " || exit 1"])
        )
    if kind == 12:
        return f"echo {shell_quote(draw(hostile_text(0, 30)))}"
    if kind == 13:
        return draw(hostile_text(0, 60))  # arbitrary text as a command
    return "srun " + draw(st.sampled_from(["", "-n1 hostname", "--help", "sbatch --wrap='x'"]))


@st.composite
def body_block(draw, depth: int = 0) -> str:
    """A statement, or a compound block holding statements (nested up to a small depth)."""
    if depth >= 3 or draw(st.integers(0, 3)) > 0:
        return draw(simple_statement())
    inner = "\n".join(draw(st.lists(body_block(depth + 1), min_size=0, max_size=3)))
    kind = draw(
        st.sampled_from(
            [
                "for",
                "while",
                "if",
                "function",
                "subshell",
                "group",
                "heredoc",
                "heredoc_open",
                "case",
                "until",
                "unclosed",
            ]
        )
    )
    if kind == "for":
        return f"for i in $(seq 1 4); do\n{inner}\ndone"
    if kind == "while":
        return f"while read -r line; do\n{inner}\ndone < list.txt"
    if kind == "until":
        return f"until [ -f done ]; do\n{inner}\nsleep 1\ndone"
    if kind == "if":
        return f'if [ "$SLURM_PROCID" -eq 0 ]; then\n{inner}\nelif true; then :\nelse\n{inner}\nfi'
    if kind == "function":
        return f'run_train() {{\n{inner}\n}}\nrun_train "$@"'
    if kind == "subshell":
        return f"(\n{inner}\n)"
    if kind == "group":
        return f"{{ {inner or ':'}; }}"
    if kind == "case":
        return f'case "$1" in\n  a) {inner or ":"} ;;\n  *) echo other ;;\nesac'
    if kind == "unclosed":
        return f"if true; then\n{inner}"
    delim = draw(st.sampled_from(["EOF", "'EOF'", '"END"', "-EOF"]))
    bare = delim.strip("'\"-")
    text = draw(hostile_text(0, 60, allow_newline=True))
    reader = draw(st.sampled_from(["cat > job2.sbatch", "python", "cat", "sbatch", "bash -s"]))
    body = f"{reader} <<{delim}\n#!/bin/bash\n#SBATCH -N 4\n{text}\n{inner}"
    return body if kind == "heredoc_open" else body + f"\n{bare}"


@st.composite
def script_text(draw) -> str:
    """A whole sbatch script as text (CRLF/mixed line endings sometimes)."""
    shebang = draw(
        st.sampled_from(
            [
                "#!/bin/bash",
                "#!/bin/bash",
                "#!/usr/bin/env bash",
                "#!/bin/sh",
                "#!/bin/csh",
                "#!/bin/bash -l",
                "",
                "#!",
                "# no shebang",
            ]
        )
    )
    lines = ([shebang] if shebang else []) + draw(header_lines())
    lines += draw(st.lists(body_block(), min_size=0, max_size=8))
    if draw(st.integers(0, 6)) == 0:
        lines += draw(header_lines())  # directives after the first command: ignored by sbatch
    ending = draw(st.sampled_from(["\n", "\n", "\n", "\n", "\r\n", "mixed", "\r"]))
    text = "\n".join(lines)
    if ending == "mixed":
        parts = text.split("\n")
        text = "".join(p + ("\r\n" if i % 2 else "\n") for i, p in enumerate(parts))
    elif ending != "\n":
        text = text.replace("\n", ending)
    if draw(st.booleans()):
        text += "\n" if ending in ("\n", "mixed") else ending
    return text


def script_bytes():
    """Generated scripts encoded as UTF-8 (sometimes Latin-1/UTF-16/with BOM), or raw bytes."""
    return st.one_of(
        script_text().map(lambda s: s.encode("utf-8")),
        script_text().map(lambda s: s.encode("utf-8", "surrogatepass")),
        st.tuples(script_text(), st.sampled_from(["latin-1", "utf-16", "utf-8-sig", "cp1252"])).map(
            lambda t: t[0].encode(t[1], "replace")
        ),
        raw_bytes(),
    )


def raw_bytes():
    """Arbitrary bytes, and bytes that start like a script and then go wrong."""
    return st.one_of(
        st.binary(max_size=512),
        st.builds(lambda b: b"#!/bin/bash\n#SBATCH " + b, st.binary(max_size=256)),
        st.builds(lambda a, b: b"#!/bin/bash\n" + a + b"\x00" + b, st.binary(max_size=64), st.binary(max_size=64)),
        st.builds(lambda b: b"\xff\xfe" + b, st.binary(max_size=128)),
        st.builds(lambda b: b"\xef\xbb\xbf#!/bin/bash\n" + b, st.binary(max_size=128)),
    )


# ---- tagged scripts: user strings with a marker, for injection properties ----------------------------


@dataclass
class TaggedScript:
    text: str
    job_name: str = ""  # --job-name value as sbatch reads it
    env: list[tuple[str, str]] = field(default_factory=list)  # literal exports before the launch
    args: list[str] = field(default_factory=list)  # launch arguments (shell-quoted in the script)
    comment: str = ""  # --comment value


def marked_text(max_size: int = 30, allow_newline: bool = False):
    """Hostile text that always contains MARKER somewhere."""
    return st.tuples(hostile_text(0, max_size, allow_newline), hostile_text(0, max_size, allow_newline)).map(
        lambda t: t[0] + MARKER + t[1]
    )


@st.composite
def tagged_scripts(draw, allow_newline_env: bool = True) -> TaggedScript:
    """A valid script whose job name, comment, env values and launch arguments carry hostile text."""
    job_name = draw(marked_text(30))
    comment = draw(marked_text(30))
    env = []
    for i in range(draw(st.integers(0, 3))):
        env.append((f"USER_VAR_{i}", draw(marked_text(40, allow_newline=allow_newline_env and draw(st.booleans())))))
    args = draw(st.lists(marked_text(25), min_size=0, max_size=3))
    nodes = draw(st.integers(1, 4))
    gpus = draw(st.integers(0, 8))
    launcher = draw(
        st.sampled_from(
            [
                "torchrun --nproc-per-node=4 train.py",
                "python train.py",
                "srun python train.py",
                "accelerate launch train.py",
                "mpirun -np 8 python train.py",
            ]
        )
    )
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={sbatch_escape(job_name)}",
        f"#SBATCH --comment={sbatch_escape(comment)}",
        f"#SBATCH --nodes={nodes}",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --time=01:00:00",
    ]
    if gpus:
        lines.append(f"#SBATCH --gres=gpu:{gpus}")
    lines.append("")
    for name, value in env:
        lines.append(f"export {name}={shell_quote(value)}")
    lines.append(launcher + "".join(" " + shell_quote(a) for a in args))
    return TaggedScript(text="\n".join(lines) + "\n", job_name=job_name, env=env, args=args, comment=comment)


# --------------------------------------------------------------------------------------------------
# Adapters over the product (resolved lazily so a missing stage fails the test that needs it).
# --------------------------------------------------------------------------------------------------


def render_yaml(plans) -> str:
    from translator.emit import trainjob_yaml

    return trainjob_yaml.render(list(plans))


def render_python(plans) -> str:
    from translator.emit import sdk_python

    return sdk_python.render(list(plans))


def run_cli(args, input_bytes=None):
    """Invoke the `slurm2kf` click group in-process; returns click's Result (never raises)."""
    from click.testing import CliRunner
    from translator.cli import cli

    runner = CliRunner()
    return runner.invoke(cli, list(args), input=input_bytes, catch_exceptions=True)


def cli_result_problem(result) -> str:
    """'' when a CliRunner result is a clean exit 0/1/2; otherwise a description of what went wrong."""
    import traceback

    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        return "exception escaped: " + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if result.exit_code not in (0, 1, 2):
        return f"exit code {result.exit_code}"
    out = (result.stdout_bytes or b"") + (getattr(result, "stderr_bytes", b"") or b"")
    if b"Traceback (most recent call last)" in out:
        return "traceback printed"
    return ""


def fuzz_settings(max_examples: int, **kw):
    """CI-sized settings: scaled by SLURM2KF_FUZZ_SCALE (default 1), no deadline, slow inputs allowed."""
    from hypothesis import HealthCheck, settings

    scale = float(os.environ.get("SLURM2KF_FUZZ_SCALE", "1"))
    return settings(
        max_examples=max(1, int(max_examples * scale)),
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.function_scoped_fixture,
            HealthCheck.large_base_example,
        ],
        **kw,
    )


# --------------------------------------------------------------------------------------------------
# Output invariants shared by the fuzz, injection and long-run checks. Expectations are written from
# the contract (issue 3 and the CommandTrainer rendering described there), not copied from emitters.
# --------------------------------------------------------------------------------------------------

# SDK 0.5 `get_resources_per_node` key normalisation (kubeflow/trainer/backends/kubernetes/utils.py):
# standard names are lower-cased; the short `gpu` alias means nvidia.com/gpu.
_SDK_RESOURCE_ALIASES = {
    "gpu": "nvidia.com/gpu",
    "cpu": "cpu",
    "memory": "memory",
    "storage": "ephemeral-storage",
    "ephemeral-storage": "ephemeral-storage",
}


def yaml_plan_mismatches(doc, plan) -> list[str]:
    """Differences between one loaded TrainJob document and the plan it was rendered from."""
    problems: list[str] = []

    def expect(what, got, want):
        if got != want:
            problems.append(f"{what}: YAML has {got!r}, plan has {want!r}")

    if not isinstance(doc, dict):
        return [f"document is {type(doc).__name__}, not a mapping"]
    expect("apiVersion", doc.get("apiVersion"), "trainer.kubeflow.org/v1alpha1")
    expect("kind", doc.get("kind"), "TrainJob")
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    trainer = spec.get("trainer") or {}
    expect("metadata.name", meta.get("name"), plan.name)
    expect("metadata.namespace", meta.get("namespace"), plan.namespace or None)
    expect("metadata.labels", meta.get("labels") or {}, {k: v for k, v in plan.labels})
    expect("metadata.annotations", meta.get("annotations") or {}, {k: v for k, v in plan.annotations})
    expect("spec.runtimeRef.name", (spec.get("runtimeRef") or {}).get("name"), plan.runtime)
    expect("spec.activeDeadlineSeconds", spec.get("activeDeadlineSeconds"), plan.active_deadline_seconds or None)
    expect("spec.trainer.numNodes", trainer.get("numNodes"), plan.num_nodes or None)
    expect("spec.trainer.image", trainer.get("image"), plan.image or None)
    # env: the SDK takes a dict, so the last value of a name wins (at its first position)
    env = {}
    for var in plan.env:
        env[var.name] = var.value
    expect("spec.trainer.env", trainer.get("env") or [], [{"name": k, "value": v} for k, v in env.items()])
    # resources: requests == limits == the plan's quantities, as strings
    res = trainer.get("resourcesPerNode") or {}
    want_res = {}
    for key, qty in plan.resources_per_node:
        want_res[_SDK_RESOURCE_ALIASES.get(key.lower(), key)] = str(qty)
    if want_res:
        expect("resourcesPerNode.limits", res.get("limits"), want_res)
        expect("resourcesPerNode.requests", res.get("requests"), want_res)
    else:
        expect("resourcesPerNode", res, {})
    # command: unchanged without packages; with packages `bash -c SCRIPT $0 launcher...`
    command = trainer.get("command") or []
    args = trainer.get("args") or []
    launcher = list(plan.command) + list(plan.args)
    if not plan.packages:
        expect("spec.trainer.command", command, list(plan.command))
        expect("spec.trainer.args", args, list(plan.args))
    else:
        expect("spec.trainer.command (with packages)", command, ["bash", "-c"])
        if len(args) < 2 + len(launcher) or (launcher and args[len(args) - len(launcher) :] != launcher):
            problems.append(f"spec.trainer.args with packages do not end with the launcher {launcher!r}: {args!r}")
    for value in _walk_scalars(doc):
        if not isinstance(value, (str, int, bool)) or isinstance(value, float):
            problems.append(f"non-string/int scalar {value!r} in the TrainJob")
    return problems


def _walk_scalars(node):
    if isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from _walk_scalars(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk_scalars(v)
    else:
        yield node


def yaml_keys(node):
    """Every mapping key in a loaded YAML tree."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from yaml_keys(v)
    elif isinstance(node, list):
        for v in node:
            yield from yaml_keys(v)


def string_values(node):
    """Every string value (not key) in a loaded YAML tree."""
    if isinstance(node, dict):
        for v in node.values():
            yield from string_values(v)
    elif isinstance(node, list):
        for v in node:
            yield from string_values(v)
    elif isinstance(node, str):
        yield node


def load_yaml_docs(text: str):
    """yaml.safe_load_all (libyaml's CSafeLoader when present: same YAML 1.1 rules, 10x faster)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(text, Loader=loader) if d is not None]


def trainjob_docs(docs: list, plans) -> list:
    """The TrainJob documents of a YAML stream for `plans`. A batch-mode plan's TrainingRuntime
    (plan.runtime_document) must come right before its TrainJob and load back as exactly that object."""
    out, i = [], 0
    for plan in plans:
        if plan.runtime_document is not None:
            assert i < len(docs) and docs[i] == plan.runtime_document, "the plan's TrainingRuntime is not before it"
            i += 1
        assert i < len(docs), "a plan has no TrainJob document"
        out.append(docs[i])
        i += 1
    assert i == len(docs), f"{len(docs) - i} document(s) more than the plans give"
    return out


# Names that generated SDK code may never reference: a user string turned into code would need them.
FORBIDDEN_NAMES = {
    "os",
    "sys",
    "subprocess",
    "exec",
    "eval",
    "__import__",
    "compile",
    "open",
    "system",
    "getattr",
    "globals",
    "locals",
    "breakpoint",
    "input",
}


def python_problems(source: str, marker: str = MARKER) -> list[str]:
    """Check emitted SDK code: it parses, compiles, references no dangerous name, and `marker`
    (planted in user text) appears only inside string literals or comments, never as code."""
    import ast
    import io
    import tokenize

    problems: list[str] = []
    try:
        tree = _parse_python(source)
        compile(tree, "<emitted>", "exec")
    except (SyntaxError, ValueError) as exc:
        return [f"emitted Python does not parse: {exc}"]
    for node in ast.walk(tree):
        ident = None
        if isinstance(node, ast.Name):
            ident = node.id
        elif isinstance(node, ast.Attribute):
            ident = node.attr
        elif isinstance(node, ast.keyword):
            ident = node.arg
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            ident = node.name
        elif isinstance(node, ast.alias):
            ident = node.asname or node.name
        if ident and (ident in FORBIDDEN_NAMES or marker in ident):
            problems.append(f"identifier {ident!r} at line {getattr(node, 'lineno', '?')}")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mod = getattr(node, "module", None) or ""
            names = [a.name for a in node.names]
            # the SDK and the official client it is built on (batch mode creates its TrainingRuntime with it)
            trusted = mod.startswith("kubeflow") or mod == "__future__" or mod == "kubernetes"
            if not (trusted and isinstance(node, ast.ImportFrom)):
                problems.append(f"import of {mod or names} at line {node.lineno}")
    if marker not in source:
        return problems
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if (
                marker in tok.string
                and tok.type not in (tokenize.STRING, tokenize.COMMENT)
                and tokenize.tok_name.get(tok.type, "") not in ("FSTRING_MIDDLE", "FSTRING_START", "FSTRING_END")
            ):
                problems.append(
                    f"user text outside a string literal: token {tokenize.tok_name[tok.type]} "
                    f"{tok.string!r} at line {tok.start[0]}"
                )
    except (tokenize.TokenError, SyntaxError) as exc:
        problems.append(f"tokenize failed: {exc}")
    return problems


def _parse_python(source: str):
    import ast

    if _PARSED.get("source") is not source:
        _PARSED["tree"] = ast.parse(source)
        _PARSED["source"] = source
    return _PARSED["tree"]


_PARSED: dict = {}


def python_string_constants(source: str) -> list[str]:
    import ast

    return [
        n.value for n in ast.walk(_parse_python(source)) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def python_plan_problems(source: str, plans) -> list[str]:
    """Every user-derived value of the plans is a string constant of the emitted code."""
    consts = set(python_string_constants(source))
    problems = []
    for plan in plans:
        wanted = [("name", plan.name), ("runtime", plan.runtime)]
        wanted += [(f"env {v.name}", v.value) for v in plan.env] + [("env name", v.name) for v in plan.env]
        wanted += [("command", c) for c in plan.command] + [("arg", a) for a in plan.args]
        wanted += [(f"annotation {k}", v) for k, v in plan.annotations] + [(f"label {k}", v) for k, v in plan.labels]
        if plan.image:
            wanted.append(("image", plan.image))
        for what, value in wanted:
            if value not in consts:
                problems.append(f"{what} {value!r} is not a string constant of the emitted Python")
    return problems


def k8s_effective(value: str):
    """What a container sees for an env value / command / arg written as `value` in a pod spec.

    Kubernetes expands `$(NAME)` references in those fields (kubelet, third_party/forked/golang/
    expansion): `$$` is an escaped `$`, `$(NAME)` is replaced by the variable when it is defined and
    left as written otherwise, any other `$` is literal. Returns (text with no variable defined,
    names referenced): user text survives only if the second is empty, since a referenced name
    could be defined by the runtime (PET_*, ...) or by another env entry.
    """
    out, refs, i, n = [], [], 0, len(value)
    while i < n:
        ch = value[i]
        if ch == "$" and i + 1 < n:
            nxt = value[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                close = value.find(")", i + 2)
                if close != -1:
                    refs.append(value[i + 2 : close])
                    out.append(value[i : close + 1])
                    i = close + 1
                    continue
            out.append("$" + nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out), refs


def survives_k8s(user: str, emitted: str) -> bool:
    """True when `emitted` (an env value, command or arg in the TrainJob) reaches the container as `user`.

    A `$(...)` whose content is not a C identifier is harmless: the container's variables (the
    TrainJob env, which comes from shell exports, and PET_*/OMPI_* injected by the runtime) are all
    identifiers, so it can never be replaced.
    """
    import re

    text, refs = k8s_effective(emitted)
    return text == user and not [r for r in refs if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", r)]


# ---- realistic, valid scripts (so that most examples reach launchers, plan and emitters) ----------

_VALID_DIRECTIVES = (
    "--nodes={n}",
    "-N {n}",
    "-N{n}",
    "--ntasks-per-node={t}",
    "--ntasks={nt}",
    "-n {nt}",
    "--cpus-per-task={c}",
    "-c{c}",
    "--gres=gpu:{g}",
    "--gres=gpu:a100:{g}",
    "--gpus-per-node={g}",
    "--gpus-per-task=1",
    "--gpus={gt}",
    "-G {gt}",
    "--mem={m}G",
    "--mem-per-cpu={m}00M",
    "--mem-per-gpu={m}G",
    "--time={h}:00:00",
    "-t {h}-00:00:00",
    "-t 90",
    "--time=2:30",
    "--partition=gpu",
    "-p cpu",
    "--account=proj{n}",
    "--qos=normal",
    "--exclusive",
    "--requeue",
    "--signal=B:USR1@300",
    "--array=0-{n}%2",
    "--dependency=afterok:123",
    "--constraint=a100",
    "--output=logs/%x-%j.out",
    "--error=logs/%x-%j.err",
    "--chdir=/scratch/run",
    "--mail-type=END,FAIL",
    "--mail-user=me@example.org",
    "--export=ALL",
    '--comment="nightly run"',
    "--reservation=maint",
    "--job-name={name}",
    "-J {name}",
    "--tmp=100G",
    "--container-image=nvcr.io\\#nvidia/pytorch:24.01-py3",
)


@st.composite
def valid_script_text(draw) -> str:
    """A script sbatch accepts, built like real ones: a header of valid directives, an environment
    setup, and one (sometimes more) launch line of a known family, LF line endings."""
    nums = {
        "n": draw(st.integers(1, 8)),
        "t": draw(st.integers(1, 8)),
        "nt": draw(st.integers(1, 64)),
        "c": draw(st.integers(1, 32)),
        "g": draw(st.integers(1, 8)),
        "gt": draw(st.integers(1, 64)),
        "m": draw(st.integers(1, 512)),
        "h": draw(st.integers(0, 72)),
        "name": draw(st.text(alphabet=string.ascii_letters + string.digits + "-_.", min_size=1, max_size=20)),
    }
    chosen = draw(st.lists(st.sampled_from(_VALID_DIRECTIVES), min_size=1, max_size=8, unique=True))
    mem = [d for d in chosen if d.startswith("--mem")]
    chosen = [d for d in chosen if not d.startswith("--mem")] + mem[:1]  # one memory option (sbatch rule)
    if any(d.startswith("--gpus-per-node") for d in chosen):
        chosen = [d for d in chosen if not d.startswith("--gres")]  # exclusive with --gres=gpu
    lines = [draw(st.sampled_from(["#!/bin/bash", "#!/bin/bash -l", "#!/usr/bin/env bash"]))]
    lines += ["#SBATCH " + d.format(**nums) for d in chosen]
    if draw(st.booleans()):
        lines.append("#SBATCH " + draw(st.sampled_from(["--nodes=2  # two nodes", "--time=1:00:00 # 1h"])))
    lines.append("")
    setup = draw(
        st.lists(
            st.one_of(
                st.sampled_from(
                    [
                        "set -euo pipefail",
                        "module purge",
                        "module load cuda/12.1 nccl/2.18",
                        "source ~/miniconda3/etc/profile.d/conda.sh",
                        "conda activate train",
                        "source .venv/bin/activate",
                        "cd $SLURM_SUBMIT_DIR",
                        "export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)",
                        "export MASTER_PORT=29500",
                        "pip install -r requirements.txt",
                        "pip install torch==2.3.0 'transformers>=4.40'",
                        "mkdir -p logs",
                    ]
                ),
                st.builds(
                    lambda k, v: f"export {k}={shell_quote(v)}", st.sampled_from(_ENV_NAMES), hostile_text(0, 30)
                ),
            ),
            max_size=6,
        )
    )
    lines += setup
    lines.append(draw(launch_line()))
    if draw(st.integers(0, 5)) == 0:
        lines.append(draw(launch_line()))
    return "\n".join(lines) + "\n"


def any_script_bytes():
    """Half realistic valid scripts, half hostile generated scripts and raw bytes."""
    return st.one_of(valid_script_text().map(lambda s: s.encode("utf-8")), script_bytes())


def realistic_scripts(n: int) -> list[tuple[str, bytes]]:
    """The first n scripts of the benchmarks' real-sized set (benchmarks/realistic_scripts.py), as (name, bytes)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import realistic_scripts as generator
    finally:
        sys.path.pop(0)
    return [(f"real{i}.sbatch", generator.script(i).encode("utf-8")) for i in range(n)]
