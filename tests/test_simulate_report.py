"""`migrate --simulate` / `report --simulate`: a launch column and a per-script section, S8xx issues, and the
written TrainJobs unchanged by the flag."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

EX = Path(__file__).resolve().parents[1] / "examples"


def test_report_simulate_single_script_json_and_markdown(cli):
    r = cli("report", "--simulate", "--format", "json", str(EX / "torchrun_multinode" / "job.sbatch"))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    (sr,) = doc["scripts"]
    assert sr["simulation"] == {
        "verdict": "equivalent",
        "differences": [],
        "slurm_processes": 32,
        "kubeflow_processes": 32,
        "reason": None,
        "shared_failures": [],
    }
    assert "S801" in [i["code"] for i in sr["issues"]]
    r = cli("report", "--format", "json", str(EX / "torchrun_multinode" / "job.sbatch"))
    assert "simulation" not in json.loads(r.stdout)["scripts"][0]


def test_migrate_simulate_adds_the_section_and_keeps_outputs(cli, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("torchrun_multinode", "container_pyxis"):
        shutil.copy(EX / name / "job.sbatch", src / f"{name}.sbatch")
    plain, sim = tmp_path / "plain", tmp_path / "sim"
    assert cli("migrate", str(src), "-o", str(plain), "-j", "1").exit_code in (0, 1)
    assert cli("migrate", str(src), "-o", str(sim), "-j", "1", "--simulate").exit_code in (0, 1)
    for f in sorted(plain.glob("*.trainjob.*")):
        assert (sim / f.name).read_bytes() == f.read_bytes()
    md = (sim / "slurm2kf-report.md").read_text()
    assert "## Launch simulation" in md
    assert "| <code>container&#95;pyxis.sbatch</code> | differs |" in md
    assert "| <code>torchrun&#95;multinode.sbatch</code> | equivalent | 0 |" in md
    assert "world size on Slurm 8, on Kubeflow 16" in md
    assert "Launch simulation" not in (plain / "slurm2kf-report.md").read_text()
    html = (sim / "slurm2kf-report.html").read_text()
    assert "launch <b>differs</b>" in html
