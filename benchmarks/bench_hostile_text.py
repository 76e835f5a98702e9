#!/usr/bin/env python3
"""Hostile text inside scripts (issue 10): doubling tests and per-class counts, in-process.

Prints, for each growing shape, the time of convert + YAML + report at N, 2N and 4N lines and the ratio
of the last two (2 means linear, 4 quadratic); then, for each hostile class, how many inputs were tried
and how many raised (tracebacks), with the peak traced memory of the worst one.

    .venv/bin/python benchmarks/bench_hostile_text.py                 # N = 4000
    .venv/bin/python benchmarks/bench_hostile_text.py --lines 2000
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from translator.emit import sdk_python, trainjob_yaml  # noqa: E402
from translator.pipeline import ConvertSettings, convert  # noqa: E402
from translator.report.build import script_report  # noqa: E402

GROWING = {
    "export lines": lambda n: "".join(f"export V{i}=value{i}\n" for i in range(n)) + "torchrun t.py $V1\n",
    "pip install lines": lambda n: "".join(f"pip install pkg{i}==1.{i} a{i}\n" for i in range(n)) + "python t.py\n",
    "hetjob components": lambda n: "#SBATCH -N 1 -t 10\n#SBATCH hetjob\n" * n + "#SBATCH -N 2\nsrun python t.py\n",
    "launch-line variables": lambda n: (
        "".join(f"V{i}=$(echo {i})\n" for i in range(n))
        + "torchrun t.py "
        + " ".join(f"$V{i}" for i in range(n))
        + "\n"
    ),
    "findings in a report": lambda n: (
        "".join(f"export V{i}=$(echo {i})\nexport SLURM_X{i}=1\n" for i in range(n))
        + "srun -n1 python a.py\nsrun -n1 python b.py\n"
    ),
    "srun steps": lambda n: "".join(f"srun -n1 python s{i}.py\n" for i in range(n)),
}

BREAKS = ["\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
BIG = "9" * 6000


def hostile_classes():
    yield (
        "line breaks other than \\n",
        [f'setup\n# c{b}echo INJECTED\necho "a{b}b"\ncat <<E\nx{b}y\nE\n' for b in BREAKS],
    )
    yield (
        "huge array specs",
        [
            f"#SBATCH --array={s}\npython t.py\n"
            for s in (
                "0-4294967294",
                "0-100000000",
                ",".join(map(str, range(2000, 9000))),
                "0-" + BIG,
                "0-" + "0" * 5000 + "7",
            )
        ],
    )
    yield (
        "numbers with 6000 digits",
        [
            f"#SBATCH {o}{BIG}\nsrun -n {BIG} python t.py\n"
            for o in (
                "-N ",
                "--time=",
                "--mem=",
                "--gpus=",
                "--signal=B:USR1@",
                "-c ",
                "--nice=",
                "--gres=gpu:",
                "--begin=now+",
                "--distribution=plane=",
                "--priority=",
                "--switches=1@",
                "-o %",
                "--array=1-3%",
            )
        ],
    )
    deep = [
        lambda n: 'echo "${A:-"' * n + "x" + '"}"' * n,
        lambda n: 'echo "$(' * n + "x" + ')"' * n,
        lambda n: "echo ${" * n + "A" + "}" * n,
        lambda n: "(" * n + "echo" + ")" * n,
        lambda n: "if true; then " * n + "echo; " + "fi; " * n,
        lambda n: "conda run " * n + "python t.py",
    ]
    yield "deep nesting (100 to 5000 levels)", [f(n) + "\n" for f in deep for n in (100, 101, 400, 5000)]
    yield (
        "$'...' escapes",
        [f"torchrun t.py $'{e}'\n" for e in (r"\x41", r"\101", r"\u00e9", r"\c@", r"\351", r"\U7FFFFFFF", r"\x{41}")],
    )
    yield (
        "tilde, globs, braces",
        [f"torchrun t.py {w}\n" for w in ("~/a", "*.py", "{1..3}", "{1..100000}", "{a,b}{c,d}" * 20, "a=~/x")],
    )


def run_once(body: str, mode: str = "finding"):
    conv = convert("bench.sh", ("#!/bin/bash\n#SBATCH -N 2\n" + body).encode("utf-8"), ConvertSettings(array_mode=mode))
    trainjob_yaml.render(conv.plans)
    sdk_python.render(conv.plans)
    script_report(conv, "bench.sh")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=4000)
    args = ap.parse_args()
    run_once("python t.py\n")
    print(f"{'shape':24s} {'N':>8s} {'2N':>8s} {'4N':>8s}  ratio 4N/2N")
    for name, make in GROWING.items():
        times = []
        for n in (args.lines, 2 * args.lines, 4 * args.lines):
            body = make(n)
            start = time.monotonic()
            run_once(body)
            times.append(time.monotonic() - start)
        print(f"{name:24s} {times[0]:7.2f}s {times[1]:7.2f}s {times[2]:7.2f}s  {times[2] / max(times[1], 1e-9):.1f}")
    print()
    print(f"{'class':36s} {'inputs':>6s} {'tracebacks':>10s} {'worst peak':>10s}")
    for name, bodies in hostile_classes():
        failures = 0
        peak = 0
        for body in bodies:
            for mode in ("finding", "expand"):
                tracemalloc.start()
                try:
                    run_once(body, mode)
                except Exception:  # noqa: BLE001 - counted, that is the figure
                    failures += 1
                peak = max(peak, tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()
        print(f"{name:36s} {2 * len(bodies):6d} {failures:10d} {peak / 1e6:8.1f}MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
