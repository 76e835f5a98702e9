"""Variables a container wrapper sets inside its container, never dropped silently.

`apptainer|singularity exec --env NAME=VALUE[,NAME=VALUE]`, `shifter --env=NAME=VALUE` and `podman-hpc run
-e NAME=VALUE` set NAME for the program inside the container; so do the exports `APPTAINERENV_NAME=VALUE`
and `SINGULARITYENV_NAME=VALUE` of the batch script for an Apptainer/Singularity container (Apptainer
user guide, "Environment and metadata": the prefix is stripped inside the container). In a pod the TrainJob
image is the container, so each becomes TrainJob env NAME (P449); a secret among them goes to the job's
Secret like any other (P447). What cannot be carried is a finding (P450): `--env-file FILE` (a file on the
Slurm side) and `--env NAME` without a value (the host's value at that moment).
"""

from __future__ import annotations

from translator.diagnostics import INFO, WARNING, Finding
from translator.launchers.intent import replace as intent_replace
from translator.plan.model import EnvVar
from translator.plan.secrets import wrapper_env_items

ENV_OPTIONS = frozenset(("--env", "-e"))
PREFIXES = ("APPTAINERENV_", "SINGULARITYENV_")


class WrapperEnv:
    """What one wrapper's options set: `add(option, value)` for each option, `apply(...)` at the end."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []
        self.unset: list[str] = []
        self.files: list[str] = []

    def add(self, option: str, value) -> None:
        if value is None:
            return
        if option in ENV_OPTIONS:
            for name, val in wrapper_env_items(value):
                if val is None:
                    self.unset.append(name)
                else:
                    self.items.append((name, val))
        elif option == "--env-file":
            self.files.append(value)

    def apply(self, ctx, intent, line: int, how: str):
        """`intent` with the wrapper's variables added to its env, and the findings saying so."""
        if self.items:
            names = ", ".join(dict.fromkeys(n for n, _ in self.items))
            ctx.add(
                INFO,
                "P449",
                f"`{how} --env` set {names} inside the container: carried as TrainJob env (spec.trainer.env)",
                line,
            )
            intent = intent_replace(intent, env=tuple(intent.env) + tuple(self.items))
        for name in self.unset:
            ctx.add(
                WARNING,
                "P450",
                f"`{how} --env {name}` passed the Slurm node's value of {name} into the container; the pod does "
                "not have it",
                line,
                f"give {name} a value (an export before the launch line, or a Secret for a secret)",
            )
        for path in self.files:
            ctx.add(
                WARNING,
                "P450",
                f"`{how} --env-file {path}` set variables from a file of the Slurm side inside the container; "
                "the TrainJob does not read it, so the program finds them unset",
                line,
                "export each variable before the launch line (a secret goes to the job's Secret, P447), or mount "
                "the file and source it",
            )
        return intent


def ran_apptainer(intent) -> bool:
    """Whether the launch ran in an Apptainer/Singularity container (its image finding, L322 or L310)."""
    return any(
        f.code in ("L322", "L310") and ("apptainer" in f.message or "singularity" in f.message) for f in intent.findings
    )


def unprefixed(env, image_from_wrapper: bool) -> tuple[tuple[EnvVar, ...], list[Finding]]:
    """`APPTAINERENV_NAME` / `SINGULARITYENV_NAME` exports become NAME when the job runs a container (the
    prefix is what Apptainer strips inside it); a name the script also sets plainly keeps the prefixed value,
    as Apptainer does (the prefixed variable wins inside the container)."""
    if not image_from_wrapper or not any(e.name.startswith(PREFIXES) for e in env):
        return tuple(env), []
    out: dict[str, EnvVar] = {}
    findings = []
    for e in env:
        prefix = next((p for p in PREFIXES if e.name.startswith(p)), None)
        if prefix is None:
            if e.name not in out:
                out[e.name] = e
            continue
        name = e.name[len(prefix) :]
        if not name:
            continue
        out[name] = EnvVar(name, e.value, e.line, e.secret_name, e.secret_key)
        findings.append(
            Finding(
                INFO,
                "P449",
                f"`{e.name}` set {name} inside the Apptainer container: carried as TrainJob env {name}",
                e.line,
            )
        )
    return tuple(out.values()), findings
