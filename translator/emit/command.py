"""The container command both emitters write: the launcher command, wrapped when packages must be installed.

This is the rendering Kubeflow's proposed ``CommandTrainer`` settled on, for a container trainer:

* no packages: ``command``/``args`` are the plan's launcher command and arguments, unchanged;
* with packages: ``command = ["bash", "-c"]`` and ``args = [SCRIPT, "slurm2kf", *launcher_command,
  *launcher_args]``.  ``SCRIPT`` installs the packages and then runs ``exec "$@"``, so the launcher
  (``torchrun``, ``mpirun``, ``python``, ...) replaces the shell and receives its arguments as
  positional parameters.  No user text (launcher, script arguments) is ever pasted into shell code;
  only package specs, index URLs and extra pip options appear in the script, each ``shlex.quote``-d
  into a bash array.

The install mirrors what SDK 0.5's ``CustomTrainer`` does (first ``pip install --user``, then a
system-wide install if that fails: ``--user`` is what works for a non-root user such as the MPI
runtimes' ``mpiuser``; the system-wide retry is what works inside a virtualenv).  pip runs as
``python3 -m pip`` (``python`` when the image has no ``python3``) because pip is a Python module; this
is the installer, never the training launcher.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

#: `$0` of the wrapper script (shows up in `ps` and in bash error messages).
WRAPPER_NAME = "slurm2kf"

# pip options that take their value as a separate word; a spec written "-r reqs.txt" is two words.
_OPTIONS_WITH_VALUE = ("-r", "--requirement", "-c", "--constraint", "-e", "--editable")


def _spec_words(spec: str) -> list[str]:
    """Split "-r requirements.txt" into the two words pip expects; other specs stay one word."""
    head, sep, rest = spec.strip().partition(" ")
    if sep and head in _OPTIONS_WITH_VALUE and rest.strip():
        return [head, rest.strip()]
    return [spec]


def _bash_array(words: Sequence[str]) -> str:
    return "(" + " ".join(shlex.quote(w) for w in words) + ")"


def install_script(packages: Sequence[str], index_urls: Sequence[str] = (), extra_args: Sequence[str] = ()) -> str:
    """The bash script that installs ``packages`` and then execs its positional parameters."""
    words: list[str] = []
    for spec in packages:
        words.extend(_spec_words(spec))
    opts: list[str] = []
    if index_urls:
        opts += ["--index-url", index_urls[0]]
        for url in index_urls[1:]:
            opts += ["--extra-index-url", url]
    opts += list(extra_args)
    lines = [
        "# slurm2kf: install the job's Python packages, then run the launcher command given as arguments",
        "set -e",
        f"PACKAGES={_bash_array(words)}",
        f"PIP_OPTS={_bash_array(opts)}",
        'PY="$(command -v python3 || command -v python || true)"',
        'if [ -z "$PY" ]; then echo "slurm2kf: no python3/python in the image to install ${PACKAGES[*]}" >&2; exit 127; fi',
        "export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_BREAK_SYSTEM_PACKAGES=1",
        'if ! "$PY" -m pip install --quiet --no-warn-script-location "${PIP_OPTS[@]}" --user "${PACKAGES[@]}"; then',
        '  echo "slurm2kf: user install failed, installing system-wide" >&2',
        '  "$PY" -m pip install --quiet --no-warn-script-location "${PIP_OPTS[@]}" "${PACKAGES[@]}"',
        "fi",
        'exec "$@"',
    ]
    return "\n".join(lines) + "\n"


def container_command(plan) -> tuple[list[str], list[str]]:
    """(command, args) for the trainer container of ``plan``; shared by the YAML and SDK emitters."""
    command = [str(c) for c in plan.command]
    args = [str(a) for a in plan.args]
    if not plan.packages:
        return command, args
    from translator.plan.kube import escape  # the kubelet expands $(NAME) and $$ in args

    # Package specs come from the script: escape them like every other arg the plan carries, so the
    # container receives exactly this text (our own lines hold no `$$` or `$(NAME)`).
    script = escape(install_script(plan.packages, plan.pip_index_urls, plan.pip_extra_args))
    return ["bash", "-c"], [script, WRAPPER_NAME, *command, *args]
