"""`--to json`: the plan(s) as data, with findings and the TrainJob each one renders to."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from translator.emit.trainjob import trainjob_dict


def _plain(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def plan_dict(plan) -> dict:
    out = _plain(plan)
    # pairs are clearer as objects in JSON
    for key in ("labels", "annotations", "resources_per_node"):
        out[key] = {str(k): str(v) for k, v in getattr(plan, key)}
    for e in out.get("env", ()):  # secret references only where there is one
        if e.get("secret_name") is None:
            e.pop("secret_name", None)
            e.pop("secret_key", None)
    out["can_run"] = plan.can_run
    out["trainjob"] = trainjob_dict(plan)
    return out


def render(plans: Sequence, simulation=None) -> str:
    """JSON document: {"plans": [...]} (non-ASCII escaped so any text survives any terminal encoding), plus
    {"simulation": {...}} when `convert --simulate` ran the two sides."""
    doc: dict[str, object] = {"plans": [plan_dict(p) for p in plans]}
    if simulation is not None:
        from translator.simulate.findings import simulation_json

        doc["simulation"] = simulation_json(simulation)
    return json.dumps(doc, indent=2, ensure_ascii=True) + "\n"
