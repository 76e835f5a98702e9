#!/usr/bin/env python3
"""Benchmark `slurm2kf migrate` on synthetic repositories (not a timed test).

    .venv/bin/python benchmarks/bench_migrate.py [--scripts 10000] [--jobs 2] [--sets real,small]
                                                 [--stages 2000] [--keep DIR] [--profile]

Two sets of N job scripts, each spread over nested team/project folders plus ~10% files that are
not job scripts:
  real   real-sized scripts (benchmarks/realistic_scripts.py: the size distribution of public sbatch
         scripts, median 1.5 KB, mean 2.5 KB, p99 13.6 KB, max 43 KB; long preambles, blocks,
         heredocs, functions, several srun steps; about half end in the script fallback);
  small  the fixture families of tests/fixtures/{convert,sbatch,repo}, varied: job names, nodes,
         GPUs, time limits, paths (median 0.2 KB: the earlier figure, kept to compare).
For each set it prints the size distribution, then:

  * the floor: a plain walk + regex scan of the same files for `#SBATCH` lines (one process);
  * `slurm2kf migrate SRC -o OUT --jobs J` (a fresh process): wall time, scripts/s, peak memory
    (the sum of the resident sets of the process and its workers, sampled from /proc every 20 ms),
    CPU time (user+sys of the whole tree);
  * a second, idempotent run (nothing rewritten);
  * the ratio migrate / floor: the figure we keep pushing down;
  * CPU time per script, and the per-stage breakdown (read, resolve, plan, YAML, SDK code, report)
    measured in this process on the first --stages scripts (benchmarks/stages.py), with the slowest
    script (target: none under 50 KB over 50 ms).
Targets on 2 cores: 10,000 real-sized scripts in < 20 s and < 300 MB peak, ratio <= 40x.
With --profile, also a cProfile of migrate --jobs 1 on 500 of the scripts (top 30 by own time).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
TEAMS = ("nlp", "vision", "speech", "rl", "climate", "bio", "hpc-bench", "recsys")
PATHS = ("/scratch/{team}/data", "/gpfs/projects/{team}", "/work/{team}/ckpt", "/datasets/{team}")


def families() -> list:
    """Job scripts sbatch accepts, from the fixture families (deterministic order)."""
    texts = []
    for sub in ("convert", "repo", "sbatch"):
        for p in sorted((FIXTURES / sub).rglob("*")):
            if not p.is_file() or p.suffix in (".yaml", ".py", ".json", ".md", ".txt"):
                continue
            data = p.read_bytes()
            if data.startswith(b"#!") and b"#SBATCH" in data and b"\r" not in data and b"\0" not in data:
                try:
                    texts.append(data.decode("utf-8"))
                except UnicodeDecodeError:
                    continue
    if not texts:
        raise SystemExit("bench_migrate: no fixture scripts found under tests/fixtures")
    return texts


def vary(text: str, i: int, rnd: random.Random, team: str) -> str:
    """A realistic variation: own job name, node/GPU counts, time limit, site paths."""
    name = f"{team}-exp{i:05d}"
    if re.search(r"^#SBATCH\s+(--job-name|-J)\b", text, re.M):
        text = re.sub(
            r"^(#SBATCH\s+(?:--job-name[= ]|-J\s*))\S+", lambda m: m.group(1) + name, text, count=1, flags=re.M
        )
    else:
        lines = text.split("\n", 1)
        text = lines[0] + f"\n#SBATCH --job-name={name}\n" + (lines[1] if len(lines) > 1 else "")
    text = re.sub(
        r"^(#SBATCH\s+(?:--nodes[= ]|-N\s*))\d+",
        lambda m: m.group(1) + str(rnd.choice((1, 2, 4, 8))),
        text,
        count=1,
        flags=re.M,
    )
    text = re.sub(
        r"^(#SBATCH\s+--gres[= ]gpu:)\d+",
        lambda m: m.group(1) + str(rnd.choice((1, 2, 4, 8))),
        text,
        count=1,
        flags=re.M,
    )
    if not re.search(r"^#SBATCH\s+(--time|-t)\b", text, re.M) and rnd.random() < 0.7:
        text = text.replace("\n", f"\n#SBATCH --time={rnd.choice(('00:30:00', '04:00:00', '1-00:00:00'))}\n", 1)
    path = rnd.choice(PATHS).format(team=team)
    return text.rstrip("\n") + f"\n# data: {path}/run-{i}\n"


def generate(root: Path, n: int, seed: int = 2205, kind: str = "small") -> tuple:
    """Write the set; returns (files written, sizes of the job scripts)."""
    rnd = random.Random(seed)
    if kind == "real":
        sys.path.insert(0, str(REPO / "benchmarks"))
        import realistic_scripts

        make = lambda i, team: realistic_scripts.script(i)  # noqa: E731
    else:
        texts = families()
        make = lambda i, team: vary(texts[i % len(texts)], i, rnd, team)  # noqa: E731
    files = 0
    sizes = []
    for i in range(n):
        team = TEAMS[i % len(TEAMS)]
        folder = root / team / f"project-{(i // 50) % 20:02d}" / ("jobs" if i % 3 else "legacy/old")
        folder.mkdir(parents=True, exist_ok=True)
        ext = (".sbatch", ".sh", ".slurm", "")[i % 4]
        blob = make(i, team).encode("utf-8")
        sizes.append(len(blob))
        (folder / f"job{i:05d}{ext}").write_bytes(blob)
        files += 1
        if i % 10 == 0:  # files that are not job scripts
            (folder / f"train{i:05d}.py").write_text("#!/usr/bin/env python3\nimport torch\nprint('train')\n")
            files += 1
    (root / "README.md").write_text("# synthetic repository for bench_migrate\n")
    return files, sizes


def regex_floor(root: Path) -> tuple:
    pat = re.compile(rb"^#SBATCH[^\n]*", re.M)
    t0 = time.perf_counter()
    files = lines = 0
    for dirpath, _dirs, names in os.walk(root):
        for nm in names:
            with open(os.path.join(dirpath, nm), "rb") as fh:
                lines += len(pat.findall(fh.read()))
            files += 1
    return time.perf_counter() - t0, files, lines


def create_cost(base: Path, n: int = 2000) -> float:
    """Kernel CPU per new file in `base` (the outputs are new files: this is a floor per output)."""
    d = base / "create-cost"
    d.mkdir(parents=True, exist_ok=True)
    before = os.times()
    for i in range(n):
        os.close(os.open(str(d / f"f{i}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    after = os.times()
    shutil.rmtree(d, ignore_errors=True)
    return 1000 * (after.system - before.system) / n


def _tree_rss_kb(root_pid: int) -> int:
    """Sum of VmRSS over root_pid and all its descendants."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, ()))
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


def timed_migrate(src: Path, out: Path, jobs: int) -> dict:
    cmd = [sys.executable, "-m", "translator", "migrate", str(src), "-o", str(out), "--jobs", str(jobs)]
    before = os.times()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            done.wait(0.02)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    _out, err = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    after = os.times()
    summary = [ln for ln in err.splitlines() if " scripts (" in ln]
    return {
        "wall": wall,
        "peak_mb": peak[0] / 1024,
        "rc": proc.returncode,
        "cpu": (after.children_user - before.children_user) + (after.children_system - before.children_system),
        "summary": summary[-1] if summary else err[-500:],
    }


def profile(src: Path, n: int) -> None:
    import cProfile
    import pstats

    sub = Path(tempfile.mkdtemp(prefix="bench-migrate-prof-"))
    try:
        picked = sorted(p for p in src.rglob("job*") if p.is_file())[:n]
        for p in picked:
            dst = sub / "src" / p.relative_to(src)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(p, dst)
        sys.path.insert(0, str(REPO))
        from translator.migrate.run import MigrateOptions, migrate

        prof = cProfile.Profile()
        prof.enable()
        migrate(MigrateOptions(src=str(sub / "src"), out=str(sub / "out"), jobs=1, progress=False, echo=lambda s: None))
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    finally:
        shutil.rmtree(sub, ignore_errors=True)


def run_set(kind: str, args, base: Path) -> dict:
    src, out = base / kind / "src", base / kind / "out"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    files, sizes = generate(src, args.scripts, kind=kind)
    label = {"real": "real-sized scripts", "small": "small fixture-family scripts"}[kind]
    print(
        f"== {label}: {args.scripts:,} job scripts ({files:,} files, {sum(sizes) / 1e6:.1f} MB) generated in "
        f"{time.perf_counter() - t0:.1f}s under {src}"
    )
    sys.path.insert(0, str(REPO / "benchmarks"))
    from realistic_scripts import sizes_table

    print(sizes_table(sizes))

    regex_floor(src)  # warm the page cache
    floor, nfiles, nlines = min(regex_floor(src), regex_floor(src))  # best of 2
    print(
        f"floor   regex scan for #SBATCH: {nfiles:,} files, {nlines:,} lines in {floor:.2f}s "
        f"({args.scripts / floor:,.0f} scripts/s)"
    )

    per_file = create_cost(base / kind)
    print(
        f"file creation under {base / kind}: {per_file:.3f} ms of kernel CPU per new file "
        "(2,000 files; every output is a new file)"
    )
    load = os.getloadavg()[0]
    first = timed_migrate(src, out, args.jobs)
    print(
        f"migrate --jobs {args.jobs}: {first['wall']:.2f}s wall, {args.scripts / first['wall']:,.0f} scripts/s, "
        f"peak {first['peak_mb']:.0f} MB (all processes), CPU {first['cpu']:.1f}s "
        f"({1000 * first['cpu'] / args.scripts:.2f} ms CPU/script), exit {first['rc']} (load before: {load:.1f})"
    )
    print(f"        {first['summary']}")
    outputs = sum(len(f) for _d, _s, f in os.walk(out))
    print(
        f"        of which creating its {outputs:,} output files: about {outputs * per_file / 1000:.1f}s of "
        f"kernel CPU at the rate above ({100 * outputs * per_file / 1000 / max(first['cpu'], 1e-9):.0f}% of "
        "the run's CPU; the rate depends on the folder and the file system's state: compare with --dir)"
    )
    if not args.no_rerun:
        second = timed_migrate(src, out, args.jobs)
        print(
            f"re-run (idempotent): {second['wall']:.2f}s wall, CPU {second['cpu']:.1f}s, "
            f"peak {second['peak_mb']:.0f} MB"
        )
        print(f"        {second['summary']}")
    ratio = first["wall"] / floor
    print(f"ratio migrate / regex floor: {ratio:,.0f}x wall (CPU time / floor: {first['cpu'] / floor:,.0f}x)")
    if args.stages:
        import stages

        items = stages.script_set("realistic" if kind == "real" else "families", min(args.stages, args.scripts))
        import translator.migrate.worker as worker

        worker.warm_up()
        stages.measure(items[:20])
        totals, per_script = stages.measure(items)
        print(stages.breakdown(totals, per_script, label))
    return {"wall": first["wall"], "peak": first["peak_mb"], "ratio": ratio}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scripts", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sets", default="real,small", help="comma-separated: real, small")
    ap.add_argument("--stages", type=int, default=2000, help="scripts for the per-stage breakdown (0: none)")
    ap.add_argument("--no-rerun", action="store_true", help="skip the idempotent re-run")
    ap.add_argument("--keep", help="generate into this folder and keep it")
    ap.add_argument(
        "--dir",
        default=None,
        help="parent folder of the temporary repositories and outputs (default: the system temp "
        "folder); e.g. /dev/shm to take the disk out of the measurement",
    )
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    sys.path.insert(0, str(REPO))
    if not args.keep and args.dir:
        os.makedirs(args.dir, exist_ok=True)
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-migrate-", dir=args.dir))
    try:
        results = {}
        for kind in [k.strip() for k in args.sets.split(",") if k.strip()]:
            results[kind] = run_set(kind, args, base)
            print()
        for kind, r in results.items():
            ok = r["wall"] < 20 * args.scripts / 10_000 and r["peak"] < 300
            print(
                f"{kind:>5}: {r['wall']:.1f}s, {r['peak']:.0f} MB, {r['ratio']:.0f}x the regex floor; targets "
                f"(< 20 s and < 300 MB per 10,000 scripts on 2 cores{', <= 40x' if kind == 'real' else ''}): "
                f"{'met' if ok and (kind != 'real' or r['ratio'] <= 40) else 'NOT met'}"
            )
        print(f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        if args.profile:
            first = next(iter(results))
            profile(base / first / "src", 500)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
