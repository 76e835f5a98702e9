"""The launcher modules' fast paths give exactly what the patterns they replaced give (issue 13).

Each helper below searches a script body for the literal part of a pattern and checks the rest by hand
(a pattern starting with `\\b` or a look-behind is tried by the regex engine at every character). They are
checked against the original patterns on generated text that stresses word boundaries: underscores,
digits, non-ASCII letters and digits, `$` runs, quotes, backslashes, newlines and other blanks.
"""

from __future__ import annotations

import re

from hypothesis import given, strategies as st

from translator.launchers import common, script

import strategies as S

# pieces that sit at the edges of the searched words
_EDGES = ["", " ", "\n", "\t", "\r", "\x0b", "\x85", "\u2028", "\u00a0", "_", "x", "Z", "9", "é", "٣", "²", "$", "$$"]
_EDGES += ["{", "}", "#", "@", "*", "'", '"', "\\", ";", "&", "|", "(", ")", "`", "-", "=", ".", "/"]


def _text(words):
    piece = st.one_of(st.sampled_from(words), st.sampled_from(_EDGES), st.text(max_size=3))
    return st.lists(piece, max_size=25).map("".join)


_WORDS = ["srun", "scontrol", "sbatch", "sru", "srunx", "module", "ml", "conda"]


@S.fuzz_settings(250)
@given(_text(_WORDS), st.sampled_from(_WORDS))
def test_has_word_matches_the_word_boundary_pattern(text, word):
    assert common.has_word(text, word) == (re.search(rf"\b{word}\b", text) is not None)


_SLURM_PIECES = ["SLURM_", "SLURMD_", "SLURM", "SLURM_JOB_ID", "SLURMD_NODENAME", "SLURM_X", "_SLURM_A", "SLURM_a"]
_SLURM_PIECES += ["SLURM__", "xSLURM_B", "SLURM_9", "ID", "A", "_"]


@S.fuzz_settings(250)
@given(_text(_SLURM_PIECES))
def test_slurm_names_match_the_finditer_of_the_pattern(text):
    want = list(dict.fromkeys(m.group(1) for m in script._SLURM_NAME.finditer(text)))
    assert common.slurm_names(text) == want


_POS_PIECES = ["$1", "${2}", "$@", "$*", "$#", "${#}", "${#1}", "$$1", "$$$1", "${", "$", "$x", "\\$1"]


@S.fuzz_settings(250)
@given(_text(_POS_PIECES))
def test_uses_positional_matches_the_look_behind_pattern(text):
    assert common.uses_positional(text) == bool(common._POSITIONAL.search(text))


_SET_PIECES = ["set -e", "set -euo pipefail", "set -o errexit", "set  -o \n errexit", "set -x", "set\t-E", "set -"]
_SET_PIECES += ["reset -e", "set -o", "errexit", "set\n-e", "  set -e", "\n  set -ex", "echo; set -e", "setx -e"]


@S.fuzz_settings(250)
@given(_text(_SET_PIECES))
def test_sets_errexit_matches_the_line_start_pattern(body):
    want = re.search(r"(^|\n)\s*set\s+(-[a-zA-Z]*e|-o\s+errexit)", body) is not None
    assert script._sets_errexit(body) == want


_TTY_PIECES = ["clear", "tput", "reset", "tput setaf 1", "clearx", "xreset", "reset;", "(clear)", "`tput`"]


@S.fuzz_settings(250)
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
    # one long line of `set -e` after other words (each is checked back to the previous word only), then blanks
    long_line = "x set -e " * 50000
    assert not script._sets_errexit(long_line) and script._sets_errexit(long_line + "\n \t set -e")
    assert script._sets_errexit(" " * 100000 + "set -o errexit") and not script._sets_errexit(" " * 100000 + "set -o")


# ---- common._unquoted_text: runs of ordinary characters and "…" bodies are skipped by a pattern ---------


def _reference_unquoted_text(raw: str) -> str:
    """The character-by-character reading _unquoted_text replaced."""
    from translator.read.words import _expansion

    out = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            out.append(" ")
            i += 2
        elif c == "'":
            k = raw.find("'", i + 1)
            i = n if k < 0 else k + 1
            out.append(" ")
        elif c == '"':
            k = i + 1
            while k < n and raw[k] != '"':
                k += 2 if raw[k] == "\\" else 1
            i = k + 1
            out.append(" ")
        elif c == "$" or c == "`":
            end, _ = _expansion(raw, i)
            i = max(end, i + 1)
            out.append(" ")
        else:
            out.append(c)
            i += 1
    return "".join(out)


@S.fuzz_settings(500)
@given(st.text(alphabet="ab $'\"\\`(){}*?[]~,\n é=-x#@", max_size=40))
def test_unquoted_text_matches_character_by_character_reading(raw):
    assert common._unquoted_text(raw) == _reference_unquoted_text(raw)


def test_unquoted_text_on_tricky_and_huge_words():
    for raw in ["", "\\", '"', '"\\', '"a\\"b"c', "'", "$", "$'a'b", 'x"$(a)"y', "a" * 10000 + '"' + "b\\" * 5000]:
        assert common._unquoted_text(raw) == _reference_unquoted_text(raw)


# ---- launchline: the walk, the launch candidates and the findings' de-duplication ---------------------


def _reference_walk(statements, block=None):
    """The recursive generator `_walk` was."""
    from translator.read.ast import Block

    for st_ in statements:
        if isinstance(st_, Block):
            kind = block or st_.kind
            if st_.command is not None:
                yield st_.command, kind if st_.kind != "heredoc" else (block or "here-document")
            yield from _reference_walk(st_.children, kind if st_.kind != "heredoc" else block)
        else:
            yield st_, block


def _reference_is_env_setup(cmd) -> bool:
    from translator.launchers.launchline import _ENV_MODULES

    words = [w.value for w in cmd.words]
    return len(words) >= 3 and common.is_python(words[0]) and words[1] == "-m" and words[2] in _ENV_MODULES


def _reference_is_launch(cmd) -> bool:
    from translator.launchers.launchline import LAUNCHERS
    from translator.read.ast import LAUNCH, PIP

    if not cmd.words or cmd.kind == PIP or _reference_is_env_setup(cmd):
        return False
    w0 = common.basename(cmd.words[0].value)
    return cmd.kind == LAUNCH or w0 in LAUNCHERS or common.is_python(w0)


def _reference_indirect_launch(cmd, assigned) -> bool:
    from translator.launchers.launchline import _REF_WORD, _first_word_of, _names_launcher

    if not cmd.words:
        return False
    words = list(cmd.words)
    if words[0].value == "eval" and len(words) > 1:
        words = words[1:]
        if words[0].literal:
            return _names_launcher(_first_word_of(words[0].value))
    m = None if words[0].literal else _REF_WORD.match(words[0].raw)
    if not m:
        return False
    found = [a for a in assigned.get(m.group(1) or m.group(2), ()) if a.line < cmd.line]
    if not found:
        return False
    a = found[-1]
    return _names_launcher(_first_word_of(a.value.value if a.value.literal else a.value.raw))


_EXTRA_LINES = [
    "python -m venv /tmp/v",
    "python3.11 -m pip install x",
    "/usr/bin/python3 -c 'print(1)'",
    "python --version",
    "python2 -V",
    "srun hostname",
    "srun env",
    "srun -n 2 time nvidia-smi",
    "srun --export=ALL,A=1 python train.py",
    "CMD='torchrun --nproc-per-node 2 t.py'",
    "$CMD --epochs 3",
    'eval "$CMD"',
    "eval torchrun t.py",
    "eval",
    "unset CMD",
    "shift 2",
    "set -- a b",
    "read -r X",
    "cat <<EOF\nsrun python a.py\nEOF",
    "for i in 1 2; do srun python b.py; A=$i; done",
    "f() { deepspeed x.py; }",
    "accelerate launch x.py & wait",
    "mpirun -np 4 ./a.out",
    "composer install",
    "apptainer exec img.sif python x.py",
]


@st.composite
def _scripts(draw):
    import strategies as S

    text = draw(S.script_text())
    extra = draw(st.lists(st.sampled_from(_EXTRA_LINES), max_size=8))
    return text + "\n" + "\n".join(extra) + "\n"


def _fuzz(n):
    import strategies as S

    return S.fuzz_settings(n)


@_fuzz(300)
@given(_scripts())
def test_walk_and_launch_candidates_match_the_reference(text):
    from translator.launchers import launchline
    from translator.read import read_script
    from translator.read.ast import Assignment, Command

    script_ = read_script(text.encode("utf-8", "surrogatepass"), "job.sbatch")
    want = list(_reference_walk(script_.body))
    assert list(launchline._walk(script_.body)) == want
    assert list(launchline.entries(script_.body)) == want  # twice: the memo gives the same walk
    assert list(launchline.entries(list(script_.body))) == want  # a list is walked, not remembered
    assigned: dict = {}
    for st_, block in want:
        if isinstance(st_, Assignment) and block is None:
            assigned.setdefault(st_.name, []).append(st_)
    for st_, _ in want:
        if isinstance(st_, Command):
            assert launchline.is_env_setup(st_) == _reference_is_env_setup(st_)
            assert launchline.is_launch(st_) == _reference_is_launch(st_)
            assert launchline._indirect_launch(st_, assigned) == _reference_indirect_launch(st_, assigned)
            if st_.words and launchline.is_launch(st_):
                launchline.is_aux(st_)  # (compared through the conversions in the output digests)


def test_findings_are_added_once_whatever_their_spelling():
    from translator.diagnostics import Finding
    from translator.launchers.common import LaunchContext, Shape

    ctx = LaunchContext(script=None, job=None, shape=Shape())  # type: ignore[arg-type]
    ctx.add("warning", "L300", "m", 3, "s")
    ctx.add("warning", "L300", "m", 3, "s")
    ctx.add("warning", "L300", "m", 3)
    ctx.findings.append(Finding("info", "L301", "direct", None))  # appended directly, then added again
    ctx.add("info", "L301", "direct", None)
    ctx.add("info", "L301", "direct", 1)
    assert ctx.findings == [
        Finding("warning", "L300", "m", 3, "s"),
        Finding("warning", "L300", "m", 3),
        Finding("info", "L301", "direct", None),
        Finding("info", "L301", "direct", 1),
    ]


def test_job_shape_memo_follows_the_fields():
    from types import SimpleNamespace

    from translator.read import read_script
    from translator.slurm.resolve import resolve

    shapes = []
    for text in ["#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gpus-per-node=4\nsrun x\n", "#!/bin/bash\n#SBATCH -n 3\nx\n"]:
        job = resolve(read_script(text.encode(), "j.sbatch"), env={}, cli_args=())
        shapes.append(common.job_shape(job.fields))
        assert common.job_shape(job.fields) == common._job_shape(job.fields)
    assert shapes[0].nodes == 2 and shapes[0].gpus_per_node == 4 and shapes[1].total_tasks == 3
    fields = SimpleNamespace(**{n: getattr(job.fields, n) for n in ("nodes_min", "ntasks_per_node", "ntasks")})
    fields.__dict__.update(gpus_per_node=0, gpus_per_task=0, gpus_total=0, cpus_per_task=None)
    assert common.job_shape(fields).total_tasks == 3
    fields.ntasks = 5  # a mutable stand-in is not remembered
    assert common.job_shape(fields).total_tasks == 5


def test_intent_replace_is_dataclasses_replace():
    import dataclasses

    import pytest

    from translator.diagnostics import Finding
    from translator.launchers.intent import LaunchIntent, replace

    base = LaunchIntent("torchrun", "torch", ("torchrun",), ("t.py",), 3, env=(("A", "1"),), num_nodes=2)
    for changes in (
        {},
        {"findings": (Finding("info", "L301", "m", 3),)},
        {"env": (("B", "é"),), "consumed_lines": (3, 4), "uses_shell": True},
        {"command": (), "args": ("x",), "image": "img", "mounts": (("/a", "/b"),)},
    ):
        got, want = replace(base, **changes), dataclasses.replace(base, **changes)
        assert got == want and repr(got) == repr(want) and hash(got) == hash(want)
        assert type(got) is LaunchIntent and got is not base
    assert base.findings == () and base.env == (("A", "1"),)  # the original is unchanged
    with pytest.raises(TypeError):
        replace(base, no_such_field=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        replace(base, line=4).line = 5  # type: ignore[misc]


@S.fuzz_settings(250)
@given(st.text(alphabet="a \n\r\x0c\u2028\u0085é", max_size=30), st.integers(0, 12))
def test_body_text_is_the_lines_from_the_body_start(text, start):
    from types import SimpleNamespace

    fake = SimpleNamespace(text=text, body_start_line=start)
    want = "\n".join(text.split("\n")[start - 1 :]) if start else ""
    assert script.body_text(fake) == want


def test_as_toks_is_toks_of():
    from translator.launchers.common import Tok, toks_of
    from translator.launchers.launchline import _as_toks
    from translator.read.words import make_word

    words = [make_word(r) for r in ("srun", "-n2", '"$X"', "a\\ b", "$'\\t'")]
    toks = toks_of(words)
    for words_in in (
        words,
        toks,
        tuple(toks),
        toks[:2] + words[2:],
        [Tok("a", "a", True, True)],
        [Tok("a", "a", 1)],
        [],
    ):
        got = _as_toks(words_in)
        assert got == toks_of(words_in) and [t.deferred for t in got] == [False] * len(got)
        assert all(type(t) is Tok and type(t.literal) is bool for t in got)


# ---- second pass (issue 13): records built without per-field calls, memos, pre-screens --------------------


def test_launcher_records_behave_like_generated_frozen_dataclasses():
    """Tok, Shape, SrunCall and Option write their fields into the instance dict; everything else about them
    is what @dataclass(frozen=True) generates, compared with a class it generates for the same fields."""
    import dataclasses

    import pytest

    from translator.diagnostics import Finding
    from translator.launchers.common import Option, Shape, SrunCall, Tok
    from translator.launchers.intent import LaunchIntent

    def twin(cls):
        spec = [
            (f.name, f.type, dataclasses.field(default=f.default))
            if f.default is not dataclasses.MISSING
            else (f.name, f.type)
            for f in dataclasses.fields(cls)
        ]
        return dataclasses.make_dataclass(cls.__name__, spec, frozen=True)

    tok = Tok("a b", "'a b'", False, True)
    cases = [
        (Tok, [("x", "x"), ("x", "'x'", False), ("é", "é", True, True)], [{"value": "v", "raw": "r"}]),
        (Shape, [(), (2, 4, 8, 1, 3, True, True, True)], [{"nodes": 3, "gpus_uneven": True}, {"cpus_per_task": 2}]),
        (SrunCall, [({"nodes": "2"}, ("-N", "2"), ())], [{"options": {}, "written": (), "command": ()}]),
        (Option, [(tok, "--a", "--a", None, (tok,)), (tok, "--b", "--b", "1", ())], []),
        (
            LaunchIntent,
            [("torchrun", "torch", ("torchrun",), ("t.py",)), ("s", "f", (), (), 3, 2, "i", (("A", "1"),))],
            [
                {"family": "python", "framework": "torch", "command": ("python",), "args": (), "uses_shell": True},
                {
                    "family": "f",
                    "framework": "j",
                    "command": (),
                    "args": (),
                    "findings": (Finding("info", "L1", "m", 1),),
                },
                {"family": "f", "framework": "j", "command": (), "args": (), "mounts": (("/a", "/b"),), "num_nodes": 2},
            ],
        ),
    ]
    for cls, positional, keywords in cases:
        ref = twin(cls)
        for args, kwargs in [(a, {}) for a in positional] + [((), k) for k in keywords]:
            got, want = cls(*args, **kwargs), ref(*args, **kwargs)
            assert dataclasses.astuple(got) == dataclasses.astuple(want)
            assert repr(got) == repr(want).replace(ref.__qualname__, cls.__qualname__, 1)
            assert got == cls(*args, **kwargs) and got != want  # (another class: not equal, as generated)
            if cls is not SrunCall:  # (a dict field: unhashable in both)
                assert hash(got) == hash(cls(*args, **kwargs))
            name = dataclasses.fields(cls)[0].name
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(got, name, None)
            with pytest.raises(dataclasses.FrozenInstanceError):
                delattr(got, name)
            assert dataclasses.replace(got) == got
    with pytest.raises(TypeError):
        Tok("a")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Shape(nodes=1, no_such_field=2)  # type: ignore[call-arg]


@_fuzz(200)
@given(_scripts())
def test_srun_commands_recorded_by_detect_match_the_walk(text):
    from translator.launchers import launchline
    from translator.read import read_script
    from translator.read.ast import Command
    from translator.slurm.resolve import resolve

    script_ = read_script(text.encode("utf-8", "surrogatepass"), "job.sbatch")
    want = tuple(
        st_
        for st_, _ in _reference_walk(script_.body)
        if isinstance(st_, Command) and st_.words and common.basename(st_.words[0].value) == "srun"
    )
    assert launchline.srun_commands(list(script_.body)) == want  # walked
    launchline.detect(script_, resolve(script_, env={}, cli_args=()))
    assert launchline.srun_commands(script_.body) == want  # recorded by detect
    assert script._srun_calls(script_) == [(common.parse_srun(c.words), c.line) for c in want]


@S.fuzz_settings(500)
@given(st.text(alphabet="ab $'\"\\`(){}*?[]~,:=\n é-x", max_size=40))
def test_words_without_glob_tilde_or_brace_characters_need_no_unquoted_text(raw):
    """shell_word_expansions and static_value read the unquoted text only when the raw word has `*?[~` (or
    `{`): the unquoted text takes its characters from the raw word, so without them nothing is found."""
    unquoted = common._unquoted_text(raw)
    assert set(unquoted) <= set(raw) | {" "}
    if not any(ch in raw for ch in "*?[~"):
        assert not common._has_glob(unquoted) and not common._has_tilde(raw, unquoted)
        if "{" not in raw:
            assert not common._expanded_by_bash(raw)


_ONCE_LINES = [
    "H=$(hostname)",
    "H=`hostname -s`",
    "R=$RANDOM",
    "S=$((RANDOM % 7))",
    "D=$(date +%s)",
    "P=$$",
    "X=$HOME/a",
    "L=literal",
    "export M=${HOSTNAME}-$(date)",
    "cat <<EOF\nH=$(hostname)\nEOF",
    "if true; then R2=$RANDOM; fi",
    "A=1; B=$(hostname)",
    'F="$(hostname)" G=$RANDOM',
]


def test_static_names_are_remembered_per_context():
    from translator.launchers.common import LaunchContext, _static_name, _static_name_of, job_shape
    from translator.read import read_script
    from translator.slurm.resolve import resolve

    text = "#!/bin/bash\n#SBATCH -N 2 --gpus-per-node=4 -J j\nA=1\nB=$A\nif x; then C=2; fi\nD=3\nsrun python t.py\n"
    script_ = read_script(text.encode(), "job.sbatch")
    job = resolve(script_, env={}, cli_args=())
    names = ["A", "B", "C", "D", "E", "SLURM_NNODES", "SLURM_GPUS_ON_NODE", "SLURM_JOB_NAME", "SLURM_PROCID"]
    from translator.read.ast import Assignment

    tops = tuple(st_ for st_ in script_.body if isinstance(st_, Assignment))

    def ctx():
        shape = job_shape(job.fields)
        return LaunchContext(script=script_, job=job, shape=shape, assignments=tops, block_assigned=frozenset({"C"}))

    remembered = ctx()
    for _ in range(2):
        for n in names:
            assert _static_name(remembered, n) == _static_name_of(ctx(), n)
    assert [_static_name(remembered, n) for n in names[:4]] == ["1", None, None, "3"]
    assert _static_name(remembered, "SLURM_NNODES") == "2" and _static_name(remembered, "SLURM_PROCID") is None


def test_body_text_before_the_first_line():
    from types import SimpleNamespace

    assert script.body_text(SimpleNamespace(text="a\nb", body_start_line=-1)) == "a\nb"
    assert script.body_text(SimpleNamespace(text=None, body_start_line=1)) == ""
    assert script.body_text(SimpleNamespace(text="a\nb\n", body_start_line=3)) == ""
    assert script.body_text(SimpleNamespace(text="a\nb\n", body_start_line=4)) == ""


@_fuzz(150)
@given(_scripts())
def test_script_fallback_does_not_read_the_assignments(text):
    """detect gives the script fallback a context without the top-level assignments (it used to compute
    them): the fallback builds the same intent and findings with them."""
    from translator.launchers import launchline
    from translator.launchers.common import LaunchContext, job_shape
    from translator.read import read_script
    from translator.slurm.resolve import resolve

    script_ = read_script(text.encode("utf-8", "surrogatepass"), "job.sbatch")
    job = resolve(script_, env={}, cli_args=())
    walk = launchline.entries(script_.body)
    line = script_.body_start_line or 1
    built = []
    for top in ((), launchline._top_assignments(script_, walk, line, None)):
        ctx = LaunchContext(script=script_, job=job, shape=job_shape(job.fields), assignments=top)
        built.append((script.build(ctx, None, ["r"]), ctx.findings))
    assert built[0] == built[1]


def test_strip_wrappers_without_a_wrapper_keeps_the_words():
    from translator.launchers.common import Tok
    from translator.launchers.launchline import strip_wrappers

    for words in (
        ["python", "t.py"],
        ["/usr/bin/time", "-p", "x"],
        ["/bin/env", "A=1", "x"],
        ["envx", "A=1"],
        ["time2"],
        ["stdbuf", "-oL", "srun", "x"],
        ["exec", "-c", "nohup", "env", "-u", "X", "B=2", "x"],
        [],
    ):
        toks = [Tok(w, w) for w in words]
        for words_in in (toks, tuple(toks), iter(toks)):
            got = strip_wrappers(None, words_in, 1)
            assert isinstance(got[0], tuple) and got == strip_wrappers(None, list(toks), 1)
    assert strip_wrappers(None, [Tok("python", "python")], 1) == ((Tok("python", "python"),), [])
    assert strip_wrappers(None, [Tok(w, w) for w in ("env", "A=1", "x")], 1) == ((Tok("x", "x"),), [("A", "1")])


@S.fuzz_settings(300)
@given(
    st.lists(st.sampled_from(_ONCE_LINES + ["$(date)", "`hostname`", "$((RANDOM))", "${BASHPID}", "x$$y"]), max_size=4)
)
def test_remembered_batch_once_is_prologue_batch_once(pieces):
    from translator.plan import prologue

    text = " ".join(pieces)
    want = prologue.batch_once(text)
    for _ in range(2):  # asked, then remembered
        got = common.batch_once(text)
        assert (got[0], set(got[1]), list(got[2])) == want
        assert isinstance(got[1], frozenset) and isinstance(got[2], tuple)


def test_remembered_batch_once_is_bounded(monkeypatch):
    monkeypatch.setattr(common, "_ONCE_MEMO_SIZE", 3)
    monkeypatch.setattr(common, "_ONCE_MEMO", {})
    for i in range(10):
        assert common.batch_once(f"$(hostname)-{i}")[0] == f"$(_s2k_batch_host)-{i}"
        assert len(common._ONCE_MEMO) <= 3


@S.fuzz_settings(300)
@given(st.text(alphabet="ab_$#!{}1 \n\"'é", max_size=30))
def test_remembered_var_refs_are_the_pattern_s_names(text):
    want = list(dict.fromkeys(m.group(1) or m.group(2) for m in common._VAR_REF.finditer(text)))
    first = common.var_refs(text)
    first.append("changed by a caller")  # a caller's list is its own
    assert common.var_refs(text) == want and common.var_refs(text) is not common.var_refs(text)
