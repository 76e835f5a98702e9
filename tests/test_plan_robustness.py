"""build_plans never raises and always yields a usable plan, whatever the launch lines look like."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings, strategies as st

from translator.pipeline import ConvertSettings, convert
from translator.plan.kube import expand

WORDS = [
    "srun",
    "torchrun",
    "python",
    "python3",
    "-m",
    "torch.distributed.run",
    "mpirun",
    "-np",
    "4",
    "deepspeed",
    "accelerate",
    "launch",
    "apptainer",
    "exec",
    "--nv",
    "img.sif",
    "docker://a/b:1",
    "--container-image=nvcr.io#n/p:1",
    "bash",
    "-c",
    "'torchrun t.py'",
    '"$CMD"',
    "$CMD",
    "train.py",
    "--nproc_per_node",
    "--nproc_per_node=$SLURM_GPUS_ON_NODE",
    "--nnodes",
    "$SLURM_NNODES",
    "--node_rank=$SLURM_NODEID",
    "--mpi=pmix",
    "-n",
    "8",
    "-N",
    "2",
    "env",
    "A=1",
    "time",
    "exec",
    "'it''s'",
    '"$(hostname)"',
    "$((1+2))",
    "&",
    "|",
    ";",
    "&&",
    ">",
    "out.log",
    "\\",
    "<<EOF",
    "#",
    "--",
]
HEADERS = [
    "#SBATCH -N 2",
    "#SBATCH --ntasks-per-node=4",
    "#SBATCH --gres=gpu:4",
    "#SBATCH --array=0-3",
    "#SBATCH --mem=0",
    "#SBATCH -c 8",
    "#SBATCH --gpus=3",
    "#SBATCH hetjob",
    "#SBATCH -J Weird Name!",
]
ASSIGN = [
    'CMD="torchrun --nproc_per_node 8 t.py"',
    "export A=1",
    "X=$(hostname)",
    "export PET_NNODES=3",
    "ARGS='--lr 1'",
    "module load x",
    "conda activate y",
    "pip install torch -r r.txt",
]

line = st.lists(st.sampled_from(WORDS), min_size=1, max_size=9).map(" ".join)
body = st.lists(
    st.one_of(line, st.sampled_from(ASSIGN), st.just("for i in 1 2; do"), st.just("done"), st.just("EOF")),
    min_size=0,
    max_size=8,
)
header = st.lists(st.sampled_from(HEADERS), max_size=4, unique=True)
RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(header, body, st.sampled_from(["finding", "expand"]))
def test_any_launch_lines(head, lines, mode):
    text = "#!/bin/bash\n" + "\n".join(head + lines) + "\n"
    conv = convert("job.sbatch", data=text.encode(), settings=ConvertSettings(array_mode=mode))
    assert conv.plans
    for p in conv.plans:
        assert p.image and RFC1035.match(p.name) and len(p.name) <= 63
        assert p.num_nodes >= 1
        assert all(isinstance(a, str) for a in p.command + p.args)
        assert p.command or p.args or "L324" in {f.code for f in p.findings}  # `apptainer run IMG`: entrypoint
        assert not any(e.name.startswith(("PET_", "OMPI_MCA_")) for e in p.env)
        for f in p.findings:
            assert re.match(r"^[LP]\d{3}$", f.code) and f.severity in ("error", "warning", "info")
        for a in p.args:
            expand(a)
