"""What the profile stage reads from a script: environments, container images, path prefixes."""

from __future__ import annotations

from translator.read import read_script
from translator.profile.usage import (
    absolute_prefixes,
    constraint_features,
    environment_items,
    script_texts,
    uses_prefix,
    variable_prefixes,
    assigned_names,
)
from translator.slurm.resolve import resolve


def _script(body: str, header: str = ""):
    s = read_script(("#!/bin/bash\n" + header + body).encode(), "t.sbatch")
    return s, resolve(s, env={}, cli_args=())


def _items(body):
    s, _ = _script(body)
    return [(i.kind, i.name, i.line) for i in environment_items(s)]


def test_module_forms():
    assert _items(
        "module purge\nmodule load gcc/12 cuda/12.1\nml PyTorch/2.1 -foo\nml unload x\n"
        "module swap cuda/11.8 cuda/12.4\nmodule --ignore-cache load nccl\nml load openmpi\n"
    ) == [
        ("module", "gcc/12", 3),
        ("module", "cuda/12.1", 3),
        ("module", "PyTorch/2.1", 4),
        ("module", "cuda/12.4", 6),
        ("module", "nccl", 7),
        ("module", "openmpi", 8),
    ]


def test_conda_and_venv_forms():
    assert _items(
        "conda activate llm\nsource activate old-env\nmamba activate -n named\n"
        "source /work/venvs/torch/bin/activate\n. .venv/bin/activate\n"
    ) == [
        ("conda", "llm", 2),
        ("conda", "old-env", 3),
        ("conda", "named", 4),
        ("venv", "/work/venvs/torch", 5),
        ("venv", ".venv", 6),
    ]


def test_container_forms():
    assert _items(
        "srun apptainer exec --nv -B /data:/data /c/pt.sif python x.py\n"
        "singularity run docker://nvcr.io/nvidia/pytorch:24.01-py3\n"
        "srun --container-image=/enroot/pt+24.05.sqsh python y.py\n"
        "srun --container-image=nvcr.io#nvidia/pytorch:24.05-py3 python z.py\n"
    ) == [("container", "/c/pt.sif", 2), ("container", "/enroot/pt+24.05.sqsh", 4)]


def test_path_prefixes_and_variables():
    s, job = _script(
        "export OUT=$WORK/out\npython /gpfs/proj/train.py --data=$SCRATCH/d --log ~/log "
        "--x /usr/bin/env -c ${DATA_ROOT}/y\n",
        header="#SBATCH --chdir=/lustre/me\n#SBATCH -o /home/me/%j.out\n",
    )
    texts = script_texts(s, job)
    assert [p for p, _ in absolute_prefixes(texts)] == ["/gpfs", "/usr", "/lustre", "/home"]
    assert {p for p, _ in variable_prefixes(texts, assigned_names(s))} == {"$WORK", "$SCRATCH", "$HOME", "$DATA_ROOT"}
    assert uses_prefix(texts, "/lustre").line == 2  # the --chdir directive line
    assert uses_prefix(texts, "/home").line == 3
    assert uses_prefix(texts, "$HOME") is not None  # `~/log`
    assert uses_prefix(texts, "/gpf") is None  # a prefix ends at a path boundary
    assert uses_prefix(texts, "$SCRATCH").line == 5


def test_assigned_variables_are_not_file_systems():
    s, job = _script("DATA=/x\npython t.py --d $DATA/y --s $SLURM_SUBMIT_DIR/z\n")
    assert variable_prefixes(script_texts(s, job), assigned_names(s)) == []


def test_constraint_features():
    assert constraint_features("a100&ib") == (("a100", "ib"), True)
    assert constraint_features("[a100|h100]") == (("a100", "h100"), False)
    assert constraint_features("h100*2") == (("h100",), False)
    assert constraint_features(None) == ((), True)
