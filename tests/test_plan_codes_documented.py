"""Every L3xx/P4xx code in translator/launchers and translator/plan is documented in docs/codes.md (codes-L/P)."""

from __future__ import annotations

from docs_text import all_docs

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _section(text: str, name: str) -> str:
    m = re.search(rf"<!-- SECTION:{name} -->(.*?)<!-- /SECTION:{name} -->", text, re.S)
    assert m, name
    return m.group(1)


def test_codes_are_documented():
    readme = all_docs()
    used = set()
    for pkg in ("launchers", "plan"):
        for p in (ROOT / "translator" / pkg).glob("*.py"):
            used |= set(re.findall(r'"([LP]\d{3})"', p.read_text(encoding="utf-8")))
    assert used
    for code in sorted(used):
        section = _section(readme, "codes-L" if code[0] == "L" else "codes-P")
        assert re.search(rf"\|\s*{code}\s*\|", section), f"{code} missing from docs/codes.md"
    documented = set(re.findall(r"\|\s*([LP]\d{3})\s*\|", _section(readme, "codes-L") + _section(readme, "codes-P")))
    assert documented == used, f"documented but unused: {sorted(documented - used)}"


def test_reader_codes_are_documented():
    """Every R1xx code defined in translator/read is in the codes-R section, and the section lists no other."""
    docs = all_docs()
    used = set()
    for p in (ROOT / "translator" / "read").glob("*.py"):
        used |= set(re.findall(r'"(R1\d{2})"', p.read_text(encoding="utf-8")))
    assert "R147" in used
    documented = set(re.findall(r"\|\s*(R1\d{2})\s*\|", _section(docs, "codes-R")))
    assert used <= documented, f"missing from docs/codes.md: {sorted(used - documented)}"
