#!/usr/bin/env python3
"""Per-stage time of the migrate pipeline, in process, one script at a time (not a timed test).

Stages, as `migrate` runs them for one script (translator/migrate/worker.py):
  read     bytes -> Script (translator/read)
  resolve  Script -> SlurmJob (translator/slurm)
  plan     launch analysis + TrainerPlan(s) (translator/launchers, translator/plan)
  yaml     TrainJob YAML with the findings comment (translator/emit/trainjob_yaml.py)
  sdk      SDK Python (translator/emit/sdk_python.py)
  report   the report record, its JSON and its HTML section (translator/report)

    .venv/bin/python benchmarks/stages.py [--scripts 1000] [--set realistic|families] [--cprofile]

Prints the CPU time of each stage (sum, share, per script), the slowest scripts, and the largest
per-script time among scripts under 50 KB (target: 50 ms).
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

STAGES = ("read", "resolve", "plan", "yaml", "sdk", "report")


def script_set(kind: str, n: int):
    """[(name, bytes)] of the realistic generator or of bench_migrate's fixture families."""
    if kind == "realistic":
        import realistic_scripts

        return [(f"real{i:05d}.sbatch", realistic_scripts.script(i).encode("utf-8")) for i in range(n)]
    import bench_migrate

    texts = bench_migrate.families()
    rnd = random.Random(2205)
    return [
        (
            f"fam{i:05d}.sbatch",
            bench_migrate.vary(
                texts[i % len(texts)], i, rnd, bench_migrate.TEAMS[i % len(bench_migrate.TEAMS)]
            ).encode(),
        )
        for i in range(n)
    ]


def measure(items, clock=time.process_time):
    """{stage: seconds}, [(total seconds, name, size, launcher, collector seconds)] per script. The time
    the cyclic garbage collector ran while a script was converted (a full collection walks every object
    of the process, the per-process tables included) is recorded apart, from gc.callbacks."""
    from translator.pipeline import ConvertSettings

    settings = ConvertSettings()
    totals = dict.fromkeys(STAGES, 0.0)
    per_script = []
    pause = [0.0, 0.0]  # [start of the running collection, collector seconds during the current script]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            pause[0] = clock()
        else:
            pause[1] += clock() - pause[0]

    gc.callbacks.append(on_gc)
    try:
        _measure(items, settings, totals, per_script, clock, pause)
    finally:
        gc.callbacks.remove(on_gc)
    return totals, per_script


def _measure(items, settings, totals, per_script, clock, pause) -> None:
    from translator.emit import sdk_python, trainjob_yaml
    from translator.pipeline import Conversion
    from translator.plan.build import build_plans
    from translator.read import read_script
    from translator.report import html
    from translator.report.build import script_report
    from translator.slurm.resolve import resolve

    from translator.migrate.run import BATCH_SIZE
    from translator.migrate.worker import _settle

    for i, (name, data) in enumerate(items):
        if i % BATCH_SIZE == 0:
            _settle()  # between batches, as a migrate pool worker does (not timed)
        pause[1] = 0.0
        t = [clock()]
        script = read_script(data, name)
        t.append(clock())
        job = resolve(script, env={}, cli_args=())
        t.append(clock())
        plans = tuple(build_plans(script, job, settings))
        t.append(clock())
        yaml_text = trainjob_yaml.render(plans, findings_comment=True) if plans else ""
        t.append(clock())
        if plans:
            sdk_python.render(plans)
        t.append(clock())
        conv = Conversion(path=name, script=script, job=job, plans=plans)
        sr = script_report(
            conv, name, yaml_text, ["x.trainjob.yaml", "x.trainjob.py"] if plans else [], settings=settings
        )
        sr.light()  # what the migrate worker sends back (translator/migrate/worker.py:_result)
        sr.record_json()
        html._PART.join(html.script_parts(sr))
        t.append(clock())
        for k, stage in enumerate(STAGES):
            totals[stage] += t[k + 1] - t[k]
        per_script.append((t[-1] - t[0], name, len(data), plans[0].launcher if plans else "-", pause[1]))


def breakdown(totals, per_script, label: str) -> str:
    n = len(per_script)
    total = sum(totals.values())
    rows = [f"per-stage CPU time, {label}: {n:,} scripts, {total:.2f} s ({1000 * total / n:.2f} ms/script)"]
    for stage in STAGES:
        rows.append(
            f"  {stage:<8} {totals[stage]:7.2f} s  {100 * totals[stage] / total:5.1f}%  "
            f"{1000 * totals[stage] / n:6.3f} ms/script"
        )
    slow = sorted(per_script, reverse=True)
    under = [p for p in slow if p[2] < 50 * 1024]
    if under:
        worst = under[0]
        gc_note = f", of which {1000 * worst[4]:.1f} ms garbage collection" if worst[4] >= 0.001 else ""
        rows.append(
            f"  slowest script under 50 KB: {1000 * worst[0]:.1f} ms ({worst[1]}, "
            f"{worst[2] / 1024:.1f} KB{gc_note}) (target: 50 ms)"
        )
        own = max(under, key=lambda p: p[0] - p[4])
        collections = [p for p in per_script if p[4] >= 0.001]
        rows.append(
            f"  slowest without collector pauses: {1000 * (own[0] - own[4]):.1f} ms ({own[1]}, "
            f"{own[2] / 1024:.1f} KB); collector pauses over 1 ms: {len(collections)}, longest "
            f"{1000 * max((p[4] for p in per_script), default=0):.1f} ms"
        )
    rows.append("  slowest: " + ", ".join(f"{p[1]} {p[2] / 1024:.1f} KB {1000 * p[0]:.1f} ms" for p in slow[:5]))
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scripts", type=int, default=1000)
    ap.add_argument("--set", default="realistic", choices=("realistic", "families"))
    ap.add_argument("--cprofile", action="store_true")
    args = ap.parse_args()
    items = script_set(args.set, args.scripts)
    import translator.migrate.worker as worker

    worker.warm_up()
    measure(items[:20])  # warm caches and lazy imports
    if args.cprofile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        measure(items)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(35)
        return
    gc.collect()
    totals, per_script = measure(items)
    print(breakdown(totals, per_script, args.set))
    fams = {}
    for p in per_script:
        fams[p[3]] = fams.get(p[3], 0) + 1
    print("  launcher families: " + ", ".join(f"{k} {v}" for k, v in sorted(fams.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    main()
