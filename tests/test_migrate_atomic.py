"""A migrate run killed with SIGKILL half-way leaves no half-written file: every output is complete
or absent, temporary files are hidden and swept by the next run, and the next run completes the tree."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).parent / "fixtures" / "repo"
N_SCRIPTS = 2000


def _make_repo(root: Path) -> None:
    texts = [
        p.read_text()
        for p in sorted(REPO.rglob("*"))
        if p.is_file() and p.read_bytes().startswith(b"#!") and b"\n#SBATCH" in p.read_bytes()
    ]
    for i in range(N_SCRIPTS):
        d = root / f"g{i % 30:02d}"
        d.mkdir(parents=True, exist_ok=True)
        text = texts[i % len(texts)].replace("--job-name=", f"--job-name=k{i}-").replace("-J ", f"-J k{i}-")
        (d / f"job{i:04d}.sbatch").write_text(text)


def test_sigkill_mid_run_leaves_only_complete_files(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    _make_repo(src)
    cmd = [sys.executable, "-m", "translator", "migrate", str(src), "-o", str(out), "--jobs", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if out.exists() and sum(1 for _ in out.rglob("*.trainjob.yaml")) >= 40:
                break
            assert proc.poll() is None, "the run finished before it could be killed: make the repository larger"
            time.sleep(0.01)
        assert proc.poll() is None
        os.killpg(proc.pid, signal.SIGKILL)  # the run and its worker processes, mid-write
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    outputs = [p for p in out.rglob("*") if p.is_file()]
    visible = [p for p in outputs if not p.name.startswith(".")]
    assert visible, "some outputs were written before the kill"
    assert not (out / "slurm2kf-report.json").exists()  # reports come last
    for p in visible:
        assert not p.name.endswith("slurm2kf-tmp")
        text = p.read_text(encoding="utf-8")
        if p.name.endswith(".trainjob.yaml"):
            docs = [d for d in yaml.safe_load_all(text) if d]
            assert docs and all(d.get("kind") == "TrainJob" for d in docs), p
            assert text.endswith("\n")
        elif p.name.endswith(".trainjob.py"):
            tree = ast.parse(text)  # complete Python: the main guard is the last statement
            assert isinstance(tree.body[-1], ast.If), p
        elif p.name == "kustomization.yaml":
            assert yaml.safe_load(text)["kind"] == "Kustomization"
    hidden = [p for p in outputs if p.name.startswith(".")]
    assert all(
        p.name.endswith(".slurm2kf-tmp") or p.name in (".slurm2kf-migrate.json", ".slurm2kf-migrate.lock")
        for p in hidden
    )
    if (out / ".slurm2kf-migrate.json").exists():
        json.loads((out / ".slurm2kf-migrate.json").read_text())

    # The next run sweeps the temporary files and completes the tree; its outputs for the files the
    # killed run had written are byte-identical (they were complete).
    # (One folder of the tree, to keep the test short: the sweep covers the whole output folder.)
    before = {
        p: p.read_bytes()
        for p in visible
        if p.name.endswith((".trainjob.yaml", ".trainjob.py")) and p.parent.name == "g00"
    }
    done = subprocess.run(cmd + ["--include", "g00/*"], capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    assert not list(out.rglob("*slurm2kf-tmp"))
    report = json.loads((out / "slurm2kf-report.json").read_text())
    assert report["summary"]["scripts"] == len(list((src / "g00").iterdir()))
    renamed = set(json.loads((out / ".slurm2kf-migrate.json").read_text())["renamed"])
    assert before, "the killed run had written outputs in g00"
    for p, data in before.items():
        rel = p.relative_to(out).as_posix().rsplit(".trainjob.", 1)[0] + ".sbatch"
        if rel not in renamed:
            assert p.read_bytes() == data, p
