"""The report model built from a Conversion: side-by-side rows, totals, needs, decisions, and the
three writers (Markdown / JSON / HTML text). Plans here are hand-built TrainerPlans so that the
expected numbers are derived by hand from the script, independently of the planner."""

from __future__ import annotations

import dataclasses
import json

from translator.pipeline import Conversion
from translator.plan.model import SourceMap, TrainerPlan, PodPatch
from translator.diagnostics import Diagnostic
from translator.read import read_script
from translator.read.ast import CONDA, LAUNCH, MODULE, Command, Word
from translator.slurm.resolve import resolve
from translator.report import html as html_writer, json_report, markdown
from translator.report.build import script_report
from translator.report.model import Report

HOSTILE = "<script>alert(1)</script>"

SCRIPT = f"""#!/bin/bash
#SBATCH --job-name={HOSTILE}
#SBATCH --nodes=2
#SBATCH --gres=gpu:4
#SBATCH --time=02:00:00
#SBATCH --mail-type=END
# SBATCH --partition=debug
module load cuda/12.1 nccl
conda activate /scratch/proj/envs/train
srun torchrun --nproc-per-node 4 /scratch/proj/train.py --out /gpfs/team/runs
"""


def _cmd(line: int, text: str, kind: str) -> Command:
    words = tuple(Word(w, w, True) for w in text.split())
    return Command(line=line, end_line=line, text=text, words=words, kind=kind)


def make_conversion(
    path: str = "jobs/train.sbatch", text: str = SCRIPT, *, extra_findings=(), mount: str = "", name: str = "alert"
) -> Conversion:
    """A Conversion with the real reader and resolver and a hand-written plan."""
    script = read_script(text.encode(), path)
    lines = text.splitlines()
    body = []
    for n, t in enumerate(lines, 1):
        if t.startswith("module "):
            body.append(_cmd(n, t, MODULE))
        elif t.startswith("conda "):
            body.append(_cmd(n, t, CONDA))
        elif t.startswith("srun "):
            body.append(_cmd(n, t, LAUNCH))
    script = dataclasses.replace(script, body=tuple(body))
    job = resolve(script)
    patches = ()
    if mount:
        patches = (
            PodPatch(
                volumes=({"name": "v", "hostPath": {"path": mount}},),
                volume_mounts=({"name": "v", "mountPath": mount},),
            ),
        )
    plan = TrainerPlan(
        name=name,
        source_path=path,
        job_name=job.fields.job_name,
        launcher="torchrun",
        runtime="torch-distributed",
        command=("torchrun",),
        args=("--nproc-per-node", "4", "train.py"),
        num_nodes=2,
        resources_per_node=(("nvidia.com/gpu", "4"),),
        active_deadline_seconds=7200,
        patches=patches,
        findings=(
            Diagnostic("warning", "P450", "mail notifications are dropped", 6, "use Kubernetes events"),
            Diagnostic("warning", "P460", "module cuda/12.1 must be in the image", 8, None),
        )
        + tuple(extra_findings),
        source_map=(
            SourceMap("metadata.name", (2,), "approximated"),
            SourceMap("spec.trainer.numNodes", (3,), "mapped"),
            SourceMap("spec.trainer.resourcesPerNode", (4,), "mapped"),
            SourceMap("spec.activeDeadlineSeconds", (5,), "mapped"),
            SourceMap("spec.trainer.command", (10,), "mapped"),
            SourceMap("spec.trainer.args", (10,), "mapped"),
        ),
    )
    return Conversion(path=path, script=script, job=job, plans=(plan,))


def test_rows_mark_each_line_with_its_status_and_explanation():
    sr = script_report(make_conversion(), "jobs/train.sbatch", "kind: TrainJob\n")
    rows = {r.line: r for r in sr.rows}
    assert rows[2].status == "approximated" and rows[2].fields[0].field == "metadata.name"
    assert rows[3].status == "mapped" and rows[4].status == "mapped" and rows[5].status == "mapped"
    # --mail-type: a directive with no Kubeflow field is dropped, with the plan finding as the reason
    assert rows[6].status == "dropped" and rows[6].notes[0].code == "P450"
    # `# SBATCH` is a comment for sbatch: ignored-by-Slurm with the reader's explanation
    assert rows[7].status == "ignored" and rows[7].kind == "ignored"
    assert any(n.code == "R121" and "blank after" in n.message for n in rows[7].notes)
    assert rows[10].status == "mapped" and {f.field for f in rows[10].fields} == {
        "spec.trainer.command",
        "spec.trainer.args",
    }
    assert rows[8].notes[0].code == "P460"


def test_totals_needs_and_outcome_derived_from_the_script():
    sr = script_report(make_conversion(), "jobs/train.sbatch")
    # 2 nodes x 4 GPUs for 2 hours: 8 GPUs, 4 node-hours, 16 GPU-hours
    assert (sr.nodes, sr.gpus, sr.time_limit_seconds) == (2, 8, 7200)
    assert (sr.node_hours, sr.gpu_hours) == (4.0, 16.0)
    assert sr.outcome == "warnings"
    assert sr.modules == ("cuda/12.1", "nccl")
    assert sr.environments == ("conda:/scratch/proj/envs/train",)
    # top-level prefixes, as a site profile's `filesystems` maps them
    assert sr.paths == ("/gpfs", "/scratch")
    assert any("cuda/12.1" in d and "image" in d for d in sr.decisions)
    assert "mount or replace these paths (volumes in a profile): /gpfs, /scratch" in sr.decisions


def test_paths_under_a_profile_mount_no_longer_need_a_home():
    sr = script_report(make_conversion(mount="/scratch"), "a.sbatch")
    assert sr.paths == ("/gpfs",)


def test_error_finding_makes_the_outcome_errors_and_a_blocker():
    conv = make_conversion(extra_findings=(Diagnostic("error", "P499", "local .sif image", 10, "push it"),))
    sr = script_report(conv, "x.sbatch")
    assert sr.outcome == "errors" and sr.blocking_codes == ("P499",)
    rep = Report.from_scripts("t", "src", [sr, script_report(make_conversion(), "y.sbatch")])
    assert rep.summary.outcome("errors") == 1 and rep.summary.outcome("warnings") == 1
    assert [c.code for c in rep.summary.blockers] == ["P499"]
    assert rep.summary.blockers[0].affected == ("x.sbatch",)
    assert rep.summary.gpus == 16 and rep.summary.gpu_hours == 32.0


def test_refused_file_is_an_error_without_trainjob():
    conv = Conversion(
        path="bad.sh", script=None, job=None, file_error=Diagnostic("error", "R102", "cannot read bad.sh")
    )
    sr = script_report(conv, "bad.sh")
    assert sr.outcome == "errors" and sr.names == () and sr.issues[0].code == "R102"


def _report(path=f"dir/{HOSTILE}.sbatch"):
    sr = script_report(make_conversion(path), path, f"metadata:\n  name: x  # {HOSTILE}\n```\n")
    return Report.from_scripts(f"review {HOSTILE}", HOSTILE, [sr])


def test_html_escapes_every_user_text():
    page = html_writer.render(_report())
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # only our own inline script element, and no network references
    assert page.count("<script>") == 1
    assert "http://" not in page and "https://" not in page and "src=" not in page
    assert "default-src 'none'" in page


def test_markdown_escapes_user_text_and_fences_yaml_safely():
    import re

    text = markdown.render(_report())
    # outside code fences (where Markdown shows text literally) no raw markup survives
    outside = re.sub(r"(?ms)^(`{3,})yaml\n.*?^\1$", "", text)
    assert "<script>" not in outside and "&lt;script&gt;" in outside
    # the YAML holds a ``` run: the fence must be longer
    assert "````yaml\n" in text
    assert "P450" in text and "ignored by Slurm" in text
    assert "- [ ] " in text  # reviewer checklist


def test_json_round_trips_and_recomputes_the_summary(tmp_path):
    rep = _report()
    p = tmp_path / "r.json"
    p.write_text(json_report.render(rep), encoding="utf-8")
    data = json.loads(p.read_text())
    assert data["format"] == "slurm2kf-report" and data["summary"]["gpus"] == 8
    back = json_report.load(str(p))
    assert back.summary == rep.summary
    assert list(back.scripts)[0] == list(rep.scripts)[0]


def test_large_repository_html_details_errors_first_and_links_yaml():
    from translator.report.model import Issue, ScriptReport

    scripts = []
    for i in range(1200):
        outcome = "errors" if i % 10 == 0 else ("warnings" if i % 2 else "clean")
        issues = (
            (Issue("error", "P401", "x", 2),)
            if outcome == "errors"
            else ((Issue("warning", "P450", "y", 3),) if outcome == "warnings" else ())
        )
        scripts.append(
            ScriptReport(
                path=f"d/s{i:04d}.sbatch",
                outcome=outcome,
                sbatch_accepts=True,
                names=(f"s{i}",),
                issues=issues,
                yaml="kind: TrainJob\n",
                outputs=(f"d/s{i:04d}.trainjob.yaml", f"d/s{i:04d}.trainjob.py"),
            )
        )
    page = html_writer.render(Report.from_scripts("big", "src", scripts))
    assert page.count('<section class="script"') == html_writer.DETAILED_SECTIONS == 1000
    assert page.count("<tr data-outcome=") == 1200
    # all 120 errors and then warnings (600) and clean ones in path order fill the 1000 sections
    for i in range(0, 1200, 10):
        assert f'id="{html_writer.section_id(f"d/s{i:04d}.sbatch")}"' in page
    assert "200 more scripts are listed above" in page
    # above 300 scripts the YAML is linked (relative to the report, next to the outputs), not inlined
    assert '<a href="d/s0000.trainjob.yaml">' in page and '<pre class="yaml">' not in page
