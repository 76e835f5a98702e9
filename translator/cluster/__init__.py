"""The cluster side: talk to a real Kubernetes API server with the official `kubernetes` client.

Modules:
  client    kubeconfig -> one ApiClient (short timeouts, no retries), raw requests, transport errors
  wire      one HTTP exchange: a total deadline per request, a size cap per answer
  answers   what each request expects back (the object asked for, or a Status); anything else is K919
  errors    server answers (Status objects) -> K9xx messages, 422 causes -> TrainJob field + source line
  objects   what to send: TrainJobs converted from scripts or read from YAML, with their source maps
  submit    create / server-side dry run / server-side apply, batched over one client
  server_validate   `validate --server`: server-side dry run next to the offline validator
  jobs      list TrainJobs that slurm2kf created, their state from status.conditions; cancel
  logs      a TrainJob's pods (JobSet labels), their logs, and why there are none yet (`logs`, REASON)

K9xx codes (docs/codes.md, codes-K) are stable; transport problems (K900-K903, K909) and answers that
are not the API's (K919, K920) end the command with exit 2, a rejected object is exit 1.
"""

from __future__ import annotations

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"
PLURAL = "trainjobs"
KIND = "TrainJob"
FIELD_MANAGER = "slurm2kf"

LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "slurm2kf"
LABEL_SCRIPT = "slurm2kf.io/script"  # the script's file name as a label value (<= 63)
LABEL_HASH = "slurm2kf.io/source-hash"  # first 12 hex digits of the source's SHA-256
ANNOTATION_HASH = "slurm2kf.io/source-sha256"  # the full SHA-256 of the submitted file
ANNOTATION_VERSION = "slurm2kf.io/version"  # slurm2kf version that submitted it
SELECTOR = f"{LABEL_MANAGED_BY}={MANAGED_BY}"


class ClusterError(Exception):
    """The command cannot talk to the cluster at all (kubeconfig, connection, TLS, credentials): exit 2."""

    exit_code = 2

    def __init__(self, code: str, message: str) -> None:
        message = " ".join(str(message).split())  # always one line
        super().__init__(f"{code} {message}")
        self.code = code
        self.message = message

    def format(self, command: str) -> str:
        return f"slurm2kf {command}: error {self.code} {self.message}"
