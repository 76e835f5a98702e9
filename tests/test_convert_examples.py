"""The shipped examples, `examples/<case>/job.sbatch` (one per launcher family; demo.sh converts torchrun_multinode)."""

from __future__ import annotations

from pathlib import Path

import pytest

import kf_helpers as K

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FAMILY = {
    "torchrun_multinode": "torchrun",
    "srun_python_per_gpu": "srun-tasks",
    "accelerate_multinode": "accelerate",
    "deepspeed_multinode": "deepspeed",
    "composer_multinode": "composer",
    "mpi_openmpi": "mpi",
    "jax_multinode": "jax",
    "python_single_gpu": "python",
    "container_pyxis": "torchrun",
    "container_apptainer": "python",
    "batch_ray_cluster": "script",
    "array_sweep": "python",
}


def test_every_example_is_listed():
    assert {p.parent.name for p in EXAMPLES.glob("*/job.sbatch")} == set(FAMILY)


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_example_converts_cleanly(name, cli):
    r = cli("convert", str(EXAMPLES / name / "job.sbatch"))
    assert r.exit_code == 0, r.stderr
    from translator.pipeline import convert

    plans = convert(str(EXAMPLES / name / "job.sbatch")).plans
    assert plans[0].launcher == FAMILY[name]


def test_examples_are_valid_trainjobs(tmp_path):
    from translator.pipeline import ConvertSettings, convert

    paths = []
    for name in sorted(FAMILY):
        plans = convert(str(EXAMPLES / name / "job.sbatch"), settings=ConvertSettings(array_mode="expand")).plans
        paths.append(K.write_outputs(tmp_path, name, plans)[0])
    bad = [r for r in K.oracle_validate(paths) if not r.get("valid")]
    assert not bad, bad
