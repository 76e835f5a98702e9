"""Topology-aware placement (Kueue TAS) from `--switches`, and the findings for `--nodelist`/`--exclusive`.

Sources for the expected values (written by hand, not read from slurm2kf's output):
* Kueue, "Topology Aware Scheduling" (kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling) and "Run
  Workloads with Topology-Aware Scheduling": a PodSet's pod template carries
  `kueue.x-k8s.io/podset-required-topology` or `kueue.x-k8s.io/podset-preferred-topology` whose value is the
  node label of a Topology level (`cloud.provider.com/topology-rack`); the Topology lists levels broadest
  first and `kubernetes.io/hostname` only as the last one; at most 16 levels.
* Kueue's TrainJob integration (pkg/controller/jobs/trainjob): one PodSet per replicatedJob of the JobSet the
  Trainer builds from the runtime and the TrainJob's runtime patches -> the annotation goes on every
  replicatedJob of the runtime: `node` for torch-distributed, `node` and `launcher` for
  deepspeed-distributed, `dataset-initializer` and `node` for torch-distributed-with-cache (Trainer
  manifests/base/runtimes).
* Slurm sbatch(1) `--switches=count[@max-time]`: at most `count` leaf switches, waiting at most max-time
  (best effort) -> preferred unless the profile says `switches: required`; sbatch renders the value as
  `count@HH:MM:SS`.
* Trainer CRD: runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template
  .metadata.annotations; SDK 0.5 `PodTemplatePatch(metadata=...)`.
"""

from __future__ import annotations

import pytest
import yaml

import kf_helpers as K
from kube_cluster import get_trainjob, new_namespace

PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
RACK = "cloud.provider.com/topology-rack"
BLOCK = "cloud.provider.com/topology-block"

LEVELS = (
    "topology:\n"
    "  levels:\n"
    "    - name: block\n"
    f"      label: {BLOCK}\n"
    "    - name: rack\n"
    f"      label: {RACK}\n"
    "    - name: host\n"
    "      label: kubernetes.io/hostname\n"
)
HEAD = "apiVersion: slurm2kf/v1\nkind: SiteProfile\npartitions:\n  gpu:\n    queue: gpu-queue\n"


def _profile(tmp_path, topology=LEVELS, extra=""):
    path = tmp_path / "slurm2kf.yaml"
    path.write_text(HEAD + topology + extra)
    return path


def _script(tmp_path, options, nodes=4, launch="srun torchrun --nnodes 4 --nproc_per_node 8 train.py"):
    path = tmp_path / "job.sbatch"
    head = f"#!/bin/bash\n#SBATCH -J tas\n#SBATCH -p gpu\n#SBATCH -N {nodes}\n"
    path.write_text(head + "".join(f"#SBATCH {o}\n" for o in options) + launch + "\n")
    return path  # the options start on line 5


def _templates(doc) -> dict:
    """replicatedJob name -> pod template patch, from the TrainJob's runtime patches."""
    out = {}
    for patch in doc["spec"].get("runtimePatches") or []:
        for job in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
            out[job["name"]] = job["template"]["spec"]["template"]
    return out


def _annotations(doc) -> dict:
    return {j: (t.get("metadata") or {}).get("annotations") or {} for j, t in _templates(doc).items()}


def _convert(cli, *args):
    r = cli("convert", *args)
    assert r.exit_code == 0, r.stderr
    return yaml.safe_load(r.stdout), r.stderr


# ---- the profile ---------------------------------------------------------------------------------


def test_profile_topology_loads_with_its_defaults(tmp_path):
    from translator.profile.load import load_profile

    topo = load_profile(str(_profile(tmp_path))).topology
    assert [(lv.name, lv.label, lv.line) for lv in topo.levels] == [
        ("block", BLOCK, 8),  # HEAD is 5 lines, `topology:` line 6, `levels:` 7, first item 8
        ("rack", RACK, 10),
        ("host", "kubernetes.io/hostname", 12),
    ]
    # the leaf switches are the lowest level above the hosts: rack; --switches is best effort: preferred
    assert topo.leaf_level().name == "rack" and topo.switches == "preferred"
    explicit = _profile(tmp_path, extra="  leafSwitchLevel: block\n  switches: required\n")
    topo = load_profile(str(explicit)).topology
    assert topo.leaf_level().label == BLOCK and topo.switches == "required"


def test_no_topology_key_no_topology(tmp_path):
    from translator.profile.load import load_profile

    assert load_profile(str(_profile(tmp_path, topology=""))).topology is None


@pytest.mark.parametrize(
    "topology, expected",
    [
        # kubernetes.io/hostname only as the lowest level (Kueue Topology validation)
        (
            "topology:\n  levels:\n    - {name: host, label: kubernetes.io/hostname}\n    - {name: rack, label: r/x}\n",
            ":8: error F558 topology.levels[0].label: `kubernetes.io/hostname` can only be the last",
        ),
        ("topology:\n  levels:\n    - {name: a, label: r/x}\n    - {name: a, label: r/y}\n", ":9: error F559"),
        ("topology:\n  levels:\n    - {name: a, label: r/x}\n    - {name: b, label: r/x}\n", ":9: error F559"),
        ("topology:\n  levels: []\n", ":7: error F556 topology.levels"),
        # a missing key is reported on the first line of its mapping, as for every profile key
        ("topology:\n  leafSwitchLevel: rack\n", ":7: error F556 topology.levels: required key is missing"),
        ("topology:\n  levels:\n    - {name: a, label: 'bad label'}\n", ":8: error F554 topology.levels[0].label"),
        ("topology:\n  levels:\n    - {name: a}\n", ":8: error F556 topology.levels[0].label"),
        ("topology:\n  levels:\n    - {name: a, label: r/x}\n  leafSwitchLevel: b\n", ":9: error F558"),
        (
            "topology:\n  levels:\n    - {name: a, label: r/x}\n    - {name: h, label: kubernetes.io/hostname}\n"
            "  leafSwitchLevel: h\n",
            ":10: error F558 topology.leafSwitchLevel: `h` is the `kubernetes.io/hostname` level",
        ),
        ("topology:\n  levels:\n    - {name: a, label: r/x}\n  switches: always\n", ":9: error F558"),
        ("topology:\n  level:\n    - {name: a, label: r/x}\n", ":7: error F551 topology.level: unknown key"),
        (
            "topology:\n  levels:\n" + "".join(f"    - {{name: l{i}, label: r/l{i}}}\n" for i in range(17)),
            ":8: error F558 topology.levels: at most 16 items are allowed, got 17",  # the list's first line
        ),
    ],
)
def test_profile_check_refuses_a_bad_topology(cli, tmp_path, topology, expected):
    path = _profile(tmp_path, topology=topology)
    r = cli("profile", "check", path)
    assert r.exit_code == 2
    assert f"{path}{expected}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


# ---- --switches ------------------------------------------------------------------------------------


def test_switches_one_is_a_preferred_rack_on_the_node_pods(cli, tmp_path):
    script = _script(tmp_path, ["--switches=1@10:00"])
    doc, err = _convert(cli, "--profile", _profile(tmp_path), script)
    assert _annotations(doc) == {"node": {PREFERRED: RACK}}  # torch-distributed has one replicatedJob
    assert f"{script}:5: info P470 --switches=1@00:10:00 -> Kueue topology {PREFERRED}={RACK}" in err
    assert "P474" not in err
    assert "only a TrainJob Kueue manages" not in err  # partition gpu -> queue gpu-queue


def test_switches_outside_a_queue_says_kueue_must_manage_it(cli, tmp_path):
    script = _script(tmp_path, ["--switches=1"])
    script.write_text(script.read_text().replace("#SBATCH -p gpu\n", ""))  # no partition: no queue label
    doc, err = _convert(cli, "--profile", _profile(tmp_path), script)
    assert "kueue.x-k8s.io/queue-name" not in (doc["metadata"].get("labels") or {})
    assert _annotations(doc) == {"node": {PREFERRED: RACK}}
    assert "only a TrainJob Kueue manages is placed by it (no kueue.x-k8s.io/queue-name label here)" in err


def test_switches_required_by_the_profile(cli, tmp_path):
    script = _script(tmp_path, ["--switches=1"])
    doc, _ = _convert(cli, "--profile", _profile(tmp_path, extra="  switches: required\n"), script)
    assert _annotations(doc) == {"node": {REQUIRED: RACK}}


def test_switches_on_a_chosen_leaf_level(cli, tmp_path):
    script = _script(tmp_path, ["--switches=1"])
    doc, _ = _convert(cli, "--profile", _profile(tmp_path, extra="  leafSwitchLevel: block\n"), script)
    assert _annotations(doc) == {"node": {PREFERRED: BLOCK}}


def test_more_than_one_switch_is_preferred_even_when_required(cli, tmp_path):
    # a required rack would mean ONE switch; Kueue cannot say "at most 3 racks"
    script = _script(tmp_path, ["--switches=3@5:00"])
    doc, err = _convert(cli, "--profile", _profile(tmp_path, extra="  switches: required\n"), script)
    assert _annotations(doc) == {"node": {PREFERRED: RACK}}
    assert f"{script}:5: warning P474 --switches=3@00:05:00: Kueue cannot bound the number of `rack` domains" in err


MPIRUN = "mpirun python train.py"  # the mpi launcher family -> deepspeed-distributed (launcher + node)


def test_every_replicated_job_of_the_runtime_is_annotated(cli, tmp_path):
    prof = _profile(tmp_path)
    mpi, _ = _convert(cli, "--profile", prof, _script(tmp_path, ["--switches=1", "--ntasks-per-node=8"], launch=MPIRUN))
    assert mpi["spec"]["runtimeRef"]["name"] == "deepspeed-distributed"
    assert _annotations(mpi)["node"] == {PREFERRED: RACK} and _annotations(mpi)["launcher"] == {PREFERRED: RACK}
    assert set(_annotations(mpi)) == {"node", "launcher"}
    script = _script(tmp_path, ["--switches=1"])
    cache, _ = _convert(cli, "--profile", prof, "--runtime", "torch-distributed-with-cache", script)
    assert _annotations(cache)["dataset-initializer"] == {PREFERRED: RACK}
    assert _annotations(cache)["node"] == {PREFERRED: RACK}


def test_the_profile_runtime_lists_its_jobs(cli, tmp_path):
    extra = "runtimes:\n  - name: site-torch\n    launchers: [torchrun]\n    replicatedJobs: [trainer-a, trainer-b]\n"
    prof = _profile(tmp_path, topology=extra + LEVELS)
    doc, _ = _convert(cli, "--profile", prof, _script(tmp_path, ["--switches=1"]))
    assert doc["spec"]["runtimeRef"]["name"] == "site-torch"
    assert {j: a for j, a in _annotations(doc).items() if a} == {
        "trainer-a": {PREFERRED: RACK},
        "trainer-b": {PREFERRED: RACK},
    }


def test_switches_without_a_topology_is_not_carried(cli, tmp_path):
    script = _script(tmp_path, ["--switches=1"])
    for args in (["--profile", _profile(tmp_path, topology="")], []):
        doc, err = _convert(cli, *args, script)
        assert not any(_annotations(doc).values())
        assert f"{script}:5: warning P471 --switches=1: the placement is not carried" in err
    only_hosts = _profile(tmp_path, topology="topology:\n  levels:\n    - {name: h, label: kubernetes.io/hostname}\n")
    doc, err = _convert(cli, "--profile", only_hosts, script)
    assert not any(_annotations(doc).values()) and "no level above `kubernetes.io/hostname`" in err


def test_one_node_needs_no_topology(cli, tmp_path):
    script = _script(tmp_path, ["--switches=1"], nodes=1, launch="srun python train.py")
    doc, err = _convert(cli, "--profile", _profile(tmp_path), script)
    assert not any(_annotations(doc).values())
    assert f"{script}:5: info P470 --switches=1: one node is always under one leaf switch" in err


def test_switches_zero_asks_for_nothing(cli, tmp_path):
    # sbatch(1): with no switch count limit there is no constraint
    doc, err = _convert(cli, "--profile", _profile(tmp_path), _script(tmp_path, ["--switches=0"]))
    assert not any(_annotations(doc).values()) and "P47" not in err


# ---- --nodelist, --exclusive -----------------------------------------------------------------------


def test_nodelist_is_a_finding_never_a_placement(cli, tmp_path):
    script = _script(tmp_path, ["-w node[01-04]"])
    for args in (["--profile", _profile(tmp_path)], []):
        doc, err = _convert(cli, *args, script)
        assert f"{script}:5: warning P472 --nodelist=node[01-04]: Slurm node names are not Kubernetes nodes" in err
        assert not any(_annotations(doc).values())
        assert not any("nodeSelector" in (t.get("spec") or {}) for t in _templates(doc).values())


def test_exclusive_is_not_a_hostname_topology(cli, tmp_path):
    script = _script(tmp_path, ["--exclusive"])
    doc, err = _convert(cli, "--profile", _profile(tmp_path), script)
    assert not any(_annotations(doc).values())
    assert f"{script}:5: info P473 --exclusive: no topology annotation" in err
    _, err = _convert(cli, "--profile", _profile(tmp_path, topology=""), script)
    assert "P473" not in err  # without a topology P410 says it all


# ---- what the outputs are worth ---------------------------------------------------------------------


def _outputs(cli, tmp_path, name, args):
    y, p = tmp_path / f"{name}.yaml", tmp_path / f"{name}.py"
    r1 = cli("convert", *args, "-o", y)
    r2 = cli("convert", "--to", "python", *args, "-o", p)
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.stderr + r2.stderr
    return y, p


def _cases(cli, tmp_path):
    prof = _profile(tmp_path)
    gpu = _script(tmp_path, ["--switches=1", "--gpus-per-node=8"])  # /dev/shm patch + the annotation
    mpi = tmp_path / "mpi.sbatch"
    mpi.write_text(gpu.read_text().replace("srun torchrun --nnodes 4 --nproc_per_node 8 train.py", MPIRUN))
    cpu = tmp_path / "cpu.sbatch"  # no GPU: a pod template patch with metadata only
    cpu.write_text(
        "#!/bin/bash\n#SBATCH -J tas-cpu\n#SBATCH -p gpu\n#SBATCH -N 2\n#SBATCH --switches=1\nsrun python a.py\n"
    )
    return [
        _outputs(cli, tmp_path, "gpu", ["--profile", prof, gpu]),
        _outputs(cli, tmp_path, "mpi", ["--profile", prof, mpi]),
        _outputs(cli, tmp_path, "cpu", ["--profile", prof, cpu]),
    ]


def test_the_yaml_is_valid_offline(cli, tmp_path):
    for y, _ in _cases(cli, tmp_path):
        assert any(_annotations(yaml.safe_load(y.read_text())).values())
        r = cli("validate", y)
        assert r.exit_code == 0, r.stdout + r.stderr
    cpu = yaml.safe_load((tmp_path / "cpu.yaml").read_text())
    assert _templates(cpu) == {"node": {"metadata": {"annotations": {PREFERRED: RACK}}}}


def test_the_sdk_code_submits_the_same_trainjob(cli, tmp_path):
    pairs = _cases(cli, tmp_path)
    results = K.oracle_compare(pairs, jobs=2)
    failed = [(y.name, text) for (y, _), (rc, text) in zip(pairs, results) if rc != 0]
    assert not failed, failed


@pytest.mark.cluster
def test_the_server_keeps_the_annotations(cli, kube, tmp_path):
    ns = new_namespace(kube)
    script = _script(tmp_path, ["--switches=1", "--gpus-per-node=8"])
    r = cli("submit", "--kubeconfig", kube.kubeconfig, "-n", ns, "--profile", _profile(tmp_path), script)
    assert r.exit_code == 0, r.stderr
    stored = get_trainjob(kube, ns, "tas")
    assert stored is not None
    # the structural schema prunes unknown fields: the annotation surviving means the API accepts it there
    assert _annotations(stored) == {"node": {PREFERRED: RACK}}


def test_batch_mode_annotates_the_jobs_of_its_own_runtime(cli, tmp_path):
    # two background job steps: batch mode writes a TrainingRuntime of its own (replicatedJobs launcher, node;
    # docs/batch-mode.md) and the TrainJob patches exactly those jobs (the Trainer webhook refuses others)
    script = tmp_path / "bg.sbatch"
    script.write_text(
        "#!/bin/bash\n#SBATCH -J bg\n#SBATCH -p gpu\n#SBATCH --nodes=2\n#SBATCH --switches=1\n"
        "for s in 1 2; do\n  srun --nodes=1 --ntasks=1 --relative=$((s - 1)) python m.py --seed $s &\ndone\nwait\n"
    )
    r = cli("convert", "--profile", _profile(tmp_path), script)
    assert r.exit_code == 0, r.stderr
    runtime, trainjob = [d for d in yaml.safe_load_all(r.stdout) if d]
    jobs = {j["name"] for j in runtime["spec"]["template"]["spec"]["replicatedJobs"]}
    assert jobs == {"launcher", "node"}
    assert _annotations(trainjob) == {j: {PREFERRED: RACK} for j in jobs}
