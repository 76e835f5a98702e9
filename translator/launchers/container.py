"""Container wrappers: `apptainer|singularity exec [--nv] [--bind a:b] IMAGE cmd …` and pyxis
`srun --container-image=REG#IMAGE --container-mounts=a:b …`.

The image becomes the TrainJob image and the inner command is converted by its own launcher family.
Registry references are rewritten to what Kubernetes pulls: `docker://nvcr.io/nvidia/pytorch:24.01-py3`
and enroot's `nvcr.io#nvidia/pytorch:24.01-py3` both become `nvcr.io/nvidia/pytorch:24.01-py3`. A local
image (`.sif`, `.sqsh`, a sandbox directory) cannot be pulled by a node: error finding asking for a
registry image (or `--image`). Binds become a finding listing the volumes the TrainJob needs.
"""

from __future__ import annotations

import shlex

import re

from translator.diagnostics import ERROR, INFO, WARNING
from translator.launchers import common
from translator.launchers.common import LaunchContext, SrunCall, Tok
from translator.launchers.intent import LaunchIntent
from translator.launchers.intent import replace as intent_replace
from translator.launchers import wrapper_env
from translator.slurm.options import shifter_image as shifter_image_descriptor
from translator.slurm.options import shifter_volumes

APPTAINER = ("apptainer", "singularity")
# Other container exec wrappers of HPC sites: Shifter (NERSC; image from `--image=` or the job's
# `#SBATCH --image`), podman-hpc (NERSC; `podman-hpc run [options] IMAGE cmd …`).
OTHER_WRAPPERS = ("shifter", "podman-hpc", "podman", "enroot")
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


_DEFAULTED = re.compile(r'^"?\$\{([A-Za-z_][A-Za-z0-9_]*):?[-=]([^}"$`]*)\}"?$')


def image_text(ctx: LaunchContext, tok: Tok) -> str | None:
    """The image a word names at conversion time: a literal, a variable with a known value, or
    `${X:-default}` with X never set before the launch (the default; X set to a literal: that value)."""
    if tok.literal:
        return tok.value
    m = _DEFAULTED.match(tok.raw)
    if m:
        a = ctx.last_assignment(m.group(1))
        if m.group(1) in ctx.block_assigned:
            return None
        if a is None:
            return m.group(2)
        return a.value.value if a.value.literal else None
    return common.static_value(ctx, tok) if tok.raw.startswith(("$", '"$')) else common.static_text(ctx, tok.value)


def _mount_option(value: str) -> list[tuple[str, str]]:
    """`--mount type=bind,src=/a,dst=/b` (apptainer, podman): [(src, dst)]."""
    kv = dict(p.split("=", 1) for p in value.split(",") if "=" in p)
    src = kv.get("src") or kv.get("source")
    if not src:
        return []
    return [(src, kv.get("dst") or kv.get("destination") or kv.get("target") or src)]


def _finish(
    ctx: LaunchContext, inner: LaunchIntent, image_tok: Tok, mounts, line: int, how: str, local: str | None = None
) -> LaunchIntent:
    """The image and binds of a container wrapper around `inner`. `local`: why the image cannot be pulled,
    when the wrapper already knows (an enroot container name, a Shifter `id:` image)."""
    pulled: str | None
    why: str | None
    if local is not None:
        pulled, why = None, local
    else:
        image = image_text(ctx, image_tok)
        pulled, why = (
            registry_image(image) if image is not None else (None, f"`{image_tok.raw}` is computed by the shell")
        )
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
    return intent_replace(wrapper_env.take(ctx, inner), image=pulled, mounts=tuple(mounts))


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
    while i < len(toks) and toks[i].value.startswith("-"):
        name, inline = common.split_option(toks[i])
        value = inline
        if inline is None and name in _VALUE and i + 1 < len(toks):
            value = toks[i + 1].value
            i += 1
        if name in ("-B", "--bind") and value:
            mounts += _mounts(value)
        elif name == "--mount" and value:
            mounts += _mount_option(value)
        elif name in ("--env", "--env-file"):
            _env_option(ctx, name, value, line)
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
    if call.options.get("container-env"):
        _env_option(ctx, "--container-env", call.options["container-env"], line, "pyxis")
    intent = dispatch(ctx, inner, call, line)
    return _finish(
        ctx, intent, Tok(image, image, "$" not in image and "`" not in image), mounts, line, "pyxis --container-image"
    )


def other(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int, dispatch) -> LaunchIntent:
    """`shifter [--image=IMG] [--volume=a:b] cmd …` and `podman-hpc run [options] IMAGE cmd …`."""
    w0 = common.basename(toks[0].value)
    if w0 == "shifter":
        return _shifter(ctx, toks, srun, line, dispatch)
    if w0 == "enroot":
        return _enroot(ctx, toks, srun, line, dispatch)
    return _podman(ctx, toks, srun, line, dispatch)


def job_plugin_values(job, name: str) -> list[tuple[str, int | None]]:
    """Every (value, line) of a SPANK plugin option set for the job, in order (Shifter joins repeated
    `--volume` options with `;`)."""
    return [(st.value, st.line) for st in getattr(getattr(job, "main", None), "settings", ()) or () if st.name == name]


def _shifter_image_tok(value: str) -> tuple[Tok, str | None]:
    """(the image Kubernetes pulls for a Shifter descriptor, why it cannot be pulled or None): docker's tag
    as is; `id:`, `local:` and `custom:` images exist only in the site's image gateway or file system."""
    kind, tag = shifter_image_descriptor(value)
    if kind == "docker":
        return Tok(tag, value, True), None
    return Tok(
        tag, value, True
    ), f"`{value}` is a Shifter `{kind}:` image of the site, which Kubernetes nodes cannot pull"


def _shifter(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int, dispatch) -> LaunchIntent:
    i, image_tok, local = 1, None, None
    mounts: list[tuple[str, str]] = []
    modules: list[str] = []
    while i < len(toks) and toks[i].value.startswith("-"):
        name, inline = common.split_option(toks[i])
        if inline is None and len(name) > 2 and name.startswith("-") and not name.startswith("--"):
            name, inline = name[:2], name[2:]
        value = inline
        if inline is None and name in _SHIFTER_VALUE and i + 1 < len(toks):
            value = toks[i + 1].value
            i += 1
        if name in ("--image", "-i") and value is not None:
            image_tok, local = _shifter_image_tok(value)
        elif name in ("--volume", "-V") and value:
            mounts += [(a, b or a) for a, b, _ in shifter_volumes(value)]
        elif name in ("--module", "-m") and value:
            modules += [m for m in value.split(",") if m]
        elif name in ("--env", "-e", "--env-file"):
            _env_option(ctx, name, value, line)
        elif name in ("--workdir", "-w", "--entrypoint"):
            ctx.add(WARNING, "L324", f"container option `{toks[i].raw}` has no TrainJob equivalent", line)
        i += 1
    inner = toks[i:]
    if image_tok is None:
        opt = job_plugin_option(ctx.job, "image")
        if opt is not None:
            image_tok, local = _shifter_image_tok(opt[0])
    for v, _ in job_plugin_values(ctx.job, "volume"):
        mounts += [(a, b or a) for a, b, _ in shifter_volumes(v)]
    for v, _ in job_plugin_values(ctx.job, "module"):
        modules += [m for m in v.split(",") if m and m not in modules]
    if modules:
        _shifter_modules(ctx, modules, line)
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
    return _finish(ctx, intent, image_tok, mounts, line, "shifter", local)


# What a Shifter module adds to the container at NERSC, and what the pod needs instead (shifter docs,
# "Shifter Modules"; NERSC's Perlmutter modules gpu, mpich, cvmfs, nccl-plugin).
_SHIFTER_MODULES = {
    "gpu": "the host's CUDA driver libraries: the NVIDIA device plugin injects them into a pod requesting GPUs",
    "mpich": "Cray MPICH injected over the image's MPICH (ABI-compatible): the image must bring its own MPI",
    "cvmfs": "/cvmfs mounted from the site: a CVMFS CSI volume or PersistentVolumeClaim at /cvmfs",
    "nccl-plugin": "the Slingshot/libfabric NCCL plugin: the image must contain the network plugin for the cluster",
    "none": "no site module (the default ones are turned off): nothing",
}


def _shifter_modules(ctx: LaunchContext, modules: list[str], line: int) -> None:
    needs = []
    for m in modules:
        base = m.split("-", 1)[0] if m not in _SHIFTER_MODULES else m
        needs.append(f"`{m}`: {_SHIFTER_MODULES.get(m) or _SHIFTER_MODULES.get(base) or 'site-specific content'}")
    ctx.add(
        WARNING,
        "L358",
        "Shifter modules inject site software into the container at start; a pod gets none of it: " + "; ".join(needs),
        line,
        "build the software into the image (or add the volume with a site profile)",
    )


def _env_option(ctx: LaunchContext, name: str, value: str | None, line: int, what: str = "container") -> None:
    """`--env A=B` / `--env-file F` of a container wrapper: the variables it set are not carried (L359)."""
    if wrapper_env.carry(ctx, name, value, line, what):  # `--env A=B[,C=D]`: TrainJob env (P449)
        return
    shown = f"{name} {value}" if value is not None else name
    ctx.add(
        WARNING,
        "L359",
        f"{what} option `{shown}` set variables inside the container; the TrainJob does not carry them",
        line,
        "write them as `export NAME=value` before the launch (they become spec.trainer.env) or bake them "
        "into the image",
    )


def _podman(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int, dispatch) -> LaunchIntent:
    """`podman-hpc run [options] IMAGE cmd …` (podman's own `run` options)."""
    w0 = common.basename(toks[0].value)
    mounts: list[tuple[str, str]] = []
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
        if name in ("-v", "--volume") and value:
            mounts += _mounts(value)
        elif name == "--mount" and value:
            mounts += _mount_option(value)
        elif name in ("-e", "--env", "--env-file"):
            _env_option(ctx, name, value, line)
        elif name in ("-w", "--workdir", "--entrypoint"):
            ctx.add(WARNING, "L324", f"container option `{toks[i].raw}` has no TrainJob equivalent", line)
        i += 1
    if i >= len(toks):
        return dispatch(ctx, [], srun, line)
    intent = dispatch(ctx, toks[i + 1 :], srun, line)
    return _finish(ctx, intent, toks[i], mounts, line, f"{w0} run")


# enroot start options that take a value (enroot(1): --conf, --env, --mount)
_ENROOT_VALUE = {"-c", "--conf", "-e", "--env", "-m", "--mount"}


def _enroot(ctx: LaunchContext, toks: list[Tok], srun: SrunCall | None, line: int, dispatch) -> LaunchIntent:
    """`enroot start [--mount SRC:DST] [--env K=V] [--rw] [--root] NAME|IMAGE.sqsh cmd …`: NAME is a container
    `enroot create` made from an image file, so the image is a registry reference only when the script
    imported exactly one (`enroot import docker://REG#IMG`, whose URI is used)."""
    i = 1
    while i < len(toks) and toks[i].value.startswith("-"):
        i += 1
    sub = toks[i].value if i < len(toks) else ""
    if sub != "start":
        from translator.launchers import script

        return script.build(ctx, line, [f"`enroot {sub}` is not a container launch slurm2kf reads"])
    i += 1
    mounts: list[tuple[str, str]] = []
    while i < len(toks) and toks[i].value.startswith("-"):
        name, inline = common.split_option(toks[i])
        value = inline
        if inline is None and name in _ENROOT_VALUE and i + 1 < len(toks):
            value = toks[i + 1].value
            i += 1
        if name in ("-m", "--mount") and value:
            src, _, rest = value.partition(":")
            mounts.append((src, rest.split(":")[0] or src))
        elif name in ("-e", "--env"):
            _env_option(ctx, name, value, line)
        elif name in ("-c", "--conf"):
            ctx.add(WARNING, "L324", f"container option `{toks[i].raw}` has no TrainJob equivalent", line)
        i += 1
    if i >= len(toks):
        return dispatch(ctx, [], srun, line)
    name_tok = toks[i]
    intent = dispatch(ctx, toks[i + 1 :], srun, line)
    imported = _enroot_imports(ctx)
    if len(imported) == 1 and not name_tok.value.endswith((".sqsh", ".squashfs")):
        uri, where = imported[0]
        image_tok = Tok(uri, f"{name_tok.value} (enroot import, line {where})", True)
        return _finish(ctx, intent, image_tok, mounts, line, "enroot start")
    why = (
        f"`{name_tok.raw}` is an enroot container (made by `enroot create` from a local image file), which "
        "Kubernetes nodes cannot pull"
    )
    return _finish(ctx, intent, name_tok, mounts, line, "enroot start", why)


def _enroot_imports(ctx: LaunchContext) -> list[tuple[str, int]]:
    """The image URIs of the script's `enroot import [opts] URI` commands, with their lines."""
    from translator.launchers.launchline import entries
    from translator.read.ast import Command

    out = []
    for st, _ in entries(ctx.script.body):
        if isinstance(st, Command) and len(st.words) >= 3 and common.basename(st.words[0].value) == "enroot":
            if st.words[1].value == "import":
                uris = [w.value for w in st.words[2:] if "://" in w.value]
                if uris:
                    out.append((uris[-1], st.line))
    return out


# ---- the script fallback: the body runs in the pod, so its wrappers must not -----------------------------

_WRAPPER_NAMES = ("apptainer", "singularity", "shifter", "enroot", "podman-hpc", "podman")
_MAX_PROBED = 100  # wrapped body commands whose image and binds are read (all of them get the executables)


def _case_words(options) -> str:
    return "|".join(sorted(options))


def _shim(name: str) -> list[str]:
    """The lines of an executable that stands for wrapper `name` in a pod: it drops the wrapper's own options
    and image and execs the command (the pod already runs in the image); subcommands that only prepare an
    image (`apptainer pull`, `enroot import`, `podman-hpc pull`) do nothing."""
    skip_globals = 'while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done'
    if name == "shifter":
        return [
            "while [ $# -gt 0 ]; do",
            f'  case "$1" in {_case_words(_SHIFTER_VALUE)}) shift 2 ;; -*) shift ;; *) break ;; esac',
            "done",
            'exec "$@"',
        ]
    runs, values = {
        "apptainer": ("exec|run", _VALUE),
        "singularity": ("exec|run", _VALUE),
        "enroot": ("start", _ENROOT_VALUE),
        "podman-hpc": ("run", _PODMAN_VALUE),
        "podman": ("run", _PODMAN_VALUE),
    }[name]
    # the environment the command gets in the container: apptainer passes the host's (APPTAINERENV_X/
    # SINGULARITYENV_X as X; with --cleanenv/-e only those and --env), enroot the host's, podman none but
    # -e/--env (all with --env-host); --env NAME=V, -e NAME=V and --env NAME (the host's value) are kept
    clean = "--cleanenv|-e|--containall" if name in ("apptainer", "singularity") else ""
    keep = "-e|--env" if name.startswith("podman") or name == "enroot" else "--env"
    return [
        skip_globals,
        'sub="$1"; shift',
        f'case "$sub" in {runs}) ;; *) exit 0 ;; esac  # pull/build/import/create: the pod has the image',
        f"envs=() clean={1 if name.startswith('podman') else 0}",
        "while [ $# -gt 0 ]; do",
        '  case "$1" in',
        f'    {keep}) e="$2"; [ "${{e#*=}}" != "$e" ] || e="$e=${{!e-}}"; envs+=("$e"); shift 2 ;;',
        f'    {keep.replace("|", "=*|")}=*) e="${{1#*=}}"; [ "${{e#*=}}" != "$e" ] || e="$e=${{!e-}}"; envs+=("$e"); shift ;;',
        *([f"    {clean}) clean=1; shift ;;"] if clean else []),
        *(["    --env-host) clean=0; shift ;;"] if name.startswith("podman") else []),
        f"    {_case_words(values)}) shift 2 ;;",
        "    -*) shift ;;",
        "    *) break ;;",
        "  esac",
        "done",
        "shift  # the image",
        "[ $# -gt 0 ] || exit 0",
        *(
            [
                "for v in $(compgen -e); do",
                '  case "$v" in APPTAINERENV_*|SINGULARITYENV_*) envs=("${v#*ENV_}=${!v}" "${envs[@]}") ;; esac',
                "done",
            ]
            if clean
            else []
        ),
        '[ "$clean" = 1 ] && exec env -i PATH="$PATH" HOME="$HOME" "${envs[@]}" "$@"',
        'exec env "${envs[@]}" "$@"',
    ]


def _wrapper_of(words) -> tuple[str | None, SrunCall | None, list[Tok]]:
    """(the container wrapper a body command runs, its srun call, the words from the wrapper on)."""
    call = None
    toks = common.toks_of(words)
    if toks and common.basename(toks[0].value) == "srun":
        call = common.parse_srun(words)
        toks = common.toks_of(call.command) if call.command else []
    w0 = common.basename(toks[0].value) if toks else ""
    if w0 in _WRAPPER_NAMES:
        return w0, call, toks
    if call is not None and call.options.get("container-image"):
        return "pyxis", call, toks
    return None, call, toks


def fallback_unwrap(script, job, shape, intent: LaunchIntent) -> LaunchIntent:
    """The script fallback runs the body in the pod: each container wrapper it uses (apptainer, singularity,
    shifter, enroot, podman-hpc, pyxis options of srun) is read as the launch line's would be (image, binds:
    L322/L323/L310, L358/L359), the image becomes the TrainJob's (L360 when the body names several), and
    the body gets executables of those names that run the command directly (never a container in a pod)."""
    from translator.launchers.launchline import _top_assignments, entries
    from translator.read.ast import Command

    if intent.family != "script" or intent.command != ("bash", "-c") or not intent.args:
        return intent
    walk = entries(script.body)
    images: dict[str, int] = {}
    used: dict[str, int] = {}
    ctx = LaunchContext(script=script, job=job, shape=shape)
    probed = 0
    for st, _ in walk:
        if not (isinstance(st, Command) and st.words):
            continue
        name, call, inner = _wrapper_of(st.words)
        if name is None and job_plugin_option(job, "container-image") is not None and st.words[0].value == "srun":
            name = "pyxis"
        if name is None:
            continue
        used.setdefault(name, st.line)
        probed += 1
        if probed > _MAX_PROBED:
            continue  # (each probe reads the assignments before its line: bounded, not quadratic)
        probe = LaunchContext(
            script=script, job=job, shape=shape, assignments=_top_assignments(script, walk, st.line, st)
        )
        got = _probe(probe, name, call, inner, st.line)
        ctx.findings.extend(f for f in probe.findings if f not in ctx.findings)
        if got is not None:
            images.setdefault(got, st.line)
    if not used:
        return intent
    return _fallback_intent(ctx, intent, images, used)


def _probe(ctx: LaunchContext, name: str, call: SrunCall | None, toks: list[Tok], line: int) -> str | None:
    """The image one wrapped body command names (its findings go to ctx)."""

    def inner(c, words, srun, ln):
        return LaunchIntent(family="script", framework="torch", command=(), args=())

    if name == "pyxis":
        assert call is not None
        return pyxis(ctx, call, toks, line, inner).image
    sub = [t.value for t in toks[1:] if not t.value.startswith("-")][:1]
    if name in ("apptainer", "singularity") and sub and sub[0] in ("exec", "run"):
        return apptainer(ctx, toks, call, line, inner).image
    if name == "shifter" or (name == "enroot" and sub == ["start"]) or (sub == ["run"]):
        return other(ctx, toks, call, line, inner).image
    return None


def _fallback_intent(ctx: LaunchContext, intent: LaunchIntent, images: dict[str, int], used: dict[str, int]):
    lines = ['_s2k_bin="${TMPDIR:-/tmp}/slurm2kf-bin"  # slurm2kf: container wrappers run their command directly']
    lines.append('mkdir -p "$_s2k_bin"')
    for name in sorted(n for n in used if n != "pyxis"):
        # written aside then renamed: tasks of a step on this pod may be running the previous copy
        lines.append(f"cat > \"$_s2k_bin/.{name}.$$\" <<'S2K_WRAPPER'")
        lines += ["#!/bin/bash"] + _shim(name) + ["S2K_WRAPPER"]
        lines.append(f'chmod +x "$_s2k_bin/.{name}.$$" && mv -f "$_s2k_bin/.{name}.$$" "$_s2k_bin/{name}"')
    lines.append('export PATH="$_s2k_bin:$PATH"')
    where = ", ".join(f"`{n}` (line {ln})" for n, ln in sorted(used.items(), key=lambda x: x[1]))
    chosen = next(iter(images), None)
    ctx.add(
        INFO,
        "L360",
        f"the body's container wrappers {where} run their command directly in the pod, which already runs in "
        + (f"the image `{chosen}`" if chosen else "the TrainJob image")
        + "; image-preparing subcommands (pull, build, import, create) do nothing",
        min(used.values()),
    )
    if len(images) > 1:
        ctx.add(
            WARNING,
            "L360",
            "the body runs several images ("
            + ", ".join(f"`{i}` line {ln}" for i, ln in images.items())
            + f"); a TrainJob has one: `{chosen}`",
            sorted(images.values())[1],
            "run the steps that need another image as a TrainJob of their own",
        )
    # the steps' tasks on the other pods need the same executables: srun's task wrapper makes them there from
    # this text (fixed text of ours, never the script's), which srun's mpirun forwards as _S2K_SHIMS
    setup = "\n".join(lines)
    text = f'_s2k_shims={shlex.quote(setup)}\neval "$_s2k_shims"\n'
    text += intent.args[0]
    changes: dict = {"args": (text,) + tuple(intent.args[1:]), "findings": tuple(intent.findings) + tuple(ctx.findings)}
    if chosen is not None and intent.image is None:
        changes["image"] = chosen
    return intent_replace(intent, **changes)
