"""The sbatch option table of Slurm 22.05, as `slurm_option_table_create` builds it for sbatch.

Every entry of the table that sbatch's getopt_long sees: the options `sbatch --help` lists, the
hidden ones (`--batch`, `--cluster`, `--context`, `--ntasks-per-tres`, `--tasks-per-node`, ...),
their short letters and whether they take a required, an optional or no argument. Established by
probing the installed sbatch 22.05.8 binary option by option (`sbatch --NAME` and `--NAME=x`), so
that prefix abbreviation is matched against exactly what getopt matches against.

Optional-argument options only take a value written with `=` (getopt semantics).
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.records import FrozenRecord, _set

REQUIRED = "required"
OPTIONAL = "optional"
NONE = "none"


@dataclass(init=False, repr=False, eq=False)
class OptionSpec(FrozenRecord):
    """One getopt_long table entry (aliases are separate entries naming their canonical option)."""

    name: str  # long name as getopt matches it
    arg: str  # REQUIRED | OPTIONAL | NONE
    short: str | None = None
    value: str = "string"  # value kind: its parser is kinds.PARSERS[value]
    canonical: str | None = None  # for aliases: the option it sets (same getopt `val`)
    hidden: bool = False  # not in `sbatch --help`
    per_component: bool = True  # reset for each hetjob component (Slurm's reset_each_pass)
    summary: str = ""
    early_pass: bool = False  # read only from the command line; sbatch skips it in #SBATCH lines

    def __init__(
        self,
        name: str,
        arg: str,
        short: str | None = None,
        value: str = "string",
        canonical: str | None = None,
        hidden: bool = False,
        per_component: bool = True,
        summary: str = "",
        early_pass: bool = False,
    ):
        _set(self, "name", name)
        _set(self, "arg", arg)
        _set(self, "short", short)
        _set(self, "value", value)
        _set(self, "canonical", canonical)
        _set(self, "hidden", hidden)
        _set(self, "per_component", per_component)
        _set(self, "summary", summary)
        _set(self, "early_pass", early_pass)

    @property
    def key(self) -> str:
        """The canonical long name (the `options` key of the inspect contract)."""
        return self.canonical or self.name


def _o(
    name, arg=REQUIRED, short=None, value="string", canonical=None, hidden=False, carried=False, summary="", early=False
):
    return OptionSpec(name, arg, short, value, canonical, hidden, not carried, summary, early)


# Options that keep their value from one hetjob component to the next (observed with the oracle:
# an option given only in component 0 appears in component 1's merged option dump).
_TABLE = (
    _o("account", short="A", carried=True, summary="charge job to specified account"),
    _o("acctg-freq", value="acctg_freq", carried=True, summary="accounting and profiling sampling intervals"),
    _o("array", short="a", value="array", carried=True, summary="job array index values"),
    _o("batch", hidden=True, summary="batch host features"),
    _o("bb", summary="burst buffer specifications"),
    _o("bbf", carried=True, summary="burst buffer specification file"),
    _o("begin", short="b", value="begin", carried=True, summary="defer job until the given time"),
    _o("chdir", short="D", carried=True, summary="working directory of the batch script"),
    _o("cluster", value="string", canonical="clusters", hidden=True, carried=True),
    _o("cluster-constraint", carried=True, summary="cluster constraints"),
    _o("clusters", short="M", carried=True, summary="clusters to submit to"),
    _o("comment", carried=True, summary="arbitrary comment"),
    _o("constraint", short="C", summary="feature constraints"),
    _o("container", carried=True, summary="path to OCI container bundle"),
    _o("context", hidden=True, carried=True, summary="SELinux context"),
    _o("contiguous", NONE, value="flag", summary="demand a contiguous range of nodes"),
    _o("core-spec", short="S", value="core_spec", summary="count of reserved cores"),
    _o("cores-per-socket", value="count", summary="cores per socket to allocate"),
    _o("cpu-freq", value="cpu_freq", summary="requested cpu frequency"),
    _o("cpus-per-gpu", value="count", summary="CPUs per allocated GPU"),
    _o("cpus-per-task", short="c", value="count", summary="CPUs per task"),
    _o("deadline", value="begin", carried=True, summary="remove the job if it cannot end before"),
    _o("delay-boot", value="delay_boot", carried=True, summary="delay boot for desired node features"),
    _o("dependency", short="d", value="dependency", carried=True, summary="job dependencies"),
    _o("distribution", short="m", value="distribution", summary="task distribution"),
    _o("error", short="e", carried=True, summary="standard error file pattern"),
    _o("exclude", short="x", carried=True, summary="nodes to exclude"),
    _o("exclusive", OPTIONAL, value="exclusive", summary="allocate whole nodes"),
    _o("export", value="export", carried=True, summary="environment variables to export"),
    _o("export-file", carried=True, summary="environment variables file"),
    _o("extra-node-info", short="B", value="extra_node_info", summary="sockets[:cores[:threads]] per node"),
    _o("get-user-env", OPTIONAL, carried=True, summary="load the user's login environment"),
    _o("gid", carried=True, summary="group to run the job as (root only)"),
    _o("gpu-bind", value="gpu_bind", summary="task to GPU binding"),
    _o("gpu-freq", summary="GPU frequency and voltage"),
    _o("gpus", short="G", value="gpus", summary="GPUs for the whole job"),
    _o("gpus-per-node", value="gpus", summary="GPUs per allocated node"),
    _o("gpus-per-socket", value="gpus", summary="GPUs per allocated socket"),
    _o("gpus-per-task", value="gpus", summary="GPUs per task"),
    _o("gres", value="gres", summary="generic resources per node"),
    _o("gres-flags", value="gres_flags", summary="GRES management flags"),
    _o("help", NONE, short="h", value="flag", summary="show help", early=True),
    _o("hint", value="hint", summary="application binding hints"),
    _o("hold", NONE, short="H", value="flag", carried=True, summary="submit job held"),
    _o("ignore-pbs", NONE, value="flag", carried=True, summary="ignore #PBS and #BSUB lines"),
    _o("input", short="i", carried=True, summary="standard input file"),
    _o("job-name", short="J", carried=True, summary="name of the job"),
    _o("kill-on-invalid-dep", value="yes_no", carried=True, summary="kill on invalid dependency"),
    _o("licenses", short="L", summary="licenses"),
    _o("mail-type", value="mail_type", summary="mail notification events"),
    _o("mail-user", summary="mail recipient"),
    _o("mcs-label", carried=True, summary="MCS label"),
    _o("mem", value="mem", carried=True, summary="memory per node (MiB default)"),
    _o("mem-bind", value="mem_bind", summary="memory binding"),
    _o("mem-per-cpu", value="mem", summary="memory per allocated CPU"),
    _o("mem-per-gpu", value="mem", summary="memory per allocated GPU"),
    _o("mincpus", value="count", summary="minimum CPUs per node"),
    _o("network", summary="network specifications"),
    _o("nice", OPTIONAL, value="nice", carried=True, summary="decrease scheduling priority"),
    _o("no-kill", OPTIONAL, short="k", value="no_kill", carried=True, summary="do not kill the job on node failure"),
    _o("no-requeue", NONE, value="flag", carried=True, summary="do not permit requeue"),
    _o("nodefile", short="F", carried=True, summary="file of node names"),
    _o("nodelist", short="w", summary="nodes to use"),
    _o("nodes", short="N", value="nodes", summary="node count (min[-max])"),
    _o("ntasks", short="n", value="count", summary="number of tasks"),
    _o("ntasks-per-core", value="count", summary="tasks per core"),
    _o("ntasks-per-gpu", value="count", summary="tasks per GPU"),
    _o("ntasks-per-node", value="count", summary="tasks per node"),
    _o("ntasks-per-socket", value="count", summary="tasks per socket"),
    _o("ntasks-per-tres", value="count", hidden=True, summary="tasks per TRES"),
    _o("open-mode", value="open_mode", carried=True, summary="append or truncate output files"),
    _o("output", short="o", carried=True, summary="standard output file pattern"),
    _o("overcommit", NONE, short="O", value="flag", summary="overcommit resources"),
    _o("oversubscribe", NONE, short="s", value="flag", summary="share nodes with other jobs"),
    _o("parsable", NONE, value="flag", carried=True, summary="print only the job id"),
    _o("partition", short="p", summary="partition(s)"),
    _o("power", value="power", carried=True, summary="power management options"),
    _o("prefer", carried=True, summary="soft feature constraints"),
    _o("priority", value="priority", carried=True, summary="job priority"),
    _o("profile", value="profile", carried=True, summary="acct_gather_profile"),
    _o("propagate", OPTIONAL, value="propagate", carried=True, summary="propagate rlimits"),
    _o("qos", short="q", carried=True, summary="quality of service"),
    _o("quiet", NONE, short="Q", value="flag", carried=True, summary="quiet mode", early=True),
    _o("reboot", NONE, value="flag", carried=True, summary="reboot nodes before the job"),
    _o("requeue", NONE, value="flag", carried=True, summary="permit requeue"),
    _o("reservation", carried=True, summary="reservation(s)"),
    _o("signal", value="signal", carried=True, summary="signal before the time limit"),
    _o("sockets-per-node", value="count", summary="sockets per node"),
    _o("spread-job", NONE, value="flag", summary="spread the job over many nodes"),
    _o("switches", value="switches", summary="max switches[@max-time]"),
    _o("tasks-per-node", value="count", canonical="ntasks-per-node", hidden=True),
    _o("test-only", NONE, value="flag", carried=True, summary="validate only, do not submit"),
    _o("thread-spec", value="thread_spec", summary="count of reserved threads"),
    _o("threads-per-core", value="count", summary="threads per core"),
    _o("time", short="t", value="time", carried=True, summary="time limit"),
    _o("time-min", value="time", carried=True, summary="minimum time limit"),
    _o("tmp", value="mem", summary="temporary disk per node"),
    _o("uid", carried=True, summary="user to run the job as (root only)"),
    _o("usage", NONE, value="flag", summary="brief usage", early=True),
    _o("use-min-nodes", NONE, value="flag", summary="prefer the smaller node count"),
    _o("verbose", NONE, short="v", value="flag", carried=True, summary="verbose mode", early=True),
    _o("version", NONE, short="V", value="flag", summary="print version", early=True),
    _o("wait", NONE, short="W", value="flag", carried=True, summary="wait for completion"),
    _o("wait-all-nodes", value="wait_all_nodes", carried=True, summary="wait for all nodes to boot"),
    _o("wckey", carried=True, summary="wckey"),
    _o("wrap", summary="wrap a command string in a sh script", early=True),
)

#: getopt table entries by long name (aliases included)
LONG_OPTIONS: dict[str, OptionSpec] = {o.name: o for o in _TABLE}
#: short letter -> entry
SHORT_OPTIONS: dict[str, OptionSpec] = {o.short: o for o in _TABLE if o.short}
#: canonical name -> entry (aliases excluded)
CANONICAL: dict[str, OptionSpec] = {o.name: o for o in _TABLE if o.canonical is None}


def spec(name: str) -> OptionSpec:
    """The entry of a canonical long name."""
    return CANONICAL[name]


# Options of well-known SPANK plugins. They are NOT part of sbatch's table without the plugin
# (real 22.05 without plugstack rejects them as unrecognized); we recognise them to classify the
# error instead of reporting a typo. (name -> (plugin, argument kind))
_PYXIS = (
    "container-image",
    "container-mounts",
    "container-workdir",
    "container-name",
    "container-save",
    "container-env",
    "container-entrypoint-log",
)
_PYXIS_FLAGS = (
    "container-mount-home",
    "no-container-mount-home",
    "container-remap-root",
    "no-container-remap-root",
    "container-entrypoint",
    "no-container-entrypoint",
    "container-writable",
    "container-readonly",
)
SPANK_OPTIONS: dict[str, tuple[str, str]] = {}
for _n in _PYXIS:
    SPANK_OPTIONS[_n] = ("pyxis", REQUIRED)
for _n in _PYXIS_FLAGS:
    SPANK_OPTIONS[_n] = ("pyxis", NONE)
for _n in ("image", "volume", "module"):
    SPANK_OPTIONS[_n] = ("shifter", REQUIRED)
SPANK_OPTIONS["ccm"] = ("shifter", NONE)

# Plugins whose options count as accepted by sbatch (O226 instead of O206). DECISION (issue 21.4): NERSC's
# Shifter SPANK plugin is installed wherever a script writes `#SBATCH --image=…`, and its options choose
# the image the TrainJob needs, so a script using them is read as sbatch with the plugin reads it. This is
# a documented exception to the Slurm oracle of the test suite, whose sbatch 22.05 has no plugstack and
# refuses them (docs/inspect.md, docs/codes.md O226). pyxis/EAR options stay O206 (refused by plain sbatch).
ACCEPTED_PLUGINS = frozenset({"shifter"})
# Shifter's image types (ImageData.c allowedImageTypes); a descriptor without one of them as its prefix
# is an image of the site's defaultImageType, `docker` as Shifter recommends and NERSC configures.
SHIFTER_IMAGE_TYPES = ("docker", "custom", "id", "local")
# What Shifter keeps of a user's image tag / volume path (ImageData.c _ImageData_filterString): other
# characters are dropped, not refused.
_SHIFTER_TAG_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:.+-/")
# A user's volume may not be mounted at these container paths (VolumeMap.c validateVolumeMap_userRequest).
_SHIFTER_TO_FORBIDDEN_PREFIX = ("/etc", "/var", "etc", "var", "/opt/udiImage", "opt/udiImage")
_SHIFTER_TO_FORBIDDEN = ("/opt", "opt")
_SHIFTER_VOLUME_FLAGS = ("ro", "rec", "pernodecache")


def shifter_image(value: str) -> tuple[str, str]:
    """(image type, tag) of a Shifter image descriptor as parse_ImageDescriptor reads it:
    `docker:nersc/pytorch:24.06.01` -> ("docker", "nersc/pytorch:24.06.01"); `ubuntu:22.04` (no known type
    before the first `:`) -> ("docker", "ubuntu:22.04"); characters Shifter filters out are dropped."""
    value = value.strip()
    kind, colon, rest = value.partition(":")
    if colon and kind in SHIFTER_IMAGE_TYPES:
        tag = rest
    else:
        kind, tag = "docker", value
    return kind, "".join(c for c in tag if c in _SHIFTER_TAG_CHARS)


def shifter_volumes(value: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(from, to, flags) of each `;`-separated entry of a Shifter `--volume` value (`/a:/b:ro;/c:/d`)."""
    out = []
    for item in value.split(";"):
        item = item.strip()
        if len(item) >= 2 and item[0] == item[-1] == '"':
            item = item[1:-1]
        if not item:
            continue
        parts = item.split(":")
        out.append((parts[0], parts[1] if len(parts) > 1 else "", tuple(parts[2:])))
    return out


def shifter_value_problem(name: str, value: str | None) -> str | None:
    """Why the Shifter plugin refuses the value of its option `name` (sbatch then exits with an error),
    or None. Checked as shifterSpank.c does: an empty image or volume; a volume entry without a container
    path, mounted under /etc, /var, /opt/udiImage or at /opt, or with an unknown flag."""
    if name == "ccm":
        return None
    if not value or not value.strip():
        return f"`--{name}` needs a value (Shifter: it must not be zero length)"
    if name == "image":
        kind, tag = shifter_image(value)
        return None if tag else f"`--image={value}` names no image after Shifter's character filter"
    if name != "volume":
        return None
    for src, dst, flags in shifter_volumes(value):
        if not src or not dst:
            return f"`--volume` entry `{src}:{dst}` needs both a host and a container path"
        if dst in _SHIFTER_TO_FORBIDDEN or dst.startswith(_SHIFTER_TO_FORBIDDEN_PREFIX):
            return f"`--volume` may not mount over `{dst}` in the container (Shifter refuses /etc, /var, /opt)"
        for flag in flags:
            if flag and flag.partition("=")[0].lower() not in _SHIFTER_VOLUME_FLAGS:
                return f"`--volume` flag `{flag}` is not one Shifter knows (ro, rec, perNodeCache)"
    return None


for _n in (
    "ear",
    "ear-policy",
    "ear-cpufreq",
    "ear-policy-th",
    "ear-user-db",
    "ear-verbose",
    "ear-learning",
    "ear-tag",
    "ear-mpi-dist",
):
    SPANK_OPTIONS[_n] = ("ear", OPTIONAL if _n == "ear" else REQUIRED)


# SBATCH_* input environment variables of 22.05 (opt.c env_vars[]; names read from the sbatch
# 22.05.8 binary), mapped to the canonical option they set.
ENV_OPTIONS: dict[str, str] = {
    "SBATCH_ACCOUNT": "account",
    "SBATCH_ACCTG_FREQ": "acctg-freq",
    "SBATCH_ARRAY_INX": "array",
    "SBATCH_BATCH": "batch",
    "SBATCH_BURST_BUFFER": "bb",
    "SBATCH_CLUSTERS": "clusters",
    "SLURM_CLUSTERS": "clusters",
    "SBATCH_CLUSTER_CONSTRAINT": "cluster-constraint",
    "SBATCH_CONSTRAINT": "constraint",
    "SBATCH_CONTAINER": "container",
    "SBATCH_CORE_SPEC": "core-spec",
    "SBATCH_CPUS_PER_GPU": "cpus-per-gpu",
    "SBATCH_CPU_FREQ_REQ": "cpu-freq",
    "SBATCH_DEBUG": "verbose",
    "SBATCH_DELAY_BOOT": "delay-boot",
    "SBATCH_DISTRIBUTION": "distribution",
    "SBATCH_ERROR": "error",
    "SBATCH_EXCLUSIVE": "exclusive",
    "SBATCH_EXPORT": "export",
    "SBATCH_GET_USER_ENV": "get-user-env",
    "SBATCH_GPUS": "gpus",
    "SBATCH_GPUS_PER_NODE": "gpus-per-node",
    "SBATCH_GPUS_PER_SOCKET": "gpus-per-socket",
    "SBATCH_GPUS_PER_TASK": "gpus-per-task",
    "SBATCH_GPU_BIND": "gpu-bind",
    "SBATCH_GPU_FREQ": "gpu-freq",
    "SBATCH_GRES": "gres",
    "SBATCH_GRES_FLAGS": "gres-flags",
    "SBATCH_HINT": "hint",
    "SLURM_HINT": "hint",
    "SBATCH_IGNORE_PBS": "ignore-pbs",
    "SBATCH_INPUT": "input",
    "SBATCH_JOB_NAME": "job-name",
    "SBATCH_MEM_BIND": "mem-bind",
    "SBATCH_MEM_PER_CPU": "mem-per-cpu",
    "SBATCH_MEM_PER_GPU": "mem-per-gpu",
    "SBATCH_MEM_PER_NODE": "mem",
    "SBATCH_NETWORK": "network",
    "SBATCH_NO_KILL": "no-kill",
    "SBATCH_NO_REQUEUE": "no-requeue",
    "SBATCH_OPEN_MODE": "open-mode",
    "SBATCH_OUTPUT": "output",
    "SBATCH_OVERCOMMIT": "overcommit",
    "SBATCH_PARTITION": "partition",
    "SBATCH_POWER": "power",
    "SBATCH_PROFILE": "profile",
    "SBATCH_QOS": "qos",
    "SBATCH_REQUEUE": "requeue",
    "SBATCH_RESERVATION": "reservation",
    "SBATCH_SIGNAL": "signal",
    "SBATCH_SPREAD_JOB": "spread-job",
    "SBATCH_THREAD_SPEC": "thread-spec",
    "SBATCH_THREADS_PER_CORE": "threads-per-core",
    "SBATCH_TIMELIMIT": "time",
    "SBATCH_USE_MIN_NODES": "use-min-nodes",
    "SBATCH_WAIT": "wait",
    "SBATCH_WAIT_ALL_NODES": "wait-all-nodes",
    "SBATCH_WCKEY": "wckey",
}
# Env-only settings without a command-line option (kept, not applied as options).
ENV_ONLY = ("SBATCH_REQ_SWITCH", "SBATCH_WAIT4SWITCH")
