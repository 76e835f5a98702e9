"""Kubernetes name and value rules a profile is checked against (apimachinery's validation, restated)."""

from __future__ import annotations

import re

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# resource.Quantity without sign (requests are never negative): number, then a binary/decimal suffix
# or an exponent.
_QUANTITY = re.compile(r"([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?")


def dns_label_problem(value: str) -> str | None:
    """None when `value` is an RFC 1123 label (volume names, namespaces), else why not."""
    if len(value) > 63:
        return f"`{value}` is longer than 63 characters (DNS-1123 label)"
    if not _DNS_LABEL.fullmatch(value):
        return (
            f"`{value}` is not a DNS-1123 label (lower-case letters, digits and `-`, "
            f"starting and ending with a letter or digit)"
        )
    return None


def dns_subdomain_problem(value: str) -> str | None:
    """None when `value` is an RFC 1123 subdomain (object names: PVCs, secrets, service accounts)."""
    if len(value) > 253:
        return f"`{value}` is longer than 253 characters (DNS-1123 subdomain)"
    if not _DNS_SUBDOMAIN.fullmatch(value):
        return (
            f"`{value}` is not a DNS-1123 name (lower-case letters, digits, `-` and `.`, "
            f"starting and ending with a letter or digit)"
        )
    return None


def queue_name_problem(value: str) -> str | None:
    """Kueue LocalQueue / WorkloadPriorityClass names: object names that also go into a label value."""
    problem = dns_subdomain_problem(value)
    if problem:
        return problem
    if len(value) > 63:
        return f"`{value}` is longer than 63 characters (it becomes a label value)"
    return None


def qualified_name_problem(value: str, require_prefix: bool = False) -> str | None:
    """Label/annotation keys and resource names: `[prefix/]name`."""
    prefix, slash, name = value.rpartition("/")
    if not slash:
        prefix, name = "", value
        if require_prefix:
            return f"`{value}` needs a domain prefix (e.g. `nvidia.com/gpu`)"
    elif not prefix:
        return f"`{value}` has an empty prefix before `/`"
    if prefix and dns_subdomain_problem(prefix):
        return f"the prefix `{prefix}` of `{value}` is not a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return (
            f"`{value}` is not a qualified name (name part: up to 63 letters, digits, `-`, `_`, `.`, "
            f"starting and ending with a letter or digit)"
        )
    return None


def label_value_problem(value: str) -> str | None:
    if len(value) > 63:
        return f"label value `{value}` is longer than 63 characters"
    if not _LABEL_VALUE.fullmatch(value):
        return f"`{value}` is not a valid label value (letters, digits, `-`, `_`, `.`; alphanumeric at both ends)"
    return None


def env_name_problem(value: str) -> str | None:
    if not _ENV_NAME.fullmatch(value):
        return f"`{value}` is not an environment variable name"
    return None


# Names the Kubeflow runtimes set themselves (the webhook rejects them in spec.trainer.env).
RESERVED_ENV_PREFIXES = ("PET_", "OMPI_MCA_", "JAX_", "DMLC_")


def trainer_env_name_problem(value: str) -> str | None:
    problem = env_name_problem(value)
    if problem:
        return problem
    if value.startswith(RESERVED_ENV_PREFIXES):
        return f"`{value}` is set by the Kubeflow runtime itself (names starting {', '.join(RESERVED_ENV_PREFIXES)})"
    return None


def url_problem(value: str) -> str | None:
    if not re.fullmatch(r"https?://[^\s/$.?#][^\s]*", value):
        return f"`{value}` is not an http(s) URL"
    return None


def quantity_problem(value: str) -> str | None:
    if not _QUANTITY.fullmatch(value):
        return (
            f"`{value}` is not a Kubernetes quantity (e.g. `64`, `500m`, `512Gi`; binary suffixes "
            f"Ki/Mi/Gi/Ti, decimal k/M/G/T; `GB` is not a suffix)"
        )
    return None


def image_problem(value: str) -> str | None:
    if not value or any(c.isspace() for c in value) or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return f"`{value}` is not an image reference (empty or contains whitespace/control characters)"
    if len(value) > 500:
        return "image reference is longer than 500 characters (TrainJob `trainer.image` limit)"
    if value.startswith(("/", ".", "-")) or value.endswith((".sif", ".simg", ".sqsh")):
        return f"`{value}` looks like a local file, not a registry image (e.g. `registry.example.org/team/pytorch:2.4`)"
    return None


def abs_path_problem(value: str) -> str | None:
    if not value.startswith("/"):
        return f"`{value}` is not an absolute path"
    if value != "/" and value.endswith("/"):
        return f"`{value}` ends with `/` (write `{value.rstrip('/')}`)"
    if any(part in (".", "..") for part in value.split("/")):
        return f"`{value}` contains `.` or `..` components"
    if "//" in value:
        return f"`{value}` contains an empty component (`//`)"
    if any(c.isspace() or ord(c) < 32 for c in value) or ":" in value:
        return f"`{value}` contains whitespace, control characters or `:`"
    return None


_HOST = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|\[?[0-9A-Fa-f:.]+\]?")


def host_problem(value: str) -> str | None:
    """An NFS server: a host name or an IP address."""
    if len(value) > 253 or not _HOST.fullmatch(value):
        return f"`{value}` is not a host name or IP address"
    return None
