#!/usr/bin/env python3
"""How the realistic script set converts under batch mode (issue 19), and what `simulate` proves of it.

For each of N real-sized scripts (benchmarks/realistic_scripts.py): single- or multi-node, whether a launcher
family converts it or batch mode runs it, errors, L330 (the retired every-pod body: must be 0), and with
`--simulate K` the verdicts of the first K batch-mode scripts.

    .venv/bin/python benchmarks/batch_census.py [--scripts 1000] [--simulate 40]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from realistic_scripts import script  # noqa: E402

from translator.pipeline import convert  # noqa: E402


def census(n: int) -> tuple[collections.Counter, list[str]]:
    stats: collections.Counter = collections.Counter()
    batch = []
    for i in range(n):
        text = script(i)
        c = convert(f"s{i}.sbatch", data=text.encode())
        if not c.plans:
            stats["no TrainJob"] += 1
            continue
        p = c.plans[0]
        kind = "multi-node" if p.num_nodes > 1 else "single-node"
        codes = {f.code for f in c.findings}
        stats[kind] += 1
        stats[f"{kind}: converted without an error"] += not any(f.severity == "error" for f in c.findings)
        stats[f"{kind}: batch mode"] += p.launcher == "script"
        stats[f"{kind}: L330 (body on every pod)"] += "L330" in codes
        stats["sbatch would refuse (P401)"] += "P401" in codes
        if p.launcher == "script":
            batch.append(text)
    return stats, batch


def simulate_sample(texts: list[str]) -> collections.Counter:
    from translator.simulate import simulate_script

    verdicts: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i, text in enumerate(texts):
            path = os.path.join(tmp, f"b{i}.sbatch")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            v = simulate_script(path)
            verdicts[v.verdict + (f" ({v.reason.code})" if v.reason is not None else "")] += 1
    return verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scripts", type=int, default=1000)
    ap.add_argument("--simulate", type=int, default=0, metavar="K", help="simulate the first K batch-mode scripts")
    a = ap.parse_args()
    t0 = time.perf_counter()
    stats, batch = census(a.scripts)
    print(f"{a.scripts} realistic scripts converted in {time.perf_counter() - t0:.1f} s")
    for k in sorted(stats):
        print(f"  {k:45} {stats[k]}")
    multi = stats["multi-node"] or 1
    print(
        f"  multi-node converted without an error: {100 * stats['multi-node: converted without an error'] / multi:.1f}%"
    )
    if a.simulate:
        t0 = time.perf_counter()
        verdicts = simulate_sample(batch[: a.simulate])
        print(f"simulate, first {min(a.simulate, len(batch))} batch-mode scripts, {time.perf_counter() - t0:.1f} s:")
        for k in sorted(verdicts):
            print(f"  {k:45} {verdicts[k]}")


if __name__ == "__main__":
    main()
