"""Every M6xx code used by migrate/report is documented in docs/codes.md (codes-M), and nothing else is."""

from __future__ import annotations

from docs_text import all_docs

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    *(ROOT / "translator" / "migrate").glob("*.py"),
    *(ROOT / "translator" / "report").glob("*.py"),
    ROOT / "translator" / "cli" / "migrate_cmd.py",
    ROOT / "translator" / "cli" / "report_cmd.py",
]


def test_m_codes_are_documented():
    readme = all_docs()
    m = re.search(r"<!-- SECTION:codes-M -->(.*?)<!-- /SECTION:codes-M -->", readme, re.S)
    assert m
    used = set()
    for p in SOURCES:
        used |= set(re.findall(r"\b(M6\d\d)\b", p.read_text(encoding="utf-8")))
    assert {"M601", "M602", "M604", "M605", "M606", "M607", "M610", "M613"} <= used
    documented = set(re.findall(r"^\|\s*(M6\d\d)\s*\|", m.group(1), re.M))
    assert documented == used, (sorted(used - documented), sorted(documented - used))
