"""The worked examples `examples/<case>/`: the committed outputs are what the current code produces.

The outputs are computed here by `examples/regenerate.py` (in-process), not compared with a copy; when this
fails, run `python examples/regenerate.py`, review the diff of the outputs, and commit it.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

# One case per launcher family named in the project's issue (torchrun multinode, srun python per GPU,
# accelerate, deepspeed, Open MPI, JAX, plain python on one GPU, pyxis and Apptainer containers, batch
# mode (a Ray cluster), an array sweep).
CASES = [
    "accelerate_multinode",
    "array_sweep",
    "batch_ray_cluster",
    "composer_multinode",
    "container_apptainer",
    "container_pyxis",
    "deepspeed_multinode",
    "jax_multinode",
    "mpi_openmpi",
    "python_single_gpu",
    "srun_python_per_gpu",
    "torchrun_multinode",
]


@pytest.fixture(scope="module")
def regen():
    spec = importlib.util.spec_from_file_location("examples_regenerate", EXAMPLES / "regenerate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_cases_are_the_launcher_families(regen):
    assert [c.name for c in regen.cases()] == CASES
    for case in CASES:
        names = {p.name for p in (EXAMPLES / case).iterdir()}
        assert names == {"job.sbatch", "README.md", "trainjob.yaml", "trainjob.py", "findings.txt", "simulate.txt"}, (
            case
        )


def test_committed_outputs_equal_what_the_code_produces(regen):
    changed, missing = regen.stale()
    assert not missing, f"hand-written files missing: {missing}"
    assert not changed, f"stale (run `python examples/regenerate.py`, review, commit): {changed}"


def test_outputs_name_the_script_relatively(regen):
    # run inside the case folder: every path an output mentions is `job.sbatch`, on any machine
    for case in CASES:
        d = EXAMPLES / case
        texts = {n: (d / n).read_text(encoding="utf-8") for n in regen.GENERATED}
        for name, text in texts.items():
            assert str(REPO) not in text and str(EXAMPLES.resolve()) not in text, (case, name)
        assert "    slurm2kf.io/source: job.sbatch\n" in texts["trainjob.yaml"], case
        assert texts["simulate.txt"].startswith("job.sbatch: "), case
        assert "isolation:" not in texts["simulate.txt"], case
        for line in texts["findings.txt"].splitlines():
            assert line.startswith("job.sbatch:"), (case, line)


def test_case_readmes_are_short(regen):
    for case in CASES:
        n = len((EXAMPLES / case / "README.md").read_text(encoding="utf-8").strip().splitlines())
        assert 5 <= n <= 15, (case, n)


def test_check_names_a_stale_file_and_regenerate_fixes_it(regen, tmp_path, capsys):
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "torchrun_multinode", root / "torchrun_multinode")
    yaml = root / "torchrun_multinode" / "trainjob.yaml"
    yaml.write_text(yaml.read_text().replace("numNodes: 4", "numNodes: 3"))
    (root / "torchrun_multinode" / "simulate.txt").unlink()

    assert regen.main(["--check"], root=root) == 1
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "stale: examples/torchrun_multinode/trainjob.yaml",
        "stale: examples/torchrun_multinode/simulate.txt",
    ]
    assert "numNodes: 3" in yaml.read_text()  # --check writes nothing

    assert regen.main([], root=root) == 0
    assert "numNodes: 4" in yaml.read_text()
    for name in regen.GENERATED:
        assert (root / "torchrun_multinode" / name).read_bytes() == (
            EXAMPLES / "torchrun_multinode" / name
        ).read_bytes()
    capsys.readouterr()
    assert regen.main(["--check"], root=root) == 0
    assert capsys.readouterr().out == ""


def test_a_missing_readme_is_reported(regen, tmp_path, capsys):
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "python_single_gpu", root / "python_single_gpu")
    (root / "python_single_gpu" / "README.md").unlink()
    assert regen.main(["--check"], root=root) == 1
    assert capsys.readouterr().out == "missing (write it by hand): examples/python_single_gpu/README.md\n"


def test_the_index_lists_every_case_with_its_verdict():
    # examples/README.md is written by hand; its simulate column must follow simulate.txt
    rows = {}
    for line in (EXAMPLES / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| [") and "](" in line:
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0][1 : cells[0].index("]")]] = cells[2].split()[0]
    assert sorted(rows) == CASES
    for case, verdict in rows.items():
        first = (EXAMPLES / case / "simulate.txt").read_text(encoding="utf-8").splitlines()[0]
        assert first == f"job.sbatch: {verdict}", (case, first)


def test_codes_a_case_readme_cites_are_in_its_findings():
    # the READMEs are written by hand: a finding code they explain must still be reported for the case
    import re

    for case in CASES:
        readme = (EXAMPLES / case / "README.md").read_text(encoding="utf-8")
        findings = (EXAMPLES / case / "findings.txt").read_text(encoding="utf-8")
        reported = set(re.findall(r" (?:info|warning|error) ([A-Z]\d{3}) ", findings))
        cited = set(re.findall(r"\b([A-Z]\d{3})\b", readme))
        assert cited <= reported, (case, sorted(cited - reported))


def test_outputs_parse_as_what_they_claim_to_be():
    import ast

    import yaml

    for case in CASES:
        d = EXAMPLES / case
        docs = list(yaml.safe_load_all((d / "trainjob.yaml").read_text(encoding="utf-8")))
        # one TrainJob; batch mode writes its TrainingRuntime before it (docs/batch-mode.md)
        kinds = ["TrainingRuntime", "TrainJob"] if case.startswith("batch_") else ["TrainJob"]
        assert [(x["apiVersion"], x["kind"]) for x in docs] == [("trainer.kubeflow.org/v1alpha1", k) for k in kinds], (
            case
        )
        ast.parse((d / "trainjob.py").read_text(encoding="utf-8"), filename=f"{case}/trainjob.py")
