"""Apply a site profile to a trainer plan: queues, priorities, namespaces, placement, GPU resource names,
images, runtimes, volumes, whole-node shapes and defaults.

`apply_profile(plan, script, job, profile)` is pure: it returns a new TrainerPlan (dataclasses.replace)
and never re-reads files. Every field it sets adds an info finding naming the profile key and line that
set it; what the profile cannot map adds a warning, and planner findings the profile settled (an
image to build, a whole-node request, a constraint) become info with the reason appended.

Command-line choices win over the profile. With `settings` (a ConvertSettings) they are read directly
(--runtime, --image, --namespace, --gpu-resource); without it they are recognised in the plan: a
namespace already set, a runtime Kubeflow does not ship, a GPU resource other than nvidia.com/gpu, and
an image other than the runtime's default (a container image the script names) are kept.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from typing import Any

from translator.diagnostics import ERROR, INFO, WARNING, Finding
from translator.plan.model import EnvVar, PodPatch, TrainerPlan
from translator.profile.model import GpuTypeRule, PartitionRule, Placement, Profile, RuntimeRule
from translator.profile.usage import (
    SYSTEM_DIRS,
    EnvItem,
    absolute_prefixes,
    assigned_names,
    constraint_features,
    environment_items,
    option_line,
    script_texts,
    uses_prefix,
)

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
SHM_VOLUME = "dshm"
MPI_JOBS = ("launcher", "node")
TRAINER_JOBS = ("node",)

# Planner findings a profile can settle (translator/plan/build.py): --exclusive, --mem=0, --constraint.
P_EXCLUSIVE = "P410"
P_WHOLE_MEMORY = "P417"
P_CONSTRAINT = "P411"
P_GPU_TYPE = "P430"

# Finding codes (documented in docs/codes.md, codes-F).
F_APPLIED = "F500"
F_QUEUE = "F501"
F_PLACEMENT = "F502"
F_PRIORITY = "F503"
F_NAMESPACE = "F504"
F_GPU = "F506"
F_IMAGE = "F507"
F_ENV_UNMATCHED = "F508"
F_VOLUME = "F509"
F_PATH_UNMAPPED = "F510"
F_SHM = "F511"
F_RUNTIME = "F512"
F_RUNTIME_IMAGE = "F513"
F_NODE_SHAPE = "F514"
F_NO_NODE_SHAPE = "F515"
F_DEFAULTS = "F516"
F_UNMAPPED = "F517"
F_GPU_TYPE_UNKNOWN = "F518"
F_VARIABLE = "F519"
F_CONSTRAINT = "F520"
F_CONFLICT = "F521"
F_NOT_FILLED = "F522"
F_RUNTIME_NO_IMAGE = "F523"
F_HIDES_MPI_HOME = "F524"

# The shipped MPI runtimes (deepspeed/mlx) start sshd with /home/mpiuser/.sshd_config from the image and
# mount the SSH keys at /home/mpiuser/.ssh: a volume over /home or /home/mpiuser hides the sshd config.
MPI_USER_HOME = "/home/mpiuser"


def _is_gpu_resource(name: str) -> bool:
    last = name.rsplit("/", 1)[-1]
    return last == "gpu" or last.startswith("mig-")


def _is_local_image(image: str | None) -> bool:
    return bool(
        image and (image.startswith(("/", "./", "../", "~")) or image.endswith((".sif", ".simg", ".sqsh", ".squashfs")))
    )


def _merge_affinity(a: dict | None, b: dict | None) -> dict | None:
    """Both affinities must hold: required node terms are ANDed (cross product of ORed terms), the
    preferred lists and pod (anti-)affinity terms are concatenated."""
    if not a:
        return copy.deepcopy(b) if b else None
    if not b:
        return copy.deepcopy(a)
    out = copy.deepcopy(a)
    na, nb = out.get("nodeAffinity"), b.get("nodeAffinity")
    if nb:
        if not na:
            out["nodeAffinity"] = copy.deepcopy(nb)
        else:
            ra = (na.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
            rb = (nb.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
            if rb:
                if ra:
                    terms = []
                    for ta in ra:
                        for tb in rb:
                            term = {}
                            for k in ("matchExpressions", "matchFields"):
                                items = list(ta.get(k) or []) + copy.deepcopy(list(tb.get(k) or []))
                                if items:
                                    term[k] = items
                            terms.append(term)
                else:
                    terms = copy.deepcopy(rb)
                na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
            pb = nb.get("preferredDuringSchedulingIgnoredDuringExecution")
            if pb:
                na["preferredDuringSchedulingIgnoredDuringExecution"] = list(
                    na.get("preferredDuringSchedulingIgnoredDuringExecution") or []
                ) + copy.deepcopy(pb)
    for kind in ("podAffinity", "podAntiAffinity"):
        pb = b.get(kind)
        if not pb:
            continue
        pa = out.setdefault(kind, {})
        for k, v in pb.items():
            pa[k] = list(pa.get(k) or []) + copy.deepcopy(v)
    return out


class _Builder:
    """Collects what the profile changes while walking the rules, then writes one new plan."""

    def __init__(self, plan: TrainerPlan, profile: Profile, settings) -> None:
        self.plan = plan
        self.profile = profile
        self.settings = settings
        self.findings: list[Finding] = []
        self.labels: dict[str, str] = dict(plan.labels)
        self.annotations: dict[str, str] = dict(plan.annotations)
        self.resources: dict[str, str] = dict(plan.resources_per_node)
        self.env: list[EnvVar] = list(plan.env)
        self.node_selector: dict[str, tuple[str, str]] = {}  # key -> (value, who)
        self.tolerations: list[dict] = []
        self.affinity: dict | None = None
        self.volumes: list[dict] = []
        self.mounts: list[dict] = []
        self.pull_secrets: list[str] = []
        self.service_account: str | None = None
        self.changes: dict[str, Any] = {}  # TrainerPlan field -> new value (dataclasses.replace keywords)
        self.set_count = 0
        self.resolutions: dict[str, str] = {}  # planner finding code -> how the profile settled it
        self.gpu_resource = DEFAULT_GPU_RESOURCE

    # -- findings ---------------------------------------------------------------------------
    def where(self, key: str, line: int | None) -> str:
        base = os.path.basename(self.profile.path) or self.profile.path
        return f"profile key `{key}` ({base}:{line})" if line else f"profile key `{key}` ({base})"

    def info(self, code: str, message: str, line: int | None = None) -> None:
        self.set_count += 1
        self.findings.append(Finding(INFO, code, message, line))

    def warn(self, code: str, message: str, line: int | None = None, suggestion: str | None = None) -> None:
        self.findings.append(Finding(WARNING, code, message, line, suggestion))

    # -- placement --------------------------------------------------------------------------
    def place(self, placement: Placement, who: str, line: int | None) -> None:
        if placement.is_empty():
            return
        parts = []
        for key, value in placement.node_selector:
            if key in self.node_selector and self.node_selector[key][0] != value:
                old, old_who = self.node_selector[key]
                self.warn(
                    F_CONFLICT,
                    f"nodeSelector `{key}`: {who} sets `{value}`, replacing `{old}` from "
                    f"{old_who}; pods would otherwise fit no node",
                    line,
                    "make the profile's partition and GPU-type selectors agree",
                )
            self.node_selector[key] = (value, who)
            parts.append(f"nodeSelector {key}={value}")
        for tol in placement.tolerations:
            if tol not in self.tolerations:
                self.tolerations.append(copy.deepcopy(tol))
                parts.append("toleration " + ",".join(f"{k}={v}" for k, v in tol.items()))
        if placement.affinity:
            self.affinity = _merge_affinity(self.affinity, placement.affinity)
            parts.append("affinity")
        self.info(F_PLACEMENT, f"pods of every replicated job get {'; '.join(parts)} from {who}", line)

    def add_volume(self, volume: dict, mount: dict) -> bool:
        existing_names = {v["name"] for p in self.plan.patches for v in p.volumes} | {v["name"] for v in self.volumes}
        existing_paths = {m["mountPath"] for p in self.plan.patches for m in p.volume_mounts} | {
            m["mountPath"] for m in self.mounts
        }
        if volume["name"] in existing_names or mount["mountPath"] in existing_paths:
            return False
        self.volumes.append(volume)
        self.mounts.append(mount)
        return True


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _first_rule(rules, name: str | None):
    if name is None:
        return None
    for rule in rules:
        if rule.pattern.matches(name):
            return rule
    return None


def _partition(b: _Builder, job) -> PartitionRule | None:
    profile = b.profile
    written = job.fields.partition
    line = option_line(job, "partition")
    names = [n.strip() for n in written.split(",") if n.strip()] if written else []
    from_default = False
    if not names and profile.defaults.partition:
        names = [profile.defaults.partition]
        from_default = True
    if not names:
        return None
    for name in names:
        rule = _first_rule(profile.partitions, name)
        if rule is None:
            continue
        how = (
            f"default partition `{name}` ({b.where('defaults.partition', profile.defaults.line_of('partition'))})"
            if from_default
            else f"partition `{name}`"
        )
        if len(names) > 1:
            how += f" (first of `{written}` that the profile maps)"
        if rule.queue:
            b.labels[KUEUE_QUEUE_LABEL] = rule.queue
            b.info(
                F_QUEUE,
                f"{how} -> Kueue LocalQueue `{rule.queue}`: label {KUEUE_QUEUE_LABEL}={rule.queue} "
                f"from {b.where(rule.key + '.queue', rule.line)}; Kueue's webhook creates the TrainJob "
                f"suspended and starts it when the queue admits it",
                line,
            )
        b.place(rule.placement, f"{b.where(rule.key, rule.line)} ({how})", line)
        if not rule.queue and rule.placement.is_empty() and rule.node.is_empty() and not rule.gpu_type:
            b.warn(
                F_NOT_FILLED,
                f"{how}: {b.where(rule.key, rule.line)} is not filled in (no queue, placement or node shape)",
                line,
                "fill in the partition in the profile",
            )
        return rule
    if not profile.partitions:
        return None
    b.warn(
        F_UNMAPPED,
        f"partition `{written or names[0]}` is not in the profile's `partitions`; no queue or placement was set",
        line,
        "add the partition to the profile",
    )
    return None


def _qos(b: _Builder, job) -> None:
    qos = job.fields.qos
    if not qos:
        return
    line = option_line(job, "qos")
    rule = _first_rule(b.profile.qos, qos)
    if rule is None:
        if not b.profile.qos:
            return
        b.warn(
            F_UNMAPPED,
            f"QoS `{qos}` is not in the profile's `qos`; no priority was set",
            line,
            "map it to a Kueue WorkloadPriorityClass in the profile",
        )
        return
    if rule.priority_class:
        b.labels[KUEUE_PRIORITY_LABEL] = rule.priority_class
        b.info(
            F_PRIORITY,
            f"QoS `{qos}` -> Kueue WorkloadPriorityClass `{rule.priority_class}`: label "
            f"{KUEUE_PRIORITY_LABEL}={rule.priority_class} from {b.where(rule.key + '.priorityClass', rule.line)}",
            line,
        )
    else:
        b.warn(F_NOT_FILLED, f"QoS `{qos}`: {b.where(rule.key, rule.line)} has no priorityClass", line)


def _namespace(b: _Builder, job) -> None:
    if b.plan.namespace is not None or (b.settings is not None and getattr(b.settings, "namespace", None)):
        return
    account = job.fields.account
    line = option_line(job, "account")
    if account:
        rule = _first_rule(b.profile.accounts, account)
        if rule is not None and rule.namespace:
            b.changes["namespace"] = rule.namespace
            b.info(
                F_NAMESPACE,
                f"account `{account}` -> namespace `{rule.namespace}` from "
                f"{b.where(rule.key + '.namespace', rule.line)}",
                line,
            )
            return
        if rule is None and b.profile.accounts:
            b.warn(
                F_UNMAPPED,
                f"account `{account}` is not in the profile's `accounts`",
                line,
                "map it to a namespace in the profile",
            )
        elif rule is not None:
            b.warn(F_NOT_FILLED, f"account `{account}`: {b.where(rule.key, rule.line)} has no namespace yet", line)
    ns = b.profile.defaults.namespace
    if ns:
        b.changes["namespace"] = ns
        b.info(
            F_NAMESPACE,
            f"namespace `{ns}` from {b.where('defaults.namespace', b.profile.defaults.line_of('namespace'))}"
            + (f" (account `{account}` has no namespace of its own)" if account else ""),
            None,
        )


def _gpu_line(job) -> int | None:
    for name in ("gres", "gpus", "gpus-per-node", "gpus-per-task", "tres-per-task"):
        line = option_line(job, name)
        if line:
            return line
    return None


def _gpus_and_constraints(b: _Builder, job, partition: PartitionRule | None) -> None:
    profile = b.profile
    features, plain_and = constraint_features(job.fields.constraint)
    cline = option_line(job, "constraint")
    gpu_type, type_from, type_line = job.fields.gpu_type, "the GPU request", _gpu_line(job)
    gpu_rule: GpuTypeRule | None = None
    used_features = set()
    if gpu_type:
        gpu_rule = _first_rule(profile.gpu_types, gpu_type)
    elif features and profile.gpu_types:
        matches = [(f, _first_rule(profile.gpu_types, f)) for f in features]
        matches = [(f, r) for f, r in matches if r is not None]
        if matches and (plain_and or len(matches) == 1 and len(features) == 1):
            gpu_type, gpu_rule = matches[0]
            type_from, type_line = f"constraint `{job.fields.constraint}`", cline
            used_features.add(gpu_type)
        elif matches:
            b.warn(
                F_GPU_TYPE_UNKNOWN,
                f"constraint `{job.fields.constraint}` allows several GPU types; Kubernetes "
                f"needs one, so no GPU type was selected",
                cline,
                "pin one type with --gres=gpu:TYPE:N or express the choice as node affinity in the profile",
            )
            used_features.update(f for f, _ in matches)
    if gpu_type is None and partition is not None and partition.gpu_type:
        gpu_type = partition.gpu_type
        gpu_rule = _first_rule(profile.gpu_types, gpu_type)
        type_from, type_line = f"{b.where(partition.key + '.gpuType', partition.line)}", option_line(job, "partition")

    gpu_keys = [k for k in b.resources if _is_gpu_resource(k)]
    # The planner writes GPUs as nvidia.com/gpu unless --gpu-resource said otherwise; that one wins.
    cli_gpu = _cli(b, "gpu_resource")
    cli_resource = (cli_gpu not in (None, DEFAULT_GPU_RESOURCE)) or any(k != DEFAULT_GPU_RESOURCE for k in gpu_keys)
    if gpu_type and gpu_rule is None and profile.gpu_types:
        b.warn(
            F_GPU_TYPE_UNKNOWN,
            f"GPU type `{gpu_type}` (from {type_from}) is not in the profile's `gpuTypes`; "
            f"no GPU node selector was set",
            type_line,
            "add the type to `gpuTypes` in the profile",
        )
    resource, resource_who = None, None
    if gpu_rule is not None:
        b.place(
            gpu_rule.placement,
            f"{b.where(gpu_rule.key, gpu_rule.line)} (GPU type `{gpu_type}` from {type_from})",
            type_line,
        )
        if not gpu_rule.placement.is_empty():
            b.resolutions[P_GPU_TYPE] = f"the site profile places it with {b.where(gpu_rule.key, gpu_rule.line)}"
        if gpu_rule.resource:
            resource, resource_who = gpu_rule.resource, b.where(gpu_rule.key + ".resource", gpu_rule.line)
    if resource is None and profile.defaults.gpu_resource:
        resource = profile.defaults.gpu_resource
        resource_who = b.where("defaults.gpuResource", profile.defaults.line_of("gpuResource"))
    if resource and gpu_keys and not cli_resource:
        for key in gpu_keys:
            if key == resource:
                continue
            count = b.resources.pop(key)
            b.resources[resource] = count
            b.info(F_GPU, f"GPU resource `{key}` -> `{resource}` ({count} per node) from {resource_who}", type_line)
    b.gpu_resource = (
        resource
        if (resource and not cli_resource)
        else (gpu_keys[0] if gpu_keys else getattr(b.settings, "gpu_resource", None) or DEFAULT_GPU_RESOURCE)
    )

    unmapped = 0
    for feature in features:
        if feature in used_features:
            continue
        rule = _first_rule(profile.constraints, feature)
        if rule is not None:
            if not plain_and:
                b.warn(
                    F_CONSTRAINT,
                    f"constraint `{job.fields.constraint}` is not a plain AND of features; "
                    f"feature `{feature}` was applied as a requirement",
                    cline,
                )
            b.place(rule.placement, f"{b.where(rule.key, rule.line)} (constraint feature `{feature}`)", cline)
        elif profile.constraints or profile.gpu_types:
            unmapped += 1
            b.warn(
                F_UNMAPPED,
                f"constraint feature `{feature}` is not in the profile's `constraints` or `gpuTypes`; it was dropped",
                cline,
                "map the feature to a node selector in the profile",
            )
    if (
        features
        and plain_and
        and not unmapped
        and (profile.constraints or profile.gpu_types)
        and all(f in used_features or _first_rule(profile.constraints, f) for f in features)
    ):
        b.resolutions[P_CONSTRAINT] = "the site profile maps every feature to node placement (see F502)"


def _node_shape(b: _Builder, job, partition: PartitionRule | None) -> None:
    exclusive = bool(job.fields.exclusive)
    whole_mem = job.fields.mem_per_node_mb == 0
    if not (exclusive or whole_mem):
        return
    what = " and ".join(x for x in ("--exclusive" if exclusive else "", "--mem=0" if whole_mem else "") if x)
    line = option_line(job, "exclusive") if exclusive else option_line(job, "mem")
    node = partition.node if partition is not None else None
    if partition is None or node is None or node.is_empty():
        where = f"partition `{job.fields.partition}`" if job.fields.partition else "the default partition"
        b.warn(
            F_NO_NODE_SHAPE,
            f"{what} asks for whole nodes, but the profile gives no node shape for {where}; "
            f"the request stays as the script wrote it",
            line,
            "add `node: {cpus, memory, gpus}` to the partition in the profile",
        )
        return
    who = b.where(partition.key + ".node", partition.line)
    if exclusive and node.cpus:
        b.resources["cpu"] = node.cpus
        b.info(F_NODE_SHAPE, f"--exclusive: cpu = {node.cpus} (all CPUs of a node) from {who}", line)
        b.resolutions[P_EXCLUSIVE] = f"the site profile requests a whole node: cpu {node.cpus} ({who})"
    if exclusive and node.gpus:
        gpu_keys = [k for k in b.resources if _is_gpu_resource(k)]
        if gpu_keys:
            if b.resources[gpu_keys[0]] != str(node.gpus):
                b.info(
                    F_NODE_SHAPE,
                    f"--exclusive: the node has {node.gpus} GPUs ({who}); the script asked for "
                    f"{b.resources[gpu_keys[0]]}, which is kept",
                    line,
                )
        else:
            b.resources[b.gpu_resource] = str(node.gpus)
            b.info(
                F_NODE_SHAPE,
                f"--exclusive: {b.gpu_resource} = {node.gpus} (Slurm gives an exclusive job every "
                f"GPU of its nodes) from {who}",
                line,
            )
    if whole_mem:
        mline = option_line(job, "mem")
        if node.memory:
            b.resources["memory"] = node.memory
            b.info(F_NODE_SHAPE, f"--mem=0: memory = {node.memory} (all memory of a node) from {who}", mline)
            b.resolutions[P_WHOLE_MEMORY] = f"the site profile requests memory {node.memory}, a whole node ({who})"
        else:
            b.warn(F_NO_NODE_SHAPE, f"--mem=0 asks for all memory of a node, but {who} has no `memory`", mline)
    elif exclusive:
        b.info(
            F_NODE_SHAPE,
            "--exclusive without --mem=0: memory stays what the script requested (Slurm "
            "gives an exclusive job only the memory it asked for)",
            line,
        )


def _shipped_images(plan: TrainerPlan) -> tuple[str, ...]:
    """Images the planner picks when the script names none (the runtime's own): not a script decision."""
    try:
        from translator.plan import runtimes
    except ImportError:  # pragma: no cover - the planner package is part of slurm2kf
        return ()
    images = []
    rt = runtimes.get(plan.runtime)
    if rt is not None:
        images.append(rt.image)
    try:
        images.append(runtimes.default_image(plan.framework))
    except KeyError:
        pass
    return tuple(images)


def _shipped_runtime(name: str) -> bool:
    try:
        from translator.plan import runtimes
    except ImportError:  # pragma: no cover
        return True
    return runtimes.get(name) is not None


def _cli(b: _Builder, name: str):
    return getattr(b.settings, name, None) if b.settings is not None else None


def _image_undecided(b: _Builder) -> bool:
    """True when nothing but the runtime's default chose the image (so the profile may choose it)."""
    image = b.changes.get("image", b.plan.image)
    if _cli(b, "image"):
        return False
    return not image or _is_local_image(image) or image in _shipped_images(b.plan)


def _image(b: _Builder, script) -> None:
    plan = b.plan
    if not _image_undecided(b):
        return
    items: list[EnvItem] = environment_items(script)
    if (
        plan.image
        and _is_local_image(plan.image)
        and not any(i.kind == "container" and i.name == plan.image for i in items)
    ):
        items.append(EnvItem("container", plan.image, None))
    if not items or not (b.profile.image_rules or b.profile.images_provided):
        return
    chosen = None
    for rule in b.profile.image_rules:
        hits = [i for i in items if any(k == i.kind and p.matches(i.name) for k, p in rule.matchers)]
        if not hits:
            continue
        if not rule.image:
            b.warn(
                F_NOT_FILLED,
                f"{b.where(rule.key, rule.line)} matches {hits[0].kind} `{hits[0].name}` but "
                f"has no image yet; later rules were tried",
                hits[0].line,
            )
            continue
        chosen = (rule, hits)
        break
    provided = [i for i in items if any(k == i.kind and p.matches(i.name) for k, p in b.profile.images_provided)]
    if chosen is not None:
        rule, hits = chosen
        b.changes["image"] = rule.image
        names = ", ".join(f"{i.kind} `{i.name}`" for i in hits)
        b.info(
            F_IMAGE,
            f"image `{rule.image}` for {names} from {b.where(rule.key, rule.line)} (first matching rule)",
            hits[0].line,
        )
        for code in _IMAGE_REQUESTS:
            b.resolutions[code] = f"the site profile runs image `{rule.image}` ({b.where(rule.key, rule.line)})"
    for item in items:
        if chosen is not None and item in chosen[1]:
            continue
        if item in provided:
            continue
        if chosen is not None:
            msg = (
                f"{item.kind} `{item.name}` is not matched by {b.where(chosen[0].key, chosen[0].line)} nor "
                f"listed in `images.provided`; check that image `{chosen[0].image}` provides it"
            )
        else:
            msg = (
                f"{item.kind} `{item.name}` matches no rule in the profile's `images`; it must be baked into "
                f"the image the TrainJob runs"
            )
        b.warn(
            F_ENV_UNMATCHED,
            msg,
            item.line,
            f"add an `images.rules` entry for `{item.name}` or list it in `images.provided`",
        )


def _runtime(b: _Builder) -> RuntimeRule | None:
    plan = b.plan
    # The launcher's choice is always a shipped runtime; another name came from --runtime, which wins.
    if not _cli(b, "runtime") and _shipped_runtime(plan.runtime):
        for by_launcher in b.profile.runtimes:
            if plan.launcher in by_launcher.launchers:
                if by_launcher.name != plan.runtime or by_launcher.kind != plan.runtime_kind:
                    b.changes["runtime"] = by_launcher.name
                    b.changes["runtime_kind"] = by_launcher.kind
                    b.info(
                        F_RUNTIME,
                        f"runtime `{by_launcher.name}` ({by_launcher.kind}) for launcher "
                        f"`{plan.launcher}` from {b.where(by_launcher.key, by_launcher.line)} (the launcher chose "
                        f"`{plan.runtime}`)",
                        None,
                    )
                break
    name = b.changes.get("runtime", plan.runtime)
    rule = next((r for r in b.profile.runtimes if r.name == name), None)
    if "image" not in b.changes and _image_undecided(b):
        if rule is not None and rule.image:
            if rule.image != plan.image:
                b.changes["image"] = rule.image
                b.info(
                    F_RUNTIME_IMAGE,
                    f"image `{rule.image}`: the default image of runtime `{name}` from "
                    f"{b.where(rule.key + '.image', rule.line)} (nothing in the script names an image)",
                    None,
                )
        elif name != plan.runtime and plan.image and not _is_local_image(plan.image):
            b.warn(
                F_RUNTIME_NO_IMAGE,
                f"runtime `{name}` from the profile has no `image`; the TrainJob keeps image "
                f"`{plan.image}`, the default of `{plan.runtime}`",
                None,
                f"set `image` on the runtime in the profile ({b.where(rule.key if rule else 'runtimes', rule.line if rule else None)})",
            )
    return rule


def _filesystems(b: _Builder, script, job) -> None:
    profile = b.profile
    texts = script_texts(script, job)
    assigned = set(assigned_names(script))
    env_names = {e.name for e in b.env}
    covered_tops = set()
    for fs in profile.filesystems:
        if not fs.path.startswith("$"):
            covered_tops.add("/" + fs.path.strip("/").split("/")[0])
        use = uses_prefix(texts, fs.path)
        if use is None:
            continue
        if fs.source is None:
            b.warn(
                F_NOT_FILLED,
                f"the script uses `{fs.path}` but {b.where(fs.key, fs.line)} names no volume (pvc, nfs or hostPath)",
                use.line,
            )
            continue
        volume = {"name": fs.volume_name, **copy.deepcopy(fs.source)}
        mount: dict[str, Any] = {"name": fs.volume_name, "mountPath": fs.mount_path}
        if fs.read_only:
            mount["readOnly"] = True
        if fs.sub_path:
            mount["subPath"] = fs.sub_path
        if not b.add_volume(volume, mount):
            continue
        if b.plan.framework == "mpi" and (MPI_USER_HOME + "/").startswith(fs.mount_path.rstrip("/") + "/"):
            b.warn(
                F_HIDES_MPI_HOME,
                f"the volume mounted at `{fs.mount_path}` ({b.where(fs.key, fs.line)}) hides "
                f"`{MPI_USER_HOME}` of the MPI runtime image, whose sshd configuration the worker pods start "
                f"from; MPI workers would not start",
                use.line,
                f"mount a subdirectory (e.g. `mountPath: {fs.mount_path.rstrip('/')}/<user>`) or use an MPI "
                f"runtime whose user home is elsewhere",
            )
        kind, detail = next(iter(fs.source.items()))
        desc = {
            "persistentVolumeClaim": lambda d: f"PVC `{d['claimName']}`",
            "nfs": lambda d: f"NFS `{d['server']}:{d['path']}`",
            "hostPath": lambda d: f"hostPath `{d['path']}`",
        }[kind](detail)
        b.info(
            F_VOLUME,
            f"`{fs.path}` is used (`{_short(use.value)}`): {desc} mounted at `{fs.mount_path}`"
            f"{' read-only' if fs.read_only else ''} as volume `{fs.volume_name}` from {b.where(fs.key, fs.line)}",
            use.line,
        )
        var = fs.variable
        if var and var not in assigned and var not in env_names:
            b.env.append(EnvVar(var, fs.mount_path))
            env_names.add(var)
            b.info(
                F_VARIABLE,
                f"env {var}={fs.mount_path} so that `${var}` points at the mounted volume, from "
                f"{b.where(fs.key + '.mountPath', fs.line)}",
                use.line,
            )
    if profile.filesystems:
        for top, text in absolute_prefixes(texts):
            if top in SYSTEM_DIRS or top in covered_tops:
                continue
            b.warn(
                F_PATH_UNMAPPED,
                f"the script uses `{top}` (`{_short(text.value)}`) but the profile's "
                f"`filesystems` mount nothing there; the path will not exist in the pod",
                text.line,
                f"add a `filesystems` entry for `{top}` or copy the data into a mounted volume",
            )


def _shm(b: _Builder, partition: PartitionRule | None) -> None:
    size, who = None, None
    if partition is not None and partition.shm_size:
        size, who = partition.shm_size, b.where(partition.key + ".shmSize", partition.line)
    elif b.profile.defaults.shm_size:
        size, who = b.profile.defaults.shm_size, b.where("defaults.shmSize", b.profile.defaults.line_of("shmSize"))
    if not size:
        return
    volume = {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": size}}
    if b.add_volume(volume, {"name": SHM_VOLUME, "mountPath": "/dev/shm"}):
        b.info(
            F_SHM,
            f"/dev/shm: memory-backed emptyDir of {size} (NCCL and data loaders need more than the "
            f"container default of 64Mi) from {who}",
            None,
        )


def _defaults(b: _Builder) -> None:
    d = b.profile.defaults
    for key, value in d.labels:
        if key not in b.labels:
            b.labels[key] = value
            b.info(F_DEFAULTS, f"label {key}={value} from {b.where('defaults.labels', d.line_of('labels'))}")
    for key, value in d.annotations:
        if key not in b.annotations:
            b.annotations[key] = value
            b.info(F_DEFAULTS, f"annotation {key} from {b.where('defaults.annotations', d.line_of('annotations'))}")
    if d.image_pull_secrets:
        b.pull_secrets = list(d.image_pull_secrets)
        b.info(
            F_DEFAULTS,
            f"imagePullSecrets {', '.join(d.image_pull_secrets)} from "
            f"{b.where('defaults.imagePullSecrets', d.line_of('imagePullSecrets'))}",
        )
    names = {e.name for e in b.env}
    for name, value in d.env:
        if name not in names:
            b.env.append(EnvVar(name, value))
            names.add(name)
            b.info(F_DEFAULTS, f"env {name} from {b.where('defaults.env', d.line_of('env'))}")
    if d.pip_index_urls and b.plan.packages and not b.plan.pip_index_urls:
        b.changes["pip_index_urls"] = tuple(d.pip_index_urls)
        b.info(
            F_DEFAULTS,
            f"pip installs use index {', '.join(d.pip_index_urls)} from "
            f"{b.where('defaults.pipIndexUrls', d.line_of('pipIndexUrls'))}",
        )
    if d.service_account_name:
        b.service_account = d.service_account_name
        b.info(
            F_DEFAULTS,
            f"serviceAccountName `{d.service_account_name}` from "
            f"{b.where('defaults.serviceAccountName', d.line_of('serviceAccountName'))}",
        )


def _merge_patch(existing: PodPatch, add: PodPatch) -> PodPatch:
    ns = dict(existing.node_selector)
    ns.update(dict(add.node_selector))
    tolerations = list(existing.tolerations) + [t for t in add.tolerations if t not in existing.tolerations]
    names = {v["name"] for v in existing.volumes}
    paths = {m["mountPath"] for m in existing.volume_mounts}
    volumes = list(existing.volumes) + [v for v in add.volumes if v["name"] not in names]
    mounts = list(existing.volume_mounts) + [m for m in add.volume_mounts if m["mountPath"] not in paths]
    secrets = list(existing.image_pull_secrets) + [
        s for s in add.image_pull_secrets if s not in existing.image_pull_secrets
    ]
    return dataclasses.replace(
        existing,
        node_selector=tuple(ns.items()),
        tolerations=tuple(tolerations),
        affinity=_merge_affinity(existing.affinity, add.affinity),
        volumes=tuple(volumes),
        volume_mounts=tuple(mounts),
        image_pull_secrets=tuple(secrets),
        service_account_name=existing.service_account_name or add.service_account_name,
    )


def _patches(b: _Builder, runtime_rule: RuntimeRule | None) -> tuple[PodPatch, ...]:
    patches = list(b.plan.patches)
    if runtime_rule is not None and runtime_rule.replicated_jobs:
        jobs = runtime_rule.replicated_jobs
    elif b.plan.framework == "mpi":
        jobs = MPI_JOBS
    else:
        jobs = TRAINER_JOBS
    for job_name in jobs:
        add = PodPatch(
            job=job_name,
            container="node",
            node_selector=tuple((k, v) for k, (v, _) in b.node_selector.items()),
            tolerations=tuple(copy.deepcopy(b.tolerations)),
            affinity=copy.deepcopy(b.affinity),
            volumes=tuple(copy.deepcopy(b.volumes)),
            volume_mounts=tuple(copy.deepcopy(b.mounts)),
            image_pull_secrets=tuple(b.pull_secrets),
            service_account_name=b.service_account,
        )
        if add.is_empty():
            continue
        for i, p in enumerate(patches):
            if p.job == job_name:
                patches[i] = _merge_patch(p, add)
                break
        else:
            patches.append(add)
    return tuple(patches)


def apply_profile(plan: TrainerPlan, script, job, profile: Profile, settings=None) -> TrainerPlan:
    """Return `plan` with the site profile applied (see module docstring). Never raises for bad input."""
    if profile is None:
        return plan
    b = _Builder(plan, profile, settings)
    b.gpu_resource = DEFAULT_GPU_RESOURCE
    partition = None
    if job is not None:
        partition = _partition(b, job)
        _qos(b, job)
        _namespace(b, job)
        _gpus_and_constraints(b, job, partition)
        _node_shape(b, job, partition)
    elif plan.namespace is None and profile.defaults.namespace:
        b.changes["namespace"] = profile.defaults.namespace
    if script is not None:
        _image(b, script)
    runtime_rule = _runtime(b)
    if script is not None:
        _filesystems(b, script, job)
    _shm(b, partition)
    _defaults(b)
    patches = _patches(b, runtime_rule)
    earlier = tuple(_resolved(f, b.resolutions[f.code]) if f.code in b.resolutions else f for f in plan.findings)
    label = f"site profile `{profile.name}`" if profile.name else "site profile"
    summary = Finding(
        INFO, F_APPLIED, f"{label} ({profile.path}) applied: {b.set_count} field(s) set, each explained below", None
    )
    return dataclasses.replace(
        plan,
        labels=tuple(b.labels.items()),
        annotations=tuple(b.annotations.items()),
        resources_per_node=tuple(b.resources.items()),
        env=tuple(b.env),
        patches=patches,
        findings=earlier + (summary,) + tuple(b.findings),
        **b.changes,
    )


# Planner/launcher findings that ask for an image: once the profile chose one, they become information.
_IMAGE_REQUESTS = ("L310", "P402", "P403", "P404")


def _resolved(f: Finding, how: str) -> Finding:
    if f.severity == ERROR and f.code != "L310":
        return f
    return dataclasses.replace(f, severity=INFO, message=f"{f.message}; {how}", suggestion=None)
