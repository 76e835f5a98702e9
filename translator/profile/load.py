"""Load and validate a site profile; find which profile applies to a script.

`load_profile(path)` returns a `Profile` or raises `ProfileError` whose diagnostics name the key path
and the line of every problem (all problems, not just the first). `find_profile` implements the lookup
order: `--profile FILE`, then `$SLURM2KF_PROFILE`, then `slurm2kf.yaml` in the script's directory or
the nearest parent directory.
"""

from __future__ import annotations

import re

from translator.diagnostics import ERROR, Diagnostic
from translator.launchers.registry import NAMES as LAUNCHER_FAMILIES
from translator.profile import kube_names
from translator.profile.model import (
    API_VERSION,
    ENV_KINDS,
    KIND,
    AccountRule,
    Defaults,
    FeatureRule,
    Filesystem,
    GpuTypeRule,
    ImageRule,
    NodeShape,
    PartitionRule,
    Placement,
    Profile,
    QosRule,
    RuntimeRule,
    HOSTNAME_LABEL,
    Topology,
    TopologyLevel,
)
from translator.profile.schema import (
    F_DUPLICATE,
    F_NOT_FOUND,
    F_REQUIRED,
    F_SYNTAX,
    F_VALUE,
    F_VERSION,
    Checker,
    Field,
    boolean,
    integer,
    list_of,
    mapping_of,
    obj,
    one_of,
    pattern,
    patterns,
    plain,
    quantity,
    string,
)

from translator.profile.lookup import PROFILE_ENV, PROFILE_FILENAME, find_profile  # noqa: F401 (re-exported)

MAX_PROFILE_BYTES = 4 * 1024 * 1024


class ProfileError(Exception):
    """The profile cannot be used. `diagnostics` name key path and line; `path` is the profile file."""

    def __init__(self, path: str, diagnostics):
        self.path = path
        self.diagnostics = tuple(diagnostics)
        super().__init__(self.format())

    def format(self) -> str:
        return "\n".join(d.format(self.path) for d in self.diagnostics)


# ---- Kubernetes shapes ------------------------------------------------------------------------


def _label_key():
    return string(lambda v: kube_names.qualified_name_problem(v))


def _label_value():
    return string(kube_names.label_value_problem)


def _requirement_check(req, chk):
    """In/NotIn need values; Exists/DoesNotExist take none; Gt/Lt take one integer (apimachinery rules)."""
    op, values = req.get("operator"), [i.value for i in (req.get("values") or [])]
    if op in ("In", "NotIn") and not values:
        chk.error(F_VALUE, req.path + ".values", req.line, f"operator {op} needs at least one value")
    elif op in ("Exists", "DoesNotExist") and values:
        chk.error(F_VALUE, req.path + ".values", req.line, f"operator {op} takes no values")
    elif op in ("Gt", "Lt") and (len(values) != 1 or not str(values[0]).lstrip("-").isdigit()):
        chk.error(F_VALUE, req.path + ".values", req.line, f"operator {op} takes exactly one integer value")


def _toleration_check(tol, chk):
    if tol.get("operator") == "Exists" and tol.get("value"):
        chk.error(F_VALUE, tol.path + ".value", tol.line, "must be empty when operator is Exists")
    if tol.get("tolerationSeconds") is not None and tol.get("effect") != "NoExecute":
        chk.error(F_VALUE, tol.path + ".tolerationSeconds", tol.line, "only applies with effect NoExecute")
    if (
        not tol.get("key")
        and tol.get("operator") != "Exists"
        and any(k in tol.key_lines for k in ("key", "operator", "value", "effect"))
    ):
        chk.error(F_VALUE, tol.path + ".operator", tol.line, "a toleration without a key must use operator Exists")


_LABEL_SELECTOR_REQ = obj(
    {
        "key": Field(_label_key(), required=True),
        "operator": Field(one_of("In", "NotIn", "Exists", "DoesNotExist"), required=True),
        "values": Field(list_of(string())),
    },
    check=_requirement_check,
)
_NODE_SELECTOR_REQ = obj(
    {
        "key": Field(string(), required=True),
        "operator": Field(one_of("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"), required=True),
        "values": Field(list_of(string())),
    },
    check=_requirement_check,
)
_NODE_SELECTOR_TERM = obj(
    {
        "matchExpressions": Field(list_of(_NODE_SELECTOR_REQ)),
        "matchFields": Field(list_of(_NODE_SELECTOR_REQ)),
    }
)
_LABEL_SELECTOR = obj(
    {
        "matchLabels": Field(mapping_of(_label_key(), _label_value())),
        "matchExpressions": Field(list_of(_LABEL_SELECTOR_REQ)),
    }
)
_POD_AFFINITY_TERM = obj(
    {
        "labelSelector": Field(_LABEL_SELECTOR),
        "namespaceSelector": Field(_LABEL_SELECTOR),
        "namespaces": Field(list_of(string(kube_names.dns_label_problem))),
        "topologyKey": Field(_label_key(), required=True),
        "matchLabelKeys": Field(list_of(_label_key())),
        "mismatchLabelKeys": Field(list_of(_label_key())),
    }
)
_WEIGHTED_POD_TERM = obj(
    {
        "weight": Field(integer(1, 100), required=True),
        "podAffinityTerm": Field(_POD_AFFINITY_TERM, required=True),
    }
)
_POD_AFFINITY = obj(
    {
        "requiredDuringSchedulingIgnoredDuringExecution": Field(list_of(_POD_AFFINITY_TERM)),
        "preferredDuringSchedulingIgnoredDuringExecution": Field(list_of(_WEIGHTED_POD_TERM)),
    }
)
_AFFINITY = obj(
    {
        "nodeAffinity": Field(
            obj(
                {
                    "requiredDuringSchedulingIgnoredDuringExecution": Field(
                        obj(
                            {
                                "nodeSelectorTerms": Field(list_of(_NODE_SELECTOR_TERM), required=True),
                            }
                        )
                    ),
                    "preferredDuringSchedulingIgnoredDuringExecution": Field(
                        list_of(
                            obj(
                                {
                                    "weight": Field(integer(1, 100), required=True),
                                    "preference": Field(_NODE_SELECTOR_TERM, required=True),
                                }
                            )
                        )
                    ),
                }
            )
        ),
        "podAffinity": Field(_POD_AFFINITY),
        "podAntiAffinity": Field(_POD_AFFINITY),
    }
)
_TOLERATION = obj(
    {
        "key": Field(string(lambda v: kube_names.qualified_name_problem(v) if v else None)),
        "operator": Field(one_of("Exists", "Equal")),
        "value": Field(_label_value()),
        "effect": Field(one_of("NoSchedule", "PreferNoSchedule", "NoExecute")),
        "tolerationSeconds": Field(integer()),
    },
    check=_toleration_check,
)
_PLACEMENT_FIELDS = {
    "nodeSelector": Field(
        mapping_of(_label_key(), _label_value()), doc="node labels the pods require (PodSpec nodeSelector)"
    ),
    "tolerations": Field(list_of(_TOLERATION), doc="core/v1 tolerations"),
    "affinity": Field(_AFFINITY, doc="core/v1 affinity"),
}

# ---- the profile ------------------------------------------------------------------------------

_NODE_SHAPE = obj(
    {
        "cpus": Field(quantity(), doc="allocatable CPUs of one node"),
        "memory": Field(quantity(), doc="allocatable memory of one node, e.g. 480Gi"),
        "gpus": Field(integer(0), doc="GPUs of one node"),
    }
)

_PARTITION = obj(
    {
        "queue": Field(string(kube_names.queue_name_problem), doc="Kueue LocalQueue"),
        **_PLACEMENT_FIELDS,
        "node": Field(_NODE_SHAPE),
        "gpuType": Field(string(), doc="GPU type of the partition's nodes (a key of gpuTypes)"),
        "shmSize": Field(quantity()),
    }
)

_GPU_TYPE = obj(
    {
        "resource": Field(string(lambda v: kube_names.qualified_name_problem(v, require_prefix=True))),
        **_PLACEMENT_FIELDS,
    }
)


def _image_rule_check(rule, chk):
    if not any(rule.get(k) for k in ENV_KINDS) and not any(k in rule.key_lines for k in ENV_KINDS):
        chk.error(F_REQUIRED, rule.path, rule.line, f"a rule needs one of: {', '.join(ENV_KINDS)}")


_IMAGE_RULE = obj(
    {
        "module": Field(patterns()),
        "conda": Field(patterns()),
        "venv": Field(patterns()),
        "container": Field(patterns()),
        "image": Field(string(kube_names.image_problem)),
    },
    check=_image_rule_check,
)

_VOLUME_SOURCES = ("pvc", "nfs", "hostPath")


def _filesystem_check(fs, chk):
    path = fs.get("path")
    sources = [k for k in _VOLUME_SOURCES if fs.get(k) is not None]
    if len(sources) > 1:
        chk.error(F_VALUE, fs.path, fs.line, f"set only one of {', '.join(_VOLUME_SOURCES)} (got {', '.join(sources)})")
    if isinstance(path, str) and path.startswith("$") and sources and not fs.get("mountPath"):
        chk.error(
            F_REQUIRED,
            fs.path + ".mountPath",
            fs.line,
            f"required when path is the variable `{path}` (where should `{path}` point in the pod?)",
        )


def _fs_path_problem(value: str) -> str | None:
    if value.startswith("$"):
        name = value[2:-1] if value.startswith("${") and value.endswith("}") else value[1:]
        problem = kube_names.env_name_problem(name)
        return f"`{value}`: {problem}" if problem else None
    return kube_names.abs_path_problem(value)


_FILESYSTEM = obj(
    {
        "path": Field(
            string(_fs_path_problem),
            required=True,
            doc="prefix as scripts write it: /scratch, /lustre/proj, $HOME, $SCRATCH",
        ),
        "mountPath": Field(string(kube_names.abs_path_problem)),
        "name": Field(string(kube_names.dns_label_problem), doc="volume name (DNS-1123 label)"),
        "pvc": Field(string(kube_names.dns_subdomain_problem), doc="PersistentVolumeClaim name"),
        "nfs": Field(
            obj(
                {
                    "server": Field(string(kube_names.host_problem), required=True),
                    "path": Field(string(kube_names.abs_path_problem), required=True),
                }
            )
        ),
        "hostPath": Field(
            obj(
                {
                    "path": Field(string(kube_names.abs_path_problem), required=True),
                    "type": Field(
                        one_of(
                            "",
                            "DirectoryOrCreate",
                            "Directory",
                            "FileOrCreate",
                            "File",
                            "Socket",
                            "CharDevice",
                            "BlockDevice",
                        )
                    ),
                }
            )
        ),
        "readOnly": Field(boolean()),
        "subPath": Field(
            string(
                lambda v: (
                    None
                    if v and not v.startswith("/") and ".." not in v.split("/")
                    else f"`{v}` must be a relative path without `..`"
                )
            )
        ),
    },
    check=_filesystem_check,
)

_RUNTIME = obj(
    {
        "name": Field(string(kube_names.dns_subdomain_problem), required=True, doc="runtimeRef.name"),
        "launchers": Field(list_of(one_of(*LAUNCHER_FAMILIES))),
        "kind": Field(one_of("ClusterTrainingRuntime", "TrainingRuntime")),
        "image": Field(string(kube_names.image_problem)),
        "replicatedJobs": Field(list_of(string(kube_names.dns_label_problem))),
    }
)


def _topology_check(topo, chk):
    """Kueue's Topology rules (kueue.sigs.k8s.io, Topology Aware Scheduling: levels broadest first, the
    hostname label only as the lowest level) plus unique names and labels, and a leaf level that exists."""
    levels = [i for i in (topo.get("levels") or []) if i.value]
    if topo.get("levels") == [] or (topo.get("levels") is None and "levels" in topo.key_lines):
        chk.error(F_REQUIRED, topo.path + ".levels", topo.key_lines.get("levels"), "list at least one level")
    names: dict[str, int] = {}
    labels: dict[str, int] = {}
    for n, item in enumerate(levels):
        name, label = item.value.get("name"), item.value.get("label")
        if name in names:
            chk.error(F_DUPLICATE, item.path + ".name", item.line, f"level `{name}` is already on line {names[name]}")
        if label in labels:
            chk.error(
                F_DUPLICATE, item.path + ".label", item.line, f"label `{label}` is already on line {labels[label]}"
            )
        names.setdefault(name, item.line)
        labels.setdefault(label, item.line)
        if label == HOSTNAME_LABEL and n != len(levels) - 1:
            chk.error(
                F_VALUE, item.path + ".label", item.line, f"`{HOSTNAME_LABEL}` can only be the last (lowest) level"
            )
    leaf = topo.get("leafSwitchLevel")
    if leaf is not None and names and leaf not in names:
        chk.error(
            F_VALUE,
            topo.path + ".leafSwitchLevel",
            topo.key_lines.get("leafSwitchLevel"),
            f"`{leaf}` is not a level name (levels: {', '.join(names)})",
        )
    elif leaf is not None and any(
        i.value.get("name") == leaf and i.value.get("label") == HOSTNAME_LABEL for i in levels
    ):
        chk.error(
            F_VALUE,
            topo.path + ".leafSwitchLevel",
            topo.key_lines.get("leafSwitchLevel"),
            f"`{leaf}` is the `{HOSTNAME_LABEL}` level: a leaf switch connects several nodes",
        )


_TOPOLOGY = obj(
    {
        "levels": Field(
            list_of(
                obj(
                    {
                        "name": Field(string(kube_names.dns_label_problem), required=True),
                        "label": Field(_label_key(), required=True, doc="node label naming the level's domains"),
                    }
                ),
                max_items=16,  # Kueue's Topology allows at most 16 levels
            ),
            required=True,
            doc="broadest first, as the Kueue Topology's spec.levels",
        ),
        "leafSwitchLevel": Field(string(), doc="the level whose domains are Slurm's leaf switches"),
        "switches": Field(one_of("preferred", "required"), doc="how --switches is requested from Kueue"),
    },
    check=_topology_check,
)

PROFILE_SCHEMA = obj(
    {
        "apiVersion": Field(string(), required=True),
        "kind": Field(string(), required=True),
        "metadata": Field(obj({"name": Field(string()), "description": Field(string())})),
        "defaults": Field(
            obj(
                {
                    "namespace": Field(string(kube_names.dns_label_problem)),
                    "partition": Field(string(), doc="the partition Slurm uses when a script names none"),
                    "labels": Field(mapping_of(_label_key(), _label_value())),
                    "annotations": Field(mapping_of(_label_key(), string())),
                    "imagePullSecrets": Field(list_of(string(kube_names.dns_subdomain_problem))),
                    "serviceAccountName": Field(string(kube_names.dns_subdomain_problem)),
                    "env": Field(
                        mapping_of(string(kube_names.trainer_env_name_problem), string()),
                        doc="environment variables for every TrainJob (the script's own exports win)",
                    ),
                    "pipIndexUrls": Field(
                        list_of(string(kube_names.url_problem)),
                        doc="package index for `pip install` lines that name none",
                    ),
                    "gpuResource": Field(string(lambda v: kube_names.qualified_name_problem(v, require_prefix=True))),
                    "shmSize": Field(quantity()),
                    "trainerVersion": Field(
                        one_of("2.3", "2.4"), doc="Kubeflow Trainer release of the cluster (--trainer-version)"
                    ),
                }
            )
        ),
        "partitions": Field(mapping_of(pattern(), _PARTITION, key_is_pattern=True)),
        "qos": Field(
            mapping_of(
                pattern(),
                obj(
                    {
                        "priorityClass": Field(
                            string(kube_names.queue_name_problem), doc="Kueue WorkloadPriorityClass"
                        ),
                    }
                ),
                key_is_pattern=True,
            )
        ),
        "accounts": Field(
            mapping_of(
                pattern(),
                obj(
                    {
                        "namespace": Field(string(kube_names.dns_label_problem)),
                    }
                ),
                key_is_pattern=True,
            )
        ),
        "gpuTypes": Field(mapping_of(pattern(), _GPU_TYPE, key_is_pattern=True)),
        "constraints": Field(mapping_of(pattern(), obj(dict(_PLACEMENT_FIELDS)), key_is_pattern=True)),
        "images": Field(
            obj(
                {
                    "rules": Field(list_of(_IMAGE_RULE)),
                    "provided": Field(obj({k: Field(patterns()) for k in ENV_KINDS})),
                }
            )
        ),
        "filesystems": Field(list_of(_FILESYSTEM)),
        "runtimes": Field(list_of(_RUNTIME)),
        "topology": Field(_TOPOLOGY, doc="Kueue Topology Aware Scheduling levels (--switches)"),
    }
)


# ---- building the model -----------------------------------------------------------------------


def _placement(o) -> Placement:
    if not o:
        return Placement()
    ns = tuple((e.key, e.value) for e in (o.get("nodeSelector") or []))
    tol = tuple(plain(i.value) for i in (o.get("tolerations") or []))
    aff = plain(o["affinity"]) if o.get("affinity") else None
    return Placement(node_selector=ns, tolerations=tol, affinity=aff or None)


def _volume_name(path: str) -> str:
    prefix = "var-" if path.startswith("$") else "fs-"
    base = re.sub(r"[^a-z0-9]+", "-", path.lower().strip("${}")).strip("-") or "root"
    return (prefix + base)[:63].rstrip("-")


def _build(path: str, doc, chk: Checker) -> Profile | None:
    meta = doc.get("metadata") or {}
    d = doc.get("defaults") or None
    defaults = Defaults()
    if d:
        defaults = Defaults(
            namespace=d.get("namespace"),
            partition=d.get("partition"),
            labels=tuple((e.key, e.value) for e in (d.get("labels") or []) if e.value is not None),
            annotations=tuple((e.key, e.value) for e in (d.get("annotations") or []) if e.value is not None),
            image_pull_secrets=tuple(i.value for i in (d.get("imagePullSecrets") or []) if i.value),
            service_account_name=d.get("serviceAccountName"),
            env=tuple((e.key, e.value) for e in (d.get("env") or []) if e.value is not None),
            pip_index_urls=tuple(i.value for i in (d.get("pipIndexUrls") or []) if i.value),
            gpu_resource=d.get("gpuResource"),
            shm_size=d.get("shmSize"),
            trainer_version=d.get("trainerVersion"),
            lines=tuple(d.key_lines.items()),
        )

    partitions = []
    for e in doc.get("partitions") or []:
        o = e.value or {}
        node = o.get("node") or {}
        partitions.append(
            PartitionRule(
                pattern=e.key,
                key=e.path,
                line=e.line,
                queue=o.get("queue"),
                placement=_placement(o),
                node=NodeShape(cpus=node.get("cpus"), memory=node.get("memory"), gpus=node.get("gpus")),
                gpu_type=o.get("gpuType"),
                shm_size=o.get("shmSize"),
            )
        )
    qos = [QosRule(e.key, e.path, e.line, (e.value or {}).get("priorityClass")) for e in doc.get("qos") or []]
    accounts = [AccountRule(e.key, e.path, e.line, (e.value or {}).get("namespace")) for e in doc.get("accounts") or []]
    gpu_types = [
        GpuTypeRule(e.key, e.path, e.line, (e.value or {}).get("resource"), _placement(e.value))
        for e in doc.get("gpuTypes") or []
    ]
    constraints = [FeatureRule(e.key, e.path, e.line, _placement(e.value)) for e in doc.get("constraints") or []]

    images = doc.get("images") or {}
    image_rules = []
    for item in images.get("rules") or []:
        r = item.value
        if r is None:
            continue
        matchers = tuple((k, p) for k in ENV_KINDS for p in (r.get(k) or ()))
        image_rules.append(ImageRule(item.path, item.line, matchers, r.get("image")))
    provided_obj = images.get("provided") or {}
    provided = tuple((k, p) for k in ENV_KINDS for p in (provided_obj.get(k) or ()))

    filesystems = []
    names: dict[str, int] = {}  # volume name -> line of the entry that has it first
    mounts: dict[str | None, int] = {}  # mount path (None: a $VAR path without one) -> first line
    for item in doc.get("filesystems") or []:
        f = item.value
        if f is None or f.get("path") is None:
            continue
        fs_path = f["path"]
        if fs_path.startswith("${") and fs_path.endswith("}"):
            fs_path = "$" + fs_path[2:-1]
        mount = f.get("mountPath") or (fs_path if not fs_path.startswith("$") else None)
        source = None
        if f.get("pvc"):
            source = {"persistentVolumeClaim": {"claimName": f["pvc"]}}
        elif f.get("nfs") and f["nfs"].get("server") and f["nfs"].get("path"):
            source = {"nfs": {"server": f["nfs"]["server"], "path": f["nfs"]["path"]}}
        elif f.get("hostPath") and f["hostPath"].get("path"):
            source = {"hostPath": plain(f["hostPath"])}
        if source is not None and f.get("readOnly"):
            if "persistentVolumeClaim" in source:
                source["persistentVolumeClaim"]["readOnly"] = True
            elif "nfs" in source:
                source["nfs"]["readOnly"] = True
        vname = f.get("name") or _volume_name(fs_path)
        if source is not None:
            if vname in names:
                chk.error(
                    F_VALUE,
                    item.path + ".name",
                    item.line,
                    f"volume name `{vname}` is already used by the entry on line {names[vname]}",
                    "give one of them an explicit `name`",
                )
            names.setdefault(vname, item.line)
            if mount in mounts:
                chk.error(
                    F_VALUE,
                    item.path + ".mountPath",
                    item.line,
                    f"mount path `{mount}` is already used by the entry on line {mounts[mount]}",
                )
            mounts.setdefault(mount, item.line)
            if vname == "dshm":
                chk.error(F_VALUE, item.path + ".name", item.line, "`dshm` is reserved for the /dev/shm volume")
            if mount in ("/dev/shm", "/etc/mpi", "/"):
                chk.error(
                    F_VALUE,
                    item.path + ".mountPath",
                    item.line,
                    f"`{mount}` is reserved (runtime or shmSize mounts it)",
                )
        filesystems.append(
            Filesystem(
                item.path, item.line, fs_path, mount or "", vname, source, bool(f.get("readOnly")), f.get("subPath")
            )
        )

    runtimes = []
    for item in doc.get("runtimes") or []:
        r = item.value
        if r is None or not r.get("name"):
            continue
        runtimes.append(
            RuntimeRule(
                key=item.path,
                line=item.line,
                name=r["name"],
                launchers=tuple(i.value for i in (r.get("launchers") or []) if i.value),
                kind=r.get("kind") or "ClusterTrainingRuntime",
                image=r.get("image"),
                replicated_jobs=tuple(i.value for i in (r.get("replicatedJobs") or []) if i.value),
                kind_set=bool(r.get("kind")),
            )
        )

    return Profile(
        topology=_topology(doc.get("topology"), doc.key_lines.get("topology")),
        path=path,
        name=meta.get("name") or "",
        description=meta.get("description") or "",
        defaults=defaults,
        partitions=tuple(partitions),
        qos=tuple(qos),
        accounts=tuple(accounts),
        gpu_types=tuple(gpu_types),
        constraints=tuple(constraints),
        image_rules=tuple(image_rules),
        images_provided=provided,
        images_line=doc.key_lines.get("images"),
        filesystems=tuple(filesystems),
        filesystems_line=doc.key_lines.get("filesystems"),
        runtimes=tuple(runtimes),
    )


def _topology(t, line: int | None) -> Topology | None:
    if not t or not t.get("levels"):
        return None
    levels = tuple(
        TopologyLevel(i.value["name"], i.value["label"], i.line)
        for i in t["levels"]
        if i.value and i.value.get("name") and i.value.get("label")
    )
    if not levels:
        return None
    return Topology("topology", line or t.line, levels, t.get("leafSwitchLevel"), t.get("switches") or "preferred")


def parse_profile(text: str, path: str = "<profile>") -> Profile:
    """Validate profile text; raises ProfileError listing every problem."""
    import yaml

    chk = Checker()
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built in: same marks, faster
    try:
        for event in yaml.parse(text, Loader=loader_class):
            if isinstance(event, yaml.AliasEvent):
                line = event.start_mark.line + 1 if event.start_mark else None
                raise ProfileError(
                    path,
                    [
                        Diagnostic(
                            ERROR,
                            F_SYNTAX,
                            "YAML aliases (`*name`) are not supported in a profile; write the value out",
                            line,
                        )
                    ],
                )
        loader = loader_class(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except RecursionError:
        raise ProfileError(path, [Diagnostic(ERROR, F_SYNTAX, "the profile is nested too deeply", None)]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        reason = " ".join(str(x) for x in (exc.context, exc.problem) if x)
        raise ProfileError(path, [Diagnostic(ERROR, F_SYNTAX, f"not valid YAML: {reason}", line)]) from None
    except yaml.YAMLError as exc:
        raise ProfileError(path, [Diagnostic(ERROR, F_SYNTAX, f"not valid YAML: {exc}", None)]) from None
    if root is None:
        raise ProfileError(
            path,
            [
                Diagnostic(
                    ERROR,
                    F_SYNTAX,
                    "the profile is empty",
                    1,
                    f"start with `apiVersion: {API_VERSION}` and `kind: {KIND}`",
                )
            ],
        )
    try:
        doc = PROFILE_SCHEMA(root, "", chk)
    except RecursionError:
        raise ProfileError(path, [Diagnostic(ERROR, F_SYNTAX, "the profile is nested too deeply", None)]) from None
    if doc is None or not hasattr(doc, "key_lines"):
        if not chk.diagnostics:
            chk.error(F_SYNTAX, "", root, "the profile must be a mapping")
        raise ProfileError(path, chk.diagnostics)
    if doc.get("apiVersion") not in (None, API_VERSION):
        chk.error(
            F_VERSION,
            "apiVersion",
            doc.key_lines["apiVersion"],
            f"`{doc['apiVersion']}` is not supported (this slurm2kf reads `{API_VERSION}`)",
        )
    if doc.get("kind") not in (None, KIND):
        chk.error(F_VERSION, "kind", doc.key_lines["kind"], f"`{doc['kind']}` is not `{KIND}`")
    profile: Profile | None = None
    try:
        profile = _build(path, doc, chk)
    except (KeyError, TypeError, AttributeError):
        # A value the checks above already rejected left a hole; those errors say what to fix.
        if not chk.diagnostics:
            raise
    if chk.diagnostics:
        diags = sorted(chk.diagnostics, key=lambda d: d.line or 0)
        raise ProfileError(path, diags)
    assert profile is not None  # a build that failed left diagnostics
    return profile


def load_profile(path: str) -> Profile:
    """Read and validate the profile at `path`. Raises ProfileError (never another exception) on failure."""
    from translator.fsio import TOO_LARGE, UserFileError, read_user_file

    try:
        # the shared guard: a FIFO or device (/dev/zero) is refused before a byte is read
        data = read_user_file(path, MAX_PROFILE_BYTES)
    except UserFileError as exc:
        if exc.kind == TOO_LARGE:
            raise ProfileError(
                path, [Diagnostic(ERROR, F_SYNTAX, f"the profile is larger than {MAX_PROFILE_BYTES} bytes")]
            ) from None
        why = exc.message[len(path) + 2 :] if exc.message.startswith(path + ": ") else exc.message
        raise ProfileError(path, [Diagnostic(ERROR, F_NOT_FOUND, f"cannot read the profile: {why}")]) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ProfileError(path, [Diagnostic(ERROR, F_SYNTAX, "the profile is not UTF-8 text", line)]) from None
    return parse_profile(text, path)
