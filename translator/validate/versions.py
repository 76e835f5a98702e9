"""What differs between the Kubeflow Trainer releases slurm2kf targets (`--trainer-version 2.3|2.4`).

Each rule names its source (docs/validate.md lists them; NOTICE says where the data comes from):

* **2.3** is the `v2.3.0` tag. The bundled CRD (translator/validate/data/) was taken from the main
  branch 58 commits after that tag; there two rules are stricter than at the tag, both from
  kubeflow/trainer #3809 (merged after the v2.3.0 branch, released with v2.4): `spec.trainer.numNodes`
  `minimum: 0` and the CEL rule `self >= 1` on `spec.trainer.numProcPerNode`. At the tag both fields
  are a bare int32 (pkg/apis/trainer/v1alpha1/trainjob_types.go carries no marker), so under 2.3 they
  are taken out of the bundled schema.
* **2.4**, from the v2.4.0 release notes (not checked against its code, which the stored snapshot
  predates): runtime replicatedJob names are limited to 20 characters (#4394); the TrainJob image is
  set on the MPI launcher and the worker pods (#4301); the MPI plugin sets the Open MPI 5 `PRTE_MCA_*`
  variables next to the `OMPI_MCA_*` ones (#4029, names from that pull request), so they are reserved.
"""

from __future__ import annotations

import copy

VERSIONS = ("2.3", "2.4")
DEFAULT = "2.3"
MAX_REPLICATED_JOB_NAME = {"2.4": 20}  # trainer #4394
# env names the controller sets, added by a release (the webhook rejects them in spec.trainer.env)
RESERVED_ENV_ADDED = {
    "2.4": {
        "mpi": (  # trainer #4029: MPIReservedEnvNames gets the PRTE equivalents of the ORTE names
            "PRTE_MCA_prte_default_hostfile",
            "PRTE_MCA_prte_keep_fqdn_hostnames",
            "PRTE_MCA_prte_set_default_slots",
            "PRTE_MCA_plm_ssh_args",
        )
    }
}
MPI_WORKERS_GET_IMAGE = {"2.4"}  # trainer #4301
SDK_TARGET = "kubeflow==0.5.0"  # the released SDK (kubeflow-trainer-api>=2.3.0,<2.4)


def check(version: str | None) -> str:
    """The version to use: ``version`` (one of VERSIONS) or the default."""
    if version is None:
        return DEFAULT
    if version not in VERSIONS:
        raise ValueError(f"Trainer version {version!r} is not one of {', '.join(VERSIONS)}")
    return version


def reserved_env(policy: str, version: str) -> tuple[str, ...]:
    from translator.validate.runtimes import RESERVED_ENV

    return tuple(RESERVED_ENV.get(policy, ())) + tuple(RESERVED_ENV_ADDED.get(version, {}).get(policy, ()))


def long_job_names(jobs, version: str) -> list[str]:
    """The replicatedJob names a runtime may not have under ``version`` (too long)."""
    limit = MAX_REPLICATED_JOB_NAME.get(version)
    return [j for j in jobs if limit is not None and len(j) > limit]


def _trainer_properties(schema: dict) -> dict | None:
    try:
        return schema["properties"]["spec"]["properties"]["trainer"]["properties"]
    except (KeyError, TypeError):
        return None


def crd_for(crd, version: str):
    """The bundled CRD as the release ``version`` has it (a copy; ``crd`` is not changed)."""
    if version != "2.3":
        return crd
    out = copy.copy(crd)
    out.versions = {}
    out._strict, out._validators = {}, {}
    for name, schema in crd.versions.items():
        schema = copy.deepcopy(schema)
        props = _trainer_properties(schema)
        if isinstance(props, dict):
            if isinstance(props.get("numNodes"), dict):
                props["numNodes"].pop("minimum", None)  # #3809
            if isinstance(props.get("numProcPerNode"), dict):
                props["numProcPerNode"].pop("x-kubernetes-validations", None)  # #3809
        out.versions[name] = schema
    out.source = f"{crd.source} (as at the v2.3.0 tag)"
    return out
