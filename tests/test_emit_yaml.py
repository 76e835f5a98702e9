"""TrainJob YAML from hand-built plans: shape, SDK-compatible choices, validity (ours and the oracle's)."""

from __future__ import annotations

import yaml

from kf_helpers import CRD, oracle_validate, plan, sample_plans, write_outputs
from translator.diagnostics import Finding
from translator.emit import trainjob_yaml
from translator.plan.model import EnvVar, PodPatch
from translator.validate.crd import load_crd
from translator.validate.validator import validate_text


def _load(text):
    return list(yaml.safe_load_all(text))


def test_torch_multinode_shape_by_hand():
    [doc] = _load(trainjob_yaml.render([sample_plans()["torch_multinode"]]))
    assert doc["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    assert doc["kind"] == "TrainJob"
    assert doc["metadata"] == {"name": "llm-pretrain"}
    spec = doc["spec"]
    # kind is sent like the SDK does; apiGroup is left to the CRD default
    assert spec["runtimeRef"] == {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"}
    t = spec["trainer"]
    assert t["command"] == ["torchrun"]
    assert t["args"] == ["--nproc-per-node", "8", "pretrain.py", "--epochs", "10"]
    assert t["numNodes"] == 4
    assert t["env"] == [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "OMP_NUM_THREADS", "value": "8"}]
    res = {"nvidia.com/gpu": "8", "cpu": "64", "memory": "900Gi"}
    assert t["resourcesPerNode"] == {"requests": res, "limits": res}
    assert spec["activeDeadlineSeconds"] == 86400
    # never emitted: SDK 0.5 cannot send them, and the YAML must equal what the SDK sends
    assert "numProcPerNode" not in t and "suspend" not in spec and "managedBy" not in spec
    assert "runtimePatches" not in spec


def test_quantities_and_numeric_looking_strings_stay_strings():
    p = plan(
        args=("8", "0o17", "1_000", ".5", "1e3", "y", "n", "on", "null", "~", "0x1F"),
        env=(EnvVar("A", "8"), EnvVar("B", "true"), EnvVar("C", "Y")),
        resources_per_node=(("cpu", "4"), ("memory", "512Mi")),
    )
    [doc] = _load(trainjob_yaml.render([p]))
    assert doc["spec"]["trainer"]["args"] == list(p.args)
    assert [e["value"] for e in doc["spec"]["trainer"]["env"]] == ["8", "true", "Y"]
    assert doc["spec"]["trainer"]["resourcesPerNode"]["limits"] == {"cpu": "4", "memory": "512Mi"}
    text = trainjob_yaml.render([p])
    for word in ("0o17", "1_000", ".5", "y", "n"):  # Go's YAML decoder would read these as numbers/bools
        assert f"- '{word}'" in text


def test_patches_merge_into_one_runtime_patch_with_sdk_manager():
    [doc] = _load(trainjob_yaml.render([sample_plans()["mpi_deepspeed"]]))
    patches = doc["spec"]["runtimePatches"]
    assert len(patches) == 1
    assert patches[0]["manager"] == "trainer.kubeflow.org/kubeflow-sdk"
    jobs = patches[0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert [j["name"] for j in jobs] == ["launcher", "node"]
    node = jobs[1]["template"]["spec"]["template"]["spec"]
    assert node["nodeSelector"] == {"pool": "a100"}
    assert node["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    assert node["containers"] == [{"name": "node", "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}]


def test_two_patches_of_one_job_are_merged():
    p = plan(
        patches=(
            PodPatch(node_selector=(("a", "1"),)),
            PodPatch(tolerations=({"key": "k", "operator": "Exists"},), image_pull_secrets=("reg",)),
        )
    )
    [doc] = _load(trainjob_yaml.render([p]))
    [job] = doc["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    spec = job["template"]["spec"]["template"]["spec"]
    assert spec == {
        "nodeSelector": {"a": "1"},
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "imagePullSecrets": [{"name": "reg"}],
    }


def test_duplicate_env_keeps_first_position_last_value_like_a_dict():
    p = plan(env=(EnvVar("X", "1"), EnvVar("Y", "2"), EnvVar("X", "3")))
    [doc] = _load(trainjob_yaml.render([p]))
    assert doc["spec"]["trainer"]["env"] == [{"name": "X", "value": "3"}, {"name": "Y", "value": "2"}]


def test_namespace_labels_annotations():
    [doc] = _load(trainjob_yaml.render([sample_plans()["namespace_meta"]]))
    assert doc["metadata"] == {
        "name": "meta-job",
        "namespace": "team-a",
        "labels": {"kueue.x-k8s.io/queue-name": "gpu-queue", "app": "slurm2kf"},
        "annotations": {"slurm2kf.io/job-name": "My Job!", "slurm2kf.io/source": "jobs/a b.sbatch"},
    }
    assert doc["spec"]["activeDeadlineSeconds"] == 7200


def test_multiple_plans_are_separate_documents():
    plans = [plan(name=f"arr-{i}", array_index=i, env=(EnvVar("SLURM_ARRAY_TASK_ID", str(i)),)) for i in range(3)]
    text = trainjob_yaml.render(plans)
    docs = _load(text)
    assert [d["metadata"]["name"] for d in docs] == ["arr-0", "arr-1", "arr-2"]
    assert text.count("\n---\n") == 2


def test_findings_comment_cannot_escape():
    evil = "bad\nspec: {hacked: true}\r\u2028\x85kind: X\x00"
    p = plan(findings=(Finding("warning", "P401", evil, 3, "fix\nit"),), source_path="a\nb.sbatch")
    text = trainjob_yaml.render([p], findings_comment=True)
    head = text.split("apiVersion:")[0]
    assert all(line.startswith("#") for line in head.splitlines())
    assert len(head.splitlines()) == 2
    [doc] = _load(text)
    assert "hacked" not in doc["spec"] and doc["kind"] == "TrainJob"
    assert "P401 warning line 3:" in head
    assert trainjob_yaml.render([p]).startswith("apiVersion:")  # no comment unless asked


def test_all_samples_valid_for_our_validator_and_the_oracle(tmp_path):
    crd = load_crd(str(CRD))
    paths = []
    for name, p in sample_plans().items():
        y, _ = write_outputs(tmp_path, name, [p])
        paths.append(y)
        results = validate_text(y.read_text(), crd, file=str(y))
        assert [r.valid for r in results] == [True], [x.to_json() for x in results]
        assert not any(r.warnings for r in results), [x.to_json() for x in results]
    verdicts = oracle_validate(paths)
    assert len(verdicts) == len(paths)
    bad = [v for v in verdicts if not v["valid"] or v["warnings"]]
    assert not bad, bad
