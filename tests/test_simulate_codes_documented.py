"""Every S8xx code in translator/simulate is documented in docs/codes.md (codes-S), and nothing more."""

from __future__ import annotations

import re
from pathlib import Path

from docs_text import all_docs

ROOT = Path(__file__).resolve().parents[1]


def test_simulation_codes_are_documented():
    used = set()
    for p in (ROOT / "translator" / "simulate").rglob("*.py"):
        used |= set(re.findall(r'"(S8\d{2})"', p.read_text(encoding="utf-8")))
    # S801-S803, the reason codes of the inconclusive/refused verdicts (docs/simulate.md "The verdict") and the
    # sandbox's refusal, cap, deadline and source-annotation codes
    assert used == {"S801", "S802", "S803"} | {f"S8{n:02d}" for n in range(6, 14)} | {"S820", "S821", "S822", "S823"}
    m = re.search(r"<!-- SECTION:codes-S -->(.*?)<!-- /SECTION:codes-S -->", all_docs(), re.S)
    assert m
    documented = set(re.findall(r"\|\s*(S\d{3})\s*\|", m.group(1)))
    assert documented == used


def test_convert_simulate_adds_the_findings_and_the_json_object(cli):
    import json

    ex = ROOT / "examples"
    r = cli("convert", "--simulate", str(ex / "torchrun_multinode" / "job.sbatch"))
    assert r.exit_code == 0 and " info S801 simulation: the TrainJob starts the same 32 training" in r.stderr
    r = cli("convert", "--simulate", "--to", "json", str(ex / "container_pyxis" / "job.sbatch"))
    doc = json.loads(r.stdout)
    assert doc["simulation"]["verdict"] == "differs"
    s802 = [f for f in doc["plans"][0]["findings"] if f["code"] == "S802"]
    assert len(s802) == len(doc["simulation"]["differences"]) >= 1
    r = cli("convert", "--to", "json", str(ex / "torchrun_multinode" / "job.sbatch"))
    assert "simulation" not in json.loads(r.stdout)
