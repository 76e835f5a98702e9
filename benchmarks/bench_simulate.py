#!/usr/bin/env python3
"""Benchmark `slurm2kf simulate` over the examples and the conversion fixtures (not a timed test).

    .venv/bin/python benchmarks/bench_simulate.py [--verbose] [PATH ...]

For each script: the verdict, whether the conversion already flags it (translator/simulate/review.py),
and the wall time of one in-process conversion + simulation. Prints the totals:
  equivalent / differs-but-flagged / differs-silently   (target: 0 silently different)
and the share of equivalent among scripts sbatch accepts (target >= 80%), plus the time per script
(target <= 1 s each).
"""

from __future__ import annotations

import argparse
import glob
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--verbose", "-v", action="store_true", help="print each difference")
    a = ap.parse_args()
    from translator.simulate import SimulateError, simulate_script
    from translator.simulate.review import EQUIVALENT, review
    from translator.simulate.sandbox import namespaces_available

    paths = a.paths or sorted(glob.glob(str(REPO / "examples" / "*" / "job.sbatch"))) + sorted(
        glob.glob(str(REPO / "tests" / "fixtures" / "convert" / "**" / "*.sbatch"), recursive=True)
    )
    namespaces_available()
    simulate_script(paths[0])  # warm-up: imports, namespace probe, stub bytecode
    counts = {"equivalent": 0, "differs-but-flagged": 0, "differs-silently": 0, "error": 0}
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
        print(f"{rel:60s} {r.kind:20s} {dt * 1000:6.0f} ms  {len(r.verdict.slurm.processes):4d} proc")
        if a.verbose or r.kind == "differs-silently":
            for d in r.verdict.differences:
                print(f"      - {d}")
    print()
    print("  ".join(f"{k}: {n}" for k, n in counts.items()))
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


if __name__ == "__main__":
    sys.exit(main())
