#!/usr/bin/env python3
"""Benchmark `slurm2kf submit`: 100 converted scripts in ONE command against a real kube-apiserver.

    .venv/bin/python benchmarks/bench_submit.py [--scripts 100] [--runs 3]

Needs the kube-apiserver that ./test.sh starts (shared/kube-apiserver; kubeconfig from
$SLURM2KF_KUBECONFIG, else $KUBE_ORACLE_STATE/kubeconfig, default /tmp/slurm2kf-kube-state).

Prints, for each run, the wall time of one `slurm2kf submit --kubeconfig KC -n NS s1.sbatch ...
s100.sbatch` process (start-up, 100 conversions, 100 creates over one client), checks that the
namespace then holds exactly 100 TrainJobs, and does the same with `--dry-run`. Target: <= 5 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

JOB = """\
#!/bin/bash
#SBATCH --job-name={name}
#SBATCH --nodes={nodes}
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=64
#SBATCH --mem=512G
#SBATCH --time=1-00:00:00

module load cuda/12.4
export NCCL_DEBUG=WARN
export OMP_NUM_THREADS=8

head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
srun torchrun --nnodes "$SLURM_NNODES" --nproc_per_node 8 \\
  --rdzv_backend c10d --rdzv_endpoint "$head_node:29500" \\
  train.py --config configs/run{i}.yaml --seed {i}
"""


def kubeconfig() -> str:
    return os.environ.get("SLURM2KF_KUBECONFIG") or os.path.join(
        os.environ.get("KUBE_ORACLE_STATE") or "/tmp/slurm2kf-kube-state", "kubeconfig"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scripts", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    from translator.cluster import ClusterError
    from translator.cluster.client import HttpError, connect

    kc = kubeconfig()
    try:
        cluster = connect(kc)
        cluster.request("GET", "/readyz")
    except (ClusterError, HttpError) as exc:
        print(
            f"bench_submit: no kube-apiserver ({exc}); run ./test.sh or "
            "KUBE_ORACLE_STATE=/tmp/slurm2kf-kube-state bash ../shared/kube-apiserver/setup.sh",
            file=sys.stderr,
        )
        return 2
    exe = str(Path(sys.executable).with_name("slurm2kf"))
    with tempfile.TemporaryDirectory() as d:
        scripts = []
        for i in range(args.scripts):
            p = Path(d) / f"job{i:03d}.sbatch"
            p.write_text(JOB.format(name=f"bench-{i:03d}", nodes=1 + i % 4, i=i))
            scripts.append(str(p))
        walls = {"submit": [], "submit --dry-run": []}
        for run in range(args.runs):
            for mode, extra in (("submit", []), ("submit --dry-run", ["--dry-run"])):
                ns = f"bench-{uuid.uuid4().hex[:8]}"
                cluster.request(
                    "POST",
                    "/api/v1/namespaces",
                    body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                )
                t0 = time.perf_counter()
                proc = subprocess.run(
                    [exe, "submit", "-q", "--kubeconfig", kc, "-n", ns, *extra, *scripts],
                    capture_output=True,
                    text=True,
                )
                wall = time.perf_counter() - t0
                stored = cluster.request("GET", cluster.trainjobs_path(ns)).body["items"]
                want = 0 if extra else args.scripts
                ok = proc.returncode == 0 and len(stored) == want
                print(
                    f"run {run + 1} {mode:17s}: {wall:5.2f} s for {args.scripts} scripts "
                    f"({args.scripts / wall:5.1f}/s), exit {proc.returncode}, stored {len(stored)}"
                    + ("" if ok else "  <-- UNEXPECTED")
                )
                if not ok:
                    print(proc.stderr[-2000:], file=sys.stderr)
                walls[mode].append(wall)
                cluster.request("DELETE", cluster.trainjobs_path(ns))
                cluster.request("DELETE", f"/api/v1/namespaces/{ns}")
    for mode, ws in walls.items():
        print(f"median {mode:17s}: {statistics.median(ws):.2f} s for {args.scripts} scripts (target <= 5 s)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.2f}, {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
