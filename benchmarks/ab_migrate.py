"""Compare `slurm2kf migrate` of two checkouts, run alternately on the same scripts (not a timed test).

    .venv/bin/python benchmarks/ab_migrate.py OLD_CHECKOUT NEW_CHECKOUT [--scripts 10000] [--rounds 5]
        [--dir /dev/shm] [--jobs 2]

This VM's speed drifts by up to half within minutes, so a figure is only comparable with one taken right
next to it: each round migrates the same generated repository (benchmarks/realistic_scripts.py, the
real-sized set) once with each checkout, in alternating order, into a fresh output folder. Each checkout
runs under this interpreter with its own folder first on PYTHONPATH. Printed per run: wall time, CPU of the
process tree (user + system of the children), peak memory summed over the process tree, and the load
average before it; then best / median / worst per checkout and the ratio of the best wall time to a plain
regex scan of the same files (the floor of bench_migrate.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_migrate import generate, regex_floor, timed_migrate  # noqa: E402


def run_one(code: Path, src: Path, out: Path, jobs: int) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    old, cwd = os.environ.get("PYTHONPATH"), os.getcwd()
    os.environ["PYTHONPATH"] = str(code) + (os.pathsep + old if old else "")
    os.chdir(code)  # `python -m` puts the working folder first on sys.path
    try:
        load = os.getloadavg()[0]
        res = timed_migrate(src, out, jobs)
    finally:
        os.chdir(cwd)
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
        shutil.rmtree(out, ignore_errors=True)
    res["load"] = load
    return res


def run_probe(code: Path) -> Path:
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(code))
    out = subprocess.run(
        [sys.executable, "-c", "import translator; print(translator.__file__)"],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return Path(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--scripts", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--dir", default=None, help="parent folder of the repository and outputs (e.g. /dev/shm)")
    args = ap.parse_args()
    codes = {"old": args.old.resolve(), "new": args.new.resolve()}
    for label, code in codes.items():
        if not (code / "translator" / "__init__.py").is_file():
            ap.error(f"{label}: {code} is not a slurm2kf checkout")
    base = Path(tempfile.mkdtemp(prefix="ab-migrate-", dir=args.dir))
    try:
        src = base / "src"
        for label, code in codes.items():
            probe = run_probe(code)
            if probe != code / "translator" / "__init__.py":
                ap.error(f"{label}: the interpreter imports translator from {probe}, not from {code}")
        _files, sizes = generate(src, args.scripts, kind="real")
        floor = min(regex_floor(src)[0] for _ in range(2))
        print(
            f"{args.scripts:,} real-sized scripts ({sum(sizes) / 1e6:.1f} MB) under {base}; regex floor {floor:.2f} s"
        )
        runs: dict[str, list[dict]] = {"old": [], "new": []}
        for r in range(args.rounds):
            order = ("old", "new") if r % 2 == 0 else ("new", "old")
            for label in order:
                res = run_one(codes[label], src, base / "out", args.jobs)
                runs[label].append(res)
                print(
                    f"round {r + 1} {label}: {res['wall']:6.2f} s wall, {res['cpu']:6.2f} s CPU "
                    f"({1000 * res['cpu'] / args.scripts:.2f} ms/script), peak {res['peak_mb']:.0f} MB, "
                    f"exit {res['rc']}, load before {res['load']:.1f}",
                    flush=True,
                )
        for label in ("old", "new"):
            walls = sorted(x["wall"] for x in runs[label])
            cpus = sorted(x["cpu"] for x in runs[label])
            peak = max(x["peak_mb"] for x in runs[label])
            print(
                f"{label} ({codes[label]}): wall best / median / worst {walls[0]:.1f} / "
                f"{statistics.median(walls):.1f} / {walls[-1]:.1f} s; CPU per script best / median "
                f"{1000 * cpus[0] / args.scripts:.2f} / {1000 * statistics.median(cpus) / args.scripts:.2f} ms; "
                f"peak {peak:.0f} MB; ratio to the floor best / median {walls[0] / floor:.0f}x / "
                f"{statistics.median(walls) / floor:.0f}x; runs <= 20 s: "
                f"{sum(w <= 20 for w in walls)} of {len(walls)}"
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
