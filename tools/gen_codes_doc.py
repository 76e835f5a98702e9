#!/usr/bin/env python3
"""Write the code tables of docs/codes.md from translator/codes.py (the prose around them stays as written).

python tools/gen_codes_doc.py            # rewrite docs/codes.md
python tools/gen_codes_doc.py --check    # exit 1 when docs/codes.md is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HEADER = "| code | severity | meaning | example | fix |"
RULE = "|---|---|---|---|---|"


def render(page: str) -> str:
    """`page` with each code table's rows replaced by the rows of translator/codes.py, table by table."""
    from translator.codes import CODES, TABLES

    rows = {name: [c for c in CODES if c.table == name] for name in TABLES}
    lines = page.split("\n")
    out: list[str] = []
    tables = iter(TABLES)
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if line != HEADER:
            continue
        name = next(tables, None)
        if name is None:
            raise SystemExit("docs/codes.md has more code tables than translator/codes.py TABLES")
        out.append(RULE)
        out += ["| " + " | ".join(c[1:]) + " |" for c in rows[name]]
        while i < len(lines) and lines[i].startswith("|"):  # the old separator and rows
            i += 1
    if next(tables, None) is not None:
        raise SystemExit("translator/codes.py TABLES names more tables than docs/codes.md has")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when the page is out of date")
    a = ap.parse_args()
    path = ROOT / "docs" / "codes.md"
    page = path.read_text(encoding="utf-8")
    new = render(page)
    if a.check:
        if new != page:
            print("docs/codes.md is out of date: run python tools/gen_codes_doc.py", file=sys.stderr)
            return 1
        return 0
    if new != page:
        path.write_text(new, encoding="utf-8")
        print("wrote docs/codes.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
