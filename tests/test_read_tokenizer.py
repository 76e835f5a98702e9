"""sbatch's directive tokenizer (opt.c get_argument), as documented in sbatch-semantics.md section 2
and as real Slurm 22.05 behaves (cases marked `oracle` were run through ../shared/slurm-oracle and are
also checked live by tests/test_read_oracle_tokenizer.py)."""

from __future__ import annotations

import pytest

from translator.read import read_script
from translator.read.header import tokenize_directive


def words(text):
    tok = tokenize_directive(text)
    assert tok.error is None, tok.error
    return tok.words


@pytest.mark.parametrize(
    "text,expected",
    [
        # section 15 of the semantics doc
        (" -N 2 -n8", ["-N", "2", "-n8"]),
        (" --nodes 2", ["--nodes", "2"]),
        (' --job-name="my job" # note', ["--job-name=my job"]),
        (" --comment=a#b", ["--comment=a"]),
        (" -o 'spaces\\ out'", ["-o", "spaces out"]),  # testsuite test_105_6
        (" -o out\\_%j", ["-o", "out_%j"]),  # tokenizer eats the backslash
        (" -o out\\\\_%j", ["-o", "out\\_%j"]),  # `\\` passes one backslash
        (" --output=$HOME/o.log", ["--output=$HOME/o.log"]),  # nothing is expanded
        # quotes group and can start mid-word; both kinds; empty quotes give an empty word
        (" -J 'a b'c\"d e\"", ["-J", "a bcd e"]),
        (' --comment="" -N 3', ["--comment=", "-N", "3"]),  # oracle: comment '' and nodes 3
        (" -J \"x\"y'z w'", ["-J", "xyz w"]),  # oracle: job-name `xyz w`
        # a backslash escapes anything, even inside single quotes
        (" --comment='\\'q'", ["--comment='q"]),  # oracle: comment `'q`
        (' -J x\\"y --comment=\\\\\\#', ["-J", 'x"y', "--comment=\\#"]),  # oracle
        (" -J \\#x", ["-J", "#x"]),  # oracle: escaped # is literal
        (' -J "a#b"', ["-J", "a#b"]),  # quoted # is literal
        # an unquoted # ends the line even mid-word, and after a blank
        (" -J a#", ["-J", "a"]),  # oracle
        (" -t 5 #x -N 4", ["-t", "5"]),  # oracle: -N 4 not applied
        # an unquoted blank ends the word even after a backslash (the backslash is consumed)
        (" -J a\\ b", ["-J", "a", "b"]),  # oracle: "Invalid directive: b"
        (" -J x\\", ["-J", "x"]),  # oracle: trailing backslash vanishes
        # no blank needed after the magic word; tabs and other C isspace characters separate words
        ("--nodes=2", ["--nodes=2"]),
        ("\t-N\t2\v-c\f4", ["-N", "2", "-c", "4"]),
        ("", []),
        ("   ", []),
        # templated values stay verbatim
        (" -A <netid> -p {{partition}}", ["-A", "<netid>", "-p", "{{partition}}"]),
    ],
)
def test_get_argument(text, expected):
    assert words(text) == expected


@pytest.mark.parametrize("text,quote", [(' -J "a b', '"'), (" -J 'oops", "'"), (' --comment="x\\"', '"')])
def test_unmatched_quote_is_fatal(text, quote):
    tok = tokenize_directive(text)
    assert tok.error is not None and tok.error[0] == "R130"
    assert f"`{quote}`" in tok.error[1] and text in tok.error[1]


def test_word_starting_with_colon_is_fatal():
    tok = tokenize_directive(" -N 2 :")  # oracle: "Unexpected `:` in [ :]"
    assert tok.error is not None and tok.error[0] == "R131"
    assert tokenize_directive(" --x=a:b").error is None  # only at the start of a word


@pytest.mark.parametrize(
    "text,separator,expected,note",
    [
        (" hetjob", True, [], None),
        ("hetjob", True, [], None),  # `#SBATCHhetjob` (oracle)
        ("\thetjob", True, [], None),  # oracle
        (" HETJOB", True, [], None),  # case-insensitive (oracle)
        (" packjob", True, [], None),  # deprecated spelling (oracle)
        (" hetjob -N 5", True, [], "R134"),  # the rest of the line is ignored (oracle)
        (" -N 2 hetjob", False, ["-N", "2"], "R134"),  # oracle: the word is dropped, no error
        (" -N 2 PACKJOB -t 4", False, ["-N", "2"], "R134"),  # oracle: -t 4 is not applied
        (" -J a\\ hetjob", False, ["-J", "a"], "R134"),  # oracle: job name `a`
        (" hetjobx", False, ["hetjobx"], None),  # oracle: invalid directive hetjobx
        (' "hetjob"', False, ["hetjob"], None),  # oracle: quoted, not a separator
        ("    hetjob#x", False, ["hetjob"], "R132"),  # oracle: invalid directive hetjob
        (" --comment=hetjob", False, ["--comment=hetjob"], None),
        (' -J "a hetjob b"', False, ["-J", "a hetjob b"], None),  # oracle
        (" -J ahetjob", False, ["-J", "ahetjob"], None),  # oracle
    ],
)
def test_hetjob_word(text, separator, expected, note):
    tok = tokenize_directive(text)
    assert tok.hetjob_separator is separator
    assert tok.words == expected
    codes = [code for _, code, _ in tok.notes]
    if note:
        assert note in codes
    else:
        assert codes == []


@pytest.mark.parametrize(
    "text,expected",
    [
        (' -J "" -N 3', ["-J"]),  # oracle: -J then takes the next line's word
        (' --comment=x "" -N 3', ["--comment=x"]),  # oracle: -N 3 not applied
        (" ''", []),
    ],
)
def test_empty_word_ends_the_line(text, expected):
    tok = tokenize_directive(text)
    assert tok.words == expected and tok.error is None
    assert [code for _, code, _ in tok.notes] == ["R136"]


def test_hash_cut_and_escaped_blank_are_reported_with_their_line():
    s = read_script(b"#!/bin/bash\n#SBATCH --comment=run#2\n#SBATCH -J a\\ b\nsrun x\n", "t.sh")
    by_code = {d.code: d for d in s.diagnostics}
    assert by_code["R132"].line == 2 and "#2" in by_code["R132"].message
    assert by_code["R133"].line == 3
    assert [d.words for d in s.directives] == [("--comment=run",), ("-J", "a", "b")]


def test_unmatched_quote_refuses_the_script_and_names_the_line():
    s = read_script(b"#!/bin/bash\n#SBATCH -N 1\n#SBATCH --job-name='oops\nsrun python t.py\n", "q.sh")
    assert s.sbatch_refuses
    errors = [d for d in s.diagnostics if d.severity == "error"]
    assert [(d.code, d.line) for d in errors] == [("R130", 3)]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from translator.read.header import tokenize_directive_stepwise  # noqa: E402


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(list("aN-=2 \t\v:#'\"\\") + ["hetjob", "PACKJOB", " hetjob "]), max_size=30))
def test_fast_path_agrees_with_the_stepwise_tokenizer(parts):
    text = "".join(parts)
    fast, slow = tokenize_directive(text), tokenize_directive_stepwise(text)
    assert (fast.words, fast.error, fast.hetjob_separator) == (slow.words, slow.error, slow.hetjob_separator)
