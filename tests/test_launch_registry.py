"""The launcher registry (translator/launchers/registry.py): one table the dispatcher, the reader and the
profile loader all read, and the contract docs/architecture.md describes."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from translator.launchers import registry

ROOT = Path(__file__).resolve().parents[1]


def test_every_family_module_has_the_contract():
    for family in registry.FAMILIES:
        mod = family.load()
        assert list(inspect.signature(mod.matches).parameters) == ["ctx", "toks", "srun"], family.name
        assert list(inspect.signature(mod.build).parameters) == ["ctx", "toks", "srun", "line"], family.name


def test_names_are_unique_and_end_with_the_fallback():
    assert len(set(registry.NAMES)) == len(registry.NAMES)
    assert registry.NAMES[-1] == registry.FALLBACK == "script"


def test_every_family_has_a_golden_case():
    for name in registry.NAMES:
        folder = ROOT / "tests" / "fixtures" / "convert" / name.replace("-", "_")
        assert list(folder.glob("*.expected.yaml")), name


def test_the_docs_name_every_family():
    profiles = (ROOT / "docs" / "profiles.md").read_text(encoding="utf-8")
    row = next(line for line in profiles.splitlines() if line.startswith("| `runtimes[]`"))
    for name in registry.NAMES:
        assert name in row, name
    arch = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for needle in (
        "## Adding a launcher",
        "FAMILIES",
        "matches(ctx, toks, srun)",
        "build(ctx, toks, srun, line)",
        "scan_options",
        "sim_stub.py",
        "examples/regenerate.py",
    ):
        assert needle in arch, needle


def test_the_reader_does_not_import_the_launcher_code():
    # classify reads the table only; the family modules and the detector load on first use
    code = (
        "import sys, translator.read.classify; "
        "print(sorted(m for m in sys.modules if m.startswith('translator.launchers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['translator.launchers', 'translator.launchers.intent', 'translator.launchers.registry']"


def test_a_family_is_tried_in_table_order(monkeypatch):
    """A throw-away family placed first claims a command a later family would have taken."""
    import types

    from translator.launchers import detect
    from translator.launchers.intent import LaunchIntent
    from translator.pipeline import read_and_resolve

    fake = types.ModuleType("translator.launchers._fake")
    fake.matches = lambda ctx, toks, srun: toks[0].value == "torchrun"
    fake.build = lambda ctx, toks, srun, line: LaunchIntent("fake", "torch", ("x",), (), line)
    monkeypatch.setitem(sys.modules, "translator.launchers._fake", fake)
    monkeypatch.setattr(registry, "FAMILIES", (registry.Family("fake", "_fake"),) + registry.FAMILIES)
    script, job, err = read_and_resolve("job.sbatch", b"#!/bin/bash\n#SBATCH -N 1\ntorchrun t.py\n")
    assert detect(script, job).family == "fake"
