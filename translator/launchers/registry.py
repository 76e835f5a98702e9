"""The launcher families, in detection order: one line per family.

A family is a module under translator/launchers/ with two functions:

  matches(ctx, toks, srun) -> bool      does this launch command belong to the family?
  build(ctx, toks, srun, line) -> LaunchIntent

`toks` are the words of the launch command (already without `srun`, container wrappers, `env A=B`
and `bash -c`, which launchline.dispatch unwraps first); `srun` is the enclosing srun call or None.
`dispatch` asks the families in the order of FAMILIES and builds with the first that matches, so a
family listed later only sees commands no earlier family claimed (python, the last, takes the rest).

The programs a family recognises are written here, not in its module, so that the reader
(read/classify.py) can mark launch lines without importing the launcher code: `{"accelerate":
{"launch"}}` means `accelerate launch …` is a launch line and `accelerate config` is not; None means
every use of the program is; Except({...}) every use but those subcommands.

The names derived from this table are used by read/classify.py (LAUNCH_PROGRAMS), launchline.py
(PROGRAMS, the names that make a line a launch candidate) and profile/load.py (NAMES, the values a
site profile's `runtimes[].launchers` accepts).
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from collections.abc import Mapping

from translator.launchers.intent import ACCELERATE, COMPOSER, DEEPSPEED, JAX, MPI, PYTHON, SCRIPT, SRUN_TASKS, TORCHRUN


class Except(frozenset):
    """Every subcommand but these (a program name shared with an unrelated tool)."""


Subcommands = frozenset[str] | None  # None: any use; a set: only these; Except(set): all but these

# PHP's dependency manager is also called `composer`; its commands are not MosaicML's launcher.
PHP_COMPOSER = Except(
    {
        "about",
        "archive",
        "audit",
        "browse",
        "bump",
        "check-platform-reqs",
        "clear-cache",
        "config",
        "create-project",
        "depends",
        "diagnose",
        "dump-autoload",
        "exec",
        "fund",
        "global",
        "help",
        "init",
        "install",
        "licenses",
        "list",
        "outdated",
        "prohibits",
        "reinstall",
        "remove",
        "require",
        "run-script",
        "search",
        "self-update",
        "show",
        "status",
        "suggests",
        "update",
        "validate",
        "why",
        "why-not",
    }
)


@dataclass(frozen=True)
class Family:
    name: str  # LaunchIntent.family, profile `launchers:` value
    module: str  # translator.launchers.<module>: matches() and build()
    programs: Mapping[str, Subcommands] = field(default_factory=dict)  # first words it recognises

    def load(self):
        name = "translator.launchers." + self.module
        # an imported module is taken from sys.modules directly (import_module costs a Python-level lookup)
        return sys.modules.get(name) or importlib.import_module(name)

    def matches(self, ctx, toks, srun) -> bool:
        return self.load().matches(ctx, toks, srun)

    def build(self, ctx, toks, srun, line: int):
        return self.load().build(ctx, toks, srun, line)


# Detection order. A new family: one module with matches()/build(), one line here.
FAMILIES: tuple[Family, ...] = (
    Family(TORCHRUN, "torchrun", {"torchrun": None}),  # also `python -m torch.distributed.run|launch`
    Family(ACCELERATE, "accelerate", {"accelerate": frozenset({"launch"})}),
    Family(DEEPSPEED, "deepspeed", {"deepspeed": None}),
    Family(COMPOSER, "composer", {"composer": PHP_COMPOSER}),
    Family(MPI, "mpi", {"mpirun": None, "mpiexec": None, "orterun": None}),  # also srun --mpi, srun of a binary
    Family(JAX, "jax"),  # python programs calling jax.distributed
    Family(SRUN_TASKS, "srun_tasks"),  # srun of python/bash with several tasks
    Family(PYTHON, "python"),  # anything else, run once
)

# The fallback when no family applies (shell logic around the launch): the body under `bash -c`.
FALLBACK = SCRIPT

# Wrappers unwrapped before the families are asked (launchline.dispatch, container.py): the command
# inside is converted by its own family. shifter and podman-hpc have no subcommand the reader could
# check, so it classifies them as ordinary commands (empty set); the launch detector still looks at them.
WRAPPERS: Mapping[str, Subcommands] = {
    "srun": None,
    "apptainer": frozenset({"exec", "run"}),
    "singularity": frozenset({"exec", "run"}),
    "shifter": frozenset(),
    "podman-hpc": frozenset(),
}

# Launchers the reader recognises as launch lines but no family converts (they end in the fallback of
# the python family or the script family).
OTHER_LAUNCHERS: Mapping[str, Subcommands] = {
    "horovodrun": None,
    "jsrun": None,
    "aprun": None,
    "ibrun": None,
    "mpiexec.hydra": None,
    "charmrun": None,
    "ray": frozenset({"start"}),
    "enroot": frozenset({"start"}),
}

NAMES: tuple[str, ...] = tuple(f.name for f in FAMILIES) + (FALLBACK,)


def _programs() -> dict[str, Subcommands]:
    out: dict[str, Subcommands] = {}
    for f in FAMILIES:
        out.update(f.programs)
    return out


# first word -> subcommands that make it a launch (None: any), for the reader
LAUNCH_PROGRAMS: Mapping[str, Subcommands] = {**WRAPPERS, **_programs(), **OTHER_LAUNCHERS}
# first words that make a command a launch candidate for launchline.is_launch, whatever follows (a
# program shared with an unrelated tool, Except(...), is a candidate only when the reader says LAUNCH)
PROGRAMS: frozenset[str] = frozenset(WRAPPERS) | frozenset(
    p for p, subs in _programs().items() if not isinstance(subs, Except)
)


def launch_kind(program: str, sub: str | None) -> bool | None:
    """For the reader: True when `program sub …` starts a launch, False when the program is a launcher used
    for something else (`accelerate config`), None when it is no launcher."""
    if program not in LAUNCH_PROGRAMS:
        return None
    return accepts(LAUNCH_PROGRAMS[program], sub)


def accepts(subs: Subcommands, sub: str | None) -> bool:
    """Whether `program sub …` is a launch for the program's subcommand rule."""
    if subs is None:
        return True
    return sub not in subs if isinstance(subs, Except) else sub in subs
