"""`pip install …` lines -> packages to install before the launcher starts (CommandTrainer's packages)."""

from __future__ import annotations


from translator.diagnostics import Finding, INFO, WARNING

DEFAULT_INDEX = "https://pypi.org/simple"
_TOOLING = {"pip", "setuptools", "wheel"}
_KEEP_AS_PACKAGE = {"-r": "-r", "--requirement": "-r", "-c": "-c", "--constraint": "-c", "-e": "-e", "--editable": "-e"}
_DROP_FLAGS = {"--user", "-q", "--quiet", "-qq", "--no-warn-script-location", "--disable-pip-version-check"}
_VALUE_OPTIONS = {
    "-f",
    "--find-links",
    "--trusted-host",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "--platform",
    "--python-version",
    "--implementation",
    "--abi",
    "--upgrade-strategy",
    "--progress-bar",
    "--cache-dir",
    "--src",
    "--proxy",
    "--timeout",
    "--retries",
    "--no-binary",
    "--only-binary",
    "--config-settings",
    "-C",
    "--global-option",
    "--log",
    "--report",
    "--cert",
    "--client-cert",
    "--exists-action",
}


def parse(cmd) -> tuple[list[str], list[str], list[str], list[str], list[Finding]]:
    """(packages, index urls, extra index urls, extra pip args, findings) from one pip command."""
    words = list(cmd.words)
    values = [w.value for w in words]
    findings: list[Finding] = []
    try:
        start = values.index("install") + 1
    except ValueError:
        return (
            [],
            [],
            [],
            [],
            [Finding(INFO, "P431", f"`{cmd.text.strip()}` is not a pip install; not carried", cmd.line)],
        )
    pkgs: list[str] = []
    index: list[str] = []
    extra_index: list[str] = []
    extra: list[str] = []
    i = start
    while i < len(words):
        w = words[i]
        v = w.value
        if not w.literal:
            findings.append(
                Finding(
                    WARNING,
                    "P432",
                    f"pip argument `{w.raw}` needs the shell; not carried",
                    cmd.line,
                    "write the requirement literally",
                )
            )
            i += 1
            continue
        name, eq, inline = v.partition("=") if v.startswith("--") else (v, "", "")
        val = inline if eq else (words[i + 1].value if i + 1 < len(words) else "")
        step = 1 if eq else 2
        if name in _KEEP_AS_PACKAGE and not val:
            findings.append(Finding(WARNING, "P432", f"`{v}` without a value is not carried", cmd.line))
            i += step
        elif name in _KEEP_AS_PACKAGE:
            pkgs.append(f"{_KEEP_AS_PACKAGE[name]} {val}")
            if name in ("-e", "--editable") or val in (".", "./"):
                findings.append(
                    Finding(
                        WARNING,
                        "P433",
                        f"`pip install {name} {val}` installs code from the "
                        "Slurm submit directory, which is not in the pod",
                        cmd.line,
                        "build the code into the image or install it from a package index",
                    )
                )
            elif name in ("-r", "--requirement", "-c", "--constraint"):
                findings.append(
                    Finding(
                        WARNING,
                        "P434",
                        f"requirements file `{val}` must exist in the image's "
                        "working directory (or use an absolute path on a mounted volume)",
                        cmd.line,
                    )
                )
            i += step
        elif name in ("-i", "--index-url"):
            index = [val]
            i += step
        elif name == "--extra-index-url":
            extra_index.append(val)
            i += step
        elif name in _DROP_FLAGS:
            i += 1
        elif name == "--no-index":
            findings.append(
                Finding(
                    WARNING,
                    "P432",
                    "`--no-index` is not carried: all pip lines install in one "
                    "command, where it would stop every other package from being found",
                    cmd.line,
                    "use --find-links with a wheel directory in the image",
                )
            )
            i += 1
        elif name in _VALUE_OPTIONS:
            extra += [name, val] if not eq else [v]
            i += step
        elif v.startswith("-"):
            extra.append(v)
            i += 1
        else:
            pkgs.append(v)
            if v.startswith((".", "/", "~")) or v.endswith((".whl", ".tar.gz")) and "://" not in v:
                findings.append(
                    Finding(
                        WARNING,
                        "P433",
                        f"`pip install {v}` installs from a local path, which is not in the pod",
                        cmd.line,
                        "build it into the image",
                    )
                )
            i += 1
    if pkgs and all(p.split("=")[0].split("<")[0].split(">")[0].lower() in _TOOLING for p in pkgs):
        return (
            [],
            [],
            [],
            [],
            findings
            + [Finding(INFO, "P431", f"`{cmd.text.strip()}` only upgrades pip's own tooling; not carried", cmd.line)],
        )
    return pkgs, index, extra_index, extra, findings
