#!/usr/bin/env python3
"""Benchmark `slurm2kf simulate` (not a timed test).

    .venv/bin/python benchmarks/bench_simulate.py [--verbose] [PATH ...]   # verdicts over examples + fixtures
    .venv/bin/python benchmarks/bench_simulate.py --scale                  # the two 64-node x 8-rank jobs
    .venv/bin/python benchmarks/bench_simulate.py --realistic 24           # migrate --simulate, N generated

Default: for each script, the verdict, whether the conversion already flags a difference
(translator/simulate/review.py) and the wall time; the totals per verdict (target: 0 silently different),
the share of equivalent among scripts sbatch accepts, and the time per script.

--scale: a 64-node x 8-rank srun job and the same with torchrun; wall and CPU time of each simulation (target
<= 5 s) and whether every rank (0-511, world size 512) is there on both sides.

--realistic N: N scripts from benchmarks/realistic_scripts.py (real-sized, seeded) through `slurm2kf migrate
--simulate` in a child process; its wall and CPU time, and both extrapolated to 300 scripts (target <= 120 s
on 2 cores). On a shared machine the wall time says more about the other users than about slurm2kf: the CPU
time divided by the cores is what an idle machine of that size would take (printed as such).
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SCALE_HEAD = """\
    #!/bin/bash
    #SBATCH --job-name={name}
    #SBATCH --nodes=64
    #SBATCH --ntasks-per-node={tpn}
    #SBATCH --gpus-per-node=8
    #SBATCH --cpus-per-task=12
    #SBATCH --time=12:00:00
    export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
    export MASTER_PORT=29500
    export NCCL_DEBUG=WARN
"""
SCALE_JOBS = {
    "gpt-64n-srun": (8, "srun python train.py --config configs/gpt.yaml\n"),
    "gpt-64n-torchrun": (
        1,
        "srun torchrun --nnodes=64 --nproc-per-node=8 --rdzv-backend=c10d \\\n"
        '    --rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT" train.py --config configs/gpt.yaml\n',
    ),
}


def _cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def scale() -> int:
    from translator.simulate import simulate_script
    from translator.simulate.sandbox import namespaces_available

    namespaces_available()
    tmp = Path(tempfile.mkdtemp(prefix="bench-sim-"))
    for name, (tpn, launch) in SCALE_JOBS.items():
        p = tmp / f"{name}.sbatch"
        p.write_text(textwrap.dedent(SCALE_HEAD.format(name=name, tpn=tpn)) + launch)
        t0, c0 = time.perf_counter(), _cpu()
        v = simulate_script(str(p), timeout=60)
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        full = all(
            sorted(x.rank for x in s.processes) == list(range(512)) and {x.world_size for x in s.processes} == {512}
            for s in (v.slurm, v.kubeflow)
        )
        print(
            f"{name:18s} {v.verdict:12s} wall {wall:5.1f} s  cpu {cpu:5.1f} s  "
            f"ranks slurm {len(v.slurm.processes)} kubeflow {len(v.kubeflow.processes)}  every rank: {full}"
        )
    print(f"(load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return 0


def realistic(n: int) -> int:
    from realistic_scripts import script

    src = Path(tempfile.mkdtemp(prefix="bench-sim-src-"))
    out = Path(tempfile.mkdtemp(prefix="bench-sim-out-")) / "out"
    for i in range(n):
        (src / f"job{i:04d}.sbatch").write_text(script(i))
    cmd = [sys.executable, "-m", "translator", "migrate", str(src), "-o", str(out), "--simulate"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0, c0 = time.perf_counter(), _cpu()
    subprocess.run(cmd, env=env, capture_output=True, check=False)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    cores = os.cpu_count() or 1
    verdicts = _verdicts(out)
    print(f"{n} scripts: wall {wall:.1f} s, cpu {cpu:.1f} s ({cpu / n:.2f} s per script)")
    print(f"verdicts: {dict(verdicts)}")
    print(
        f"300 scripts, extrapolated: wall {wall * 300 / n:.0f} s at today's load "
        f"(load average {os.getloadavg()[0]:.1f}); cpu {cpu * 300 / n:.0f} s = {cpu * 300 / n / cores:.0f} s "
        f"on {cores} idle cores (target 120 s)"
    )
    return 0


def _verdicts(out: Path) -> collections.Counter:
    import json

    c: collections.Counter = collections.Counter()
    for p in out.rglob("*.json"):
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        for s in doc.get("scripts", []) if isinstance(doc, dict) else []:
            sim = s.get("simulation") if isinstance(s, dict) else None
            if isinstance(sim, dict):
                c[sim.get("verdict")] += 1
    return c


def review_all(paths, verbose: bool) -> int:
    from translator.simulate import SimulateError, simulate_script
    from translator.simulate.review import EQUIVALENT, review
    from translator.simulate.sandbox import namespaces_available

    paths = paths or sorted(glob.glob(str(REPO / "examples" / "*" / "job.sbatch"))) + sorted(
        glob.glob(str(REPO / "tests" / "fixtures" / "convert" / "**" / "*.sbatch"), recursive=True)
    )
    namespaces_available()
    simulate_script(paths[0])  # warm-up: imports, namespace probe, stub bytecode
    counts: collections.Counter = collections.Counter()
    accepted = accepted_eq = 0
    times = []
    for p in paths:
        rel = str(Path(p).resolve().relative_to(REPO)) if Path(p).resolve().is_relative_to(REPO) else p
        t0 = time.perf_counter()
        try:
            r = review(p)
        except SimulateError as exc:
            counts["error"] += 1
            print(f"{rel:60s} error        {exc}")
            continue
        dt = time.perf_counter() - t0
        times.append(dt)
        accepted += r.accepted
        accepted_eq += r.accepted and r.kind == EQUIVALENT
        counts[r.kind] += 1
        why = f" {r.verdict.reason.code}" if r.verdict.reason else ""
        print(f"{rel:60s} {r.kind:20s}{why:6s} {dt * 1000:6.0f} ms  {len(r.verdict.slurm.processes):4d} proc")
        if verbose or r.kind == "differs-silently":
            for d in r.verdict.differences:
                print(f"      - {d}")
    print()
    print("  ".join(f"{k}: {n}" for k, n in sorted(counts.items())))
    if accepted:
        print(
            f"equivalent among scripts sbatch accepts: {accepted_eq}/{accepted} ({100 * accepted_eq / accepted:.0f}%)"
        )
    if times:
        print(
            f"time per script: median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms "
            f"({sum(1 for t in times if t > 1.0)} over 1 s)"
        )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--verbose", "-v", action="store_true", help="print each difference")
    ap.add_argument("--scale", action="store_true", help="time the two 64-node x 8-rank jobs")
    ap.add_argument("--realistic", type=int, metavar="N", help="migrate --simulate N generated scripts")
    a = ap.parse_args()
    sys.path.insert(0, str(REPO / "benchmarks"))
    if a.scale:
        return scale()
    if a.realistic:
        return realistic(a.realistic)
    return review_all(a.paths, a.verbose)


if __name__ == "__main__":
    sys.exit(main())
