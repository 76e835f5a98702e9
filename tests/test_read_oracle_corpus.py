"""The reader's refusals against real Slurm 22.05 over the whole corpus (fixtures, edge scripts, samples).

The reader decides only the file-level and tokenizer refusals (empty, no `#!`, NUL, CRLF, BOM, unmatched
quote, leading `:`); option errors belong to the resolve stage. So: every script the reader refuses must be
refused by sbatch itself, and every script sbatch refuses with one of those messages must be refused by the
reader. Fails (never skips) when the oracle is not available.
"""

from __future__ import annotations

import re

import pytest

from translator.read import ReadError, read_file

pytestmark = pytest.mark.slurm

READER_MESSAGES = re.compile(
    r"empty|whitespace|does not look like a batch script|NULL|DOS line breaks|Unmatched|"
    r"Unexpected `:`",
    re.I,
)


def test_reader_refusals_agree_with_real_sbatch(slurm_oracle, corpus_scripts):
    disagreements = []
    checked = 0
    for path in corpus_scripts:
        rec = slurm_oracle[path]
        if rec.get("rejected_by") not in ("sbatch", "slurmctld", None):
            continue
        try:
            script = read_file(str(path))
        except ReadError:
            continue
        checked += 1
        sbatch_refused = rec.get("rejected_by") == "sbatch"
        ours = script.sbatch_refuses
        if ours and not sbatch_refused:
            disagreements.append((str(path), "reader refuses, sbatch accepts", rec.get("error")))
        if sbatch_refused and READER_MESSAGES.search(rec.get("error") or "") and not ours:
            disagreements.append((str(path), "sbatch refuses for a reader reason, reader accepts", rec.get("error")))
    assert checked > 100
    assert disagreements == []


def test_ignored_lines_do_not_reach_sbatch(slurm_oracle, corpus_scripts):
    """A value that only an ignored line (R120, look-alikes) holds must not be in sbatch's merged options."""
    checked = 0
    for path in corpus_scripts:
        rec = slurm_oracle[path]
        if not rec.get("accepted") or not isinstance(rec.get("cli_options"), dict):
            continue
        try:
            script = read_file(str(path))
        except ReadError:
            continue
        applied = {w for d in script.directives for w in d.words}
        for ign in script.ignored:
            for m in re.finditer(r"--(comment|job-name|partition)=(\S+)", ign.text):
                opt, value = m.group(1), m.group(2).strip("'\"")
                if f"--{opt}={value}" in applied or value in applied:
                    continue
                checked += 1
                assert rec["cli_options"].get(opt) != value, (str(path), ign.line, ign.text)
    assert checked >= 1
