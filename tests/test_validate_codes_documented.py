"""Every V7xx code the source emits is in docs/codes.md (codes-V), and the section lists no other."""

from __future__ import annotations

import re
from pathlib import Path

from docs_text import doc_section

ROOT = Path(__file__).resolve().parents[1]
_CODE = re.compile(r"(?<![A-Za-z0-9])(V7\d\d)(?!\d)")


def test_validate_codes_are_documented():
    used = set()
    for p in (ROOT / "translator").rglob("*.py"):  # validate/, and the CLI's own V700/V701 messages
        used |= set(_CODE.findall(p.read_text(encoding="utf-8")))
    assert {"V700", "V702", "V710"} <= used  # the scan finds the codes (f-strings and literals)
    documented = set(re.findall(r"^\|\s*(V7\d\d)\s*\|", doc_section("codes-V"), re.M))
    assert used - documented == set(), f"missing from docs/codes.md codes-V: {sorted(used - documented)}"
    assert documented - used == set(), f"documented but never emitted: {sorted(documented - used)}"
