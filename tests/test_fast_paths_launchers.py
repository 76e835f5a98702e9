"""The launcher modules' fast paths give exactly what the patterns they replaced give (issue 13).

Each helper below searches a script body for the literal part of a pattern and checks the rest by hand
(a pattern starting with `\\b` or a look-behind is tried by the regex engine at every character). They are
checked against the original patterns on generated text that stresses word boundaries: underscores,
digits, non-ASCII letters and digits, `$` runs, quotes, backslashes, newlines and other blanks.
"""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from translator.launchers import common, script

# pieces that sit at the edges of the searched words
_EDGES = ["", " ", "\n", "\t", "\r", "\x0b", "\x85", "\u2028", "\u00a0", "_", "x", "Z", "9", "é", "٣", "²", "$", "$$"]
_EDGES += ["{", "}", "#", "@", "*", "'", '"', "\\", ";", "&", "|", "(", ")", "`", "-", "=", ".", "/"]


def _text(words):
    piece = st.one_of(st.sampled_from(words), st.sampled_from(_EDGES), st.text(max_size=3))
    return st.lists(piece, max_size=25).map("".join)


_WORDS = ["srun", "scontrol", "sbatch", "sru", "srunx", "module", "ml", "conda"]


@settings(max_examples=1000)
@given(_text(_WORDS), st.sampled_from(_WORDS))
def test_has_word_matches_the_word_boundary_pattern(text, word):
    assert common.has_word(text, word) == (re.search(rf"\b{word}\b", text) is not None)


_SLURM_PIECES = ["SLURM_", "SLURMD_", "SLURM", "SLURM_JOB_ID", "SLURMD_NODENAME", "SLURM_X", "_SLURM_A", "SLURM_a"]
_SLURM_PIECES += ["SLURM__", "xSLURM_B", "SLURM_9", "ID", "A", "_"]


@settings(max_examples=1000)
@given(_text(_SLURM_PIECES))
def test_slurm_names_match_the_finditer_of_the_pattern(text):
    want = list(dict.fromkeys(m.group(1) for m in script._SLURM_NAME.finditer(text)))
    assert common.slurm_names(text) == want


_POS_PIECES = ["$1", "${2}", "$@", "$*", "$#", "${#}", "${#1}", "$$1", "$$$1", "${", "$", "$x", "\\$1"]


@settings(max_examples=1000)
@given(_text(_POS_PIECES))
def test_uses_positional_matches_the_look_behind_pattern(text):
    assert common.uses_positional(text) == bool(common._POSITIONAL.search(text))


_SET_PIECES = ["set -e", "set -euo pipefail", "set -o errexit", "set  -o \n errexit", "set -x", "set\t-E", "set -"]
_SET_PIECES += ["reset -e", "set -o", "errexit", "set\n-e", "  set -e", "\n  set -ex", "echo; set -e", "setx -e"]


@settings(max_examples=1000)
@given(_text(_SET_PIECES))
def test_sets_errexit_matches_the_line_start_pattern(body):
    want = re.search(r"(^|\n)\s*set\s+(-[a-zA-Z]*e|-o\s+errexit)", body) is not None
    assert script._sets_errexit(body) == want


_TTY_PIECES = ["clear", "tput", "reset", "tput setaf 1", "clearx", "xreset", "reset;", "(clear)", "`tput`"]


@settings(max_examples=1000)
@given(_text(_TTY_PIECES))
def test_tty_commands_match_the_finditer_of_the_pattern(body):
    want = sorted({m.group(2) for m in re.finditer(r"(^|[\s;&|(`])(clear|tput|reset)(?=[\s;&|)`]|$)", body)})
    assert script._tty_commands(body) == want


def test_fast_paths_on_large_bodies():
    body = ("x" * 5000 + " SLURM_NTASKS_PER_NODE=$SLURM_NNODES srunner\n") * 200 + "  set -o errexit\nsrun\n"
    assert common.slurm_names(body) == ["SLURM_NTASKS_PER_NODE", "SLURM_NNODES"]
    assert common.has_word(body, "srun") and not common.has_word(body, "sbatch")
    assert script._sets_errexit(body)
    assert not common.uses_positional(body) and common.uses_positional(body + " $2")
    assert not common.uses_positional("$$$2") and not common._POSITIONAL.search("$$$2")
    assert common.slurm_names("") == [] and not common.has_word("", "srun") and not script._sets_errexit("")
