#!/usr/bin/env python3
"""Regenerate the worked examples: every `examples/<case>/` folder holding a `job.sbatch`.

    .venv/bin/python examples/regenerate.py            # rewrite the outputs that changed
    .venv/bin/python examples/regenerate.py --check    # exit 1 and name the stale files; write nothing

Each case gets, from its `job.sbatch`, what these commands print when run inside the case folder
(so every path in the outputs is `job.sbatch`, whatever the machine and the checkout):

    trainjob.yaml   slurm2kf convert job.sbatch                    (standard output)
    findings.txt    slurm2kf convert job.sbatch                    (standard error: the findings)
    trainjob.py     slurm2kf convert --to python job.sbatch        (standard output)
    simulate.txt    slurm2kf simulate job.sbatch                   (standard output, without the
                                                                    machine-dependent `isolation:` note)

`README.md` in each case is written by hand; --check only reports it when it is missing. The commands
run in this process (a few seconds for all cases), with no site profile: $SLURM2KF_PROFILE is ignored,
and a `slurm2kf.yaml` above the examples is an error rather than silently changing the outputs.
`simulate` needs unprivileged user namespaces (it refuses to run without them, S820); without them
this script stops before writing anything.
"""
from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Sequence, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SOURCE = "job.sbatch"
GENERATED = ("trainjob.yaml", "trainjob.py", "findings.txt", "simulate.txt")
HAND_WRITTEN = ("README.md",)


class RegenerateError(Exception):
    """Why the outputs cannot be produced on this machine (exit status 2)."""


def cases(root: Path = HERE) -> List[Path]:
    """The case folders, in name order."""
    return sorted(p.parent for p in root.glob(f"*/{SOURCE}"))


@contextmanager
def _inside(folder: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def _runner():
    from click.testing import CliRunner

    try:
        return CliRunner(mix_stderr=False)
    except TypeError:            # click >= 8.2 always keeps stderr apart
        return CliRunner()


def _run(runner, args: Sequence[str], ok: Sequence[int] = (0,)):
    from translator.cli import cli

    r = runner.invoke(cli, list(args), env={"SLURM2KF_PROFILE": None}, catch_exceptions=True)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise RegenerateError(f"slurm2kf {' '.join(args)}: {type(r.exception).__name__}: {r.exception}")
    if r.exit_code not in ok:
        raise RegenerateError(f"slurm2kf {' '.join(args)} exited with {r.exit_code}: {r.stderr.strip()}")
    return r


def _without_isolation_note(text: str) -> str:
    """Drop `isolation: ...` (it names the sandbox and its uid, which depend on the machine) and the
    `notes:` header when nothing else is left under it."""
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("isolation:")]
    out = []
    for i, ln in enumerate(lines):
        if ln.strip() == "notes:" and (i + 1 == len(lines) or not lines[i + 1].startswith("    ")):
            continue
        out.append(ln)
    return "\n".join(out) + "\n"


def check_machine(root: Path = HERE) -> None:
    from translator.profile.lookup import find_profile
    from translator.simulate.sandbox import namespaces_available

    found = find_profile(str(root / "case" / SOURCE), environ={})
    if found:
        raise RegenerateError(f"{found} would apply to the examples as their site profile; the examples are "
                              "converted without one (move it away or regenerate elsewhere)")
    if not namespaces_available():
        raise RegenerateError("simulate cannot use unprivileged user namespaces on this machine (it refuses "
                              "to run without them, S820); regenerate where `slurm2kf simulate` runs")


def outputs(case: Path) -> Dict[str, str]:
    """The generated files of one case, name -> text, as the current code produces them."""
    runner = _runner()
    with _inside(case):
        conv = _run(runner, ["convert", SOURCE], ok=(0, 1))      # 1: error findings, output still complete
        py = _run(runner, ["convert", "--to", "python", SOURCE], ok=(0, 1))
        sim = _run(runner, ["simulate", SOURCE], ok=(0, 1))
    return {"trainjob.yaml": conv.stdout, "findings.txt": conv.stderr, "trainjob.py": py.stdout,
            "simulate.txt": _without_isolation_note(sim.stdout)}


def stale(root: Path = HERE, write: bool = False) -> Tuple[List[str], List[str]]:
    """(generated files whose committed text differs from what the current code produces, hand-written
    files that are missing), as paths relative to the folder above `root` (the repository). With
    write=True the first are rewritten."""
    check_machine(root)
    changed, missing = [], []
    for case in cases(root):
        for name, text in outputs(case).items():
            path = case / name
            current = path.read_text(encoding="utf-8") if path.is_file() else None
            if current != text:
                changed.append(str(path.relative_to(root.parent)))
                if write:
                    path.write_text(text, encoding="utf-8")
        missing += [str((case / n).relative_to(root.parent)) for n in HAND_WRITTEN if not (case / n).is_file()]
    return changed, missing


def main(argv: Sequence[str] = (), root: Path = HERE) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 and name the files that are not up to date")
    a = ap.parse_args(list(argv))
    try:
        import click  # noqa: F401  (the project's dependencies: run with the project's virtualenv)
    except ImportError as exc:
        print(f"examples/regenerate.py: {exc}; run it with the project's interpreter, e.g. "
              ".venv/bin/python examples/regenerate.py", file=sys.stderr)
        return 2
    try:
        changed, missing = stale(root, write=not a.check)
    except RegenerateError as exc:
        print(f"examples/regenerate.py: {exc}", file=sys.stderr)
        return 2
    for p in changed:
        print(f"{'stale' if a.check else 'wrote'}: {p}")
    for p in missing:
        print(f"missing (write it by hand): {p}")
    if a.check and changed:
        print("to update them: python examples/regenerate.py", file=sys.stderr)
    return 1 if missing or (a.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
