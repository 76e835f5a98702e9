"""Variables a container wrapper sets inside its container, never dropped silently.

`apptainer|singularity exec --env NAME=VALUE[,NAME=VALUE]`, `shifter --env=NAME=VALUE` and `podman-hpc run
-e NAME=VALUE` set NAME for the program inside the container; so do the exports `APPTAINERENV_NAME=VALUE`
and `SINGULARITYENV_NAME=VALUE` of the batch script for an Apptainer/Singularity container (Apptainer
user guide, "Environment and metadata": the prefix is stripped inside the container). In a pod the TrainJob
image is the container, so each becomes TrainJob env NAME (P449); a secret among them goes to the job's
Secret like any other (P447). What cannot be carried stays the container module's warning L359:
`--env-file FILE` (a file on the Slurm side) and `--env NAME` without a value (the node's value).
"""

from __future__ import annotations

import re

from translator.diagnostics import INFO, WARNING, Finding
from translator.launchers.intent import replace as intent_replace
from translator.plan.model import EnvVar
from translator.plan.secrets import wrapper_env_items

ENV_OPTIONS = frozenset(("--env", "-e"))
PREFIXES = ("APPTAINERENV_", "SINGULARITYENV_")


def carry(ctx, name: str, value: str | None, line: int, what: str) -> bool:
    """Keep the `NAME=VALUE` items of a wrapper's `--env`/`-e` option for the TrainJob env (`take` adds them
    to the intent) with an info finding naming them (P449, never the values). False when the option holds
    anything else (`--env-file`, `--env NAME` passing the node's value): the caller reports it (L359)."""
    if name not in ENV_OPTIONS or not value:
        return False
    items = wrapper_env_items(value)
    if not items or any(v is None for _, v in items):
        return False
    ctx.wrapper_env.extend((n, v) for n, v in items if v is not None)
    names = ", ".join(dict.fromkeys(n for n, _ in items))
    ctx.add(INFO, "P449", f"{what} option `{name}` set {names}{_CARRIED}", line)
    return True


_CARRIED = " inside the container: carried as TrainJob env (spec.trainer.env)"
_NAMES = re.compile(r"option `[^`]*` set (.*)" + re.escape(_CARRIED) + "$")


def settle(findings, env) -> list:
    """P449 says a wrapper's variables are TrainJob env; where they are not (the script fallback runs the
    wrapped command directly in the pod, its `--env` dropped), the finding says so instead (L359)."""
    have = {e.name for e in env}
    out = []
    for f in findings:
        m = _NAMES.search(f.message) if f.code == "P449" else None
        if m is not None and not set(m.group(1).split(", ")) <= have:
            f = Finding(
                WARNING,
                "L359",
                f.message[: -len(_CARRIED)] + " inside the container; the TrainJob does not carry them (the pod "
                "runs the wrapped command directly)",
                f.line,
                "write them as `export NAME=value` before the command (they become spec.trainer.env)",
            )
        out.append(f)
    return out


def take(ctx, intent):
    """`intent` with the variables `carry` kept added to its env (a later one wins, as in the container)."""
    if not ctx.wrapper_env:
        return intent
    pairs = tuple(ctx.wrapper_env)
    ctx.wrapper_env.clear()
    return intent_replace(intent, env=tuple(intent.env) + pairs)


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
