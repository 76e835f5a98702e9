"""Container wrappers: `apptainer|singularity exec [--nv] [--bind a:b] IMAGE cmd …` and pyxis
`srun --container-image=REG#IMAGE --container-mounts=a:b …`.

The image becomes the TrainJob image and the inner command is converted by its own launcher family.
Registry references are rewritten to what Kubernetes pulls: `docker://nvcr.io/nvidia/pytorch:24.01-py3`
and enroot's `nvcr.io#nvidia/pytorch:24.01-py3` both become `nvcr.io/nvidia/pytorch:24.01-py3`. A local
image (`.sif`, `.sqsh`, a sandbox directory) cannot be pulled by a node: error finding asking for a
registry image (or `--image`). Binds become a finding listing the volumes the TrainJob needs.
"""

from __future__ import annotations

import re

from translator.diagnostics import ERROR, INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import LaunchIntent
from translator.launchers.intent import replace as intent_replace
from translator.launchers.wrapper_env import WrapperEnv

APPTAINER = ("apptainer", "singularity")
# Other container exec wrappers of HPC sites: Shifter (NERSC; image from `--image=` or the job's
# `#SBATCH --image`), podman-hpc (NERSC; `podman-hpc run [options] IMAGE cmd …`).
OTHER_WRAPPERS = ("shifter", "podman-hpc", "podman")
_SHIFTER_VALUE = {
    "--image",
    "-i",
    "--volume",
    "-V",
    "--module",
    "-m",
    "--entrypoint",
    "--env",
    "-e",
    "--env-file",
    "--workdir",
    "-w",
}
_PODMAN_VALUE = {
    "-v",
    "--volume",
    "-e",
    "--env",
    "-w",
    "--workdir",
    "--name",
    "--network",
    "--net",
    "--ipc",
    "--pid",
    "--user",
    "-u",
    "--entrypoint",
    "--gpus",
    "--mount",
    "--env-file",
    "--shm-size",
    "--hostname",
    "-h",
    "--device",
    "--security-opt",
    "--userns",
    "--group-add",
    "--cap-add",
}
# apptainer/singularity exec|run options that take a value (everything else starting with '-' is a flag).
_VALUE = {
    "-B",
    "--bind",
    "--mount",
    "-H",
    "--home",
    "--env",
    "--env-file",
    "-W",
    "--workdir",
    "--pwd",
    "-o",
    "--overlay",
    "--security",
    "--network",
    "--network-args",
    "--hostname",
    "-S",
    "--scratch",
    "--app",
    "--cpus",
    "--memory",
    "--dns",
    "--no-mount",
    "--add-caps",
    "--drop-caps",
    "--apply-cgroups",
    "--cpu-shares",
    "--cpuset-cpus",
    "--memory-reservation",
    "--memory-swap",
    "--pids-limit",
    "--blkio-weight",
    "--oci-config",
    "--docker-login",
}
MAX_NESTED_CONTAINERS = 8
_LOCAL = re.compile(r"(\.(sif|simg|img|sqsh|squashfs)$)|^[./~]|^\$")


def job_plugin_option(job, *names) -> tuple[str, int | None] | None:
    """(value, line) of the last SPANK plugin option among `names` set for the job (#SBATCH or command line)."""
    found = None
    for st in getattr(getattr(job, "main", None), "settings", ()) or ():
        if st.name in names:
            found = (st.value, st.line)
    return found


def shifter_image(ref: str) -> str:
    """Shifter's `docker:REPO:TAG` (also `docker:` omitted) -> REPO:TAG."""
    ref = ref.strip()
    return ref[len("docker:") :] if ref.startswith("docker:") else ref


def registry_image(ref: str) -> tuple[str | None, str | None]:
    """(image Kubernetes can pull, None) or (None, reason it cannot)."""
    ref = ref.strip()
    if ref.startswith("docker://"):
        ref = ref[len("docker://") :]
    elif re.match(r"^(library|shub|oras|docker-daemon|docker-archive|oci-archive|instance)://?", ref):
        return None, f"`{ref}` is not an image a Kubernetes node can pull"
    if "#" in ref:  # enroot: [USER@][REGISTRY#]IMAGE[:TAG]
        registry, _, image = ref.partition("#")
        if "@" in registry:
            registry = registry.rsplit("@", 1)[1]
        ref = f"{registry}/{image}" if registry else image
    if not ref or _LOCAL.search(ref) or ref.startswith("/"):
        return None, f"`{ref}` is a local image file or directory, which Kubernetes nodes cannot pull"
    if re.search(r"\s", ref):
        return None, f"`{ref}` is not an image reference"
    return ref, None


def _mounts(spec: str) -> list[tuple[str, str]]:
    out = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        parts = item.split(":")
        src = parts[0]
        dst = parts[1] if len(parts) > 1 and parts[1] else src
        out.append((src, dst))
    return out


def _finish(ctx: LaunchContext, inner: LaunchIntent, image_tok: Tok, mounts, line: int, how: str) -> LaunchIntent:
    image = common.static_value(ctx, image_tok) if image_tok.literal else common.static_text(ctx, image_tok.value)
    pulled, why = registry_image(image) if image is not None else (None, f"`{image_tok.raw}` is computed by the shell")
    if pulled is None:
        ctx.add(
            ERROR,
            "L310",
            f"{how} image {why}",
            line,
            "push the image to a registry (e.g. `apptainer push`/`enroot export` + `docker push`) and pass "
            "--image REGISTRY/IMAGE:TAG",
        )
    else:
        ctx.add(INFO, "L322", f"{how} image `{image_tok.value}` becomes the TrainJob image `{pulled}`", line)
    if mounts:
        ctx.add(
            WARNING,
            "L323",
            "container binds need volumes on Kubernetes (a PersistentVolumeClaim or hostPath per path, via a "
            "site profile or runtimePatches): " + ", ".join(f"{s} -> {d}" for s, d in mounts),
            line,
            "add the volumes with a site profile (`slurm2kf profile`)",
        )
    return intent_replace(inner, image=pulled, mounts=tuple(mounts))


def apptainer(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int, dispatch) -> LaunchIntent:
    i = 1
    while i < len(toks) and toks[i].value.startswith("-"):  # global options (--debug, -s, …)
        i += 1
    sub = toks[i].value if i < len(toks) else ""
    if sub not in ("exec", "run"):
        from translator.launchers import script

        return script.build(ctx, line, [f"`{toks[0].value} {sub}` is not a container launch slurm2kf reads"])
    i += 1
    mounts: list[tuple[str, str]] = []
    wenv = WrapperEnv()  # --env/--env-file: P449/P450, never dropped silently
    while i < len(toks) and toks[i].value.startswith("-"):
        name, inline = common.split_option(toks[i])
        value = inline
        if inline is None and name in _VALUE and i + 1 < len(toks):
            value = toks[i + 1].value
            i += 1
        wenv.add(name, value)
        if name in ("-B", "--bind") and value:
            mounts += _mounts(value)
        elif name == "--mount" and value:
            kv = dict(p.split("=", 1) for p in value.split(",") if "=" in p)
            src = kv.get("src") or kv.get("source")
            if src:
                mounts.append((src, kv.get("dst") or kv.get("destination") or kv.get("target") or src))
        elif name in ("-W", "--workdir", "--pwd"):
            ctx.add(WARNING, "L324", f"container option `{toks[i].raw}` has no TrainJob equivalent", line)
        i += 1
    if i >= len(toks):
        return dispatch(ctx, [], srun, line)
    image_tok = toks[i]
    inner = toks[i + 1 :]
    if sub == "run" or not inner:
        ctx.add(
            WARNING,
            "L324",
            f"`{toks[0].value} {sub}` runs the image's own runscript; the TrainJob runs the "
            "image's entrypoint with the given arguments",
            line,
        )
        base = dispatch(ctx, [Tok.gen("true")], srun, line)
        intent = intent_replace(base, command=(), args=tuple(t.value for t in inner))
    elif ctx.nesting >= MAX_NESTED_CONTAINERS:
        from translator.launchers import script

        return script.build(ctx, line, [f"containers are nested more than {MAX_NESTED_CONTAINERS} deep on line {line}"])
    else:
        ctx.nesting += 1  # `apptainer exec IMG apptainer exec IMG …`: bounded, not a stack overflow
        try:
            intent = dispatch(ctx, inner, srun, line)
        finally:
            ctx.nesting -= 1
    intent = wenv.apply(ctx, intent, line, f"{toks[0].value} {sub}")
    return _finish(ctx, intent, image_tok, mounts, line, f"{toks[0].value} {sub}")


def pyxis(ctx: LaunchContext, call: SrunCall, inner: list[Tok], line: int, dispatch) -> LaunchIntent:
    """srun with pyxis options; options given to sbatch (`#SBATCH --container-image=…`) reach every srun
    step through the SPANK environment, so they count when srun does not set its own."""
    image = call.options.get("container-image", "")
    if not image:
        image = (job_plugin_option(ctx.job, "container-image") or ("", None))[0]
    mounts_text = (
        call.options.get("container-mounts", "") or (job_plugin_option(ctx.job, "container-mounts") or ("", None))[0]
    )
    mounts = _mounts(common.static_text(ctx, mounts_text) or mounts_text)
    if call.options.get("container-workdir"):
        ctx.add(
            WARNING,
            "L324",
            f"--container-workdir={call.options['container-workdir']} has no TrainJob "
            "equivalent; the image's working directory is used",
            line,
        )
    intent = dispatch(ctx, inner, call, line)
    return _finish(
        ctx, intent, Tok(image, image, "$" not in image and "`" not in image), mounts, line, "pyxis --container-image"
    )


def other(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int, dispatch) -> LaunchIntent:
    """`shifter [--image=IMG] [--volume=a:b] cmd …` and `podman-hpc run [options] IMAGE cmd …`."""
    w0 = common.basename(toks[0].value)
    mounts: list[tuple[str, str]] = []
    wenv = WrapperEnv()
    if w0 == "shifter":
        i, image_tok = 1, None
        while i < len(toks) and toks[i].value.startswith("-"):
            name, inline = common.split_option(toks[i])
            if inline is None and len(name) > 2 and name.startswith("-") and not name.startswith("--"):
                name, inline = name[:2], name[2:]
            value = inline
            if inline is None and name in _SHIFTER_VALUE and i + 1 < len(toks):
                value = toks[i + 1].value
                i += 1
            wenv.add(name, value)
            if name in ("--image", "-i") and value is not None:
                image_tok = Tok(shifter_image(value), value, True)
            elif name in ("--volume", "-V") and value:
                mounts += _mounts(value.replace(";", ","))
            elif name in ("--workdir", "-w", "--entrypoint"):
                ctx.add(WARNING, "L324", f"container option `{toks[i].raw}` has no TrainJob equivalent", line)
            i += 1
        inner = toks[i:]
        if image_tok is None:
            opt = job_plugin_option(ctx.job, "image")
            if opt is not None:
                image_tok = Tok(shifter_image(opt[0]), opt[0], True)
        for v in (job_plugin_option(ctx.job, "volume"),):
            if v is not None:
                mounts += _mounts(v[0].replace(";", ","))
        intent = dispatch(ctx, inner, srun, line)
        if image_tok is None:
            ctx.add(
                ERROR,
                "L310",
                "`shifter` runs in an image given neither by `--image` nor by `#SBATCH --image`",
                line,
                "pass --image REGISTRY/IMAGE:TAG",
            )
            return intent
        return _finish(ctx, wenv.apply(ctx, intent, line, "shifter"), image_tok, mounts, line, "shifter")
    # podman-hpc / podman: only `run`/`exec`-style `run [options] IMAGE cmd …`
    i = 1
    while i < len(toks) and toks[i].value.startswith("-"):
        i += 1
    sub = toks[i].value if i < len(toks) else ""
    if sub != "run":
        from translator.launchers import script

        return script.build(ctx, line, [f"`{w0} {sub}` is not a container launch slurm2kf reads"])
    i += 1
    while i < len(toks) and toks[i].value.startswith("-"):
        name, inline = common.split_option(toks[i])
        value = inline
        if inline is None and name in _PODMAN_VALUE and i + 1 < len(toks):
            value = toks[i + 1].value
            i += 1
        wenv.add(name, value)
        if name in ("-v", "--volume") and value:
            mounts += _mounts(value)
        elif name in ("-w", "--workdir", "--entrypoint"):
            ctx.add(WARNING, "L324", f"container option `{toks[i].raw}` has no TrainJob equivalent", line)
        i += 1
    if i >= len(toks):
        return dispatch(ctx, [], srun, line)
    intent = wenv.apply(ctx, dispatch(ctx, toks[i + 1 :], srun, line), line, f"{w0} run")
    return _finish(ctx, intent, toks[i], mounts, line, f"{w0} run")
