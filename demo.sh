#!/usr/bin/env bash
# Set up on a fresh machine and run slurm2kf on the shipped examples:
#   ./demo.sh
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[sdk]'
S=.venv/bin/slurm2kf
set -x
$S inspect examples/torchrun_multinode/job.sbatch
$S convert examples/torchrun_multinode/job.sbatch
$S convert --to python examples/torchrun_multinode/job.sbatch
$S simulate examples/torchrun_multinode/job.sbatch
