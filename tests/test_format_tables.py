"""The format tables are the only place the commands learn about formats: an output format is one
module plus one `translator.emit.WRITERS` entry, a report format one module plus one
`translator.report.REPORT_WRITERS` entry (docs/architecture.md, "Adding an output format" / "Adding a
report format"). These tests follow those walkthroughs with throw-away formats, registered for the
test only, and check that `convert`, `migrate` and `report` use them with no other change."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from translator import emit, report as report_pkg
from translator.cli import convert_cmd, migrate_cmd, report_cmd
from translator.migrate import files as F
from translator.migrate.run import MigrateOptions, migrate

# Two sbatch scripts. sbatch takes `--job-name` and `--nodes` from the #SBATCH lines; slurm2kf maps
# the job name to the TrainJob name (unchanged when it is already an RFC 1035 label) and `--nodes`
# to numNodes (docs/convert.md).
TRAIN = "#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --nodes=2\nsrun python train.py\n"
EVAL = "#!/bin/bash\n#SBATCH --job-name=evaluate\nsrun python eval.py\n"  # no --nodes: 1 node


def _names_render(plans, findings_comment=False):
    """A tiny output format: one `NAME nodes=N` line per TrainJob (and `# findings` if asked)."""
    lines = [f"{p.name} nodes={p.num_nodes}" for p in plans]
    if findings_comment:
        lines.insert(0, "# findings")
    return "\n".join(lines) + "\n"


def _count_write(report, out):
    """A tiny report format: the number of scripts and each script's path and outcome."""
    out.write(f"scripts: {report.summary.scripts}\n")
    for sr in report.light():
        out.write(f"{sr.path}: {sr.outcome}\n")


@pytest.fixture
def names_format():
    """Register the `names` output format (module + table entry), and remove both afterwards."""
    mod = types.ModuleType("slurm2kf_test_names_writer")
    mod.render = _names_render
    sys.modules[mod.__name__] = mod
    emit.WRITERS["names"] = emit.Writer(
        "names", mod.__name__, "TrainJob names", "text/plain", suffix=".trainjob.names", options=("findings_comment",)
    )
    try:
        yield
    finally:
        del emit.WRITERS["names"]
        del sys.modules[mod.__name__]


@pytest.fixture
def count_format():
    """Register the `count` report format (module + table entry), and remove both afterwards."""
    mod = types.ModuleType("slurm2kf_test_count_report")
    mod.write = _count_write
    sys.modules[mod.__name__] = mod
    report_pkg.REPORT_WRITERS["count"] = report_pkg.ReportWriter("count", mod.__name__, "text/plain", ("count",))
    try:
        yield
    finally:
        del report_pkg.REPORT_WRITERS["count"]
        del sys.modules[mod.__name__]


def _src(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "team").mkdir(parents=True)
    (src / "train.sbatch").write_text(TRAIN)
    (src / "team" / "eval.sbatch").write_text(EVAL)
    return src


def test_convert_offers_and_uses_a_registered_output_format(tmp_path, names_format):
    script = tmp_path / "train.sbatch"
    script.write_text(TRAIN)
    runner = CliRunner()
    res = runner.invoke(convert_cmd.command, [str(script), "--to", "names"])
    assert res.exit_code == 0, res.output
    assert res.stdout == "train nodes=2\n"
    # --findings-comment goes to the writers that list it in `options`
    res = runner.invoke(convert_cmd.command, [str(script), "--to", "names", "--findings-comment"])
    assert res.stdout == "# findings\ntrain nodes=2\n"
    # -o writes the same text
    res = runner.invoke(convert_cmd.command, [str(script), "--to", "names", "-o", str(tmp_path / "o.txt")])
    assert res.exit_code == 0 and (tmp_path / "o.txt").read_text() == "train nodes=2\n"
    assert "names" in runner.invoke(convert_cmd.command, ["--help"]).output


def test_an_unregistered_format_is_refused(tmp_path, names_format):
    script = tmp_path / "train.sbatch"
    script.write_text(TRAIN)
    saved = emit.WRITERS.pop("names")
    try:
        res = CliRunner().invoke(convert_cmd.command, [str(script), "--to", "names"])
        assert res.exit_code == 2 and "names" in res.output  # click's usage error
        with pytest.raises(ValueError, match="unknown output format 'names'"):
            emit.render([], "names")
    finally:
        emit.WRITERS["names"] = saved


def test_migrate_writes_prunes_and_reports_a_registered_output_format(tmp_path, names_format):
    src, out = _src(tmp_path), tmp_path / "out"
    res = migrate(MigrateOptions(src=str(src), out=str(out), jobs=1, progress=False, echo=lambda s: None))
    assert res.exit_code == 0
    # migrate renders every format with a suffix, with the findings comment (as for the YAML)
    assert (out / "train.trainjob.names").read_text() == "# findings\ntrain nodes=2\n"
    assert (out / "team" / "eval.trainjob.names").read_text() == "# findings\nevaluate nodes=1\n"
    assert (out / "train.trainjob.yaml").is_file() and (out / "train.trainjob.py").is_file()
    manifest = json.loads((out / F.MANIFEST_NAME).read_text())
    assert manifest["scripts"]["train.sbatch"] == ["train.trainjob.yaml", "train.trainjob.py", "train.trainjob.names"]
    assert "team/eval.trainjob.names" in manifest["outputs"]
    # not Kubernetes objects (kubernetes=False): the kustomization lists only the TrainJob YAML
    assert yaml.safe_load((out / "kustomization.yaml").read_text())["resources"] == ["train.trainjob.yaml", "team"]
    # the reports name every output of the script
    rep = json.loads((out / "slurm2kf-report.json").read_text())
    outputs = {s["path"]: s["outputs"] for s in rep["scripts"]}
    assert outputs["train.sbatch"] == ["train.trainjob.yaml", "train.trainjob.py", "train.trainjob.names"]
    # a re-run changes nothing; once the script is gone its output of the new format is removed too
    again = migrate(MigrateOptions(src=str(src), out=str(out), jobs=1, progress=False, echo=lambda s: None))
    assert again.written == [] and again.removed == []
    (src / "team" / "eval.sbatch").unlink()
    gone = migrate(MigrateOptions(src=str(src), out=str(out), jobs=1, progress=False, echo=lambda s: None))
    assert sorted(gone.removed) == [
        "team/eval.trainjob.names",
        "team/eval.trainjob.py",
        "team/eval.trainjob.yaml",
        "team/kustomization.yaml",
    ]
    assert not (out / "team" / "eval.trainjob.names").exists()


def test_a_kubernetes_format_goes_into_the_kustomization(tmp_path, names_format):
    emit.WRITERS["names"] = emit.WRITERS["names"]._replace(kubernetes=True)
    src, out = _src(tmp_path), tmp_path / "out"
    migrate(MigrateOptions(src=str(src), out=str(out), jobs=1, progress=False, echo=lambda s: None))
    assert yaml.safe_load((out / "team" / "kustomization.yaml").read_text())["resources"] == [
        "eval.trainjob.names",
        "eval.trainjob.yaml",
    ]


def test_a_folder_named_like_a_new_output_is_renamed_in_out(tmp_path, names_format):
    # a.sbatch's output of the new format is `a.trainjob.names`; a source folder of that name next to it
    # gets another name in OUT, as it would for `a.trainjob.yaml` (discovery reserves every suffix)
    src, out = tmp_path / "src", tmp_path / "out"
    (src / "a.trainjob.names").mkdir(parents=True)
    (src / "a.sbatch").write_text(TRAIN)
    (src / "a.trainjob.names" / "b.sbatch").write_text(EVAL)
    res = migrate(MigrateOptions(src=str(src), out=str(out), jobs=1, progress=False, echo=lambda s: None))
    assert res.exit_code == 0
    assert (out / "a.trainjob.names").read_text() == "# findings\ntrain nodes=2\n"
    moved = json.loads((out / F.MANIFEST_NAME).read_text())["scripts"]["a.trainjob.names/b.sbatch"]
    folder = moved[0].split("/")[0]
    assert folder.startswith("a.trainjob.names~") and (out / folder / "b.trainjob.names").is_file()


def test_report_and_migrate_use_a_registered_report_format(tmp_path, count_format):
    src, out = _src(tmp_path), tmp_path / "out"
    # `report --format count` and `report -o FILE.count` (the extension chooses the format)
    runner = CliRunner()
    res = runner.invoke(report_cmd.command, [str(src), "--format", "count", "-j", "1"])
    assert res.exit_code == 0, res.output
    assert res.stdout == "scripts: 2\nteam/eval.sbatch: clean\ntrain.sbatch: clean\n"
    res = runner.invoke(report_cmd.command, [str(src), "-o", str(tmp_path / "r.count"), "-j", "1"])
    assert res.exit_code == 0 and res.stdout == ""
    assert (tmp_path / "r.count").read_text() == "scripts: 2\nteam/eval.sbatch: clean\ntrain.sbatch: clean\n"
    # migrate writes one report per format, and the summary line names it
    res = runner.invoke(migrate_cmd.command, [str(src), "-o", str(out), "-j", "1"])
    assert res.exit_code == 0, res.output
    assert (out / "slurm2kf-report.count").read_text() == "scripts: 2\nteam/eval.sbatch: clean\ntrain.sbatch: clean\n"
    assert "(also .md, .json, .count)" in res.stderr
    assert "slurm2kf-report.count" in json.loads((out / F.MANIFEST_NAME).read_text())["outputs"]
    # `report OUT` reads the saved JSON report back and writes it in the new format too
    res = runner.invoke(report_cmd.command, [str(out), "--format", "count"])
    assert res.stdout == "scripts: 2\nteam/eval.sbatch: clean\ntrain.sbatch: clean\n"


def test_the_built_in_tables():
    # what the commands offer is what the tables hold, in table order
    assert list(emit.WRITERS) == ["yaml", "python", "json"]
    assert [w.suffix for w in emit.migrate_writers()] == [".trainjob.yaml", ".trainjob.py"]
    assert list(report_pkg.REPORT_WRITERS) == ["md", "html", "json"]
    assert F.report_names() == ("slurm2kf-report.md", "slurm2kf-report.html", "slurm2kf-report.json")
    assert report_pkg.for_extension("HTM").name == "html" and report_pkg.for_extension("txt") is None
    for w in emit.WRITERS.values():
        assert callable(w.load())
    for w in report_pkg.REPORT_WRITERS.values():
        assert callable(w.load())
