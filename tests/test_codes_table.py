"""docs/codes.md's code tables are generated from translator/codes.py (tools/gen_codes_doc.py).

The per-family *_codes_documented tests check the page against the codes the source emits; this test
checks that the page is exactly what the table generates, so the table is the one place a code lives."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import gen_codes_doc  # noqa: E402

from translator.codes import CODES, TABLES  # noqa: E402


def test_the_page_is_what_the_table_generates():
    page = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    assert gen_codes_doc.render(page) == page
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_codes_doc.py"), "--check"], capture_output=True)
    assert proc.returncode == 0, proc.stderr


def test_an_edited_row_is_put_back_and_check_fails(tmp_path):
    page = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    first = next(c for c in CODES if c.table == "L")
    row = "| " + " | ".join(first[1:]) + " |"
    assert row in page
    edited = page.replace(row, row.replace(first.meaning, "something else"))
    assert edited != page and gen_codes_doc.render(edited) == page


def test_codes_are_unique_and_well_formed():
    codes = [c.code for c in CODES]
    assert len(codes) == len(set(codes))
    assert {c.table for c in CODES} == set(TABLES)
    for c in CODES:
        assert re.fullmatch(r"[ROLPFMVKS]\d{3}", c.code), c
        assert c.code[0] == c.table[0], c  # the family letter names the table
        # "error", "info/warning", or "error (warning if ...)": the words are severities
        words = set(re.findall(r"\b(error|warning|info)\b", c.severity))
        assert words and c.severity.split(" ")[0].split("/")[0] in ("error", "warning", "info"), c
        assert c.meaning, c
