"""The site profile as plain frozen dataclasses (what `load_profile` returns, what `apply_profile` reads).

Every rule keeps the profile line it was written on, so each plan finding can say which profile key
set a field. Kubernetes values (tolerations, affinity, volume sources) stay in API camelCase form.
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.profile.patterns import NamePattern

API_VERSION = "slurm2kf/v1"
KIND = "SiteProfile"

# What `images.rules[].<kind>` can match, in the order the script's environment is reported.
ENV_KINDS = ("module", "conda", "venv", "container")


@dataclass(frozen=True)
class Placement:
    """Where pods go: nodeSelector, tolerations, affinity (core/v1 shapes)."""

    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[dict, ...] = ()
    affinity: dict | None = None

    def is_empty(self) -> bool:
        return not (self.node_selector or self.tolerations or self.affinity)


@dataclass(frozen=True)
class NodeShape:
    """Allocatable resources of one whole node (what `--exclusive` / `--mem=0` become)."""

    cpus: str | None = None  # quantity string, e.g. "96" or "95500m"
    memory: str | None = None  # quantity string, e.g. "1900Gi"
    gpus: int | None = None

    def is_empty(self) -> bool:
        return self.cpus is None and self.memory is None and self.gpus is None


@dataclass(frozen=True)
class PartitionRule:
    pattern: NamePattern
    key: str  # key path in the profile, e.g. "partitions.gpu"
    line: int
    queue: str | None = None  # Kueue LocalQueue
    placement: Placement = Placement()
    node: NodeShape = NodeShape()
    gpu_type: str | None = None  # GPU type of the partition's nodes when the script names none
    shm_size: str | None = None  # overrides defaults.shmSize


@dataclass(frozen=True)
class QosRule:
    pattern: NamePattern
    key: str
    line: int
    priority_class: str | None = None  # Kueue WorkloadPriorityClass


@dataclass(frozen=True)
class AccountRule:
    pattern: NamePattern
    key: str
    line: int
    namespace: str | None = None


@dataclass(frozen=True)
class GpuTypeRule:
    pattern: NamePattern
    key: str
    line: int
    resource: str | None = None  # e.g. nvidia.com/gpu, amd.com/gpu, nvidia.com/mig-1g.10gb
    placement: Placement = Placement()


@dataclass(frozen=True)
class FeatureRule:
    """A `--constraint` feature that means a placement (e.g. `ib` -> a nodeSelector)."""

    pattern: NamePattern
    key: str
    line: int
    placement: Placement = Placement()


@dataclass(frozen=True)
class ImageRule:
    key: str  # e.g. "images.rules[2]"
    line: int
    matchers: tuple[tuple[str, NamePattern], ...]  # (env kind, pattern)
    image: str | None = None  # None = not filled in yet


@dataclass(frozen=True)
class Filesystem:
    key: str  # e.g. "filesystems[0]"
    line: int
    path: str  # absolute prefix ("/scratch") or variable ("$SCRATCH")
    mount_path: str  # where it is mounted in the pod
    volume_name: str  # DNS-1123 label
    source: dict | None = None  # core/v1 volume source: {"persistentVolumeClaim": {...}} etc.; None = not filled
    read_only: bool = False
    sub_path: str | None = None

    @property
    def variable(self) -> str | None:
        return self.path[1:] if self.path.startswith("$") else None


@dataclass(frozen=True)
class RuntimeRule:
    key: str
    line: int
    name: str  # runtimeRef.name
    launchers: tuple[str, ...] = ()  # launcher families that use this runtime
    kind: str = "ClusterTrainingRuntime"
    image: str | None = None  # default image when nothing in the script decides one
    replicated_jobs: tuple[str, ...] = ()  # jobs that get pod patches; () = by framework
    kind_set: bool = False  # the profile wrote `kind` explicitly


@dataclass(frozen=True)
class TopologyLevel:
    name: str  # the profile's name for the level (`block`, `rack`, `host`)
    label: str  # the node label whose value names a domain of this level (Kueue Topology `nodeLabel`)
    line: int


@dataclass(frozen=True)
class Topology:
    """The cluster's topology levels, broadest first, as the Kueue Topology object lists them; where Slurm's
    leaf switches are; whether `--switches` becomes a required or a preferred placement."""

    key: str
    line: int
    levels: tuple[TopologyLevel, ...]
    leaf_switch: str | None = None  # a level name; None = the lowest level that is not kubernetes.io/hostname
    switches: str = "preferred"  # "preferred" | "required"

    def leaf_level(self) -> TopologyLevel | None:
        if self.leaf_switch is not None:
            return next((lv for lv in self.levels if lv.name == self.leaf_switch), None)
        above_hosts = [lv for lv in self.levels if lv.label != HOSTNAME_LABEL]
        return above_hosts[-1] if above_hosts else None


HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True)
class Defaults:
    namespace: str | None = None
    partition: str | None = None  # Slurm's default partition (Default=YES)
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    image_pull_secrets: tuple[str, ...] = ()
    service_account_name: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    pip_index_urls: tuple[str, ...] = ()
    gpu_resource: str | None = None
    shm_size: str | None = None
    trainer_version: str | None = None  # "2.3" | "2.4" (--trainer-version wins)
    lines: tuple[tuple[str, int], ...] = ()  # key -> line, for findings

    def line_of(self, key: str) -> int | None:
        return dict(self.lines).get(key)


@dataclass(frozen=True)
class Profile:
    path: str
    name: str = ""
    description: str = ""
    defaults: Defaults = Defaults()
    partitions: tuple[PartitionRule, ...] = ()
    qos: tuple[QosRule, ...] = ()
    accounts: tuple[AccountRule, ...] = ()
    gpu_types: tuple[GpuTypeRule, ...] = ()
    constraints: tuple[FeatureRule, ...] = ()
    image_rules: tuple[ImageRule, ...] = ()
    images_provided: tuple[tuple[str, NamePattern], ...] = ()  # env items known to be in every image
    images_line: int | None = None
    filesystems: tuple[Filesystem, ...] = ()
    filesystems_line: int | None = None
    runtimes: tuple[RuntimeRule, ...] = ()
    topology: Topology | None = None

    def where(self, line: int | None) -> str:
        """`profile.yaml:12` for findings."""
        return f"{self.path}:{line}" if line else self.path
