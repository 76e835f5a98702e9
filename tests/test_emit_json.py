"""`--to json`: the plans as data, with findings and the TrainJob each renders to."""

from __future__ import annotations

import json

import yaml

from kf_helpers import sample_plans
from translator.emit import plan_json, trainjob_yaml


def test_plan_json_carries_plan_findings_and_trainjob():
    plans = [sample_plans()["torch_multinode"], sample_plans()["namespace_meta"]]
    data = json.loads(plan_json.render(plans))
    assert [p["name"] for p in data["plans"]] == ["llm-pretrain", "meta-job"]
    first = data["plans"][0]
    assert first["num_nodes"] == 4
    assert first["resources_per_node"] == {"nvidia.com/gpu": "8", "cpu": "64", "memory": "900Gi"}
    assert first["findings"] == [
        {
            "severity": "warning",
            "code": "P401",
            "message": "module load cuda/12 must be in the image",
            "line": 5,
            "suggestion": "bake it into the image",
        }
    ]
    assert first["can_run"] is True
    assert first["env"][0] == {"name": "NCCL_DEBUG", "value": "WARN", "line": 7}
    # the embedded TrainJob is the YAML's document
    assert [p["trainjob"] for p in data["plans"]] == list(yaml.safe_load_all(trainjob_yaml.render(plans)))
    assert data["plans"][1]["labels"] == {"kueue.x-k8s.io/queue-name": "gpu-queue", "app": "slurm2kf"}
