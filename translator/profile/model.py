"""The site profile as plain frozen dataclasses (what `load_profile` returns, what `apply_profile` reads).

Every rule keeps the profile line it was written on, so each plan finding can say which profile key
set a field. Kubernetes values (tolerations, affinity, volume sources) stay in API camelCase form.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from translator.profile.patterns import NamePattern

API_VERSION = "slurm2kf/v1"
KIND = "SiteProfile"

# What `images.rules[].<kind>` can match, in the order the script's environment is reported.
ENV_KINDS = ("module", "conda", "venv", "container")


@dataclass(frozen=True)
class Placement:
    """Where pods go: nodeSelector, tolerations, affinity (core/v1 shapes)."""

    node_selector: Tuple[Tuple[str, str], ...] = ()
    tolerations: Tuple[dict, ...] = ()
    affinity: Optional[dict] = None

    def is_empty(self) -> bool:
        return not (self.node_selector or self.tolerations or self.affinity)


@dataclass(frozen=True)
class NodeShape:
    """Allocatable resources of one whole node (what `--exclusive` / `--mem=0` become)."""

    cpus: Optional[str] = None        # quantity string, e.g. "96" or "95500m"
    memory: Optional[str] = None      # quantity string, e.g. "1900Gi"
    gpus: Optional[int] = None

    def is_empty(self) -> bool:
        return self.cpus is None and self.memory is None and self.gpus is None


@dataclass(frozen=True)
class PartitionRule:
    pattern: NamePattern
    key: str                          # key path in the profile, e.g. "partitions.gpu"
    line: int
    queue: Optional[str] = None       # Kueue LocalQueue
    placement: Placement = Placement()
    node: NodeShape = NodeShape()
    gpu_type: Optional[str] = None    # GPU type of the partition's nodes when the script names none
    shm_size: Optional[str] = None    # overrides defaults.shmSize


@dataclass(frozen=True)
class QosRule:
    pattern: NamePattern
    key: str
    line: int
    priority_class: Optional[str] = None   # Kueue WorkloadPriorityClass


@dataclass(frozen=True)
class AccountRule:
    pattern: NamePattern
    key: str
    line: int
    namespace: Optional[str] = None


@dataclass(frozen=True)
class GpuTypeRule:
    pattern: NamePattern
    key: str
    line: int
    resource: Optional[str] = None    # e.g. nvidia.com/gpu, amd.com/gpu, nvidia.com/mig-1g.10gb
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
    key: str                                          # e.g. "images.rules[2]"
    line: int
    matchers: Tuple[Tuple[str, NamePattern], ...]     # (env kind, pattern)
    image: Optional[str] = None                       # None = not filled in yet


@dataclass(frozen=True)
class Filesystem:
    key: str                          # e.g. "filesystems[0]"
    line: int
    path: str                         # absolute prefix ("/scratch") or variable ("$SCRATCH")
    mount_path: str                   # where it is mounted in the pod
    volume_name: str                  # DNS-1123 label
    source: Optional[dict] = None     # core/v1 volume source: {"persistentVolumeClaim": {...}} etc.; None = not filled
    read_only: bool = False
    sub_path: Optional[str] = None

    @property
    def variable(self) -> Optional[str]:
        return self.path[1:] if self.path.startswith("$") else None


@dataclass(frozen=True)
class RuntimeRule:
    key: str
    line: int
    name: str                                  # runtimeRef.name
    launchers: Tuple[str, ...] = ()            # launcher families that use this runtime
    kind: str = "ClusterTrainingRuntime"
    image: Optional[str] = None                # default image when nothing in the script decides one
    replicated_jobs: Tuple[str, ...] = ()      # jobs that get pod patches; () = by framework
    kind_set: bool = False                     # the profile wrote `kind` explicitly


@dataclass(frozen=True)
class Defaults:
    namespace: Optional[str] = None
    partition: Optional[str] = None            # Slurm's default partition (Default=YES)
    labels: Tuple[Tuple[str, str], ...] = ()
    annotations: Tuple[Tuple[str, str], ...] = ()
    image_pull_secrets: Tuple[str, ...] = ()
    service_account_name: Optional[str] = None
    env: Tuple[Tuple[str, str], ...] = ()
    pip_index_urls: Tuple[str, ...] = ()
    gpu_resource: Optional[str] = None
    shm_size: Optional[str] = None
    lines: Tuple[Tuple[str, int], ...] = ()    # key -> line, for findings

    def line_of(self, key: str) -> Optional[int]:
        return dict(self.lines).get(key)


@dataclass(frozen=True)
class Profile:
    path: str
    name: str = ""
    description: str = ""
    defaults: Defaults = Defaults()
    partitions: Tuple[PartitionRule, ...] = ()
    qos: Tuple[QosRule, ...] = ()
    accounts: Tuple[AccountRule, ...] = ()
    gpu_types: Tuple[GpuTypeRule, ...] = ()
    constraints: Tuple[FeatureRule, ...] = ()
    image_rules: Tuple[ImageRule, ...] = ()
    images_provided: Tuple[Tuple[str, NamePattern], ...] = ()   # env items known to be in every image
    images_line: Optional[int] = None
    filesystems: Tuple[Filesystem, ...] = ()
    filesystems_line: Optional[int] = None
    runtimes: Tuple[RuntimeRule, ...] = ()

    def where(self, line: Optional[int]) -> str:
        """`profile.yaml:12` for findings."""
        return f"{self.path}:{line}" if line else self.path
