"""migrate keeps going when one script hangs or kills its worker process (issue 6), and records it."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from translator.migrate import worker
from translator.migrate.run import MigrateOptions, migrate
from translator.pipeline import ConvertSettings

GOOD = """#!/bin/bash
#SBATCH --job-name={name}
#SBATCH --nodes=1
#SBATCH --gpus-per-node=1
python train.py
"""


def _repo(tmp_path: Path, names) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    for n in names:
        (src / f"{n}.sbatch").write_text(GOOD.format(name=n))
    return src


def _records(out: Path):
    report = json.loads((out / "slurm2kf-report.json").read_text())
    return {s["path"]: s for s in report["scripts"]}


def _codes(record) -> set:
    return {i["code"] for i in record.get("issues", [])}


def test_a_script_that_kills_its_worker_is_recorded_and_the_rest_convert(tmp_path, monkeypatch):
    names = [f"job{i:02d}" for i in range(30)] + ["boom"]
    src = _repo(tmp_path, names)
    out = tmp_path / "out"
    real = worker.process

    def deadly(c, ctx, suffix=None):  # inherited by the forked workers
        if c.rel == "boom.sbatch":
            os.kill(os.getpid(), signal.SIGKILL)
        return real(c, ctx, suffix)

    monkeypatch.setattr(worker, "process", deadly)
    res = migrate(
        MigrateOptions(
            src=str(src), out=str(out), settings=ConvertSettings(), jobs=2, progress=False, echo=lambda s: None
        )
    )
    assert res.exit_code == 1
    records = _records(out)
    assert set(records) == {f"{n}.sbatch" for n in names}  # nobody lost, nobody twice
    assert "M616" in _codes(records["boom.sbatch"])
    for n in names[:-1]:
        assert "M616" not in _codes(records[f"{n}.sbatch"]), n  # only the culprit is blamed
        assert (out / f"{n}.trainjob.yaml").is_file(), n
    assert not (out / "boom.trainjob.yaml").exists()


def test_a_script_over_the_time_limit_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch):
    names = ["fast", "slow"]
    src = _repo(tmp_path, names)
    out = tmp_path / "out"
    real = worker._convert

    def slow_convert(c, data, ctx, suffix):
        if c.rel == "slow.sbatch":
            while True:  # a conversion that never ends
                pass
        return real(c, data, ctx, suffix)

    monkeypatch.setattr(worker, "_convert", slow_convert)
    res = migrate(
        MigrateOptions(
            src=str(src),
            out=str(out),
            settings=ConvertSettings(),
            jobs=1,
            timeout=0.5,
            progress=False,
            echo=lambda s: None,
        )
    )
    assert res.exit_code == 1
    records = _records(out)
    assert "M615" in _codes(records["slow.sbatch"])
    assert not _codes(records["fast.sbatch"]) & {"M615", "M606", "M616"}
    assert (out / "fast.trainjob.yaml").is_file()
