"""TrainJob names that run: every pod name JobSet makes stays within 63 characters.

The bound, from kubernetes-sigs/jobset pkg/webhooks/jobset_webhook.go (ValidateCreate): for each
replicatedJob, `<jobset>-<replicatedJob>-<last job index>-<last pod index>` + `-abcde` (the 5 random
characters the Job controller adds to a pod name) must be a DNS-1035 label (<= 63). The JobSet is named
like the TrainJob (Kubeflow Trainer jobset plugin). So on torch-distributed with 16 nodes (one
replicatedJob `node`, 16 pods, last index 15) the name may have 63 - len("-node-0-15") - len("-abcde")
= 63 - 10 - 6 = 47 characters; on deepspeed-distributed (jobs `node` and `launcher`, the launcher is a
node: 15 `node` pods) the longest suffix is `-launcher-0-0` (13), so 63 - 13 - 6 = 44.
"""

from __future__ import annotations

import yaml

import pytest

NAME63 = "abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefghij-abcdefgh"
assert len(NAME63) == 63


def _script(tmp_path, name, nodes, launch="srun python train.py", fname="job.sbatch"):
    p = tmp_path / fname
    p.write_text(
        f"#!/bin/bash\n#SBATCH --job-name={name}\n#SBATCH --nodes={nodes}\n#SBATCH --ntasks-per-node=1\n"
        f"#SBATCH --gpus-per-node=4\n{launch}\n"
    )
    return p


def _converted(cli, tmp_path, *args, **kw):
    script = _script(tmp_path, *args, **kw)
    out = tmp_path / (script.stem + ".yaml")
    r = cli("convert", script, "-o", out)
    assert r.exit_code == 0, r.stderr
    return yaml.safe_load(out.read_text()), r, out


def _pod_names(name, pods_per_job):
    """Every pod hostname plus JobSet's 5-character placeholder, as the JobSet webhook builds them."""
    return [f"{name}-{job}-0-{i}-abcde" for job, count in pods_per_job.items() for i in range(count)]


def test_63_character_job_name_on_16_nodes_gives_pod_names_within_63(cli, tmp_path):
    doc, r, _ = _converted(cli, tmp_path, NAME63, 16)
    name = doc["metadata"]["name"]
    assert doc["spec"]["runtimeRef"]["name"] == "torch-distributed" and doc["spec"]["trainer"]["numNodes"] == 16
    assert len(name) == 47  # the bound derived in the module doc: the name is cut to it, not shorter
    assert all(len(p) <= 63 for p in _pod_names(name, {"node": 16}))
    # readable (the job name's start) and unique (a hash of the whole job name)
    assert name.startswith("abcdefghij-abcdefghij-abcdefghij-")
    assert doc["metadata"]["annotations"]["slurm2kf.io/job-name"] == NAME63
    assert "P429" in r.stderr and "at most 47 characters" in r.stderr
    other, _, _ = _converted(cli, tmp_path, NAME63[:-1] + "x", 16, fname="other.sbatch")
    assert other["metadata"]["name"] != name and len(other["metadata"]["name"]) == 47


def test_mpi_runtime_leaves_room_for_the_launcher(cli, tmp_path):
    doc, _, _ = _converted(cli, tmp_path, NAME63, 16, launch="mpirun -np 16 ./a.out")
    assert doc["spec"]["runtimeRef"]["name"] == "deepspeed-distributed"
    assert len(doc["metadata"]["name"]) == 44  # -launcher-0-0-abcde (module doc)
    assert all(len(p) <= 63 for p in _pod_names(doc["metadata"]["name"], {"node": 15, "launcher": 1}))


def test_a_name_that_fits_is_kept_as_written(cli, tmp_path):
    name = "a" * 47  # exactly the 16-node bound on torch-distributed
    doc, r, _ = _converted(cli, tmp_path, name, 16)
    assert doc["metadata"]["name"] == name and "P429" not in r.stderr
    doc, _, _ = _converted(cli, tmp_path, "a" * 48, 16, fname="b.sbatch")
    assert len(doc["metadata"]["name"]) == 47 and doc["metadata"]["name"] != "a" * 47


def test_the_converted_name_passes_validate_and_the_long_one_is_refused(cli, tmp_path):
    _, _, out = _converted(cli, tmp_path, NAME63, 16)
    assert cli("validate", out).exit_code == 0
    doc = yaml.safe_load(out.read_text())
    doc["metadata"]["name"] = NAME63
    long_file = tmp_path / "long.yaml"
    long_file.write_text(yaml.safe_dump(doc))
    r = cli("validate", long_file)
    assert r.exit_code == 1
    # the runtime and the longest pod name (63 + 10 + 6 = 79 characters) are named, with the bound
    assert "error V748" in r.stdout and "runtime torch-distributed" in r.stdout
    assert f"'{NAME63}-node-0-15-abcde' (JobSet's random part written -abcde) has 79 characters" in r.stdout
    assert "at most 47 characters" in r.stdout


def _trainjob(meta, nodes=16, runtime="torch-distributed"):
    return yaml.safe_dump(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": meta,
            "spec": {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": nodes}},
        }
    )


@pytest.mark.parametrize(
    "meta,nodes,valid",
    [
        ({"name": "a" * 47}, 16, True),
        ({"name": "a" * 48}, 16, False),
        ({"name": "a" * 48}, 10, True),  # last index 9: 63 - len("-node-0-9") - 6 = 48
        # generateName: the API server appends 5 characters, so 47 - 5 = 42 is the bound
        ({"generateName": "a" * 42}, 16, True),
        ({"generateName": "a" * 43}, 16, False),
        # the server keeps 58 characters of a generateName: 58 + 5 = 63 fits one node only if the
        # suffix fits too, which it never does (-node-0-0-abcde)
        ({"generateName": "a" * 70}, 1, False),
    ],
)
def test_validate_names_and_generate_names(meta, nodes, valid):
    from translator.validate.validator import validate_text

    (result,) = validate_text(_trainjob(meta, nodes))
    v748 = [p for p in result.problems if p.code == "V748"]
    assert bool(v748) is not valid
    assert result.valid is valid
    if v748:
        assert v748[0].path == ("metadata.generateName" if "generateName" in meta else "metadata.name")


def test_unknown_runtime_is_a_warning_taken_as_one_node_job():
    from translator.validate.validator import validate_text

    (result,) = validate_text(_trainjob({"name": "a" * 60}, 16, runtime="my-runtime"))
    v748 = [p for p in result.problems if p.code == "V748"]
    assert v748 and v748[0].severity == "warning" and "not known" in v748[0].message


def test_runtime_manifest_jobs_count(tmp_path):
    """A runtime given as a manifest: its replicatedJob names decide the bound (here `trainer-pod`)."""
    from translator.validate.validator import validate_text

    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "custom"},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {"spec": {"template": {"spec": {"containers": [{"name": "node"}]}}}},
                        },
                        {"name": "data-preparation-step", "template": {"spec": {"template": {"spec": {}}}}},
                    ]
                }
            },
        },
    }
    # -data-preparation-step-0-0 is 26 characters: 63 - 26 - 6 = 31
    text = yaml.safe_dump(runtime) + "---\n" + _trainjob({"name": "a" * 32}, 2, runtime="custom")
    results = [r for r in validate_text(text) if not r.skipped]
    assert any(p.code == "V748" and p.severity == "error" for p in results[0].problems)
    text = yaml.safe_dump(runtime) + "---\n" + _trainjob({"name": "a" * 31}, 2, runtime="custom")
    results = [r for r in validate_text(text) if not r.skipped]
    assert not any(p.code == "V748" for p in results[0].problems)


def test_array_expand_names_fit_too(cli, tmp_path):
    script = tmp_path / "arr.sbatch"
    script.write_text(
        f"#!/bin/bash\n#SBATCH --job-name={NAME63}\n#SBATCH --nodes=16\n#SBATCH --array=0-11\nsrun python t.py\n"
    )
    r = cli("convert", script, "--array-mode", "expand")
    assert r.exit_code == 0, r.stderr
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(r.stdout) if d]
    assert len(names) == 12 and len(set(names)) == 12
    assert all(len(n) <= 47 for n in names) and names[11].endswith("-11")


def test_generate_name_base_leaves_room_for_the_random_part():
    from translator.cluster.submit import generate_name_base

    body = {"spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 16}}}
    base = generate_name_base("b" * 47, body)
    assert base == "b" * 41 + "-"  # 42 characters + the server's 5 = 47
    assert generate_name_base("short", body) == "short-"


@pytest.mark.cluster
def test_submit_generate_name_and_validate_server(cli, kube, tmp_path):
    """On the real API server: a generated name from a 63-character job name on 16 nodes fits the
    pod bound; `validate --server` keeps V748 (no JobSet webhook runs on a bare API server)."""
    script = _script(tmp_path, NAME63, 16)
    r = cli("submit", "--kubeconfig", kube.kubeconfig, "-n", kube.ns, "--generate-name", script)
    assert r.exit_code == 0, r.stderr
    created = r.stdout.strip().rsplit("/", 1)[1]
    assert len(created) <= 47 and created.startswith("abcdefghij-")
    assert all(len(p) <= 63 for p in _pod_names(created, {"node": 16}))
    long_file = tmp_path / "long.yaml"
    long_file.write_text(_trainjob({"name": NAME63}, 16))
    r = cli("validate", "--server", "--kubeconfig", kube.kubeconfig, "-n", kube.ns, long_file)
    assert r.exit_code == 1 and "error V748" in r.stdout


def test_profile_runtime_jobs_count(cli, tmp_path):
    """A site runtime chosen by the profile for the launcher: its listed replicatedJobs decide the
    bound (`-data-preparation-0-0-abcde` is 17 + 4 + 6 = 27 characters: 63 - 27 = 36)."""
    prof = tmp_path / "slurm2kf.yaml"
    prof.write_text(
        "apiVersion: slurm2kf/v1\nkind: SiteProfile\nruntimes:\n  - name: site-torch\n"
        "    launchers: [srun-tasks, torchrun, python]\n    replicatedJobs: [data-preparation, node]\n"
    )
    script = _script(tmp_path, NAME63, 16)
    r = cli("convert", "--profile", prof, script)
    assert r.exit_code == 0, r.stderr
    doc = yaml.safe_load(r.stdout)
    assert doc["spec"]["runtimeRef"]["name"] == "site-torch"
    assert len(doc["metadata"]["name"]) == 36
