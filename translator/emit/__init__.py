"""Emitters: a TrainerPlan (or several) rendered in an output format.

`WRITERS` is the one table of output formats; the commands read it and never name a format:

* `convert --to NAME` offers every entry and prints (or writes to `-o`) `render(plans, NAME, ...)`;
* `migrate` writes, for each converted script, every entry with a `suffix` as `<stem><suffix>` next to
  the script's place in OUT (and removes such files again when their script disappears); the entries
  with `kubernetes=True` are Kubernetes objects and go into the folder's kustomization;
* `report` embeds the `yaml` entry's text in each script's section.

A format is one module with `render(plans, **options) -> str` plus one entry here. The built-in
writers share translator/emit/trainjob.py (the TrainJob object) and translator/emit/command.py (the
container command), so the YAML and the SDK code always describe the same TrainJob.
See docs/architecture.md, "Adding an output format".
"""

from __future__ import annotations

import importlib
from typing import NamedTuple


class Writer(NamedTuple):
    """One output format."""

    name: str  # the `convert --to` value
    module: str  # dotted module name; its `render(plans, **options)` returns the text
    help: str  # how `convert --help` names it ("TrainJob YAML")
    media_type: str  # what the text is
    suffix: str = ""  # file suffix of migrate's per-script output; "" = migrate skips it
    kubernetes: bool = False  # Kubernetes objects: listed in migrate's kustomizations
    options: tuple[str, ...] = ()  # the keyword options `render` accepts (see `render` below)

    def load(self):
        """The writer's render function (its module is imported on first use only)."""
        return importlib.import_module(self.module).render


# Ordered: `convert --help` lists them in this order; `yaml` is the default.
WRITERS: dict[str, Writer] = {
    w.name: w
    for w in (
        Writer(
            "yaml",
            "translator.emit.trainjob_yaml",
            "TrainJob YAML",
            "application/yaml",
            suffix=".trainjob.yaml",
            kubernetes=True,
            options=("findings_comment",),
        ),
        Writer(
            "python",
            "translator.emit.sdk_python",
            "Python for the kubeflow==0.5.0 SDK",
            "text/x-python",
            suffix=".trainjob.py",
        ),
        Writer("json", "translator.emit.plan_json", "the plan as JSON", "application/json", options=("simulation",)),
    )
}

DEFAULT = "yaml"


def writer(fmt: str) -> Writer:
    try:
        return WRITERS[fmt]
    except KeyError:
        raise ValueError(f"unknown output format {fmt!r} (choose from {', '.join(WRITERS)})") from None


def migrate_writers() -> tuple[Writer, ...]:
    """The formats migrate writes for each script, in table order."""
    return tuple(w for w in WRITERS.values() if w.suffix)


def render(plans, fmt: str = DEFAULT, *, findings_comment: bool = False, simulation=None) -> str:
    """Render ``plans`` in ``fmt`` (a WRITERS name). Each option goes only to the writers that list it
    in `options`: `findings_comment` (also write the findings as a comment block), `simulation` (the
    result of `convert --simulate`, or None)."""
    w = writer(fmt)
    given = {"findings_comment": findings_comment, "simulation": simulation}
    return w.load()(plans, **{k: given[k] for k in w.options})
