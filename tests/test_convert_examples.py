"""The shipped examples (one per launcher family; demo.sh converts torchrun_multinode.sbatch)."""
from __future__ import annotations

from pathlib import Path

import pytest

import kf_helpers as K

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FAMILY = {
    "torchrun_multinode.sbatch": "torchrun", "srun_python_per_gpu.sbatch": "srun-tasks",
    "accelerate_multinode.sbatch": "accelerate", "deepspeed_multinode.sbatch": "deepspeed",
    "mpi_openmpi.sbatch": "mpi", "jax_multinode.sbatch": "jax", "python_single_gpu.sbatch": "python",
    "container_pyxis.sbatch": "torchrun", "container_apptainer.sbatch": "python",
    "script_fallback.sbatch": "script", "array_sweep.sbatch": "python",
}


def test_every_example_is_listed():
    assert {p.name for p in EXAMPLES.glob("*.sbatch")} == set(FAMILY)


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_example_converts_cleanly(name, cli):
    r = cli("convert", str(EXAMPLES / name))
    assert r.exit_code == 0, r.stderr
    from translator.pipeline import convert
    plans = convert(str(EXAMPLES / name)).plans
    assert plans[0].launcher == FAMILY[name]


def test_examples_are_valid_trainjobs(tmp_path):
    from translator.pipeline import ConvertSettings, convert

    paths = []
    for name in sorted(FAMILY):
        plans = convert(str(EXAMPLES / name), settings=ConvertSettings(array_mode="expand")).plans
        paths.append(K.write_outputs(tmp_path, name.replace(".", "_"), plans)[0])
    bad = [r for r in K.oracle_validate(paths) if not r.get("valid")]
    assert not bad, bad
