"""Which site profile applies to a script (kept free of YAML and schema imports: `convert` start-up)."""

from __future__ import annotations

import os
from collections.abc import Mapping

PROFILE_FILENAME = "slurm2kf.yaml"
PROFILE_ENV = "SLURM2KF_PROFILE"


def find_profile(
    script_path: str | None, explicit: str | None = None, environ: Mapping[str, str] = os.environ
) -> str | None:
    """Which profile applies: `explicit` (--profile), else $SLURM2KF_PROFILE, else the nearest
    `slurm2kf.yaml` in the script's directory or one of its parents. None when there is none."""
    if explicit:
        return explicit
    from_env = environ.get(PROFILE_ENV)
    if from_env:
        return from_env
    if not script_path or script_path == "-":
        start = os.getcwd()
    else:
        start = os.path.dirname(os.path.abspath(script_path))
    directory = start
    while True:
        candidate = os.path.join(directory, PROFILE_FILENAME)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
