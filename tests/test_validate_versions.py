"""`--trainer-version 2.3|2.4`: rules, findings and reserved names per Kubeflow Trainer release.

Sources of the expected values:
* v2.3.0 tag: pkg/apis/trainer/v1alpha1/trainjob_types.go has no lower bound on `numNodes` or
  `numProcPerNode` (kubeflow/trainer #3805 "TrainJob accepts zero and negative numNodes /
  numProcPerNode"); #3809 added them after the tag (the bundled CRD, from main, has `minimum: 0` and
  the CEL rule `self >= 1`), released with v2.4.
* v2.4.0 release notes: runtime replicatedJob names at most 20 characters (#4394); the TrainJob image is
  set on MPI worker pods too (#4301); PRTE_MCA_* env names reserved (#4029, whose table lists
  PRTE_MCA_prte_default_hostfile, PRTE_MCA_prte_keep_fqdn_hostnames, PRTE_MCA_prte_set_default_slots,
  PRTE_MCA_plm_ssh_args).
"""

from __future__ import annotations

import pytest
import yaml


def _job(trainer: dict, runtime="torch-distributed", name="v-job") -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": name},
            "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer},
        }
    )


def _result(text, version):
    from translator.validate.validator import validate_text

    return [r for r in validate_text(text, trainer_version=version) if not r.skipped][0]


def _codes(result, severity=None):
    return {p.code for p in result.problems if severity is None or p.severity == severity}


@pytest.mark.parametrize(
    "trainer,code_24",
    [({"numProcPerNode": 0}, "V720"), ({"numNodes": -1}, "V711")],
)
def test_counts_unbounded_at_2_3_rejected_at_2_4(trainer, code_24):
    r23, r24 = _result(_job(trainer), "2.3"), _result(_job(trainer), "2.4")
    assert r23.valid and "V750" in _codes(r23, "warning")  # stored by a 2.3 server, fails in the pods
    assert not r24.valid and code_24 in _codes(r24, "error") and "V750" not in _codes(r24)


def test_bundled_crd_under_2_3_drops_exactly_the_two_rules():
    from translator.validate.crd import load_crd
    from translator.validate.versions import crd_for

    crd = load_crd()
    old = crd_for(crd, "2.3")
    trainer = old.versions["v1alpha1"]["properties"]["spec"]["properties"]["trainer"]["properties"]
    assert "minimum" not in trainer["numNodes"] and "x-kubernetes-validations" not in trainer["numProcPerNode"]
    assert trainer["numNodes"]["format"] == "int32"  # still an int32
    newer = crd.versions["v1alpha1"]["properties"]["spec"]["properties"]["trainer"]["properties"]
    assert newer["numNodes"]["minimum"] == 0  # the bundled copy itself is unchanged
    assert crd_for(crd, "2.4") is crd


@pytest.mark.parametrize(
    "name", ["PRTE_MCA_prte_default_hostfile", "PRTE_MCA_prte_set_default_slots", "PRTE_MCA_plm_ssh_args"]
)
def test_prte_names_reserved_on_mpi_from_2_4(name):
    text = _job({"numNodes": 2, "env": [{"name": name, "value": "x"}]}, runtime="deepspeed-distributed")
    assert _result(text, "2.3").valid
    r24 = _result(text, "2.4")
    assert not r24.valid and "V740" in _codes(r24, "error")
    assert any("from Trainer 2.4 on" in p.message for p in r24.problems)
    # torch runtimes do not reserve them
    assert _result(_job({"env": [{"name": name, "value": "x"}]}), "2.4").valid


def _runtime(job_name):
    return yaml.safe_dump(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "site-rt"},
            "spec": {
                "mlPolicy": {"torch": {}},
                "template": {"spec": {"replicatedJobs": [{"name": job_name, "template": {}}, {"name": "node"}]}},
            },
        }
    )


def test_runtime_job_names_over_20_refused_under_2_4():
    long_job = "dataset-preprocessing"  # 21 characters
    assert len(long_job) == 21
    text = _runtime(long_job) + "---\n" + _job({"numNodes": 1}, runtime="site-rt")
    assert "V749" not in _codes(_result(text, "2.3"))
    r24 = _result(text, "2.4")
    assert not r24.valid and "V749" in _codes(r24, "error") and long_job in str(r24.problems)
    ok = _runtime("dataset-preprocessin") + "---\n" + _job({"numNodes": 1}, runtime="site-rt")  # 20
    assert "V749" not in _codes(_result(ok, "2.4"))


def test_validate_cli_option(cli, tmp_path):
    f = tmp_path / "j.yaml"
    f.write_text(_job({"numProcPerNode": 0}))
    r = cli("validate", f)
    assert r.exit_code == 0 and "warning V750" in r.stdout
    r = cli("validate", "--trainer-version", "2.4", f)
    assert r.exit_code == 1 and "error V720" in r.stdout
    assert cli("validate", "--trainer-version", "2.5", f).exit_code == 2


MPI_SCRIPT = "#!/bin/bash\n#SBATCH -J lmp\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\nmpirun -np 8 ./lmp -in in.lj\n"


def test_l306_only_under_2_3(cli, tmp_path):
    s = tmp_path / "mpi.sbatch"
    s.write_text(MPI_SCRIPT)
    r = cli("convert", s)
    assert r.exit_code == 0 and "L306" in r.stderr and "P466" not in r.stderr and "P467" not in r.stderr
    r = cli("convert", "--trainer-version", "2.4", s)
    assert r.exit_code == 0, r.stderr
    assert "L306" not in r.stderr
    assert "warning P466" in r.stderr and "trainer #4301" in r.stderr  # what the image now needs
    assert "info P467" in r.stderr
    py = cli("convert", "--trainer-version", "2.4", "--to", "python", s)
    assert "pip install 'kubeflow==0.5.0'" in py.stdout and "# P467 info" in py.stdout


def _profile(tmp_path, version_line, job):
    p = tmp_path / "slurm2kf.yaml"
    p.write_text(
        "apiVersion: slurm2kf/v1\nkind: SiteProfile\n"
        f"defaults:\n  namespace: ml\n{version_line}"
        "runtimes:\n"
        "  - name: site-mpi\n"
        "    launchers: [mpi]\n"
        f"    replicatedJobs: [{job}, node]\n"
    )
    return p


def test_profile_version_and_long_runtime_job(cli, tmp_path):
    s = tmp_path / "mpi.sbatch"
    s.write_text(MPI_SCRIPT)
    prof = _profile(tmp_path, '  trainerVersion: "2.4"\n', "launcher-with-a-long-name")  # 25 characters
    r = cli("convert", "--profile", prof, s)
    assert r.exit_code == 2
    # the profile's line of the runtime entry (line 7: `  - name: site-mpi`)
    assert f"{prof}:7: error P465 runtimes[0].replicatedJobs: `launcher-with-a-long-name` has 25" in r.stderr
    r = cli("convert", "--profile", prof, "--trainer-version", "2.3", s)  # the option wins
    assert r.exit_code == 0, r.stderr
    assert "L306" in r.stderr
    prof = _profile(tmp_path, '  trainerVersion: "2.4"\n', "launcher")
    r = cli("convert", "--profile", prof, s)
    assert r.exit_code == 0 and "P466" in r.stderr and "L306" not in r.stderr  # 2.4 from the profile
    bad = _profile(tmp_path, '  trainerVersion: "2.5"\n', "launcher")
    r = cli("profile", "check", bad)
    assert r.exit_code == 2 and "trainerVersion" in (r.stdout + r.stderr)


def test_submit_and_migrate_take_the_option(cli, tmp_path):
    for cmd in ("submit", "migrate"):
        r = cli(cmd, "--help")
        assert "--trainer-version [2.3|2.4]" in r.stdout


def test_migrate_reads_each_scripts_profile_version(cli, tmp_path):
    """Without --trainer-version, `migrate` takes each script's own profile's release: 2.4 there drops
    L306 for P466, and a runtime of that profile with a too long job name makes the script an error."""
    import json

    src = tmp_path / "repo"
    (src / "a").mkdir(parents=True)
    (src / "a" / "mpi.sbatch").write_text(MPI_SCRIPT)
    _profile(src / "a", '  trainerVersion: "2.4"\n', "launcher")
    (src / "b").mkdir()
    (src / "b" / "mpi.sbatch").write_text(MPI_SCRIPT)
    _profile(src / "b", '  trainerVersion: "2.4"\n', "launcher-with-a-long-name")
    out = tmp_path / "out"
    r = cli("migrate", src, "-o", out)
    assert r.exit_code == 1, r.stderr  # b's script has an error finding
    report = json.loads((out / "slurm2kf-report.json").read_text())
    by_dir = {}
    for s in report["scripts"]:
        by_dir[s["path"].split("/")[0]] = {f["code"] for f in s["issues"]}
    assert "P466" in by_dir["a"] and "L306" not in by_dir["a"] and "P465" not in by_dir["a"]
    assert "P465" in by_dir["b"]
    r = cli("migrate", src, "-o", tmp_path / "out23", "--trainer-version", "2.3")
    assert r.exit_code == 0, r.stderr  # the option wins over both profiles
