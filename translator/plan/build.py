"""Script + SlurmJob (+ settings, profile) -> TrainerPlan(s).

Values in a plan are Kubernetes API values: `command`, `args` and env values are escaped for the
kubelet's `$(VAR)` expansion (translator/plan/kube.py), so emitters write them unchanged.
"""

from __future__ import annotations

import dataclasses
import heapq
import operator
import re
from typing import Any

from translator.diagnostics import ERROR, INFO, WARNING, Finding
from translator.launchers import common
from translator.launchers.launchline import entries, is_env_setup
from translator.plan import env as envmod
from translator import naming
from translator.plan import batch_runtime, kube, packages as pipmod, prologue, resources, runtimes, secrets
from translator.plan.model import EnvVar, PodPatch, SourceMap, TrainerPlan
from translator.slurm import values as V
from translator.read.ast import Assignment, CD, CONDA, MODULE, OTHER, PIP, SBATCH, SOURCE, VENV, EXPORT

from translator.launchers import wrapper_env  # (the secrets' imports: translator/plan/redact.py, P449)
from translator.plan.redact import needs_redaction, redact, script_secrets

MAX_ARRAY_EXPANSION = 1000
_MPI_STARTER = re.compile(r"(^|[\s/'\"(;&|])(mpirun|mpiexec|orterun|deepspeed)(\s|$)")
_INFORMATIONAL = {
    "echo",
    "printf",
    "date",
    "hostname",
    "nvidia-smi",
    "set",
    "env",
    "printenv",
    "uname",
    "sleep",
    "which",
    "whoami",
    "id",
    "pwd",
    "ls",
    "free",
    "lscpu",
    "nproc",
    "true",
    ":",
    "ulimit",
    "umask",
    "trap",
    "wait",
    "exit",
    "shopt",
}


_lines = resources._lines  # (job, *names) -> the lines that set any of the options, in order


def _first(job, *names) -> int | None:
    lines = _lines(job, *names)
    return lines[0] if lines else None


def array_indices(spec: str) -> list[int] | None:
    """`0-9`, `1,3,5`, `0-15:4` (the part before `%`) -> sorted unique indices; None when unparsable.

    At most MAX_ARRAY_EXPANSION + 1 indices are returned (the smallest ones): a longer list means "too
    many to expand". Ranges are merged lazily, so `0-4294967294` costs no more than `0-9`."""
    ranges = []
    for item in spec.split(","):
        rng, _, step = item.strip(" \t").partition(":")
        lo, dash, hi = rng.partition("-")
        if not (V.is_digits(lo) and (not dash or V.is_digits(hi)) and (not step or V.is_digits(step))):
            return None
        a = V.to_int(lo)
        b = V.to_int(hi) if dash else a
        s = V.to_int(step) if step else 1
        if s <= 0 or b < a:
            return None
        ranges.append(range(a, b + 1, s))
    out: list[int] = []
    for ix in heapq.merge(*ranges):
        if not out or ix != out[-1]:
            out.append(ix)
            if len(out) > MAX_ARRAY_EXPANSION:
                break
    return out


def _commands(statements) -> tuple:
    """Every command, blocks' own commands included, in order (what translator.read.ast.iter_commands
    yields), listed with the assignments in one pass (translator/plan/env.py:body_lists)."""
    return envmod.body_lists(statements)[0]


def _option_findings(job, settings) -> tuple[list[Finding], list[SourceMap]]:
    f = job.fields
    o = job.options
    out: list[Finding] = []
    smap: list[SourceMap] = []

    def add(sev, code, msg, names, fix=None, status="dropped"):
        lines = _lines(job, *names)
        out.append(Finding(sev, code, msg, lines[0] if lines else None, fix))
        if lines:
            smap.append(SourceMap("(" + names[0] + ")", lines, status))

    if f.dependency:
        add(
            WARNING,
            "P407",
            f"--dependency={V.clip_text(f.dependency, 60)}: a TrainJob cannot wait for another job",
            ("dependency",),
            "submit it after its dependency finishes, or use a workflow engine (Argo Workflows, Kubeflow Pipelines)",
            status="unsupported",
        )
    if o.get("mail-type") or o.get("mail-user"):
        add(
            INFO,
            "P408",
            "--mail-type/--mail-user: Kubernetes sends no mail",
            ("mail-type", "mail-user"),
            "watch the TrainJob's conditions (kubectl wait, alerting on TrainJob status)",
            status="unsupported",
        )
    if f.signal or f.requeue:
        what = ", ".join(
            x for x in ((f"--signal={f.signal}" if f.signal else ""), ("--requeue" if f.requeue else "")) if x
        )
        add(
            WARNING,
            "P409",
            f"{what}: no signal is sent before activeDeadlineSeconds expires and a TrainJob is not requeued",
            ("signal", "requeue"),
            "checkpoint periodically; retries need a runtime with a JobSet failurePolicy",
            status="unsupported",
        )
    if f.exclusive:
        add(
            WARNING,
            "P410",
            "--exclusive: pods share nodes unless they request the whole node",
            ("exclusive",),
            "request the node's full CPU/memory, or use a node selector/taint in a site profile",
        )
    if f.constraint:
        add(
            WARNING,
            "P411",
            f"--constraint={f.constraint}: node features become a node selector or affinity",
            ("constraint",),
            "map features to node labels in a site profile",
        )
    if o.get("reservation"):
        add(
            WARNING,
            "P412",
            f"--reservation={o['reservation']}: Kubernetes has no reservations",
            ("reservation",),
            "use a dedicated node pool or a Kueue ClusterQueue",
            status="unsupported",
        )
    if f.output or f.error:
        pats = ", ".join(x for x in (f.output and f"--output={f.output}", f.error and f"--error={f.error}") if x)
        add(
            INFO,
            "P413",
            f"{pats}: output goes to the pod logs, no file is written",
            ("output", "error"),
            "read it with `kubectl logs` (one log per node pod)",
        )
    if settings.profile is None:
        for name, code_field in (("partition", f.partition), ("qos", f.qos), ("account", f.account)):
            if code_field:
                add(
                    WARNING,
                    "P416",
                    f"--{name}={code_field}: no site profile maps it to a Kueue queue, node selector or priority",
                    (name,),
                    "write a site profile (`slurm2kf profile init`)",
                    status="unsupported",
                )
    if f.chdir:
        add(
            WARNING,
            "P428",
            f"--chdir={f.chdir}: a TrainJob cannot set the working directory; the image's is used",
            ("chdir",),
            "use absolute paths, or set WORKDIR in the image",
        )
    if f.nodes_max and f.nodes_min and f.nodes_max != f.nodes_min:
        add(
            WARNING,
            "P426",
            f"--nodes={f.nodes_min}-{f.nodes_max} is a range; the TrainJob uses {f.nodes_min} nodes",
            ("nodes",),
            "pick one node count",
            status="approximated",
        )
    return out, smap


def accepted_with_plugins(job) -> bool:
    """sbatch accepts the job where its SPANK plugins (pyxis, Shifter, EAR) are installed: the only reasons
    plain sbatch 22.05 refuses it are plugin options (O206)."""
    if job.sbatch_accepts:
        return True
    refusing = [d for d in job.diagnostics if d.severity == ERROR or d.code == "O206"]
    return bool(refusing) and all(d.code == "O206" for d in refusing)


@dataclasses.dataclass
class _Build:
    """What the sections of build_plans share: the inputs and the findings/source map gathered in order."""

    script: Any  # translator.read.ast.Script
    job: Any  # translator.slurm.job.SlurmJob
    settings: Any  # translator.pipeline.ConvertSettings
    intent: Any = None  # LaunchIntent, set once the launch line is detected
    shape: Any = None  # common.Shape of the job
    findings: list[Finding] = dataclasses.field(default_factory=list)
    smap: list[SourceMap] = dataclasses.field(default_factory=list)
    name_room: int = naming.MAX  # the longest TrainJob name whose pods get valid names (naming.py)

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)

    def map(self, field: str, lines, status: str) -> None:
        self.smap.append(SourceMap(field, tuple(lines), status))


@dataclasses.dataclass(frozen=True)
class _Runtime:
    name: str
    rt: Any  # runtimes.Runtime or None (a runtime Kubeflow does not ship)
    framework: str
    image: str


@dataclasses.dataclass(frozen=True)
class _Packages:
    packages: tuple[str, ...]
    index_urls: tuple[str, ...]
    extra_args: tuple[str, ...]


def build_plans(script, job, settings) -> tuple[TrainerPlan, ...]:
    """The plan(s) of one job: each section below adds its findings and source-map entries in order."""
    from translator.launchers.launchline import detect
    from translator.plan import pod_portability

    b = _Build(script, job, settings)
    _acceptance(b)
    b.intent = detect(script, job)
    b.shape = common.job_shape(job.fields)
    b.findings.extend(b.intent.findings)
    runtime = _runtime_and_image(b)
    packages = _software_environment(b)
    num_nodes = _nodes(b, runtime)
    b.name_room = _name_room(b, runtime.name, num_nodes)
    res = _resources(b)
    env = _environment(b, runtime.framework)
    env, command_raw, args_raw = _command(b, env, runtime.framework)
    deadline = _deadline(b)
    _other_options(b)
    b.findings.extend(pod_portability.findings(script, job, b.intent, b.findings, settings.array_mode == "expand"))
    name, job_name, annotations = _identity(b)
    _launch_map(b)
    base = TrainerPlan(
        name=name,
        source_path=job.path or script.path,
        job_name=job_name,
        namespace=settings.namespace,
        annotations=annotations,
        runtime=runtime.name,
        framework=runtime.framework,
        launcher=b.intent.family,
        image=runtime.image,
        command=tuple([_escape_word(c) for c in command_raw]),
        args=tuple([_escape_word(a) for a in args_raw]),
        packages=packages.packages,
        pip_index_urls=packages.index_urls,
        pip_extra_args=packages.extra_args,
        env=env,
        num_nodes=num_nodes,
        proc_per_node=b.intent.proc_per_node,
        resources_per_node=res,
        active_deadline_seconds=deadline,
        findings=(),
        source_map=(),
    )
    from translator.plan import limits  # the API server's size limits (L378/L379)

    plans = _finish(b, _arrays(b, base), env, runtime.rt)
    if runtime.rt is runtimes.BATCH:  # after the profile, which may change the image (or the runtime)
        plans = tuple([_with_batch_runtime(p) if p.runtime == runtimes.BATCH.name else p for p in plans])
    return limits.check(plans, script)


def _with_batch_runtime(plan: TrainerPlan) -> TrainerPlan:
    """Batch mode: the TrainJob refers to its own TrainingRuntime, written beside it (plan/batch_runtime.py)."""
    image = plan.image or runtimes.BATCH.image
    return _replace(
        plan,
        runtime=batch_runtime.runtime_name(plan.name),
        runtime_kind=batch_runtime.KIND,
        runtime_document=batch_runtime.runtime_document(plan.name, plan.namespace, image),
    )


# --- acceptance: would sbatch take the script?


def _acceptance(b: _Build) -> None:
    job = b.job
    plugin_diags = [d for d in job.diagnostics if d.code in ("O206", "O226")]  # O226: Shifter, accepted
    if plugin_diags:
        names = []
        for d in plugin_diags:
            m = re.search(r"`--([\w-]+)` is an option of the (\w+) SPANK plugin", d.message)
            if m and f"--{m.group(1)} ({m.group(2)})" not in names:
                names.append(f"--{m.group(1)} ({m.group(2)})")
        b.add(
            Finding(
                WARNING,
                "P446",
                "site SPANK plugin options, which sbatch accepts only where the "
                "plugin is installed, are read as the plugin reads them: " + ", ".join(names),
                plugin_diags[0].line,
                "nothing for the TrainJob; on Slurm submit it on a site with the plugin",
            )
        )
    if not job.sbatch_accepts and not accepted_with_plugins(job):
        b.add(
            Finding(
                ERROR,
                "P401",
                "sbatch would refuse this script, so the conversion describes a job Slurm never ran",
                next((d.line for d in job.diagnostics if d.severity == ERROR), None),
                "fix the errors reported for the script first",
            )
        )


# --- runtime and image


def _runtime_and_image(b: _Build) -> _Runtime:
    intent, settings = b.intent, b.settings
    runtime_name = (
        settings.runtime or intent.runtime or runtimes.DEFAULT_FOR_FRAMEWORK.get(intent.framework, "torch-distributed")
    )
    rt = runtimes.BATCH if runtime_name == runtimes.BATCH.name else runtimes.get(runtime_name)
    if settings.runtime:
        if rt is None:
            b.add(
                Finding(
                    WARNING,
                    "P425",
                    f"runtime `{runtime_name}` is not one Kubeflow ships; its "
                    "framework and image are unknown to slurm2kf",
                    None,
                    "check it exists (`kubectl get clustertrainingruntimes`) and pass --image",
                )
            )
        elif not rt.custom_trainer:
            b.add(
                Finding(
                    ERROR,
                    "P427",
                    f"runtime `{runtime_name}` only runs its built-in torchtune recipe; a custom command cannot use it",
                    None,
                    "choose another --runtime",
                )
            )
        elif rt.policy != intent.framework and intent.framework in ("torch", "mpi", "jax"):
            b.add(
                Finding(
                    WARNING,
                    "P427",
                    f"runtime `{runtime_name}` has the {rt.policy} policy but the "
                    f"launch line needs {intent.framework} ({intent.family}); the command may not "
                    "start as intended",
                    intent.line,
                    "use a runtime with the matching policy",
                )
            )
    framework = rt.policy if rt is not None else intent.framework
    if settings.image:
        image = settings.image
        b.findings[:] = [
            x
            if x.code != "L310"
            else dataclasses.replace(
                x, severity=INFO, message=x.message + f"; --image {settings.image} is used instead"
            )
            for x in b.findings
        ]
    elif intent.image:
        image = intent.image
    elif rt is not None:
        image = rt.image
    else:
        image = runtimes.default_image(intent.framework)
    b.smap.append(
        SourceMap("spec.trainer.image", tuple(ln for ln in (intent.line,) if intent.image and ln), "mapped")
        if intent.image
        else SourceMap("spec.trainer.image", (), "approximated")
    )
    return _Runtime(runtime_name, rt, framework, image)


# --- software environment (modules, conda/venv, pip, the commands around the launch)


def _software_environment(b: _Build) -> _Packages:
    intent = b.intent
    is_script = intent.family == "script"
    launch_line = intent.line
    pkgs: dict = {}
    index_urls: list[str] = []
    extra_index: dict = {}
    pip_extra: dict = {}
    modules, envs, dropped_before, after = [], [], [], []
    consumed = set(intent.consumed_lines)
    for cmd in _commands(b.script.body):
        kind = cmd.kind
        if kind == MODULE:
            modules.append(cmd)
        elif (
            kind == CONDA
            or kind == VENV
            # is_env_setup needs `PYTHON -m MODULE`: most commands have no `-m` second word
            or (kind != PIP and len(cmd.words) >= 3 and cmd.words[1].value == "-m" and is_env_setup(cmd))
        ):
            envs.append(cmd)
        elif kind == PIP and not is_script and (launch_line is None or cmd.line < launch_line):
            named, index_url, ex, extra, fnd = pipmod.parse(cmd)
            for x in named:  # ordered sets: linear in the number of pip lines
                pkgs.setdefault(x)
            index_urls = index_url or index_urls
            for x in ex:
                extra_index.setdefault(x)
            for x in extra:
                pip_extra.setdefault(x)
            b.findings.extend(fnd)
            b.map("packages", (cmd.line,), "mapped")
        elif kind == SBATCH:
            b.add(
                Finding(
                    WARNING,
                    "P415",
                    f"nested `{cmd.text.strip()}` submits another Slurm job; it is "
                    "not converted (and fails in the pod)",
                    cmd.line,
                    "convert that script too and submit both TrainJobs",
                )
            )
            b.map("(body)", (cmd.line,), "unsupported")
        elif (
            not is_script and kind in (OTHER, SOURCE, CD, EXPORT) and (cmd.line not in consumed or cmd.connector == "|")
        ):
            if launch_line is not None and (cmd.line > launch_line or cmd.line in consumed):
                after.append(cmd)
            else:
                dropped_before.append(cmd)
    _environment_setup(b, modules, envs)
    if pkgs:
        b.add(
            Finding(
                INFO,
                "P424",
                "pip installs run in each pod before the launcher: " + " ".join(pkgs),
                None,
                "bake them into the image to start faster",
            )
        )
    _dropped_commands(b, dropped_before, after, consumed)
    return _Packages(
        tuple(pkgs),
        tuple(index_urls or ([pipmod.DEFAULT_INDEX] if extra_index else [])) + tuple(extra_index),
        tuple(pip_extra),
    )


def _environment_setup(b: _Build, modules, envs) -> None:
    """`module load`, conda and virtualenv lines: the image must provide what they set up."""
    if modules:
        b.add(
            Finding(
                WARNING,
                "P402",
                "environment modules must be provided by the image: " + "; ".join(m.text.strip() for m in modules),
                modules[0].line,
                "build an image with this software, then pass --image",
            )
        )
        b.map("spec.trainer.image", (m.line for m in modules), "approximated")
    for e in envs:
        code = "P403" if e.kind == CONDA else "P404"
        what = "conda environment" if e.kind == CONDA else "virtualenv"
        b.add(
            Finding(
                WARNING,
                code,
                f"{what} `{e.text.strip()}` must be replaced by an image with that environment",
                e.line,
                "build the environment into the image (--image)",
            )
        )
        b.map("spec.trainer.image", (e.line,), "approximated")


def _dropped_commands(b: _Build, dropped_before, after, consumed) -> None:
    """The body's commands before and after the launch that the TrainJob does not run."""
    launch_line = b.intent.line
    add = b.findings.append
    smap = b.smap.append
    basename = common.basename
    # each command with the base name of its first word
    named = [(cmd, basename(cmd.words[0].value) if cmd.words else "") for cmd in dropped_before + after]
    discovery = False
    discovered = set()  # the lines of the P441 findings (no other section makes that code)
    for cmd, name in named:
        discovery = name == "scontrol" or (discovery and cmd.connector == "|")
        if discovery:
            add(
                Finding(
                    INFO,
                    "P441",
                    f"`{cmd.text.strip()}` reads the Slurm node list; the Kubeflow "
                    "runtime provides the nodes to the launcher, so it is not carried",
                    cmd.line,
                )
            )
            smap(SourceMap("(body)", (cmd.line,), "dropped"))
            discovered.add(cmd.line)
    before = len(dropped_before)
    for cmd, name in named[:before]:
        if cmd.line in discovered:
            continue
        if cmd.kind == SOURCE:
            add(
                Finding(
                    WARNING,
                    "P440",
                    f"`{cmd.text.strip()}` sets up the shell environment on Slurm; "
                    "the image must provide the same environment",
                    cmd.line,
                    "build that environment into the image (--image)",
                )
            )
        elif cmd.kind == CD:
            add(
                Finding(
                    WARNING,
                    "P428",
                    f"`{cmd.text.strip()}` changes directory; a TrainJob runs in the image's working directory",
                    cmd.line,
                    "use absolute paths in the command",
                )
            )
        elif name in _INFORMATIONAL:
            add(Finding(INFO, "P435", f"`{cmd.text.strip()}` is not carried (informational)", cmd.line))
        else:
            add(
                Finding(
                    WARNING,
                    "P436",
                    f"`{cmd.text.strip()}` ran before the launch on Slurm and is not part of the TrainJob",
                    cmd.line,
                    "move it into the image or the program",
                )
            )
        smap(SourceMap("(body)", (cmd.line,), "dropped"))
    last_consumed = (max(consumed) if consumed else launch_line) if after else None
    for cmd, name in named[before:]:
        if cmd.line in discovered:
            continue
        if cmd.connector == "|" and launch_line is not None and cmd.line <= last_consumed:
            add(
                Finding(
                    INFO,
                    "P435",
                    f"`{cmd.text.strip()}` read the launch's output on Slurm; on "
                    "Kubernetes the output goes to the pod logs (`kubectl logs`)",
                    cmd.line,
                )
            )
        elif name in _INFORMATIONAL:
            add(Finding(INFO, "P435", f"`{cmd.text.strip()}` is not carried (informational)", cmd.line, None))
        else:
            add(
                Finding(
                    WARNING,
                    "P437",
                    f"`{cmd.text.strip()}` ran after the training on Slurm and is not part of the TrainJob",
                    cmd.line,
                    "run it as a separate step (e.g. a workflow) or inside the program",
                )
            )
        smap(SourceMap("(body)", (cmd.line,), "dropped"))


# --- shape, resources, env


def _nodes(b: _Build, runtime: _Runtime) -> int:
    intent, shape = b.intent, b.shape
    num_nodes = intent.num_nodes or shape.nodes
    if num_nodes < shape.nodes and intent.family not in ("python", "script"):
        b.add(
            Finding(
                INFO,
                "P443",
                f"the launch line uses {num_nodes} of the job's {shape.nodes} nodes; the TrainJob asks for {num_nodes}",
                intent.line,
            )
        )
    b.map(
        "spec.trainer.numNodes",
        _lines(b.job, "nodes", "ntasks", "ntasks-per-node"),
        "mapped" if num_nodes == shape.nodes else "approximated",
    )
    if runtime.framework == "mpi" and runtime.rt is not runtimes.BATCH:
        text = " ".join(intent.command + intent.args)
        if not _MPI_STARTER.search(text):
            b.add(
                Finding(
                    ERROR,
                    "P444",
                    f"the MPI runtime `{runtime.name}` runs the command once, on its "
                    "launcher pod; without mpirun (or the DeepSpeed runner) in it, one process runs "
                    "instead of the job's ranks",
                    intent.line,
                    "call `mpirun` in the command, or use a torch runtime (--runtime torch-distributed)",
                )
            )
        elif num_nodes == 1:
            b.add(Finding(WARNING, "P445", _one_node_mpi(intent, runtime), intent.line, _ONE_NODE_FIX))
    return num_nodes


_ONE_NODE_FIX = "for one node use the torch runtime with the program run directly"
_NP = frozenset(("-np", "-n", "--np", "-c", "--n"))
_NPERNODE = frozenset(("-npernode", "--npernode", "-N"))


def _one_node_mpi(intent, runtime: _Runtime) -> str:
    """What numNodes 1 does on an MPI runtime, per runtime and launcher (P445). Trainer's MPI plugin
    (docs: kubeflow-trainer.md, MPI) starts `max(numNodes-1, 1)` worker pods when the runtime runs its
    launcher as a node (runLauncherAsNode: true in the shipped deepspeed-distributed and mlx-distributed),
    so one worker pod and the launcher pod, each requesting resourcesPerNode; the hostfile lists the worker
    pod first and the launcher last, with the same slots. DeepSpeed's runner starts its ranks on every host
    of the hostfile, and mpirun without -np one rank per slot of every host: the world size doubles.
    mpirun -np N fills the first host's slots first (by-slot mapping), so N up to one host's ranks all run
    on the worker pod and the launcher pod only holds mpirun."""
    head = f"numNodes 1 on the MPI runtime `{runtime.name}` starts "
    if runtime.rt is None:
        return (
            head + "a launcher pod and worker pods, each requesting resourcesPerNode; whether the launcher is "
            "also a host of the hostfile (runLauncherAsNode) is set by that runtime, so check how many ranks start"
        )
    head += (
        "one worker pod and the launcher pod, each requesting resourcesPerNode, and both are hosts of "
        "/etc/mpi/hostfile (runLauncherAsNode: the worker first, the launcher last)"
    )
    words = list(intent.command) + list(intent.args)
    if intent.family == "deepspeed" or (words and words[0] == "deepspeed"):
        return head + "; DeepSpeed's runner starts ranks on every host of the hostfile, so the world size doubles"
    np_ = per_node = None
    for i, w in enumerate(words[:-1]):
        if w in _NP and words[i + 1].isdigit():
            np_ = int(words[i + 1])
        elif w in _NPERNODE and words[i + 1].isdigit():
            per_node = int(words[i + 1])
    if np_ is None:
        return head + "; mpirun without -np starts one rank per slot of every host, so the world size doubles"
    per_host = per_node or intent.proc_per_node
    if per_host is not None and np_ > 2 * per_host:
        return head + f"; mpirun -np {np_} with {per_host} rank(s) per host needs more than these 2 hosts and fails"
    if per_host is not None and np_ > per_host:
        return (
            head
            + f"; mpirun -np {np_} places {per_host} rank(s) per host, so its ranks span the worker and the launcher"
        )
    return (
        head + f"; mpirun -np {np_} fills the first host's slots first, so its ranks run on the worker pod and "
        "the launcher pod only runs mpirun, its resources idle"
    )


def _resources(b: _Build):
    res, rfind, rmap = resources.resources_per_node(b.job, b.shape, b.settings.gpu_resource)
    b.findings.extend(rfind)
    b.smap.extend(rmap)
    return res


def _environment(b: _Build, framework: str) -> tuple[EnvVar, ...]:
    intent, script = b.intent, b.script
    if intent.family == "script":
        env: tuple[EnvVar, ...] = ()
    else:
        env, efind, emap = envmod.collect(
            script,
            intent.line,
            framework,
            kube.escape,
            consumed=set(intent.consumed_lines),
            resolve=_static_resolver(script, b.job, b.shape, intent.line),
        )
        b.findings.extend(efind)
        b.smap.extend(emap)
    extra_env, xfind = envmod.launch_env(intent.env, intent.line, framework, kube.escape)
    b.findings.extend(xfind)
    env, pfind = wrapper_env.unprefixed(env, wrapper_env.ran_apptainer(intent))  # APPTAINERENV_X: X inside
    b.findings[:] = wrapper_env.settle(b.findings, tuple(env) + tuple(extra_env)) + pfind
    launch_names = {x.name for x in extra_env}
    return tuple(e for e in env if e.name not in launch_names) + extra_env


# --- the command: secrets never in clear text (translator/plan/secrets.py), checks of what it reads


def _command(b: _Build, env, framework: str):
    intent = b.intent
    command_raw, args_raw = tuple(intent.command), tuple(intent.args)
    env, command_raw, args_raw, sfind = _secrets(
        b.script,
        env,
        intent,
        command_raw,
        args_raw,
        naming.trainjob_name(b.job.fields.job_name or "sbatch", room=b.name_room),
    )
    b.findings.extend(sfind)
    b.findings.extend(_node_specific(env, command_raw, args_raw, intent))
    b.findings.extend(_job_id_use(b.job, command_raw, args_raw, intent))
    if framework == "mpi" and intent.family == "mpi":
        command_raw, args_raw = _forward_env(env, command_raw, args_raw, intent, b.findings)
    return env, command_raw, args_raw


# --- deadline


def _deadline(b: _Build) -> int | None:
    job = b.job
    t = job.fields.time_limit_seconds
    if t and t > 2**63 - 1:  # activeDeadlineSeconds is an int64
        b.add(
            Finding(
                WARNING,
                "P405",
                f"--time={job.options.get('time', '')} is beyond what "
                "activeDeadlineSeconds can hold; no deadline is set",
                _first(job, "time"),
            )
        )
    elif t:
        b.add(
            Finding(
                INFO,
                "P405",
                f"--time={job.options.get('time', '')} -> activeDeadlineSeconds {t}; "
                "it counts from when the TrainJob starts (including image pulls and pip installs)",
                _first(job, "time"),
            )
        )
        b.map("spec.activeDeadlineSeconds", _lines(job, "time"), "mapped")
        return int(t)
    elif t == 0:
        b.add(Finding(INFO, "P406", "--time is unlimited; no activeDeadlineSeconds", _first(job, "time")))
    return None


# --- other options


def _other_options(b: _Build) -> None:
    job, script = b.job, b.script
    ofind, omap = _option_findings(job, b.settings)
    b.findings.extend(ofind)
    b.smap.extend(omap)
    if len(job.components) > 1 or getattr(script, "components", 1) > 1:
        b.add(
            Finding(
                ERROR,
                "P414",
                f"heterogeneous job with {max(len(job.components), script.components)} "
                "components: a TrainJob has one node shape; only the first component is converted",
                next((d.line for d in script.directives if d.component == 1), None),
                "split it into separate TrainJobs, or one shape that fits all components",
            )
        )
        het_lines = tuple(d.line for d in script.directives if d.component > 0)
        if het_lines:
            b.map("(hetjob)", het_lines, "unsupported")


# --- identity


def _name_room(b: _Build, runtime_name: str, num_nodes: int) -> int:
    """How long the TrainJob name may be so that JobSet accepts every pod name (naming.py): the
    runtime's replicatedJobs (shipped ones known; a profile's runtime adds the jobs it lists)."""
    from translator.validate.runtimes import SHIPPED, pods_per_job

    rules = getattr(b.settings.profile, "runtimes", ()) or ()
    if not b.settings.runtime and runtime_name in SHIPPED:  # the profile may choose by launcher (apply.py)
        runtime_name = next((r.name for r in rules if b.intent.family in r.launchers), runtime_name)
    if runtime_name == runtimes.BATCH.name:  # batch mode's own runtime: a launcher and numNodes - 1 node pods
        return naming.name_room({"node": max(num_nodes - 1, 1), "launcher": 1})
    pods = pods_per_job(SHIPPED.get(runtime_name), num_nodes)
    for rule in rules:
        if rule.name == runtime_name:
            for job in rule.replicated_jobs:
                pods.setdefault(job, 1)
    return naming.name_room(pods)


def _identity(b: _Build):
    job = b.job
    job_name = job.fields.job_name or "sbatch"
    name = naming.trainjob_name(job_name, room=b.name_room)
    if name != job_name:
        b.add(
            Finding(
                INFO,
                "P429",
                f"job name `{job_name}` becomes the TrainJob name `{name}` (RFC 1035 label of at most "
                f"{b.name_room} characters, so that JobSet accepts its longest pod name); the original is "
                "kept in the annotation " + naming.ANNOTATION_JOB_NAME,
                _first(job, "job-name"),
            )
        )
    b.map("metadata.name", _lines(job, "job-name"), "mapped" if name == job_name else "approximated")
    annotations = ((naming.ANNOTATION_JOB_NAME, job_name), (naming.ANNOTATION_SOURCE, job.path or b.script.path))
    return name, job_name, annotations


# --- the launch


def _launch_map(b: _Build) -> None:
    intent = b.intent
    cmd_lines = tuple(range(intent.line, intent.line + 1)) if intent.line else ()
    status = "approximated" if intent.family in ("script", "srun-tasks") else "mapped"
    b.map("spec.trainer.command", tuple(sorted(set(cmd_lines) | set(intent.consumed_lines))), status)


# --- arrays


def _arrays(b: _Build, base: TrainerPlan) -> list[TrainerPlan]:
    job, settings = b.job, b.settings
    arr = job.fields.array
    if not arr:
        return [base]
    plans: list[TrainerPlan] = []
    uses_task_id = "SLURM_ARRAY_TASK_ID" in (b.script.text or "")
    indices = array_indices(arr)
    line = _first(job, "array")
    if settings.array_mode == "expand" and indices and len(indices) <= MAX_ARRAY_EXPANSION:
        b.add(
            Finding(
                INFO,
                "P439",
                f"--array={V.clip_text(arr, 60)} expanded into {len(indices)} TrainJobs with "
                "SLURM_ARRAY_TASK_ID set"
                + (f"; the throttle %{job.fields.array_throttle} is not enforced" if job.fields.array_throttle else ""),
                line,
            )
        )
        b.map("(array)", _lines(job, "array"), "mapped")
        for ix in indices:
            plans.append(_array_plan(base, job, arr, indices, ix, b.name_room))
        return plans
    reason = (
        "it has more than %d tasks" % MAX_ARRAY_EXPANSION
        if indices and len(indices) > MAX_ARRAY_EXPANSION
        else "the index list cannot be read"
        if not indices
        else ""
    )
    msg = f"--array={V.clip_text(arr, 60)}: only one TrainJob is written"
    if indices:
        msg += f", for index {indices[0]}" + (" (SLURM_ARRAY_TASK_ID is set to it)" if uses_task_id else "")
    if reason:
        msg += f"; not expanded because {reason}"
    b.add(
        Finding(
            WARNING, "P438", msg, line, "use --array-mode=expand for one TrainJob per index, or an indexed workflow"
        )
    )
    b.map("(array)", _lines(job, "array"), "approximated")
    if indices and uses_task_id:
        return [dataclasses.replace(base, env=_with_env(base.env, "SLURM_ARRAY_TASK_ID", str(indices[0])))]
    return [base]


# --- findings, profile, shared memory: the same for every plan of the job


def _finish(b: _Build, plans: list[TrainerPlan], env, rt) -> tuple[TrainerPlan, ...]:
    findings = _final_findings(b.findings, b.script, env)  # the same for every plan of the job
    source_map = tuple(b.smap)
    settings = b.settings
    out = []
    for p in plans:
        if settings.profile is None and b.shape.gpus_per_node and not p.patches:
            # what the general path below makes of a plan without patches, in one replace
            out.append(
                _replace(p, findings=findings + (_SHM_NOTE,), source_map=source_map, patches=_kept_shm_patches(rt))
            )
            continue
        p = _replace(p, findings=findings, source_map=source_map)
        if settings.profile is not None:
            from translator.profile.apply import apply_profile

            p = apply_profile(p, b.script, b.job, settings.profile, settings)
        if b.shape.gpus_per_node:
            p = with_shared_memory(p, rt)
        out.append(p)
    if b.job.fields.dependency or (settings.profile is not None and any(p.labels for p in out)):
        from translator.plan.kueue import kueue_fields

        lines = (b.job.fields.dependency, _first(b.job, "time"), _first(b.job, "dependency"))
        out = [kueue_fields(p, *lines) for p in out]
    if b.job.options.get("switches") or b.job.options.get("nodelist") or b.job.fields.exclusive:
        from translator.plan.topology import topology_fields

        out = [topology_fields(p, b.job, settings.profile) for p in out]
    return tuple(out)


def _replace(plan: TrainerPlan, **changes) -> TrainerPlan:
    """dataclasses.replace(plan, **changes) for a TrainerPlan, without re-running the generated __init__
    over its 27 fields (it has no __post_init__ and no init=False field; tests/test_plan_fast_paths.py
    compares the two)."""
    new = object.__new__(TrainerPlan)
    state = new.__dict__
    state.update(plan.__dict__)
    for name, value in changes.items():
        if name not in state:
            raise TypeError(f"TrainerPlan has no field {name!r}")
        state[name] = value
    return new


SHM_VOLUME = "dshm"
_SHM_NOTE = Finding(
    INFO,
    "P442",
    "/dev/shm is mounted as a memory-backed emptyDir on every pod (a container's "
    "default is 64Mi, too small for NCCL and data-loader workers); it counts against the memory limit",
    None,
    "size it with `defaults.shmSize` in a site profile",
)


def _shm_patches(rt) -> tuple[PodPatch, ...]:
    """The /dev/shm volume and mount, one patch per node/launcher job of the runtime."""
    jobs = [j for j in (rt.jobs if rt is not None else ("node",)) if j in ("node", "launcher")] or ["node"]
    volume = {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}}
    mount = {"name": SHM_VOLUME, "mountPath": "/dev/shm"}
    return tuple(
        PodPatch(job=j, container=rt.container if rt else "node", volumes=(volume,), volume_mounts=(mount,))
        for j in jobs
    )


_SHM_MEMO: list = [object(), ()]  # (runtime, its /dev/shm patches) of the last call


def _kept_shm_patches(rt) -> tuple[PodPatch, ...]:
    """_shm_patches(rt), the same tuple for the same runtime in a row (the runtimes are module constants; the
    patches and their dicts are only read: emitters copy them, a site profile builds new ones)."""
    if _SHM_MEMO[0] is rt:
        return _SHM_MEMO[1]
    patches = _shm_patches(rt)
    _SHM_MEMO[:] = [rt, patches]
    return patches


def with_shared_memory(plan: TrainerPlan, rt) -> TrainerPlan:
    """GPU jobs get /dev/shm as a memory-backed emptyDir (a container's default is 64Mi, too small for NCCL
    and DataLoader workers), on every pod of the runtime, unless a profile already mounted one."""
    if any(m.get("mountPath") == "/dev/shm" for p in plan.patches for m in p.volume_mounts):
        return plan
    if any(v.get("name") == SHM_VOLUME for p in plan.patches for v in p.volumes):
        return plan
    patches = tuple(plan.patches) + _shm_patches(rt)
    return dataclasses.replace(plan, patches=patches, findings=tuple(plan.findings) + (_SHM_NOTE,))


def _with_env(env, name, value) -> tuple[EnvVar, ...]:
    return tuple(e for e in env if e.name != name) + (EnvVar(name, value),)


def _array_plan(base: TrainerPlan, job, spec, indices, ix, room: int) -> TrainerPlan:
    env = base.env
    env = _with_env(env, "SLURM_ARRAY_TASK_ID", str(ix))
    env = _with_env(env, "SLURM_ARRAY_TASK_COUNT", str(len(indices)))
    env = _with_env(env, "SLURM_ARRAY_TASK_MIN", str(indices[0]))  # indices are sorted
    env = _with_env(env, "SLURM_ARRAY_TASK_MAX", str(indices[-1]))
    return dataclasses.replace(
        base,
        name=naming.trainjob_name(base.job_name, str(ix), room),
        env=env,
        array_index=ix,
        annotations=base.annotations + ((naming.ANNOTATION_ARRAY_INDEX, str(ix)),),
    )


def _spaced_once(text: str) -> bool:
    """True when `" ".join(text.split())` is `text`: a printable text (every whitespace character but the
    space is unprintable, tests/test_plan_fast_paths.py checks all of Unicode) with no two spaces in a
    row and none at either end. False means "maybe not"."""
    return text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "


def _one_line(f: Finding) -> Finding:
    """Findings print as one `path:line: …` line: script text quoted in them loses its line breaks."""
    message = f.message if _spaced_once(f.message) else " ".join(f.message.split())
    suggestion = " ".join(f.suggestion.split()) if f.suggestion and not _spaced_once(f.suggestion) else f.suggestion
    if message == f.message and suggestion == f.suggestion:
        return f
    return dataclasses.replace(f, message=message, suggestion=suggestion)


def _dedupe(findings, one_line=True) -> tuple[Finding, ...]:
    # first occurrence kept, in order; equal findings are those of one class with equal fields (the
    # records' own equality), compared here as a tuple, which is faster than the records' __hash__
    out: dict = {}
    for f in map(_one_line, findings) if one_line else findings:
        out.setdefault((f.__class__, f.severity, f.code, f.message, f.line, f.suggestion), f)
    found = out.values()
    # sorted(found, key=_line_order) without a Python call per finding: the ones with a line by line
    # (a stable sort), then the ones without, in order
    lined = sorted([f for f in found if f.line is not None], key=_LINE)
    if len(lined) < len(found):
        lined += [f for f in found if f.line is None]
    return tuple(lined)


_LINE = operator.attrgetter("line")


def _final_findings(findings, script, env) -> tuple[Finding, ...]:
    """_dedupe(_redact(findings, script, env)): what every plan of the job carries. Most jobs have no secret
    and no text that _one_line changes, which one look at all their texts tells (then neither runs per
    finding); texts already seen to pass in an earlier job (most suggestions, the frequent messages) are
    not looked at again."""
    values = script_secrets(script)
    if values:
        return _dedupe(_redact(findings, values))
    clean = _CLEAN_TEXTS
    texts = [t for f in findings for t in (f.message, f.suggestion) if t and t not in clean]
    joined = "\n".join(texts)
    if needs_redaction(joined, values):
        return _dedupe(_redact(findings, values))
    # _spaced_once for every text at once: the concatenation is printable when each text is, and then no
    # text holds a line break, so the ones in `joined` are the boundaries between texts
    spaced = (
        "".join(texts).isprintable()
        and "  " not in joined
        and " \n" not in joined
        and "\n " not in joined
        and joined[:1] != " "
        and joined[-1:] != " "
    )
    if spaced and texts:
        if len(clean) + len(texts) > _CLEAN_TEXTS_MAX:
            clean.clear()
        clean.update([t for t in texts if len(t) <= 1000])
    return _dedupe(findings, one_line=not spaced)


# Finding texts seen to hold no embedded token and to be _spaced_once: the same texts recur across jobs.
_CLEAN_TEXTS: set[str] = set()
_CLEAN_TEXTS_MAX = 8192


def _line_order(f: Finding) -> tuple:
    return (f.line is None, f.line or 0)


_ESCAPED = "\0s2k-escaped\0"  # marks a word that is already in kubelet form (holds $(NAME) references)


def _escape_word(text: str) -> str:
    if text.startswith(_ESCAPED):
        return text[len(_ESCAPED) :]
    return kube.escape(text)


_SECRET_MEMO: list = [None, ()]  # (script, its secret assignments) of the last call: _secrets and _redact ask


def _secret_assignments(script) -> tuple:
    """((Assignment, why), ...): the script's literal assignments whose name or value says secret."""
    if _SECRET_MEMO[0] is script:
        return _SECRET_MEMO[1]
    found = secrets.literal_secrets(envmod.script_assignments(script))
    _SECRET_MEMO[:] = [script, found]
    return found


_SHELL_SPLIT = re.compile(r"[\s;&|()<>`]+")


def _command_secrets(words) -> list[tuple[str, str]]:
    """(value, why) of the secrets written into the command's words: tokens (and URL passwords) inside
    any word, values given to a secret option (`--password X`, `--api-key=X`)."""
    out = [
        (v, f"the value of `{words[i - 1] if v == words[i] else words[i].split('=', 1)[0]}` in the command")
        for i, v in secrets.option_secrets(words)
    ]
    for text in words:  # shell text (`bash -c '…'`): its words split at blanks and operators, quotes taken off
        if "--" in text and any(c in text for c in " \n\t"):
            inner = [w.strip("'\"") for w in _SHELL_SPLIT.split(text)]
            out += [(v, "the value of a secret option in the command") for _, v in secrets.option_secrets(inner)]
    for word in words if secrets.has_token("\0".join(words)) else ():
        for token in secrets.embedded_tokens(word):
            out.append((token, "a word of the command has the shape of a token"))
    return out


def _secrets(script, env, intent, command, args, trainjob_name):
    """Move secret values out of env and command text into one Secret. Returns
    (env, command, args, findings)."""
    found = {}  # name -> (value, line, why)
    for a, why in _secret_assignments(script):
        found[a.name] = (a.value.value, a.line, why)
    for name, value in intent.env:
        why = secrets.looks_secret(name, value)
        if why:
            found[name] = (value, intent.line, why)
    for e in env:
        if e.name not in found:
            why = secrets.looks_secret(e.name, e.value)
            if why:
                found[e.name] = (e.value, e.line, why)
    known = {v for v, _, _ in found.values()}
    words = tuple(command) + tuple(args)
    for token, why in _command_secrets(words):
        if token not in known and not any(token in v for v in known):
            known.add(token)
            found[f"SLURM2KF_SECRET_{len(found) + 1}"] = (token, intent.line, why)
    if not found:
        return env, command, args, []
    sname = secrets.secret_name(trainjob_name)
    used = set()
    shell = bool(intent.uses_shell) or tuple(command[:2]) == ("bash", "-c")

    def redact_text(text: str) -> str:
        for name, (value, _, _) in found.items():
            if len(value) < 4 or value not in text:
                continue
            used.add(name)
            ref = '"${' + name + '}"'
            text = text.replace("'" + value + "'", ref).replace('"' + value + '"', ref).replace(value, ref)
        return text

    def redact_word(word: str, in_shell: bool) -> str:
        if in_shell or "\n" in word:
            return redact_text(word)
        hits = [n for n, (value, _, _) in found.items() if len(value) >= 4 and value in word]
        if not hits:
            return word
        # the kubelet puts the Secret's value where $(NAME) stands (NAME is in the container env)
        pieces: list[str | tuple[str]] = [word]  # text, or (NAME,) where $(NAME) goes
        for name in hits:
            used.add(name)
            value = found[name][0]
            nxt: list[str | tuple[str]] = []
            for p in pieces:
                if isinstance(p, tuple):
                    nxt.append(p)
                    continue
                parts = p.split(value)
                for i, part in enumerate(parts):
                    if i:
                        nxt.append((name,))
                    nxt.append(part)
            pieces = nxt
        return _ESCAPED + "".join("$(" + p[0] + ")" if isinstance(p, tuple) else kube.escape(p) for p in pieces)

    new_command = tuple(redact_word(c, shell) for c in command)
    new_args = tuple(redact_word(a, shell) for a in args)
    out_env = []
    for e in env:
        if e.name in found:
            used.add(e.name)
            out_env.append(EnvVar(e.name, "", e.line, secret_name=sname, secret_key=e.name))
        else:
            out_env.append(e)
    have = {e.name for e in out_env}
    for name in found:
        if name in used and name not in have:
            out_env.append(EnvVar(name, "", found[name][1], secret_name=sname, secret_key=name))
    findings = []
    for e in out_env:
        if e.secret_name:
            line = found.get(e.name, (None, e.line, ""))[1]
            why = found.get(e.name, ("", None, "it looks like a secret"))[2]
            findings.append(
                Finding(
                    WARNING,
                    "P447",
                    f"{e.name} is not written into the output ({why}): the YAML "
                    f"reads it from key `{e.name}` of Secret `{sname}` (spec.trainer.env valueFrom."
                    "secretKeyRef); SDK 0.5 cannot express that, so the Python file takes it from "
                    f"${e.name} of the submitting shell and the TrainJob object carries the value",
                    line,
                    f"create the Secret before `kubectl apply`: `kubectl create secret generic "
                    f"{sname} --from-literal={e.name}=<the value on line {line}>`; for the Python "
                    f"file export {e.name} first",
                )
            )
    return tuple(out_env), new_command, new_args, findings


_OCTET = r"(?:25[0-5]|2[0-4]\d|1?\d?\d)"
# An IPv4 address as a whole token: `(?<![\w.])(OCTET(\.OCTET){3})(?![\w.])`, the text between
# non-[\w.] characters is exactly the address. Such a match is a whole maximal run of [\w.] characters,
# made of digits and dots, 7 to 15 long and starting with a digit: _IPV4_RUN finds exactly those runs
# (its first item is a digit, so the regex engine skips to digits instead of trying the lookbehind at
# every position) and _IPV4_BODY keeps the ones that are an address. tests/test_plan_fast_paths.py
# checks this against the one-pattern form.
_IPV4_RUN = re.compile(r"\d(?<![\w.]\d)[\d.]{6,14}(?![\w.])")
_IPV4_BODY = re.compile(_OCTET + r"(?:\." + _OCTET + r"){3}")
# `\bMASTER_ADDR=` is spelled `M(?<!\wM)ASTER_ADDR=`: every alternative then starts with a literal
# character, which lets the regex engine skip to the positions where one can start.
_ENDPOINT = re.compile(
    r"(?:--(?:master[_-]addr|main[_-]process[_-]ip|dist[_-]url|init[_-]method|coordinator[_-]address|"
    r"rdzv[_-]endpoint|master)[= ]|tcp://|env://|M(?<!\wM)ASTER_ADDR=)([^\s'\";]+)"
)
# Where an _ENDPOINT match can start: each holds, from its start, `--` and an option name (found by
# _ENDPOINT_OPTION, whose literal `--` the regex engine skips to) or `MASTER_ADDR=`, or else `://` three
# characters after its start (`tcp://`, `env://`); _ENDPOINT itself starts with `t`, `e`, `-` or `M` and is
# tried at every such character. So the scan starts at the first of those (str.find for the two literals),
# or is not run when there is none.
_ENDPOINT_OPTION = re.compile(
    r"--(?:master|main[_-]process[_-]ip|dist[_-]url|init[_-]method|coordinator[_-]address|rdzv[_-]endpoint)"
)


def _endpoints(text: str) -> list[str]:
    """_ENDPOINT.findall(text)."""
    starts = []
    scheme = text.find("://")
    if scheme >= 0:
        starts.append(max(scheme - 3, 0))
    addr = text.find("MASTER_ADDR=")
    if addr >= 0:
        starts.append(addr)
    option = _ENDPOINT_OPTION.search(text)
    if option is not None:
        starts.append(option.start())
    if not starts:
        return []
    # (the lookbehind of `M(?<!\wM)` sees the text before the start position)
    return _ENDPOINT.findall(text, min(starts))


# Every address holds `.D.D.D` (D a digit); searching for that skips from dot to dot, and few texts pass.
_IPV4_HINT = re.compile(r"\.\d{1,3}\.\d{1,3}\.\d")


def _ipv4_addresses(text: str) -> list[str]:
    """Every IPv4 address of `text` that stands as a whole token, in order."""
    if not _IPV4_HINT.search(text):
        return []
    fullmatch = _IPV4_BODY.fullmatch
    return [run for run in _IPV4_RUN.findall(text) if fullmatch(run)]


# Where an IPv4 address stands for a host (P448): after an option or variable naming an address
# (`--master_addr 10.1.2.3`, `MASTER_ADDR=10.1.2.3`, `--host=…`), after `://` or `@`, or before `:PORT`.
# Anywhere else four dotted numbers are a version (`1.15.2.0`, `torch==1.15.2.0`), never reported.
_ADDRESS_BEFORE = re.compile(
    r"(?:(?:addr|address|host|hostname|hosts|ip|endpoint|master|server|url|uri|coordinator|head|nameserver)"
    r"[\"']?[=\s]\s*[\"']?|://|@)$",
    re.IGNORECASE,
)
_LITERAL_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*(?::\d+)?/?")


def _addressed_ipv4(text: str, before: str) -> list[str]:
    """The IPv4 addresses of `text` standing where a host goes (`before`: what precedes the text, e.g.
    the previous word of the command or `NAME=` of an env variable)."""
    if not _IPV4_HINT.search(text):
        return []
    out = []
    for m in _IPV4_RUN.finditer(text):
        run = m.group(0)
        if not _IPV4_BODY.fullmatch(run):
            continue
        s, e = m.span()
        port = text[e : e + 1] == ":" and text[e + 1 : e + 2].isdigit()
        if port or _ADDRESS_BEFORE.search((before + text[:s])[-80:]):
            out.append(run)
    return out


def _without_scheme(h: str) -> str:
    """`tcp://node01:23456` -> `node01:23456` (an env:// or file:// value is kept, and is no host)."""
    scheme, sep, rest = h.partition("://")
    return rest if sep and scheme in ("tcp", "http", "https", "grpc") else h


def _literal_host(h: str) -> bool:
    """An endpoint value that names a host literally (not `$VAR`, `$(hostname)`, `` `/bin/hostname` ``,
    localhost or a URL that is a file or env:// scheme)."""
    if h.startswith(("localhost", "127.", "0.0.0.0", "env:", "file:")) or "_s2k" in h or "hostname" in h:
        return False
    return _LITERAL_HOST.fullmatch(h) is not None


def _node_specific(env, command, args, intent) -> list[Finding]:
    """Values that name things of the Slurm nodes which do not exist in a pod: GPU indices, addresses."""
    out: list[Finding] = []
    for e in env:
        if e.name == "CUDA_VISIBLE_DEVICES" and not e.secret_name:
            out.append(
                Finding(
                    WARNING,
                    "P448",
                    f"CUDA_VISIBLE_DEVICES={e.value} is carried: in a pod the GPUs the "
                    "node allocated are numbered from 0, and Slurm's indices were the node's own (set per "
                    "job by gres), so it may select other GPUs or fewer than the job requests",
                    e.line,
                    "drop it and request the GPUs the program uses (--gpus-per-node)",
                )
            )
    texts = [("env " + e.name, e.value, e.line, e.name + "=") for e in env if not e.secret_name]
    words = tuple(command) + tuple(args)
    texts += [("the command", w, intent.line, words[i - 1] + " " if i else "") for i, w in enumerate(words)]
    seen = set()
    for where, text, line, before in texts:
        # both patterns need a digit-dot-digit address or one of the endpoint prefixes: most texts have neither
        probe = before + text
        if "." not in text and "://" not in text and "MASTER_ADDR=" not in probe and "--" not in probe:
            continue
        hits = [h for h in _addressed_ipv4(text, before) if not h.startswith(("127.", "0."))]
        hits += [h for h in (_without_scheme(h) for h in _endpoints(probe)) if _literal_host(h)]
        for h in hits:
            if (where, h) in seen or any(o != h and o in h for o in hits):
                continue
            if (where, h) in seen:
                continue
            seen.add((where, h))
            out.append(
                Finding(
                    WARNING,
                    "P448",
                    f"{where} names the address `{h}` of a Slurm node or host; pods have "
                    "their own addresses (the rank-0 pod is PET_MASTER_ADDR / $MASTER_ADDR)",
                    line,
                    "use the address the runtime provides (MASTER_ADDR, PET_MASTER_ADDR) instead",
                )
            )
    return out


def _redact(findings, values) -> list[Finding]:
    """Findings quote script text; a secret value or anything shaped like a token never appears in them
    (they are printed, and become comments of the YAML and the Python file): translator/plan/redact.py."""
    out = []
    for f in findings:
        m, sug = redact(f.message, values), redact(f.suggestion, values) if f.suggestion else f.suggestion
        out.append(f if (m, sug) == (f.message, f.suggestion) else dataclasses.replace(f, message=m, suggestion=sug))
    return out


def _forward_env(env, command, args, intent, findings):
    """mpirun on an MPI runtime reaches the worker pods over ssh, whose sessions do not inherit the
    container's env; on Slurm, Open MPI started the ranks through slurmd with the job's environment. So
    every TrainJob env variable is forwarded with `-x NAME` (Open MPI mpirun(1)), unless it already is."""
    names = [e.name for e in env]
    tool = command[0] if command else ""
    if tool in ("mpirun", "mpiexec", "orterun"):
        forwarded = {args[i + 1] for i in range(len(args) - 1) if args[i] == "-x"}
        extra = [n for n in names if n not in forwarded]
        if not extra:
            return command, args
        at = list(args).index("-npernode") + 2 if "-npernode" in args else 0
        new = list(args[:at]) + [w for n in extra for w in ("-x", n)] + list(args[at:])
        findings.append(
            Finding(
                INFO,
                "L351",
                "the TrainJob env is forwarded to the MPI ranks with -x (ssh sessions "
                "on the worker pods do not inherit it; on Slurm the ranks got the job's environment): "
                + ", ".join(extra),
                intent.line,
            )
        )
        return command, tuple(new)
    if tuple(command[:2]) == ("bash", "-c") and args:
        m = re.search(r"(^|\n)exec (mpirun|mpiexec|orterun) ", args[0])
        if m:
            # exports the command's preamble makes (`export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK`) too
            exported = re.findall(r"(?m)^export ([A-Za-z_][A-Za-z0-9_]*)=", args[0][: m.start() + 1])
            names = names + [n for n in exported if n not in names and not n.startswith(("SLURM", "OMPI_"))]
            extra = [n for n in names if not re.search(rf"-x {re.escape(n)}(\s|$)", args[0])]
            if extra:
                flags = " ".join(f"-x {n}" for n in extra)
                text = args[0][: m.end()] + flags + " " + args[0][m.end() :]
                findings.append(
                    Finding(
                        INFO,
                        "L351",
                        "the TrainJob env is forwarded to the MPI ranks with -x (ssh "
                        "sessions on the worker pods do not inherit it; on Slurm the ranks got the "
                        "job's environment): " + ", ".join(extra),
                        intent.line,
                    )
                )
                return command, (text,) + tuple(args[1:])
    return command, args


def _static_resolver(script, job, shape, launch_line):
    """Text with `$NAME` references -> its value when every name is known at conversion time (a literal
    top-level assignment before the launch, or a Slurm variable fixed by the options), else None."""
    made: list = []  # the context, built on the first call: most scripts export only literal values

    def resolve(text):
        if not made:
            top = []
            blocks = set()
            for st, block in entries(script.body):
                if st.__class__ is Assignment:
                    if block:
                        blocks.add(st.name)
                    elif block is None and (launch_line is None or st.line < launch_line):
                        top.append(st)
            made.append(
                common.LaunchContext(
                    script=script, job=job, shape=shape, assignments=tuple(top), block_assigned=frozenset(blocks)
                )
            )
        return common.static_text(made[0], text)

    return resolve


# `\bSLURM_…` spelled with the word boundary after the first letter (a literal first character is faster)
_JOB_ID_USE = re.compile(r"S(?<!\wS)LURM_(?:JOB_?ID|ARRAY_JOB_ID)\b")
_SLURM_DEFINITION = re.compile(r"\s*(export\s+)?SLURM_\w+=")


def _used_outside_definitions(pattern: re.Pattern, body: str) -> bool:
    """Whether `pattern` (which never matches a line break) matches in a line of `body` that is not a
    definition line (_SLURM_DEFINITION): the same as searching the body with those lines removed."""
    for m in pattern.finditer(body):
        if not _on_definition_line(body, m.start(), m.end()):
            return True
    return False


def _on_definition_line(body: str, start: int, end: int) -> bool:
    """Whether body[start:end] (no line break in it) lies on a _SLURM_DEFINITION line."""
    line_start = body.rfind("\n", 0, start) + 1
    line_end = body.find("\n", end)
    return _SLURM_DEFINITION.match(body, line_start, len(body) if line_end < 0 else line_end) is not None


def _number_used_outside_definitions(number: str, body: str) -> bool:
    r"""_used_outside_definitions for the pattern `(?<!\d)NUMBER(?!\d)` (NUMBER made of ASCII digits), found
    with str.find: the pattern differs per script, and compiling it costs more than the search."""
    size = len(number)
    find = body.find
    i = find(number)
    while i >= 0:
        end = i + size
        # `\d` is a Unicode decimal digit (category Nd), which is what str.isdecimal tells
        if not (i and body[i - 1].isdecimal()) and not (end < len(body) and body[end].isdecimal()):
            if not _on_definition_line(body, i, end):
                return True
        i = find(number, i + 1)
    return False


def _job_id_use(job, command, args, intent) -> list[Finding]:
    """SLURM_JOB_ID reaching the command: a TrainJob has no job number, so a fixed stand-in (one per script,
    translator/plan/prologue.py) is used, where Slurm gave every submission a new one."""
    text = "\n".join(tuple(command) + tuple(args))
    stand_in = prologue.job_id_number(job)
    body = text.split("# ---- batch script body", 1)[-1] if intent.family == "script" else text
    # the definitions the prologue/shim make (`export SLURM_JOB_ID=…` lines) are not uses
    if not (
        _used_outside_definitions(_JOB_ID_USE, body)
        or (stand_in in body and _number_used_outside_definitions(stand_in, body))
    ):
        return []
    return [
        Finding(
            WARNING,
            "L354",
            f"the command uses SLURM_JOB_ID, which Kubernetes does not have: the TrainJob "
            f"uses the fixed stand-in {stand_in} for this script, where Slurm gave every submission a new "
            "number, so outputs named after it are overwritten when the TrainJob runs again",
            intent.line,
            "name outputs after something unique per run (a timestamp written by rank 0, or a run name argument)",
        )
    ]
