"""Script + SlurmJob (+ settings, profile) -> TrainerPlan(s).

Values in a plan are Kubernetes API values: `command`, `args` and env values are escaped for the
kubelet's `$(VAR)` expansion (translator/plan/kube.py), so emitters write them unchanged.
"""
from __future__ import annotations

import dataclasses
import heapq
from typing import List, Optional, Tuple

from translator.diagnostics import ERROR, INFO, WARNING, Finding
from translator.launchers import common
from translator.launchers import is_env_setup
from translator.plan import env as envmod
from translator.plan import kube, naming, packages as pipmod, resources, runtimes
from translator.plan.model import EnvVar, PodPatch, SourceMap, TrainerPlan
from translator.slurm import values as V
from translator.read.ast import (Block, Command, CD, CONDA, MODULE, OTHER, PIP, SBATCH, SOURCE, VENV,
                                 EXPORT)

MAX_ARRAY_EXPANSION = 1000
_INFORMATIONAL = {"echo", "printf", "date", "hostname", "nvidia-smi", "set", "env", "printenv", "uname", "sleep",
                  "which", "whoami", "id", "pwd", "ls", "free", "lscpu", "nproc", "true", ":", "ulimit", "umask",
                  "trap", "wait", "exit", "shopt"}


def _lines(job, *names) -> Tuple[int, ...]:
    return resources._lines(job, *names)


def _first(job, *names) -> Optional[int]:
    lines = _lines(job, *names)
    return lines[0] if lines else None


def array_indices(spec: str) -> Optional[List[int]]:
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
    out: List[int] = []
    for ix in heapq.merge(*ranges):
        if not out or ix != out[-1]:
            out.append(ix)
            if len(out) > MAX_ARRAY_EXPANSION:
                break
    return out


def _commands(statements, depth=0):
    for st in statements:
        if isinstance(st, Command):
            yield st, depth
        elif isinstance(st, Block):
            if st.command is not None:
                yield st.command, depth + 1
            yield from _commands(st.children, depth + 1)


def _option_findings(job, settings) -> Tuple[List[Finding], List[SourceMap]]:
    f = job.fields
    o = job.options
    out: List[Finding] = []
    smap: List[SourceMap] = []

    def add(sev, code, msg, names, fix=None, status="dropped"):
        out.append(Finding(sev, code, msg, _first(job, *names), fix))
        lines = _lines(job, *names)
        if lines:
            smap.append(SourceMap("(" + names[0] + ")", lines, status))

    if f.dependency:
        add(WARNING, "P407", f"--dependency={V.clip_text(f.dependency, 60)}: a TrainJob cannot wait for another job",
            ("dependency",), "submit it after its dependency finishes, or use a workflow engine (Argo Workflows, "
                             "Kubeflow Pipelines)", status="unsupported")
    if o.get("mail-type") or o.get("mail-user"):
        add(INFO, "P408", "--mail-type/--mail-user: Kubernetes sends no mail", ("mail-type", "mail-user"),
            "watch the TrainJob's conditions (kubectl wait, alerting on TrainJob status)", status="unsupported")
    if f.signal or f.requeue:
        what = ", ".join(x for x in ((f"--signal={f.signal}" if f.signal else ""), ("--requeue" if f.requeue else "")) if x)
        add(WARNING, "P409", f"{what}: no signal is sent before activeDeadlineSeconds expires and a TrainJob is not "
                             "requeued", ("signal", "requeue"),
            "checkpoint periodically; retries need a runtime with a JobSet failurePolicy", status="unsupported")
    if f.exclusive:
        add(WARNING, "P410", "--exclusive: pods share nodes unless they request the whole node",
            ("exclusive",), "request the node's full CPU/memory, or use a node selector/taint in a site profile")
    if f.constraint:
        add(WARNING, "P411", f"--constraint={f.constraint}: node features become a node selector or affinity",
            ("constraint",), "map features to node labels in a site profile")
    if o.get("reservation"):
        add(WARNING, "P412", f"--reservation={o['reservation']}: Kubernetes has no reservations",
            ("reservation",), "use a dedicated node pool or a Kueue ClusterQueue", status="unsupported")
    if f.output or f.error:
        pats = ", ".join(x for x in (f.output and f"--output={f.output}", f.error and f"--error={f.error}") if x)
        add(INFO, "P413", f"{pats}: output goes to the pod logs, no file is written",
            ("output", "error"), "read it with `kubectl logs` (one log per node pod)")
    if settings.profile is None:
        for name, code_field in (("partition", f.partition), ("qos", f.qos), ("account", f.account)):
            if code_field:
                add(WARNING, "P416", f"--{name}={code_field}: no site profile maps it to a Kueue queue, node "
                                     "selector or priority", (name,), "write a site profile (`slurm2kf profile init`)",
                    status="unsupported")
    if f.chdir:
        add(WARNING, "P428", f"--chdir={f.chdir}: a TrainJob cannot set the working directory; the image's is used",
            ("chdir",), "use absolute paths, or set WORKDIR in the image")
    if f.nodes_max and f.nodes_min and f.nodes_max != f.nodes_min:
        add(WARNING, "P426", f"--nodes={f.nodes_min}-{f.nodes_max} is a range; the TrainJob uses {f.nodes_min} "
                             "nodes", ("nodes",), "pick one node count", status="approximated")
    return out, smap


def build_plans(script, job, settings) -> Tuple[TrainerPlan, ...]:
    from translator.launchers import detect

    findings: List[Finding] = []
    smap: List[SourceMap] = []
    if not job.sbatch_accepts:
        findings.append(Finding(ERROR, "P401", "sbatch would refuse this script, so the conversion describes a job "
                                "Slurm never ran", next((d.line for d in job.diagnostics if d.severity == ERROR), None),
                                "fix the errors reported for the script first"))
    intent = detect(script, job)
    shape = common.job_shape(job.fields)
    findings.extend(intent.findings)
    is_script = intent.family == "script"

    # --- runtime and image
    runtime_name = settings.runtime or intent.runtime or runtimes.DEFAULT_FOR_FRAMEWORK.get(intent.framework,
                                                                                             "torch-distributed")
    rt = runtimes.get(runtime_name)
    if settings.runtime:
        if rt is None:
            findings.append(Finding(WARNING, "P425", f"runtime `{runtime_name}` is not one Kubeflow ships; its "
                                    "framework and image are unknown to slurm2kf", None,
                                    "check it exists (`kubectl get clustertrainingruntimes`) and pass --image"))
        elif not rt.custom_trainer:
            findings.append(Finding(ERROR, "P427", f"runtime `{runtime_name}` only runs its built-in torchtune "
                                    "recipe; a custom command cannot use it", None, "choose another --runtime"))
        elif rt.policy != intent.framework and intent.framework in ("torch", "mpi", "jax"):
            findings.append(Finding(WARNING, "P427", f"runtime `{runtime_name}` has the {rt.policy} policy but the "
                                    f"launch line needs {intent.framework} ({intent.family}); the command may not "
                                    "start as intended", intent.line, "use a runtime with the matching policy"))
    framework = rt.policy if rt is not None else intent.framework
    image_findings = [x for x in findings if x.code == "L310"]
    if settings.image:
        image = settings.image
        if image_findings:
            findings = [x if x.code != "L310" else dataclasses.replace(
                x, severity=INFO, message=x.message + f"; --image {settings.image} is used instead") for x in findings]
    elif intent.image:
        image = intent.image
    elif rt is not None:
        image = rt.image
    else:
        image = runtimes.default_image(intent.framework)
    smap.append(SourceMap("spec.trainer.image", tuple(ln for ln in (intent.line,) if intent.image and ln), "mapped")
                if intent.image else SourceMap("spec.trainer.image", (), "approximated"))

    # --- software environment
    launch_line = intent.line
    pkgs: dict = {}
    index_urls: List[str] = []
    extra_index: dict = {}
    pip_extra: dict = {}
    modules, envs, dropped_before, after = [], [], [], []
    consumed = set(intent.consumed_lines)
    for cmd, _depth in _commands(script.body):
        if cmd.kind == MODULE:
            modules.append(cmd)
        elif cmd.kind in (CONDA, VENV) or (cmd.kind != PIP and is_env_setup(cmd)):
            envs.append(cmd)
        elif cmd.kind == PIP and not is_script and (launch_line is None or cmd.line < launch_line):
            named, index_url, ex, extra, fnd = pipmod.parse(cmd)
            for x in named:                   # ordered sets: linear in the number of pip lines
                pkgs.setdefault(x)
            index_urls = index_url or index_urls
            for x in ex:
                extra_index.setdefault(x)
            for x in extra:
                pip_extra.setdefault(x)
            findings.extend(fnd)
            smap.append(SourceMap("packages", (cmd.line,), "mapped"))
        elif cmd.kind == SBATCH:
            findings.append(Finding(WARNING, "P415", f"nested `{cmd.text.strip()}` submits another Slurm job; it is "
                                    "not converted (and fails in the pod)", cmd.line,
                                    "convert that script too and submit both TrainJobs"))
            smap.append(SourceMap("(body)", (cmd.line,), "unsupported"))
        elif not is_script and cmd.kind in (OTHER, SOURCE, CD, EXPORT) and (
                cmd.line not in consumed or cmd.connector == "|"):
            if launch_line is not None and (cmd.line > launch_line or cmd.line in consumed):
                after.append(cmd)
            else:
                dropped_before.append(cmd)
    if modules:
        findings.append(Finding(WARNING, "P402", "environment modules must be provided by the image: "
                                + "; ".join(m.text.strip() for m in modules), modules[0].line,
                                "build an image with this software, then pass --image"))
        smap.append(SourceMap("spec.trainer.image", tuple(m.line for m in modules), "approximated"))
    for e in envs:
        code = "P403" if e.kind == CONDA else "P404"
        what = "conda environment" if e.kind == CONDA else "virtualenv"
        findings.append(Finding(WARNING, code, f"{what} `{e.text.strip()}` must be replaced by an image "
                                "with that environment", e.line, "build the environment into the image (--image)"))
        smap.append(SourceMap("spec.trainer.image", (e.line,), "approximated"))
    if pkgs:
        findings.append(Finding(INFO, "P424", "pip installs run in each pod before the launcher: "
                                + " ".join(pkgs), None, "bake them into the image to start faster"))
    discovery = False
    for cmd in dropped_before + after:
        name = common.basename(cmd.words[0].value) if cmd.words else ""
        discovery = name == "scontrol" or (discovery and cmd.connector == "|")
        if discovery:
            findings.append(Finding(INFO, "P441", f"`{cmd.text.strip()}` reads the Slurm node list; the Kubeflow "
                                    "runtime provides the nodes to the launcher, so it is not carried", cmd.line))
            smap.append(SourceMap("(body)", (cmd.line,), "dropped"))
    discovered = {f.line for f in findings if f.code == "P441"}
    dropped_before = [c for c in dropped_before if c.line not in discovered]
    after = [c for c in after if c.line not in discovered]
    for cmd in dropped_before:
        name = common.basename(cmd.words[0].value) if cmd.words else ""
        if cmd.kind == SOURCE:
            findings.append(Finding(WARNING, "P440", f"`{cmd.text.strip()}` sets up the shell environment on Slurm; "
                                    "the image must provide the same environment", cmd.line,
                                    "build that environment into the image (--image)"))
        elif cmd.kind == CD:
            findings.append(Finding(WARNING, "P428", f"`{cmd.text.strip()}` changes directory; a TrainJob runs in the "
                                    "image's working directory", cmd.line, "use absolute paths in the command"))
        elif name in _INFORMATIONAL:
            findings.append(Finding(INFO, "P435", f"`{cmd.text.strip()}` is not carried (informational)", cmd.line))
        else:
            findings.append(Finding(WARNING, "P436", f"`{cmd.text.strip()}` ran before the launch on Slurm and is not "
                                    "part of the TrainJob", cmd.line, "move it into the image or the program"))
        smap.append(SourceMap("(body)", (cmd.line,), "dropped"))
    for cmd in after:
        name = common.basename(cmd.words[0].value) if cmd.words else ""
        if cmd.connector == "|" and launch_line is not None and cmd.line <= (max(consumed) if consumed else launch_line):
            findings.append(Finding(INFO, "P435", f"`{cmd.text.strip()}` read the launch's output on Slurm; on "
                                    "Kubernetes the output goes to the pod logs (`kubectl logs`)", cmd.line))
            smap.append(SourceMap("(body)", (cmd.line,), "dropped"))
            continue
        sev = INFO if name in _INFORMATIONAL else WARNING
        code = "P435" if sev == INFO else "P437"
        msg = (f"`{cmd.text.strip()}` is not carried (informational)" if sev == INFO else
               f"`{cmd.text.strip()}` ran after the training on Slurm and is not part of the TrainJob")
        findings.append(Finding(sev, code, msg, cmd.line, None if sev == INFO else
                                "run it as a separate step (e.g. a workflow) or inside the program"))
        smap.append(SourceMap("(body)", (cmd.line,), "dropped"))

    # --- shape, resources, env
    num_nodes = intent.num_nodes or shape.nodes
    if num_nodes < shape.nodes and intent.family not in ("python", "script"):
        findings.append(Finding(INFO, "P443", f"the launch line uses {num_nodes} of the job's {shape.nodes} nodes; "
                                f"the TrainJob asks for {num_nodes}", intent.line))
    smap.append(SourceMap("spec.trainer.numNodes", _lines(job, "nodes", "ntasks", "ntasks-per-node"),
                          "mapped" if num_nodes == shape.nodes else "approximated"))
    res, rfind, rmap = resources.resources_per_node(job, shape, settings.gpu_resource)
    findings.extend(rfind)
    smap.extend(rmap)
    if is_script:
        env: Tuple[EnvVar, ...] = ()
    else:
        env, efind, emap = envmod.collect(script, launch_line, framework, kube.escape, consumed=consumed)
        findings.extend(efind)
        smap.extend(emap)
    extra_env, xfind = envmod.launch_env(intent.env, intent.line, framework, kube.escape)
    findings.extend(xfind)
    env = tuple(e for e in env if e.name not in {x.name for x in extra_env}) + extra_env

    # --- deadline
    deadline = None
    t = job.fields.time_limit_seconds
    if t and t > 2 ** 63 - 1:                               # activeDeadlineSeconds is an int64
        findings.append(Finding(WARNING, "P405", f"--time={job.options.get('time', '')} is beyond what "
                                "activeDeadlineSeconds can hold; no deadline is set", _first(job, "time")))
    elif t:
        deadline = int(t)
        findings.append(Finding(INFO, "P405", f"--time={job.options.get('time', '')} -> activeDeadlineSeconds {t}; "
                                "it counts from when the TrainJob starts (including image pulls and pip installs)",
                                _first(job, "time")))
        smap.append(SourceMap("spec.activeDeadlineSeconds", _lines(job, "time"), "mapped"))
    elif t == 0:
        findings.append(Finding(INFO, "P406", "--time is unlimited; no activeDeadlineSeconds", _first(job, "time")))

    # --- other options
    ofind, omap = _option_findings(job, settings)
    findings.extend(ofind)
    smap.extend(omap)
    if len(job.components) > 1 or getattr(script, "components", 1) > 1:
        findings.append(Finding(ERROR, "P414", f"heterogeneous job with {max(len(job.components), script.components)} "
                                "components: a TrainJob has one node shape; only the first component is converted",
                                next((d.line for d in script.directives if d.component == 1), None),
                                "split it into separate TrainJobs, or one shape that fits all components"))
        het_lines = tuple(d.line for d in script.directives if d.component > 0)
        if het_lines:
            smap.append(SourceMap("(hetjob)", het_lines, "unsupported"))

    # --- identity
    job_name = job.fields.job_name or "sbatch"
    name = naming.trainjob_name(job_name)
    if name != job_name:
        findings.append(Finding(INFO, "P429", f"job name `{job_name}` becomes the TrainJob name `{name}` (RFC 1035 "
                                "label); the original is kept in the annotation " + naming.ANNOTATION_JOB_NAME,
                                _first(job, "job-name")))
    smap.append(SourceMap("metadata.name", _lines(job, "job-name"), "mapped" if name == job_name else "approximated"))
    annotations = ((naming.ANNOTATION_JOB_NAME, job_name), (naming.ANNOTATION_SOURCE, job.path or script.path))

    # --- the launch
    cmd_lines = tuple(range(intent.line, intent.line + 1)) if intent.line else ()
    status = "approximated" if intent.family in ("script", "srun-tasks") else "mapped"
    smap.append(SourceMap("spec.trainer.command", tuple(sorted(set(cmd_lines) | consumed)), status))

    base = TrainerPlan(
        name=name, source_path=job.path or script.path, job_name=job_name, namespace=settings.namespace,
        annotations=annotations, runtime=runtime_name, framework=framework, launcher=intent.family,
        image=image, command=tuple(kube.escape(c) for c in intent.command),
        args=tuple(kube.escape(a) for a in intent.args), packages=tuple(pkgs),
        pip_index_urls=tuple(index_urls or ([pipmod.DEFAULT_INDEX] if extra_index else [])) + tuple(extra_index),
        pip_extra_args=tuple(pip_extra), env=env, num_nodes=num_nodes, proc_per_node=intent.proc_per_node,
        resources_per_node=res, active_deadline_seconds=deadline, findings=(), source_map=())

    # --- arrays
    plans: List[TrainerPlan] = []
    arr = job.fields.array
    uses_task_id = "SLURM_ARRAY_TASK_ID" in (script.text or "")
    if arr:
        indices = array_indices(arr)
        line = _first(job, "array")
        if settings.array_mode == "expand" and indices and len(indices) <= MAX_ARRAY_EXPANSION:
            findings.append(Finding(INFO, "P439", f"--array={V.clip_text(arr, 60)} expanded into {len(indices)} TrainJobs with "
                                    "SLURM_ARRAY_TASK_ID set"
                                    + (f"; the throttle %{job.fields.array_throttle} is not enforced"
                                       if job.fields.array_throttle else ""), line))
            smap.append(SourceMap("(array)", _lines(job, "array"), "mapped"))
            for ix in indices:
                plans.append(_array_plan(base, job, arr, indices, ix))
        else:
            reason = ("it has more than %d tasks" % MAX_ARRAY_EXPANSION if indices and len(indices) > MAX_ARRAY_EXPANSION
                      else "the index list cannot be read" if not indices else "")
            msg = f"--array={V.clip_text(arr, 60)}: only one TrainJob is written"
            if indices:
                msg += f", for index {indices[0]}" + (" (SLURM_ARRAY_TASK_ID is set to it)" if uses_task_id else "")
            if reason:
                msg += f"; not expanded because {reason}"
            findings.append(Finding(WARNING, "P438", msg, line, "use --array-mode=expand for one TrainJob per index, "
                                                                "or an indexed workflow"))
            smap.append(SourceMap("(array)", _lines(job, "array"), "approximated"))
            if indices and uses_task_id:
                plans.append(dataclasses.replace(base, env=_with_env(base.env, "SLURM_ARRAY_TASK_ID", str(indices[0]))))
            else:
                plans.append(base)
    else:
        plans.append(base)

    out = []
    for p in plans:
        p = dataclasses.replace(p, findings=_dedupe(findings), source_map=tuple(smap))
        if settings.profile is not None:
            from translator.profile.apply import apply_profile
            p = apply_profile(p, script, job, settings.profile, settings)
        if shape.gpus_per_node:
            p = with_shared_memory(p, rt)
        out.append(p)
    return tuple(out)


SHM_VOLUME = "dshm"


def with_shared_memory(plan: TrainerPlan, rt) -> TrainerPlan:
    """GPU jobs get /dev/shm as a memory-backed emptyDir (a container's default is 64Mi, too small for NCCL
    and DataLoader workers), on every pod of the runtime, unless a profile already mounted one."""
    if any(m.get("mountPath") == "/dev/shm" for p in plan.patches for m in p.volume_mounts):
        return plan
    if any(v.get("name") == SHM_VOLUME for p in plan.patches for v in p.volumes):
        return plan
    jobs = [j for j in (rt.jobs if rt is not None else ("node",)) if j in ("node", "launcher")] or ["node"]
    volume = {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}}
    mount = {"name": SHM_VOLUME, "mountPath": "/dev/shm"}
    patches = tuple(plan.patches) + tuple(PodPatch(job=j, container=rt.container if rt else "node",
                                                   volumes=(volume,), volume_mounts=(mount,)) for j in jobs)
    note = Finding(INFO, "P442", "/dev/shm is mounted as a memory-backed emptyDir on every pod (a container's "
                   "default is 64Mi, too small for NCCL and data-loader workers); it counts against the memory limit",
                   None, "size it with `defaults.shmSize` in a site profile")
    return dataclasses.replace(plan, patches=patches, findings=tuple(plan.findings) + (note,))


def _with_env(env, name, value) -> Tuple[EnvVar, ...]:
    return tuple(e for e in env if e.name != name) + (EnvVar(name, value),)


def _array_plan(base: TrainerPlan, job, spec, indices, ix) -> TrainerPlan:
    env = base.env
    env = _with_env(env, "SLURM_ARRAY_TASK_ID", str(ix))
    env = _with_env(env, "SLURM_ARRAY_TASK_COUNT", str(len(indices)))
    env = _with_env(env, "SLURM_ARRAY_TASK_MIN", str(indices[0]))       # indices are sorted
    env = _with_env(env, "SLURM_ARRAY_TASK_MAX", str(indices[-1]))
    return dataclasses.replace(base, name=naming.trainjob_name(base.job_name, str(ix)), env=env, array_index=ix,
                               annotations=base.annotations + ((naming.ANNOTATION_ARRAY_INDEX, str(ix)),))


def _one_line(f: Finding) -> Finding:
    """Findings print as one `path:line: …` line: script text quoted in them loses its line breaks."""
    message = " ".join(f.message.split())
    suggestion = " ".join(f.suggestion.split()) if f.suggestion else f.suggestion
    if message == f.message and suggestion == f.suggestion:
        return f
    return dataclasses.replace(f, message=message, suggestion=suggestion)


def _dedupe(findings) -> Tuple[Finding, ...]:
    out = dict.fromkeys(map(_one_line, findings))          # first occurrence kept, in order
    return tuple(sorted(out, key=lambda f: (f.line is None, f.line or 0)))
