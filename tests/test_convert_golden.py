"""Golden conversions: tests/fixtures/convert/<family>/<case>.sbatch -> <case>.expected.yaml.

The expected YAML was written by hand from what each runtime does (see the comment block at the top
of every expected file), not copied from slurm2kf's output. Documents are compared parsed, not as
text. Header lines of the expected file:

  # convert-args: extra `slurm2kf convert` options
  # findings: the exact set of L3xx/P4xx codes reported on stderr
  # exit: the exit status
  # plan.FIELD: a YAML value the plan field must equal (for what the TrainJob only shows wrapped)

Placeholders: "<<pip-install>>" (the emitter's install script, tested in test_emit_*),
"<<exec-checked>>" (shell text whose behaviour test_launch_shims.py checks by running it), and HASH in
metadata.name (the first 6 hex digits of sha256 of the original job name, the naming rule).
"""

from __future__ import annotations

import hashlib
import re
import shlex
from pathlib import Path

import pytest
import yaml

FIXTURES = Path(__file__).parent / "fixtures" / "convert"
CASES = sorted(p for p in FIXTURES.glob("*/*.sbatch"))
PLACEHOLDERS = ("<<pip-install>>", "<<exec-checked>>")


def _header(path: Path) -> dict:
    out = {"convert-args": "", "findings": "", "exit": "0", "plan": {}}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        key, _, value = line[1:].strip().partition(":")
        if key.startswith("plan."):
            out["plan"][key[5:]] = yaml.safe_load(value)
        elif key in out:
            out[key] = value.strip()
    return out


def _expected_docs(path: Path, job_name_of):
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    for d in docs:
        name = d["metadata"]["name"]
        if "HASH" in name:
            original = d["metadata"]["annotations"]["slurm2kf.io/job-name"]
            d["metadata"]["name"] = name.replace("HASH", hashlib.sha256(original.encode()).hexdigest()[:6])
    return docs


def _match(expected, actual, where="") -> list:
    """Differences between expected and actual, placeholders matching any string."""
    if isinstance(expected, str) and expected in PLACEHOLDERS:
        return [] if isinstance(actual, str) and actual else [f"{where}: expected text, got {actual!r}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected a mapping, got {actual!r}"]
        diffs = []
        for k in sorted(set(expected) | set(actual)):
            if k not in actual:
                diffs.append(f"{where}.{k}: missing")
            elif k not in expected:
                diffs.append(f"{where}.{k}: unexpected {actual[k]!r}")
            else:
                diffs += _match(expected[k], actual[k], f"{where}.{k}")
        return diffs
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: expected {expected!r}, got {actual!r}"]
        diffs = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            diffs += _match(e, a, f"{where}[{i}]")
        return diffs
    return (
        []
        if expected == actual and type(expected) is type(actual)
        else [f"{where}: expected {expected!r}, got {actual!r}"]
    )


_CODE = re.compile(r": (?:error|warning|info) ([LP]\d{3}) ")


def test_there_is_a_golden_case_per_family():
    families = {p.parent.name for p in CASES}
    assert {
        "torchrun",
        "srun_tasks",
        "accelerate",
        "deepspeed",
        "composer",
        "mpi",
        "jax",
        "python",
        "container",
        "script",
        "findings",
    } <= families
    assert len(CASES) >= 12


@pytest.mark.parametrize("case", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_golden(case: Path, cli, monkeypatch):
    expected_path = case.with_name(case.stem + ".expected.yaml")
    head = _header(expected_path)
    monkeypatch.chdir(FIXTURES)
    rel = f"{case.parent.name}/{case.name}"
    result = cli("convert", rel, *shlex.split(head["convert-args"]))
    assert result.exit_code == int(head["exit"]), result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    expected = _expected_docs(expected_path, None)
    diffs = []
    assert len(docs) == len(expected), result.stdout
    for e, a in zip(expected, docs):
        diffs += _match(e, a, "doc")
    assert not diffs, "\n".join(diffs) + "\n\n" + result.stdout
    codes = set(_CODE.findall(result.stderr))
    assert codes == set(head["findings"].split()), result.stderr
    if head["plan"]:
        from translator.pipeline import convert

        plans = convert(rel).plans
        for field, value in head["plan"].items():
            assert list(getattr(plans[0], field)) == value, field
