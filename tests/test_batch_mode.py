"""Batch mode (issue 19): the script runs once on the batch pod; each srun is a step that fans out.

The expectations come from Slurm's execution model (sbatch(1): "the batch script is executed on the first
node of the allocation"; srun(1): a job step starts its tasks on the allocation's nodes) and from the
Trainer's MPI plugin (docs/kubeflow-trainer.md: `runLauncherAsNode` makes the launcher one of the
`numNodes` pods; the hostfile lists the node pods first; `trainer.image/command/args` go to the
replicatedJob labelled `trainjob-ancestor-step: trainer`). They are written here by hand, per fixture.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from translator.emit import sdk_python, trainjob_yaml
from translator.pipeline import convert

FIXTURES = Path(__file__).parent / "fixtures" / "convert" / "batch" / "realistic"

# fixture -> the job's node count (its #SBATCH --nodes line), read by hand
MULTI_NODE = {
    "ray_cluster": 3,
    "hostname_rendezvous": 4,
    "several_steps": 2,
    "background_steps": 2,
    "gpus_per_task": 2,
    "dask_cluster": 3,
    "multi_prog": 2,
    "apptainer_steps": 2,
    "shifter_steps": 2,
    "pyxis_steps": 2,
    "enroot_steps": 2,
    "podman_hpc_steps": 2,
}
SINGLE_NODE = {"single_node_sweep": 1}


def _convert(name: str, **kw):
    return convert(str(FIXTURES / f"{name}.sbatch"), **kw)


def _docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _codes(conv) -> set[str]:
    return {f.code for f in conv.findings}


def test_every_fixture_is_listed():
    assert sorted(p.stem for p in FIXTURES.glob("*.sbatch")) == sorted(MULTI_NODE | SINGLE_NODE)


@pytest.mark.parametrize("name", sorted(MULTI_NODE))
def test_multi_node_runs_once_on_the_launcher_of_its_own_runtime(name):
    conv = _convert(name)
    [plan] = conv.plans
    runtime, trainjob = _docs(trainjob_yaml.render([plan]))
    # the TrainingRuntime comes first (kubectl apply creates it before the TrainJob that refers to it)
    assert runtime["kind"] == "TrainingRuntime" and trainjob["kind"] == "TrainJob"
    assert runtime["metadata"]["name"] == f"{trainjob['metadata']['name']}-batch"
    assert trainjob["spec"]["runtimeRef"] == {"name": runtime["metadata"]["name"], "kind": "TrainingRuntime"}
    mpi = runtime["spec"]["mlPolicy"]["mpi"]
    assert mpi["runLauncherAsNode"] is True and mpi["mpiImplementation"] == "OpenMPI"
    jobs = {j["name"]: j for j in runtime["spec"]["template"]["spec"]["replicatedJobs"]}
    assert list(jobs) == ["node", "launcher"]  # dependsOn may only name an earlier replicatedJob
    assert jobs["launcher"]["dependsOn"] == [{"name": "node", "status": "Ready"}]
    launcher_labels = jobs["launcher"]["template"]["metadata"]["labels"]
    assert launcher_labels["trainer.kubeflow.org/trainjob-ancestor-step"] == "trainer"
    # every pod runs the TrainJob's image: Trainer v2.3 gives spec.trainer.image to the launcher only
    image = trainjob["spec"]["trainer"]["image"]
    for job in jobs.values():
        [container] = job["template"]["spec"]["template"]["spec"]["containers"]
        assert container["name"] == "node" and container["image"] == image
    node = jobs["node"]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert node["readinessProbe"]["tcpSocket"]["port"] == 2222 and "sshd" in node["command"][-1]
    # numNodes counts the launcher (runLauncherAsNode): the job's node count
    assert trainjob["spec"]["trainer"]["numNodes"] == MULTI_NODE[name]
    command, args = trainjob["spec"]["trainer"]["command"], trainjob["spec"]["trainer"]["args"]
    assert command == ["bash", "-c"] and args[1] == "slurm_script"
    # the body is in the command once, whole, after the prologue
    text = (FIXTURES / f"{name}.sbatch").read_text()
    tail = "\n".join(text.rstrip("\n").split("\n")[-2:]) + "\n"
    assert args[0].count("# ---- batch script body") == 1 and args[0].endswith(tail)
    codes = _codes(conv)
    assert {"L366", "L367"} <= codes and "L330" not in codes and "L368" not in codes


@pytest.mark.parametrize("name", sorted(SINGLE_NODE))
def test_single_node_keeps_one_pod_and_no_runtime_of_its_own(name):
    conv = _convert(name)
    [plan] = conv.plans
    [trainjob] = _docs(trainjob_yaml.render([plan]))
    assert trainjob["spec"]["runtimeRef"]["name"] == "torch-distributed"
    assert trainjob["spec"]["trainer"]["numNodes"] == 1
    codes = _codes(conv)
    assert "L368" in codes and not codes & {"L330", "L366", "L367"}


# `srun --multi-prog` is not emulated on the Slurm side of simulate (S808): inconclusive, never a verdict
PROVEN = sorted(set(MULTI_NODE) - {"multi_prog"}) + sorted(SINGLE_NODE)


@pytest.mark.parametrize("name", PROVEN)
def test_simulate_proves_each_pattern_equivalent(name):
    # both sides run: Slurm's batch script with srun over an emulated allocation, and the TrainJob's pods
    # (the batch pod's script, its steps through mpirun); training processes on both sides, all the same
    from translator.simulate import simulate_script

    v = simulate_script(str(FIXTURES / f"{name}.sbatch"))
    assert v.verdict == "equivalent", (v.differences, v.reason)
    assert v.slurm.processes and v.kubeflow.processes
    assert sorted(p.node for p in v.slurm.processes) == sorted(p.node for p in v.kubeflow.processes)


def test_multi_prog_is_inconclusive_not_a_verdict():
    from translator.simulate import simulate_script

    v = simulate_script(str(FIXTURES / "multi_prog.sbatch"))
    assert v.verdict == "inconclusive" and v.reason is not None and v.reason.code == "S808"


def test_a_native_family_keeps_its_runtime():
    # one torchrun launch line: the torchrun family, never batch mode
    text = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gpus-per-node=8\nsrun torchrun --nproc_per_node 8 train.py\n"
    conv = convert("native.sbatch", data=text.encode())
    [plan] = conv.plans
    assert plan.runtime == "torch-distributed" and plan.runtime_document is None


def test_srun_multi_prog_is_a_step_not_an_mpi_launch():
    conv = _convert("multi_prog")
    [plan] = conv.plans
    assert plan.launcher == "script" and plan.command == ("bash", "-c")
    assert "srun --multi-prog coupled.conf" in plan.args[0]


def test_array_expansion_gives_each_trainjob_its_runtime():
    text = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --array=0-2\nfor s in a b; do srun python t.py $s; done\n"
    conv = convert("arr.sbatch", data=text.encode(), settings=_settings(array_mode="expand"))
    names = [p.name for p in conv.plans]
    runtimes = [p.runtime for p in conv.plans]
    assert runtimes == [f"{n}-batch" for n in names] and len(set(runtimes)) == 3
    docs = _docs(trainjob_yaml.render(conv.plans))
    assert [d["kind"] for d in docs] == ["TrainingRuntime", "TrainJob"] * 3


def test_the_runtime_follows_the_image_option():
    conv = _convert("several_steps", settings=_settings(image="registry.example/bert:1 "))
    [plan] = conv.plans
    runtime, trainjob = _docs(trainjob_yaml.render([plan]))
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    assert (
        node["template"]["spec"]["template"]["spec"]["containers"][0]["image"] == trainjob["spec"]["trainer"]["image"]
    )


def test_hostile_image_and_names_stay_data_in_both_outputs(tmp_path):
    evil = "x\"; import os; os.system('id') #\n- bad: 'y'"
    text = (
        '#!/bin/bash\n#SBATCH -N 2\n#SBATCH --job-name="$(rm -rf /)\'"\nfor i in 1 2; do srun python t.py "$i"; done\n'
    )
    conv = convert("evil.sbatch", data=text.encode(), settings=_settings(image=evil))
    [plan] = conv.plans
    runtime, trainjob = _docs(trainjob_yaml.render([plan]))
    containers = runtime["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    assert containers["containers"][0]["image"] == evil
    code = sdk_python.render([plan])
    # the runtime is one literal argument that evaluates to the YAML's document: the image is data, not code
    calls = [
        n
        for n in ast.walk(ast.parse(code))
        if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "_ensure_runtime"
    ]
    assert len(calls) == 1 and ast.literal_eval(calls[0].args[0]) == runtime
    assert not any(
        isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "system" for n in ast.walk(ast.parse(code))
    )


def _settings(**kw):
    from translator.pipeline import ConvertSettings

    return ConvertSettings(**kw)


def test_generated_sdk_code_submits_the_same_trainjob(tmp_path):
    from kf_helpers import oracle_compare_with_runtimes

    pairs = []
    for name in ("ray_cluster", "background_steps"):
        [plan] = _convert(name).plans
        y, p = tmp_path / f"{name}.yaml", tmp_path / f"{name}.py"
        y.write_text(trainjob_yaml.render([plan], findings_comment=True), encoding="utf-8")
        p.write_text(sdk_python.render([plan]), encoding="utf-8")
        pairs.append((y, p))
    for rc, out in oracle_compare_with_runtimes(pairs):
        assert rc == 0 and "equivalent: yes" in out, out


@pytest.mark.cluster
def test_the_real_api_server_stores_every_runtime_and_trainjob(kube):
    # created for real (not a dry run), runtime first, then read back: the CRDs' schema and CEL rules accept both
    group = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/" + kube.ns
    for name in sorted(MULTI_NODE):
        [plan] = _convert(name).plans
        runtime, trainjob = _docs(trainjob_yaml.render([plan]))
        kube.cluster.request("POST", f"{group}/trainingruntimes", body=runtime)
        kube.cluster.request("POST", f"{group}/trainjobs", body=trainjob)
        stored = kube.cluster.request("GET", f"{group}/trainingruntimes/{runtime['metadata']['name']}").body
        assert stored["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] is True
        got = kube.cluster.request("GET", f"{group}/trainjobs/{trainjob['metadata']['name']}").body
        assert got["spec"]["runtimeRef"]["kind"] == "TrainingRuntime"


def _runtimes_in(kube, ns: str) -> list[str]:
    got = kube.cluster.request("GET", f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainingruntimes").body
    return sorted(i["metadata"]["name"] for i in got["items"])


@pytest.mark.cluster
def test_submit_creates_the_runtime_before_the_trainjob(cli, kube, tmp_path):
    from kube_cluster import get_trainjob, new_namespace

    ns = new_namespace(kube)
    script = FIXTURES / "ray_cluster.sbatch"  # --job-name=ray-tune-resnet
    dry = cli("submit", "--kubeconfig", kube.kubeconfig, "-n", ns, "--dry-run", script)
    assert dry.exit_code == 0, dry.stderr
    assert (
        _runtimes_in(kube, ns) == [] and get_trainjob(kube, ns, "ray-tune-resnet") is None
    )  # a dry run stores nothing
    r = cli("submit", "--kubeconfig", kube.kubeconfig, "-n", ns, script)
    assert r.exit_code == 0, r.stderr
    assert _runtimes_in(kube, ns) == ["ray-tune-resnet-batch"]
    assert get_trainjob(kube, ns, "ray-tune-resnet")["spec"]["runtimeRef"]["name"] == "ray-tune-resnet-batch"
    # a second submission (a new name) finds the runtime there and keeps it
    again = cli("submit", "--kubeconfig", kube.kubeconfig, "-n", ns, "--generate-name", script)
    assert again.exit_code == 0, again.stderr
    assert _runtimes_in(kube, ns) == ["ray-tune-resnet-batch"]
    # the YAML that convert writes (runtime, then TrainJob) is applied the same way, without a K915 skip
    out = tmp_path / "dask.yaml"
    assert cli("convert", FIXTURES / "dask_cluster.sbatch", "-o", out).exit_code == 0
    applied = cli("submit", "--kubeconfig", kube.kubeconfig, "-n", ns, "--apply", out)
    assert applied.exit_code == 0 and "K915" not in applied.stderr, applied.stderr
    assert _runtimes_in(kube, ns) == ["dask-etl-batch", "ray-tune-resnet-batch"]


@pytest.mark.cluster
def test_migrate_apply_sends_each_runtime_before_its_trainjob(cli, kube, tmp_path):
    from kube_cluster import new_namespace

    ns = new_namespace(kube)
    src = tmp_path / "src"
    src.mkdir()
    for name in ("several_steps", "single_node_sweep"):
        (src / f"{name}.sbatch").write_bytes((FIXTURES / f"{name}.sbatch").read_bytes())
    out = tmp_path / "out"
    r = cli("migrate", src, "-o", out, "--namespace", ns, "--apply", "--kubeconfig", kube.kubeconfig)
    assert r.exit_code == 0, r.stderr
    # the kustomization keeps each file's order (runtime, then TrainJob) for `kubectl apply -k`
    assert "sortOptions:\n  order: fifo\n" in (out / "kustomization.yaml").read_text()
    # one multi-node script (its runtime) and one single-node script (torch-distributed, no runtime of its own)
    assert _runtimes_in(kube, ns) == ["bert-pipeline-batch"]


def test_a_long_job_name_leaves_room_for_the_launcher_pod():
    # JobSet refuses a job whose pod name `<name>-<replicatedJob>-<job idx>-<pod idx>-<5 random>` passes 63
    # characters; batch mode's longest is the launcher's: `<name>-launcher-0-0-xxxxx`, 19 characters added
    name = "a" * 63
    text = f"#!/bin/bash\n#SBATCH -N 3\n#SBATCH --job-name={name}\nfor i in 1 2; do srun python t.py $i; done\n"
    [plan] = convert("long.sbatch", data=text.encode()).plans
    assert len(plan.name) <= 63 - len("-launcher-0-0-xxxxx")
    assert plan.runtime == plan.name + "-batch"


def test_a_path_list_built_from_path_is_not_a_difference(tmp_path):
    # batch mode puts its srun/scontrol programs first on PATH on the batch pod; a variable built from $PATH
    # carries that folder, which no program of the script looks into: not a difference the program could notice
    from translator.simulate import simulate_script

    script = tmp_path / "p.sbatch"
    script.write_text(
        "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\nexport TOOLS=/opt/site/bin:$PATH\n"
        "for s in 1 2; do srun python t.py $s; done\n"
    )
    v = simulate_script(str(script))
    assert v.verdict == "equivalent", v.differences
    tools = {dict(p.env).get("TOOLS") for p in v.kubeflow.processes}
    assert all(t and "/slurm2kf-steps." in t for t in tools)  # the folder is there, and ignored knowingly


def test_an_array_run_name_is_the_same_on_both_sides(tmp_path):
    # `run_${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}`: Slurm's ids differ on every submission, so both
    # sides' are the job id placeholder; the index is the TrainJob's (the first, P438)
    from translator.simulate import simulate_script

    script = tmp_path / "a.sbatch"
    script.write_text(
        "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --array=0-3\n"
        'RUN="run_${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"\nfor s in 1; do srun python t.py --run "$RUN"; done\n'
    )
    v = simulate_script(str(script))
    assert v.verdict == "equivalent", v.differences
    assert {p.argv[-1] for p in v.kubeflow.processes} == {"run_$SLURM_JOB_ID_0"}
