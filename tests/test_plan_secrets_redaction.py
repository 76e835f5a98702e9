"""A secret that the TrainJob YAML hides is in clear in no output of the real CLI (translator/plan/redact.py).

The job below writes secrets the ways scripts do (issue 23 point 6): exports by name and by shape, in
single quotes, a URL with a password, a JWT, values of `--api-key`/`--password` on the launch line, an
`apptainer exec --env` item. The YAML reads them from a Secret (Kubernetes `valueFrom.secretKeyRef`); each
other output (the Python file, `--to json`, the Markdown/HTML/JSON reports with the script's own lines,
simulate's table, `-v` and `--json`, `convert --simulate`, `migrate`'s folder, and everything printed on
stderr) must not show them either. Each run is the real program in a child process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

HF = "hf_QmVnYXRpdmVUb2tlbkV4YW1wbGUxMjM0"
DB_PASS = "s3cr3t-pa55"
URL_PW = "Xk9vLq2Rz"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
API_KEY = "Zx8Kp2Lm9Qr4Tv6Y"
PASSWORD = "hunter2secret"
WANDB = "3f2a9c7e1b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a"
SECRETS = (HF, DB_PASS, URL_PW, JWT, API_KEY, PASSWORD, WANDB)

TORCH_JOB = f"""#!/bin/bash
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH -J leak
export HF_TOKEN={HF}
export DB_PASS='{DB_PASS}'
export DATABASE_URL=postgres://trainer:{URL_PW}@db.internal:5432/metrics
export AUTH_JWT={JWT}
echo "token is $HF_TOKEN"
srun torchrun --nnodes 2 --nproc-per-node 4 train.py --api-key {API_KEY} --password {PASSWORD}
"""

APPTAINER_JOB = f"""#!/bin/bash
#SBATCH -N 1
#SBATCH --gpus-per-node=1
#SBATCH -J leak2
srun apptainer exec --nv --env WANDB_API_KEY={WANDB} docker://nvcr.io/nvidia/pytorch:24.01-py3 python train.py
"""


def _run(*args, cwd) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run(
        [sys.executable, "-m", "translator", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
        env=env,
    )
    assert r.returncode in (0, 1), (args, r.returncode, r.stderr[-2000:])
    return r.stdout + r.stderr


def _clean(where: str, text: str) -> None:
    leaked = [s for s in SECRETS if s in text]
    assert not leaked, f"{where} shows {leaked}"


@pytest.fixture
def jobs(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "torch.sbatch").write_text(TORCH_JOB)
    (src / "apptainer.sbatch").write_text(APPTAINER_JOB)
    return tmp_path, src


def test_convert_outputs_hide_every_secret(jobs):
    tmp, src = jobs
    for name in ("torch.sbatch", "apptainer.sbatch"):
        script = src / name
        yaml_text = _run("convert", script, "--findings-comment", cwd=tmp)
        _clean(f"convert {name}", yaml_text)
        assert "secretKeyRef" in yaml_text  # (the YAML reads them from the Secret)
        _clean(f"convert --to python {name}", _run("convert", "--to", "python", script, cwd=tmp))
        _clean(f"convert --to json {name}", _run("convert", "--to", "json", script, cwd=tmp))
    sim = _run("convert", "--simulate", "--to", "json", src / "torch.sbatch", cwd=tmp)
    _clean("convert --simulate --to json", sim)
    assert '"simulation"' in sim


def test_reports_hide_every_secret_and_still_show_the_lines(jobs):
    tmp, src = jobs
    for fmt in ("md", "html", "json"):
        out = tmp / f"report.{fmt}"
        _clean(f"report {fmt} (printed)", _run("report", src, "-o", out, cwd=tmp))
        _clean(f"report {fmt}", out.read_text())
    report = json.loads((tmp / "report.json").read_text())
    rows = [r for s in report["scripts"] if s["path"].endswith("torch.sbatch") for r in s["rows"]]
    by_line = {r["line"]: r["text"] for r in rows}
    # the script's own lines are shown, the values hidden (line numbers of TORCH_JOB)
    assert by_line[6] == "export HF_TOKEN=<secret>"
    assert by_line[7] == "export DB_PASS='<secret>'"
    assert by_line[8] == "export DATABASE_URL=<secret>"  # (the Secret holds the whole value)
    out = tmp / "sim.json"
    _clean("report --simulate (printed)", _run("report", "--simulate", src, "-o", out, cwd=tmp))
    _clean("report --simulate", out.read_text())
    assert '"simulation"' in out.read_text()


def test_simulate_hides_every_secret(jobs):
    tmp, src = jobs
    for name in ("torch.sbatch", "apptainer.sbatch"):
        script = src / name
        _clean(f"simulate {name}", _run("simulate", script, cwd=tmp))
        verbose = _run("simulate", "-v", script, cwd=tmp)
        _clean(f"simulate -v {name}", verbose)
        as_json = _run("simulate", "--json", script, cwd=tmp)
        _clean(f"simulate --json {name}", as_json)
    # the Slurm side ran the program with the values: they are there, shown as <secret>
    obj = json.loads(_run("simulate", "--json", src / "torch.sbatch", cwd=tmp).splitlines()[0])
    argv = obj["slurm"][0]["argv"]
    assert argv[argv.index("--api-key") + 1] == "<secret>" and argv[argv.index("--password") + 1] == "<secret>"
    assert dict(obj["slurm"][0]["env"]).get("HF_TOKEN") == "<secret>"


def test_migrate_folder_hides_every_secret(jobs):
    tmp, src = jobs
    out = tmp / "out"
    _clean("migrate (printed)", _run("migrate", src, "-o", out, cwd=tmp))
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.suffix == ".yaml" for p in files)
    for p in files:
        _clean(f"migrate {p.name}", p.read_text(errors="replace"))


def test_redact_unit():
    from translator.plan.redact import redact, redact_data

    assert redact("x postgres://u:pw@h/db y") == "x postgres://u:<secret>@h/db y"
    assert redact("x postgres://u:$PW@h/db") == "x postgres://u:$PW@h/db"
    assert redact(f"a {HF} b") == "a <secret> b"
    assert redact("pass abcd and abc", {"abcd", "abc"}) == "pass <secret> and abc"  # (3 chars: kept)
    data = {"k": [("x", f"--token {API_KEY}")], "n": 3}
    assert redact_data(data, {API_KEY}) == {"k": [("x", "--token <secret>")], "n": 3}
    same = {"k": ["clean"]}
    assert redact_data(same, {API_KEY}) is same


def test_redact_data_rebuilds_frozen_records_and_leaves_other_values():
    import dataclasses

    from translator.plan.redact import redact_data

    @dataclasses.dataclass(frozen=True)
    class Rec:
        argv: tuple
        env: dict
        tags: frozenset
        n: int = 1

    r = Rec(("--password", PASSWORD), {"HF_TOKEN": HF}, frozenset({DB_PASS, "x"}))
    got = redact_data(r, {PASSWORD, DB_PASS})
    assert got == Rec(("--password", "<secret>"), {"HF_TOKEN": "<secret>"}, frozenset({"<secret>", "x"}))
    assert r.argv[1] == PASSWORD  # the original is left as it was


def test_a_secret_is_not_a_simulate_difference(tmp_path):
    # The Slurm side runs with the script's values; the Kubeflow side reads them from the job's Secret, which
    # P447 asks to create with the same values: the same processes, so `equivalent` (not `differs`).
    job = tmp_path / "env.sbatch"
    job.write_text(
        "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=2\n"
        f"export HF_TOKEN={HF}\nexport DATABASE_URL=postgres://trainer:{URL_PW}@db.internal:5432/metrics\n"
        f"torchrun --nproc-per-node 2 train.py --api-key {API_KEY}\n"
    )
    out = _run("simulate", "--json", job, cwd=tmp_path)
    _clean("simulate --json", out)
    obj = json.loads(out.splitlines()[0])
    assert obj["verdict"] == "equivalent", obj["differences"]
    assert len(obj["slurm"]) == len(obj["kubeflow"]) == 2
