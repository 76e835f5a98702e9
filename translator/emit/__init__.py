"""Emitters: a TrainerPlan (or several) rendered as TrainJob YAML, SDK 0.5 Python, or plan JSON.

All three share translator/emit/trainjob.py (the TrainJob object) and translator/emit/command.py
(the container command), so the YAML and the SDK code always describe the same TrainJob.
"""
from __future__ import annotations

FORMATS = ("yaml", "python", "json")


def render(plans, fmt: str = "yaml", *, findings_comment: bool = False) -> str:
    """Render ``plans`` in ``fmt`` (one of FORMATS)."""
    if fmt == "yaml":
        from translator.emit.trainjob_yaml import render as render_yaml

        return render_yaml(plans, findings_comment=findings_comment)
    if fmt == "python":
        from translator.emit.sdk_python import render as render_python

        return render_python(plans)
    if fmt == "json":
        from translator.emit.plan_json import render as render_json

        return render_json(plans)
    raise ValueError(f"unknown output format {fmt!r} (choose from {', '.join(FORMATS)})")
