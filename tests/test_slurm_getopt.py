"""glibc getopt_long emulation over #SBATCH words (translator.slurm.getopt).

Expectations from the sbatch semantics notes (section 3) and the messages real sbatch 22.05.8
printed for the same words (slurm-oracle runs: `--mem-per=4G`, `--excl`, `--tasks=14`,
`--gpus-per-nod=8`, `--exclusive user`, `--requeue=expedite`, `#SBATCH --nodes` + `#SBATCH 2`).
"""

from translator.slurm.getopt import getopt_long, match_long


def words(*items):
    """(word, line) pairs: items are (line, "w1 w2 ...")."""
    return [(w, line) for line, text in items for w in text.split()]


def opts(result):
    return [(o.key, o.value, o.line) for o in result.options]


def test_long_forms_equals_and_space():
    r = getopt_long(words((2, "--nodes=2 --ntasks 8")))
    assert opts(r) == [("nodes", "2", 2), ("ntasks", "8", 2)]
    assert not r.errors


def test_short_glued_and_separate():
    r = getopt_long(words((2, "-N2 -n 16"), (3, "-c4 -t05-00:00:00")))
    assert opts(r) == [("nodes", "2", 2), ("ntasks", "16", 2), ("cpus-per-task", "4", 3), ("time", "05-00:00:00", 3)]


def test_glued_flags_then_option_with_argument():
    r = getopt_long(words((2, "-HOsN3")))  # hold, overcommit, oversubscribe, nodes=3
    assert opts(r) == [("hold", None, 2), ("overcommit", None, 2), ("oversubscribe", None, 2), ("nodes", "3", 2)]


def test_option_and_value_on_different_lines():
    r = getopt_long(words((2, "--nodes"), (3, "2")))
    assert opts(r) == [("nodes", "2", 2)]
    assert "line 3" in r.options[0].written


def test_unique_prefix_abbreviations():
    assert opts(getopt_long(words((1, "--part=gpu")))) == [("partition", "gpu", 1)]
    assert opts(getopt_long(words((1, "--ntasks-per-n=4")))) == [("ntasks-per-node", "4", 1)]
    assert opts(getopt_long(words((1, "--gpus-per-nod=8")))) == [("gpus-per-node", "8", 1)]
    # hidden alias --tasks-per-node: `--tasks` is its unique prefix (not --ntasks)
    assert opts(getopt_long(words((1, "--tasks=14")))) == [("ntasks-per-node", "14", 1)]


def test_exact_names_are_never_ambiguous():
    assert opts(getopt_long(words((1, "--mem=4G")))) == [("mem", "4G", 1)]
    assert opts(getopt_long(words((1, "--gpus=2")))) == [("gpus", "2", 1)]
    assert opts(getopt_long(words((1, "--cluster=c")))) == [("clusters", "c", 1)]


def test_ambiguous_prefixes():
    for word, cands in [
        ("--mem-per=4G", {"mem-per-cpu", "mem-per-gpu"}),
        ("--excl", {"exclude", "exclusive"}),
        ("--cpus=2", {"cpus-per-gpu", "cpus-per-task"}),
    ]:
        r = getopt_long(words((5, word)))
        assert not r.options
        (err,) = r.errors
        assert err.kind == "ambiguous" and err.line == 5
        assert "is ambiguous" in err.message
        assert {c.name for c in match_long(word[2:].split("=")[0])[1]} == cands


def test_alias_and_canonical_share_a_prefix_without_ambiguity():
    # --clusters and its alias --cluster have the same meaning: `--clust` is still ambiguous
    # because --cluster-constraint differs
    found, cands = match_long("clust")
    assert found is None and {c.name for c in cands} == {"cluster", "clusters", "cluster-constraint"}


def test_unknown_options():
    r = getopt_long(words((3, "--gpus-per-nodes=8")))
    assert r.errors[0].kind == "unknown" and r.errors[0].line == 3
    assert r.errors[0].message == "unrecognized option '--gpus-per-nodes=8'"
    r = getopt_long(words((4, "-y")))
    assert r.errors[0].message == "invalid option -- 'y'"


def test_optional_argument_needs_equals():
    r = getopt_long(words((2, "--exclusive user")))
    assert opts(r) == [("exclusive", None, 2)]
    assert r.errors[-1].kind == "stray-word"
    assert r.errors[-1].message == "Invalid directive found in batch script: user"
    assert opts(getopt_long(words((2, "--exclusive=user")))) == [("exclusive", "user", 2)]
    # -k is optional too: glued text is its value, a separate word is not
    assert opts(getopt_long(words((2, "-koff")))) == [("no-kill", "off", 2)]


def test_no_argument_option_with_value():
    r = getopt_long(words((2, "--requeue=expedite")))
    assert r.errors[0].kind == "unexpected-argument"
    assert r.errors[0].message == "option '--requeue' doesn't allow an argument"


def test_missing_argument():
    r = getopt_long(words((7, "--time")))
    assert r.errors[0].kind == "missing-argument" and r.errors[0].line == 7
    r = getopt_long(words((7, "-t")))
    assert r.errors[0].message == "option requires an argument -- 't'"


def test_required_argument_takes_next_word_even_if_it_looks_like_an_option():
    r = getopt_long(words((1, "-J -t"), (2, "10")))
    assert opts(r)[0] == ("job-name", "-t", 1)
    assert r.errors[0].kind == "stray-word" and r.errors[0].word == "10" and r.errors[0].line == 2


def test_parsing_stops_at_first_non_option():
    r = getopt_long(words((2, "-J my job -N 2")))
    assert opts(r) == [("job-name", "my", 2)]  # -N 2 is never read
    assert r.errors[0].message == "Invalid directive found in batch script: job"
    assert [w for w, _ in r.rest] == ["job", "-N", "2"]


def test_double_dash_ends_options():
    r = getopt_long(words((2, "-N 2 --")))
    assert opts(r) == [("nodes", "2", 2)] and not r.errors


def test_spank_plugin_options_are_classified():
    r = getopt_long(words((4, "--container-image=nvcr.io/nvidia/pytorch:24.01-py3 -N 2")))
    (err,) = r.errors
    assert err.kind == "spank" and err.spank == ("pyxis", "container-image") and err.line == 4
    # parsing goes on after it, so the rest of the script is still read
    assert [(o.key, o.value) for o in r.options] == [
        ("container-image", "nvcr.io/nvidia/pytorch:24.01-py3"),
        ("nodes", "2"),
    ]
    assert r.options[0].spec is None
