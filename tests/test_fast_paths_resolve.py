"""The fast paths of the header reader and of resolve give exactly what their general paths give (issue 13).

* resolve applies the options of a self-contained directive line from a per-process plan of that line
  (`_line_plan`: getopt, spelling notes and the validated value, computed once per distinct line); a
  component with any other line runs getopt over all its words (`getopt_long` + `apply_parsed`). Both
  must give the same options, settings, job fields and diagnostics, in the same order, on any
  directives: values on the next line, `--`, empty words, hetjob separators, invalid values, aliases,
  abbreviations, options sbatch reads from its command line only, the environment and the command line.
* read_header takes a plain `#SBATCH` line (no note, error or separator) from a per-process table of
  whole lines, and checks for look-alikes only on comment lines that can be one.
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

import strategies as S

from translator.read import header, read_script
from translator.slurm import resolve as R

# option words chosen to hit every branch of the line plans: values inline, in the next word and on the
# next line, flags, optional arguments, aliases and abbreviations, the options whose merge reads other
# options (--mail-type, --exclusive/--oversubscribe, --requeue/--no-requeue, --core-spec/--thread-spec,
# -B), values refused now or after the merge (--gres, --gpus, --hint), noted values (--power),
# command-line-only options, plugin options, stray words, `--` and empty words
_WORDS = [
    "--nodes=2",
    "-N",
    "2",
    "-N2",
    "--nod=3",
    "--nodes",
    "1-4",
    "--gres=gpu:4",
    "--gres=gpu:a100:2",
    "--gres=bad::",
    "--gpus-per-node=4",
    "--gpus=a100:8",
    "-G",
    "--mail-type=END",
    "--mail-type=BEGIN,FAIL",
    "--mail-type=bogus",
    "--exclusive",
    "--exclusive=user",
    "--oversubscribe",
    "-s",
    "--requeue",
    "--no-requeue",
    "-B",
    "2:4:1",
    "--sockets-per-node=2",
    "--core-spec=2",
    "--thread-spec=1",
    "--mem=4G",
    "--mem-per-cpu=1G",
    "--mem-per-gpu=2G",
    "--time=1:00:00",
    "-t",
    "bad",
    "10",
    "--power=foo",
    "--hint=nomultithread",
    "--hint=zzz",
    "--ntasks=$N",
    "--output=~/x",
    "--",
    "-J",
    "name",
    "",
    "hetjob",
    "--comment",
    "--get-user-env",
    "--bogus",
    "--ntasks-per-gpu=2",
    "--cpus-per-gpu=2",
    "--cpus-per-task=8",
    "-c",
    "--array=1-10%2",
    "--array=1-x",
    "--dependency=afterok:1",
    "--dependency=foo",
    "--distribution=arbitrary",
    "--nice",
    "--nice=5",
    "-vv",
    "-Q",
    "-H",
    "-ac",
    "--wrap=x",
    "--help",
    "--container-image=x",
    "--ear",
    "stray",
    "--part=gpu",
    "--gp=2",
    "--nt=3",
    "--tasks-per-node=2",
    "-n",
    "4294967295",
    "--begin=now+2hours",
    "--deadline=now",
    "--nodelist=/tmp/f",
    "é",
    "--comment=é x",
]

_ENVS = [{}, {"SBATCH_PARTITION": "gpu", "SBATCH_EXCLUSIVE": "", "SLURM_MEM_PER_CPU": "1G", "SBATCH_X": "1"}]
_CLIS = [(), ("-N", "3", ":", "-n", "2"), ("--mem=2G", "--bogus")]


def _shown(job) -> str:
    rows = [repr(job.sbatch_accepts)]
    for c in job.components:
        rows.append(repr((c.index, sorted(c.options.items()))))
        rows.extend(repr(s) for s in c.settings)
        rows.append(repr(c.fields))
    rows.extend(repr(d) for d in job.diagnostics)
    return "\n".join(rows)


def _general(script, env, cli) -> str:
    """resolve with no line plan: every component through getopt over all its words."""
    saved = R._make_line_plan
    R._LINE_PLANS.clear()
    R._make_line_plan = lambda words: None  # type: ignore[assignment]
    try:
        return _shown(R.resolve(script, env=env, cli_args=cli))
    finally:
        R._make_line_plan = saved
        R._LINE_PLANS.clear()


def _planned(script, env, cli) -> tuple[str, str]:
    """resolve with fresh line plans, then again from the plans in the table."""
    R._LINE_PLANS.clear()
    first = _shown(R.resolve(script, env=env, cli_args=cli))
    return first, _shown(R.resolve(script, env=env, cli_args=cli))


def _script(lines) -> str:
    return "#!/bin/bash\n" + "".join(line + "\n" for line in lines) + "srun hostname\n"


def _check(text: str, env=None, cli=()) -> None:
    s = read_script(text.encode("utf-8", "surrogateescape"), "job.sbatch")
    want = _general(s, env or {}, cli)
    first, again = _planned(s, env or {}, cli)
    assert first == want
    assert again == want


def _line(words: list[str], quote: bool) -> str:
    return "#SBATCH " + " ".join(f'"{w}"' if quote or w == "" or " " in w else w for w in words)


@S.fuzz_settings(150)
@given(
    st.lists(
        st.tuples(st.lists(st.sampled_from(_WORDS), min_size=0, max_size=4), st.booleans()), min_size=0, max_size=8
    ),
    st.sampled_from(range(len(_ENVS))),
    st.sampled_from(range(len(_CLIS))),
)
def test_line_plans_give_what_getopt_over_all_words_gives(lines, env, cli):
    _check(_script(_line(words, quote) for words, quote in lines), _ENVS[env], _CLIS[cli])


@S.fuzz_settings(150)
@given(
    st.lists(
        st.tuples(st.lists(st.sampled_from(_WORDS), min_size=0, max_size=4), st.integers(0, 2)), min_size=0, max_size=8
    ),
    st.sampled_from(range(len(_ENVS))),
)
def test_line_plans_on_directives_built_by_hand(lines, env):
    """Directives as the AST contract allows them (empty words, any component order), not only as read."""
    from translator.read.ast import Directive, Script

    directives = tuple(
        Directive(n, "#SBATCH " + " ".join(words), "#SBATCH", tuple(words), comp)
        for n, (words, comp) in enumerate(lines, 2)
    )
    s = Script(
        path="job.sbatch",
        text="",
        line_count=50,
        shebang="#!/bin/bash",
        shell="bash",
        directives=directives,
        ignored=(),
        foreign=(),
        body=(),
        body_start_line=40,
        components=1,
        diagnostics=(),
        sbatch_refuses=False,
    )
    want = _general(s, _ENVS[env], ())
    assert _planned(s, _ENVS[env], ()) == (want, want)


@pytest.mark.parametrize(
    "lines",
    [
        ["--nodes=2 --gres=gpu:4", "--time=1:00:00", "-J train", "--output=logs/%x-%j.out"],
        ["--nodes=2", "--nodes=4", "--nodes=2"],  # O212 from the history
        ["-J", "name --nodes=2"],  # the value on the next line: that component goes through getopt
        ["--nodes=2 --", "-N 3"],  # `--` stops getopt: the next line is stray
        ['-J "" -N 3', "--time=5"],  # an empty word ends the line
        ["--nod=3 --part=gpu --tasks-per-node=2"],  # abbreviations and an alias
        ["--mail-type=END", "--mail-type=FAIL", "--mail-type=END"],  # accumulates
        ["--exclusive", "--oversubscribe", "--exclusive=user", "-s"],
        ["--requeue", "--no-requeue"],
        ["--core-spec=2", "--thread-spec=1"],
        ["--sockets-per-node=2 --cores-per-socket=4", "-B 4:2:1"],
        ["--gres=bad:: --gpus=x", "--hint=zzz", "--mem=abc"],  # refused now / after the merge
        ["--power=foo", "--power=foo"],  # noted each time
        ["--help", "-Q", "--wrap=x", "-vv"],  # command line only
        ["--ntasks=$N", "--output=~/x"],  # not expanded
        ["--container-image=x -N 2"],  # plugin option
        ["-N 2", "hetjob", "-N 3 --mail-type=END", "packjob", "--gpus=2"],  # components
        ['"hetjob" -N 2'],  # a quoted separator word
        ["--comment=" + "x" * 600, "--comment=" + "x" * 600],  # too long for the table
        ["--nodes=2 stray", "-N 3"],
        ["--gpus-per-node=4 --cpus-per-gpu=2 --cpus-per-task=8 --mem-per-gpu=2G"],
        ["--array=1-10%2 --dependency=afterok:1", "--array=1-x --dependency=foo"],
    ],
)
def test_line_plans_on_chosen_cases(lines):
    text = _script("#SBATCH " + line for line in lines)
    for env in _ENVS:
        for cli in _CLIS:
            _check(text, env, cli)


def test_a_line_is_planned_once_and_only_when_self_contained():
    R._LINE_PLANS.clear()
    plan = R._line_plan(("--nodes=2", "-J", "x"))
    assert plan is not None and [row[1] for row in plan] == ["nodes", "job-name"]
    assert R._line_plan(("--nodes=2", "-J", "x")) is plan  # from the table
    for words in (("-J",), ("--nodes=2", "--"), ("stray",), ("--bogus",), ("--container-image=x",)):
        assert R._line_plan(words) is None, words
    assert R._line_plan(("hetjob",)) == ()  # a separator applies nothing
    assert R._line_plan(("-N", "2", "", "-t", "5")) == R._line_plan(("-N", "2"))  # the empty word ends the line


def test_per_process_value_tables_give_what_the_value_functions_give():
    from translator.slurm import values as V

    for value in ("1-10%2", "[1-3]", "1,2,%0", "1-x", "0-4:2%-1", "", "1-" + "5" * 600):
        spec, throttle = V.split_array(value)
        array = V.c_strip(spec)
        if array.startswith("[") and array.endswith("]"):
            array = array[1:-1]
        for _ in range(2):
            assert R._array_fields(value) == (array, throttle or None)
            assert R._array_problems(value) == tuple(V.array_indexes(spec)[1])
    for value in ("afterok:1", "1", "foo", "afterok:1?afterany:2", ""):
        for _ in range(2):
            assert R._dependency_problems(value) == tuple(V.dependency_problems(value))
            assert R._normalised_dependency(value) == V.normalise_dependency(value)


# ---- header -----------------------------------------------------------------------------------------

_HEADER_FRAGMENTS = [
    "#SBATCH",
    "#SBATCH ",
    "#SLURM ",
    "#sbatch",
    "#SBTACH",
    "#PBS ",
    "#",
    "##",
    "#!",
    " ",
    "\t",
    "\xa0",
    "\u2003",
    "--nodes=2",
    "-N 2",
    "-",
    "'",
    '"',
    "\\",
    "$'x'",
    " # c",
    "#x",
    ":x",
    "hetjob",
    "packjob",
    "é",
    "ſbatch",
    "SBATCHx",
    "sbatch",
    "slurm",
    "job",
    "a",
    "",
]


@S.fuzz_settings(200)
@given(st.lists(st.lists(st.sampled_from(_HEADER_FRAGMENTS), max_size=6).map("".join), max_size=12))
def test_plain_line_table_gives_what_tokenizing_gives(lines):
    lines = ["#!/bin/bash"] + lines + ["srun x"]
    header._TOKENIZED.clear()
    header._PLAIN_LINES.clear()
    first = header.read_header(lines)
    again = header.read_header(lines)  # plain lines from the table
    assert repr(again) == repr(first)
    for d in first.directives:
        assert d.words == tuple(header.tokenize_directive(d.text[len(d.prefix) :]).words)


@S.fuzz_settings(300)
@given(st.lists(st.sampled_from(_HEADER_FRAGMENTS), max_size=8).map("".join) | st.text(max_size=30))
def test_lookalike_filter_keeps_every_lookalike(line):
    upper = line.upper()
    if header.classify_lookalike(line) is not None:
        assert "SBATCH" in upper or "SLURM" in upper or header._LOOKALIKE_WITH_OPTION.match(line)


@S.fuzz_settings(200)
@given(st.text(alphabet=" \t\n\v\f\r\xa0#ax", max_size=12) | st.text(max_size=12))
def test_command_line_test_matches_the_character_scan(line):
    def scan(text):
        for ch in text:
            if ch in " \t\n\v\f\r":
                continue
            return ch != "#"
        return False

    assert header._is_command_line(line) == scan(line)


def test_lookalike_filter_on_chosen_lines():
    for line in (
        "# SBATCH -N 3",
        "#SBTACH -N 2",
        "#SBTACH-N 2",
        "#SBTACH\t-N 2",
        "  ##! SBACTH   --x",
        "#sbatch -n 2",
        "  #SBATCH -N 5",
        "#!SBATCH -N 2",
        "# sbtach --x",
    ):
        assert header.classify_lookalike(line) is not None, line
        assert "SBATCH" in line.upper() or "SLURM" in line.upper() or header._LOOKALIKE_WITH_OPTION.match(line)
    for line in ("# train the model", "# sbatch job.sh", "#"):
        assert header.classify_lookalike(line) is None


@S.fuzz_settings(500)
@given(
    st.lists(
        st.sampled_from(list("aN-=2 \t\v:#'\"\\é") + ["hetjob", "PACKJOB", " hetjob ", " # x", "#", "--time=10"]),
        max_size=30,
    )
)
def test_plain_words_agree_with_the_stepwise_tokenizer_notes_included(parts):
    text = "".join(parts)
    slow = header.tokenize_directive_stepwise(text)
    plain = header._plain_words(text)
    if plain is not None:  # a plain line: the same words, and nothing to report
        assert plain == slow.words
        assert not slow.notes and slow.error is None and not slow.hetjob_separator
    fast = header.tokenize_directive(text)
    assert (fast.words, fast.error, fast.notes, fast.hetjob_separator) == (
        slow.words,
        slow.error,
        slow.notes,
        slow.hetjob_separator,
    )


def test_plain_words_on_chosen_texts():
    for text, words in (
        (" --time=10   # ten minutes", ["--time=10"]),
        ("#comment", []),
        (" -N 2\t#", ["-N", "2"]),
        (" -N 2 # 'unclosed", ["-N", "2"]),
    ):
        assert header._plain_words(text) == words
        assert header.tokenize_directive_stepwise(text).words == words
    assert header._plain_words(" -N 2 # x hetjob") == ["-N", "2"]  # a separator word after the `#` is not read
    for text in (" --x=a#b", " hetjob # x", " :x # y", " -J 'a b' # c", " -J a\\ b # c"):
        assert header._plain_words(text) is None, text  # a note, a separator, an error, a quote, an escape


def test_single_long_option_lines_are_planned_as_getopt_reads_them():
    from translator.slurm.getopt import getopt_long
    from translator.slurm.options import LONG_OPTIONS

    for name in LONG_OPTIONS:
        for value in ("", "2", "gpu:4", "x=y", "$HOME", "bad::"):
            word = f"--{name}={value}"
            parsed = getopt_long([(word, 0)])
            want = None if parsed.errors else tuple(R._plan_option(po) for po in parsed.options)
            assert R._make_line_plan((word,)) == want, word
