#!/usr/bin/env python3
"""Hostile file-system inputs against the real CLI (issue 10): output targets, OUT confinement,
file names, links out of SRC, special and huge input files; plus doubling runs for the shapes that
used to be quadratic.

For every attempt it counts tracebacks, hangs (no exit within the time limit), writes outside the
place the command may write, files lost (a file the command must not delete is gone or changed),
and exit statuses that are not the documented one.

    .venv/bin/python benchmarks/hostile_fs.py                 # about a minute
    .venv/bin/python benchmarks/hostile_fs.py --names 2000    # more random file names
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXE = REPO / ".venv" / "bin" / "slurm2kf"
GOOD = "#!/bin/bash\n#SBATCH --job-name={name}\n#SBATCH -N 1\n#SBATCH -t 10\nsrun python train.py\n"
LIMIT = 60


class Tally:
    def __init__(self) -> None:
        self.rows = {}

    def add(self, cls: str, *, traceback=False, hang=False, outside=False, lost=False, bad_exit=False) -> None:
        r = self.rows.setdefault(cls, dict(tried=0, tracebacks=0, hangs=0, outside=0, lost=0, bad_exit=0))
        r["tried"] += 1
        r["tracebacks"] += traceback
        r["hangs"] += hang
        r["outside"] += outside
        r["lost"] += lost
        r["bad_exit"] += bad_exit

    def table(self) -> str:
        head = "| class | inputs tried | tracebacks | hangs | writes outside | files lost | unexpected exit |"
        lines = [head, "|---|---:|---:|---:|---:|---:|---:|"]
        for cls, r in self.rows.items():
            lines.append(
                f"| {cls} | {r['tried']} | {r['tracebacks']} | {r['hangs']} | {r['outside']} | {r['lost']} "
                f"| {r['bad_exit']} |"
            )
        return "\n".join(lines)


def run(args, stdin=subprocess.DEVNULL):
    try:
        p = subprocess.run([str(EXE), *map(str, args)], capture_output=True, timeout=LIMIT, stdin=stdin)
        return p.returncode, p.stderr.decode("utf-8", "replace"), False
    except subprocess.TimeoutExpired:
        return None, "", True


def snapshot(root: Path) -> dict:
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = Path(d) / n
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                out[str(p)] = "link:" + os.readlink(p)
            else:
                out[str(p)] = stat.S_IFMT(st.st_mode)
    return out


def output_targets(t: Tally, base: Path) -> None:
    kinds = ["symlink", "dangling", "fifo", "device", "directory", "input"]
    for i, kind in enumerate(kinds):
        for w in ("convert", "convert-py", "report", "report-dir", "profile-init"):
            work = base / f"o{i}-{w}"
            (work / "jobs").mkdir(parents=True)
            script = work / "jobs" / "a.sbatch"
            script.write_text(GOOD.format(name="a"))
            victim = work / "victim"
            victim.write_text("precious")
            target = work / "target"
            if kind == "symlink":
                target.symlink_to(victim)
            elif kind == "dangling":
                target.symlink_to(work / "new-through-link")
            elif kind == "fifo":
                os.mkfifo(target)
            elif kind == "device":
                os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))
            elif kind == "directory":
                target.mkdir()
            else:
                target = script
            args = {
                "convert": ["convert", script, "-o", target],
                "convert-py": ["convert", script, "--to", "python", "-o", target],
                "report": ["report", script, "-o", target, "--format", "md"],
                "report-dir": ["report", work / "jobs", "-o", target, "--format", "json", "-j", "1"],
                "profile-init": ["profile", "init", work / "jobs", "-o", target, "--force"],
            }[w]
            before = snapshot(work)
            rc, err, hang = run(args)
            after = snapshot(work)
            t.add(
                "`-o` target: link, FIFO, device, folder, input",
                traceback="Traceback" in err,
                hang=hang,
                outside=after != before and not hang,
                lost=victim.read_text() != "precious",
                bad_exit=rc != 2,
            )


def out_confinement(t: Tally, base: Path) -> None:
    cls = "migrate: symlinks, forged manifest, special files in OUT"
    # 1. a folder of OUT replaced by a link to another place
    for variant in range(3):
        work = base / f"c{variant}"
        src, out, elsewhere = work / "src", work / "out", work / "elsewhere"
        (src / "a").mkdir(parents=True)
        (src / "a" / "one.sbatch").write_text(GOOD.format(name="one"))
        (src / "a" / "gone.sbatch").write_text(GOOD.format(name="gone"))
        run(["migrate", src, "-o", out])
        os.rename(out / "a", elsewhere)
        (out / "a").symlink_to(elsewhere)
        if variant >= 1:
            (src / "a" / "gone.sbatch").unlink()
        if variant == 2:
            (src / "a" / "one.sbatch").write_text(GOOD.format(name="changed"))
        before = snapshot(elsewhere)
        rc, err, hang = run(["migrate", src, "-o", out])
        t.add(
            cls,
            traceback="Traceback" in err,
            hang=hang,
            outside=snapshot(elsewhere) != before,
            lost=snapshot(elsewhere) != before,
            bad_exit=rc != 1,
        )
    # 2. forged manifest entries
    forged = [
        "../victim.trainjob.yaml",
        "/ABS/victim.trainjob.yaml",
        "sub/../../victim.trainjob.yaml",
        "./victim.trainjob.yaml",
        "sub//x.trainjob.yaml",
        "notes.txt",
        "link/victim.trainjob.yaml",
        "",
        ".",
        "..",
        "a/\x00/b.trainjob.yaml",
    ]
    for i, rel in enumerate(forged):
        work = base / f"m{i}"
        src, out = work / "src", work / "out"
        src.mkdir(parents=True)
        (src / "two.sbatch").write_text(GOOD.format(name="two"))
        run(["migrate", src, "-o", out])
        victim = work / "victim.trainjob.yaml"
        victim.write_text("precious")
        (out / "notes.txt").write_text("precious")
        (work / "linked").mkdir()
        (work / "linked" / "victim.trainjob.yaml").write_text("precious")
        (out / "link").symlink_to(work / "linked")
        rel = rel.replace("/ABS", str(work))
        m = json.loads((out / ".slurm2kf-migrate.json").read_text())
        m["outputs"][rel] = hashlib.sha256(b"precious").hexdigest()
        (out / ".slurm2kf-migrate.json").write_text(json.dumps(m))
        before = snapshot(work / "linked")
        rc, err, hang = run(["migrate", src, "-o", out])
        lost = not victim.exists() or not (out / "notes.txt").exists() or snapshot(work / "linked") != before
        t.add(cls, traceback="Traceback" in err, hang=hang, lost=lost, bad_exit=rc != 0)
    # 3. special files where migrate reads or writes
    for i, (entry, kind) in enumerate(
        [
            (e, k)
            for e in (
                "slurm2kf-report.md",
                "slurm2kf-report.json",
                "slurm2kf-report.html",
                "kustomization.yaml",
                ".slurm2kf-migrate.json",
                "two.trainjob.yaml",
                "two.trainjob.py",
            )
            for k in ("fifo", "devzero")
        ]
    ):
        work = base / f"s{i}"
        src, out = work / "src", work / "out"
        src.mkdir(parents=True)
        (src / "two.sbatch").write_text(GOOD.format(name="two"))
        run(["migrate", src, "-o", out])
        (out / entry).unlink()
        if kind == "fifo":
            os.mkfifo(out / entry)
        else:
            (out / entry).symlink_to("/dev/zero")
        rc, err, hang = run(["migrate", src, "-o", out, "--force"])
        t.add(cls, traceback="Traceback" in err, hang=hang, bad_exit=rc not in (1, 2))


def file_names(t: Tally, base: Path, n: int, seed: int) -> None:
    rnd = random.Random(seed)
    src, out = base / "names-src", base / "names-out"
    src.mkdir(parents=True)
    raw = os.fsencode(src)
    alphabet = [b for b in range(1, 256) if b != ord("/")]
    made = set()
    specials = [
        b"train.sh",
        b"train.sbatch",
        b"train.sh.sbatch",
        b"kustomization.yaml",
        b"slurm2kf-report.md",
        b"x.sbatch",
        b"x.trainjob.yaml",
        b"\x7f",
        b"\xc2\x85",
        b"\n",
        b"\xe2\x80\xa8",
        b"L" * 250,
    ]
    names = specials + [bytes(rnd.choice(alphabet) for _ in range(rnd.randint(1, 40))) for _ in range(n)]
    for name in names:
        if name in made or name in (b".", b".."):
            continue
        made.add(name)
        with open(raw + b"/" + name, "wb") as fh:
            fh.write(GOOD.format(name=f"j{len(made)}").encode())
    rc, err, hang = run(["migrate", src, "-o", out])
    lost = 0
    try:
        rep = json.loads((out / "slurm2kf-report.json").read_text(encoding="utf-8"))
        outputs = [o for s in rep["scripts"] for o in s["outputs"] if o.endswith(".yaml")]
        lost = len(made) - len(rep["scripts"]) + (len(outputs) - len(set(outputs)))
        for k in out.rglob("kustomization.yaml"):
            import yaml

            if k.is_file():
                for r in yaml.safe_load(k.read_text(encoding="utf-8"))["resources"]:
                    lost += not (k.parent / r).exists()
    except Exception as exc:  # noqa: BLE001 - any failure to read back counts as lost data
        print("names: cannot read back:", exc, file=sys.stderr)
        lost = len(made)
    for _ in made:
        t.add(
            "file names: random bytes, control chars, collisions, reserved names",
            traceback=False,
            hang=False,
            lost=False,
        )
    r = t.rows["file names: random bytes, control chars, collisions, reserved names"]
    r["tracebacks"] = int("Traceback" in err)
    r["hangs"] = int(hang)
    r["lost"] = lost
    r["bad_exit"] = int(rc != 0)
    for args in (["migrate", src, "-o", out, "--check"], ["report", out], ["report", src, "--format", "html"]):
        rc2, err2, hang2 = run(args)
        t.add("file names: re-run, --check, report", traceback="Traceback" in err2, hang=hang2, bad_exit=rc2 != 0)


def links_out_of_src(t: Tally, base: Path) -> dict:
    outside = base / "bomb"
    depth = 13
    for i in range(depth + 1):
        (outside / f"d{i}").mkdir(parents=True)
    for i in range(depth):
        (outside / f"d{i}" / "l1").symlink_to(outside / f"d{i + 1}")
        (outside / f"d{i}" / "l2").symlink_to(outside / f"d{i + 1}")
    (outside / f"d{depth}" / "job.sbatch").write_text(GOOD.format(name="bomb"))
    figures = {}
    for follow in (False, True):
        src, out = base / f"ls{follow}", base / f"lo{follow}"
        src.mkdir(parents=True)
        (src / "bomb").symlink_to(outside / "d0")
        (src / "proc").symlink_to("/proc/self")
        (src / "kmsg.sbatch").symlink_to("/proc/kmsg")
        (src / "dev").symlink_to("/dev")
        t0 = time.perf_counter()
        rc, err, hang = run(["migrate", src, "-o", out] + (["--follow-symlinks"] if follow else []))
        secs = time.perf_counter() - t0
        n = len(json.loads((out / "slurm2kf-report.json").read_text())["scripts"]) if not hang else -1
        figures[follow] = (n, secs)
        t.add(
            "links out of SRC: 26-link fan-out, /proc, /dev", traceback="Traceback" in err, hang=hang, bad_exit=rc != 0
        )
    return figures


def readers(t: Tally, base: Path) -> None:
    cls = "user files: FIFO, /dev/zero, huge, folder"
    base.mkdir(parents=True, exist_ok=True)
    good = base / "tj.yaml"
    good.write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: ok}\n"
        "spec: {runtimeRef: {name: torch-distributed}}\n"
    )
    script = base / "ok.sbatch"
    script.write_text(GOOD.format(name="ok"))
    for kind in ("fifo", "devzero", "huge", "folder"):
        f = base / f"r-{kind}"
        if kind == "fifo":
            os.mkfifo(f)
        elif kind == "devzero":
            f.symlink_to("/dev/zero")
        elif kind == "huge":
            with open(f, "wb") as fh:
                fh.truncate(65 << 20)
        else:
            f.mkdir()
        for args in (
            ["validate", f],
            ["validate", good, "--crd", f],
            ["validate", good, "--runtimes", f],
            ["inspect", f],
            ["convert", f],
            ["convert", script, "--profile", f],
            ["profile", "check", f],
            ["report", script, "--profile", f],
        ):
            if args[0] == "validate" and "--runtimes" in args and kind == "folder":
                continue  # a folder is a valid --runtimes argument
            rc, err, hang = run(args)
            t.add(cls, traceback="Traceback" in err, hang=hang, bad_exit=rc != 2)
    for cmd in ("inspect", "convert", "validate"):
        with open("/dev/zero", "rb") as zero:
            rc, err, hang = run([cmd, "-"], stdin=zero)
        t.add(cls, traceback="Traceback" in err, hang=hang, bad_exit=rc != 2)


def doubling() -> list:
    sys.path.insert(0, str(REPO))
    from translator.migrate.discover import _folder_plan
    from translator.profile.lint import lint_profile
    from translator.profile.load import parse_profile

    rows = []
    for n in (4000, 8000, 16000, 32000):
        text = "apiVersion: slurm2kf/v1\nkind: SiteProfile\npartitions:\n" + "".join(
            f"  p{i}: {{queue: q{i}, gpuType: t{i}}}\n" for i in range(n)
        )
        prof = parse_profile(text, "p.yaml")
        t0 = time.perf_counter()
        lint_profile(prof)
        lint = time.perf_counter() - t0
        names = (
            [f"t{i}.sh" for i in range(n)] + [f"t{i}.sbatch" for i in range(n)] + [f"t{i}.sh.sbatch" for i in range(n)]
        )
        t0 = time.perf_counter()
        _folder_plan(names, [f"t{i}.sh.trainjob.yaml" for i in range(0, n, 7)], "")
        plan = time.perf_counter() - t0
        rows.append((n, lint, plan))
    return rows


def main() -> int:
    global LIMIT
    ap = argparse.ArgumentParser()
    ap.add_argument("--names", type=int, default=500)
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--limit", type=int, default=60, help="seconds before a command counts as hung")
    a = ap.parse_args()
    LIMIT = a.limit
    t = Tally()
    with tempfile.TemporaryDirectory(prefix="slurm2kf-hostile-fs-") as d:
        base = Path(d)
        output_targets(t, base / "o")
        out_confinement(t, base / "c")
        file_names(t, base / "n", a.names, a.seed)
        figures = links_out_of_src(t, base / "l")
        readers(t, base / "r")
    print(t.table())
    print()
    for follow, (n, secs) in figures.items():
        print(
            f"26-link fan-out (2^13 paths to one script), {'--follow-symlinks' if follow else 'default'}: "
            f"{n} script(s) converted in {secs:.1f} s"
        )
    print()
    print("| entries | profile lint (s) | output-name plan (s) |\n|---:|---:|---:|")
    for n, lint, plan in doubling():
        print(f"| {n:,} | {lint:.3f} | {plan:.3f} |")
    bad = sum(r["tracebacks"] + r["hangs"] + r["outside"] + r["lost"] + r["bad_exit"] for r in t.rows.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
