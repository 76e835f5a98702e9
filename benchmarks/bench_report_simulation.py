#!/usr/bin/env python3
"""The review report of a `--simulate` run on 10,000 scripts: generation time and size of each format.

Simulating 10,000 scripts takes hours, so the verdicts are fabricated (say so when quoting the figures):
`--distinct` real-sized scripts (benchmarks/realistic_scripts.py) are converted for real into report records,
replicated under 10,000 paths, and each gets a simulation record built by `report.build.simulation_record`
from a made-up `Verdict` with the mix below (a `differs` one has 1-4 difference sentences of the real wording
and a process table of 2-8 nodes). The same records without simulation give the baseline.

    .venv/bin/python benchmarks/bench_report_simulation.py [--scripts 10000] [--distinct 200] [--out DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realistic_scripts import script  # noqa: E402

from translator.pipeline import ConvertSettings, convert  # noqa: E402
from translator.report import html as html_writer, json_report, markdown  # noqa: E402
from translator.report.build import script_report, simulation_record  # noqa: E402
from translator.report.model import Report  # noqa: E402
from translator.simulate.model import Process, Reason, SideResult, Verdict  # noqa: E402

MIX = (("equivalent", 0.70), ("differs", 0.15), ("inconclusive", 0.10), ("refused", 0.03), ("not simulated", 0.02))
DIFFS = (
    "the training: world size on Slurm 8, on Kubeflow 16",
    "the training: GPUs visible per process on Slurm 1, on Kubeflow 8",
    "the training: environment variable NCCL_SOCKET_IFNAME is 'ib0' on Slurm, unset on Kubeflow",
    "Kubeflow: `shifter python train.py` fails on pod 0: shifter: command not found",
    "the training: processes per node on Slurm node0: 4, node1: 4; on Kubeflow node0: 8",
    "Slurm: the ranks of `python train.py` do not share one MASTER_ADDR (node0, node1): they would not form one training",
)
REASONS = (("S807", "the script has a placeholder to fill in"), ("S809", "a file of the site is not here"))


def _side(side: str, nodes: int, per_node: int, world: int) -> SideResult:
    hosts = tuple((f"{side[0]}{n}", n, f"10.0.{n}.1") for n in range(nodes))
    procs = tuple(
        Process(side, n, hosts[n][0], "train.py", ("--cfg", "c.yaml"), rank=n * per_node + k, world_size=world, gpus=1)
        for n in range(nodes)
        for k in range(per_node)
    )
    return SideResult(side, procs, hosts=hosts)


def fabricated(rng: random.Random, path: str) -> dict:
    r, acc = rng.random(), 0.0
    kind = MIX[-1][0]
    for k, p in MIX:
        acc += p
        if r < acc:
            kind = k
            break
    if kind == "not simulated":
        return {
            "verdict": "not simulated",
            "differences": ["no sandbox"],
            "slurm_processes": 0,
            "kubeflow_processes": 0,
        }
    nodes = rng.randint(2, 8)
    slurm = _side("slurm", nodes, 4, 4 * nodes)
    if kind == "equivalent":
        return simulation_record(Verdict(path, kind, slurm=slurm, kubeflow=_side("kubeflow", nodes, 4, 4 * nodes)))
    if kind == "differs":
        v = Verdict(
            path, kind, tuple(rng.sample(DIFFS, rng.randint(1, 4))), slurm, _side("kubeflow", nodes, 8, 8 * nodes)
        )
        return simulation_record(v)
    code, text = rng.choice(REASONS) if kind == "inconclusive" else ("S813", "convert refused the script")
    return simulation_record(Verdict(path, kind, reason=Reason(code, text, "slurm", "line 9")))


def timed(label: str, render, rep: Report) -> float:
    t0 = time.perf_counter()
    text = render(rep)
    dt = time.perf_counter() - t0
    print(f"  {label:<5} {dt:6.2f} s  {len(text.encode()) / 1e6:7.1f} MB")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scripts", type=int, default=10_000)
    ap.add_argument("--distinct", type=int, default=200)
    ap.add_argument("--out", help="write the simulated HTML report here (to open in a browser)")
    a = ap.parse_args()
    settings = ConvertSettings()
    base = []
    for i in range(a.distinct):
        name = f"s{i:05d}.sbatch"
        conv = convert(name, data=script(i).encode(), settings=settings)
        base.append(script_report(conv, name, "kind: TrainJob\n", [f"s{i:05d}.trainjob.yaml"], settings=settings))
    rng = random.Random(0)
    plain, simulated = [], []
    for i in range(a.scripts):
        path = f"team{i % 8}/job{i:05d}.sbatch"
        sr = dataclasses.replace(base[i % a.distinct], path=path)
        plain.append(sr)
        simulated.append(dataclasses.replace(sr, simulation=fabricated(rng, path)))
    for label, records in (("without simulation", plain), ("with simulation (fabricated verdicts)", simulated)):
        t0 = time.perf_counter()
        rep = Report.from_scripts("bench", "repo", records)
        print(f"{a.scripts:,} scripts, {label}: summary {time.perf_counter() - t0:.2f} s")
        for name, mod in (("md", markdown), ("html", html_writer), ("json", json_report)):
            timed(name, mod.render, rep)
        if a.out:  # the simulated report at OUT, the baseline next to it
            out = a.out if records is simulated else a.out + ".plain.html"
            buf = io.StringIO()
            html_writer.write(rep, buf)
            Path(out).write_text(buf.getvalue(), encoding="utf-8")
            print(f"  wrote {out}; summary.simulation = {rep.summary.simulation}")


if __name__ == "__main__":
    main()
