"""Measure P447/P448 on the hand-labelled cases of tests/fixtures/findings_precision/cases.txt.

Each case is put into a one-node job script (an `env` case as the line before the launch, an `args`
case appended to the launch line's arguments, a `launch` case as the launch line), converted with
translator.pipeline.convert, and counted as fired when a finding of the code names the case's line.
Run as a program to print the figures of the translator found on PYTHONPATH (docs/findings-precision.md
gives them for the tree before and after the change):

    PYTHONPATH=. python tests/findings_precision.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple

CASES = Path(__file__).resolve().parent / "fixtures" / "findings_precision" / "cases.txt"
_HEAD = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
_LAUNCH = "torchrun --nproc-per-node 4 train.py"
LINE = {"env": 5, "args": 6, "launch": 6}  # the line a case's finding must name


class Case(NamedTuple):
    where: str
    secret: bool
    address: bool
    text: str


class Counts(NamedTuple):
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def cases() -> list[Case]:
    out = []
    for raw in CASES.read_text(encoding="utf-8").split("\n"):
        if not raw.strip() or raw.startswith("#"):
            continue
        where, secret, address, text = raw.split("|", 3)
        out.append(Case(where, secret == "y", address == "y", text))
    return out


def script_of(case: Case) -> str:
    if case.where == "env":
        return _HEAD + case.text + "\n" + _LAUNCH + "\n"
    if case.where == "args":
        return _HEAD + "echo start\n" + _LAUNCH + " " + case.text + "\n"
    return _HEAD + "echo start\n" + case.text + "\n"


def fired(case: Case) -> set[str]:
    """The codes among P447/P448 that a finding on the case's line carries."""
    from translator.pipeline import convert

    conv = convert("case.sbatch", data=script_of(case).encode("utf-8"))
    # (the whole-body fallback, `bash -c` around the script, names no line for its command)
    return {f.code for f in conv.findings if f.code in ("P447", "P448") and f.line in (LINE[case.where], None)}


def measure() -> dict[str, Counts]:
    tallies = {"P447": [0, 0, 0, 0], "P448": [0, 0, 0, 0]}
    for case in cases():
        got = fired(case)
        for code, want in (("P447", case.secret), ("P448", case.address)):
            hit = code in got
            t = tallies[code]
            t[0 if hit and want else 1 if hit else 2 if want else 3] += 1
    return {code: Counts(*t) for code, t in tallies.items()}


def misses() -> list[tuple[str, Case, set[str]]]:
    """(code, case, fired) for each case a code gets wrong."""
    out = []
    for case in cases():
        got = fired(case)
        for code, want in (("P447", case.secret), ("P448", case.address)):
            if (code in got) != want:
                out.append((code, case, got))
    return out


if __name__ == "__main__":
    for code, c in measure().items():
        print(f"{code}: TP {c.tp} FP {c.fp} FN {c.fn} TN {c.tn} precision {c.precision:.2f} recall {c.recall:.2f}")
    if "-v" in sys.argv:
        for code, case, got in misses():
            print(f"  wrong {code}: {case.where} {case.text!r} fired={sorted(got)}")
