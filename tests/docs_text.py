"""The project's documentation as the tests read it: README.md plus every page under docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def all_docs() -> str:
    parts = [(ROOT / "README.md").read_text(encoding="utf-8")]
    parts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join(parts)


def doc_section(name: str) -> str:
    """The text between <!-- SECTION:name --> and <!-- /SECTION:name --> wherever it lives."""
    m = re.search(rf"<!-- SECTION:{re.escape(name)} -->(.*?)<!-- /SECTION:{re.escape(name)} -->", all_docs(), re.S)
    assert m, f"section {name} not found in README.md or docs/"
    return m.group(1)
