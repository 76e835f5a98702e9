"""The plan stage's fast paths (issue 13) give exactly what the code they replaced gives.

Each reference below is the earlier, plainer implementation, kept here as the oracle; the inputs are
generated from the characters and fragments each path is sensitive to (digits and dots around
addresses, word characters and non-ASCII letters at token boundaries, line breaks, `export`, quotes,
`$`, backslashes, empty and long texts).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from translator.diagnostics import ERROR, INFO, WARNING, Finding
from translator.plan import build, resources, secrets

import strategies as S
from strategies import script_text

# ---- pieces the generated texts are made of ------------------------------------------------------

_FRAGMENTS = [
    "10.0.0.1",
    "192.168.1.254",
    "256.1.1.1",
    "1.2.3.4.5",
    "01.002.3.4",
    "127.0.0.1",
    "0.0.0.0",
    "3.10",
    "v1.2.3.4",
    "1.2.3.4x",
    "٣.٣.٣.٣",
    "1.2.3",
    "..",
    "--master_addr=",
    "--master-addr ",
    "--master ",
    "--main_process_ip=",
    "--dist-url=",
    "--init_method ",
    "--coordinator_address=",
    "--rdzv_endpoint=",
    "--rdzv-endpoint ",
    "tcp://",
    "env://",
    "file://",
    "MASTER_ADDR=",
    "XMASTER_ADDR=",
    "éMASTER_ADDR=",
    "$MASTER_ADDR",
    "localhost",
    "node-01",
    "_s2k",
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_ARRAY_JOB_ID",
    "XSLURM_JOB_ID",
    "SLURM_JOB_IDS",
    "SLURM_JOB_NAME",
    "export ",
    "export SLURM_JOB_ID=",
    "  SLURM_X=",
    "hf_" + "a" * 24,
    "ghp_" + "B" * 32,
    "github_pat_" + "c_" * 16,
    "sk-" + "d" * 22,
    "AKIA" + "E" * 16,
    "xoxb-" + "1" * 12,
    "0123456789abcdef" * 3,
    "Aa0" * 15,
    "=",
    "'",
    '"',
    ";",
    "$",
    "\\",
    "\n",
    " ",
    "\t",
    "é",
    "\u00a0",
    "\u2028",
    "_",
    ".",
    ":",
    "/",
    "-",
]

_piece = st.one_of(
    st.sampled_from(_FRAGMENTS),
    st.text(alphabet="0123456789.:/-_ aAxé٣\n'\"$", max_size=8),
    st.integers(0, 300).map(str),
    st.lists(st.integers(0, 260).map(str), min_size=3, max_size=5).map(".".join),  # dotted numbers
)
_texts = st.one_of(
    st.lists(_piece, max_size=40).map("".join),
    st.text(max_size=60),
    st.lists(_piece, min_size=60, max_size=120).map("".join),
)


# ---- P448: the address scan -------------------------------------------------------------------

_REFERENCE_IPV4 = re.compile(r"(?<![\w.])((?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3})(?![\w.])")
_REFERENCE_ENDPOINT = re.compile(
    r"(?:--(?:master[_-]addr|main[_-]process[_-]ip|dist[_-]url|init[_-]method|coordinator[_-]address|"
    r"rdzv[_-]endpoint|master)[= ]|tcp://|env://|\bMASTER_ADDR=)([^\s'\";]+)"
)


@S.fuzz_settings(100)
@given(_texts)
def test_ipv4_scan_matches_the_plain_pattern(text):
    assert build._ipv4_addresses(text) == [m.group(1) for m in _REFERENCE_IPV4.finditer(text)]


@S.fuzz_settings(100)
@given(_texts)
def test_endpoint_pattern_matches_the_plain_pattern(text):
    assert build._ENDPOINT.findall(text) == [m.group(1) for m in _REFERENCE_ENDPOINT.finditer(text)]
    assert [m.span() for m in build._ENDPOINT.finditer(text)] == [m.span() for m in _REFERENCE_ENDPOINT.finditer(text)]
    # the scan that starts where the hint says
    assert build._endpoints(text) == [m.group(1) for m in _REFERENCE_ENDPOINT.finditer(text)]


def test_endpoint_scan_starts_before_its_hint():
    for text in ("x tcp://10.0.0.1:1", "env://a", "aMASTER_ADDR=b MASTER_ADDR=c", "--master 1.2.3.4 --dist-url=x"):
        assert build._endpoints(text) == [m.group(1) for m in _REFERENCE_ENDPOINT.finditer(text)]
    assert build._endpoints("srun --distribution=block --constraint=x --comment=y") == []


def test_every_fragment_alone_and_framed():
    for frag in _FRAGMENTS:
        for text in (frag, f" {frag} ", f"x{frag}", f"{frag}.", f"'{frag}'\n"):
            assert build._ipv4_addresses(text) == [m.group(1) for m in _REFERENCE_IPV4.finditer(text)]
            assert build._ENDPOINT.findall(text) == [m.group(1) for m in _REFERENCE_ENDPOINT.finditer(text)]
            assert secrets.embedded_tokens(text) == _reference_embedded_tokens(text)
            assert _fast_uses(text, "123456") == _reference_uses(text, "123456")


def test_ipv4_scan_examples():
    assert build._ipv4_addresses("ping 10.1.2.3; x=192.168.0.1:29500 v1.2.3.4 1.2.3.4.5 256.0.0.1") == [
        "10.1.2.3",
        "192.168.0.1",
    ]
    assert build._ipv4_addresses("") == []
    assert build._ipv4_addresses("python3.10 -m x --lr 0.001") == []


# ---- L354: SLURM_JOB_ID uses outside the definition lines ---------------------------------------


def _reference_uses(body: str, stand_in: str) -> bool:
    body = "\n".join(ln for ln in body.split("\n") if not re.match(r"\s*(export\s+)?SLURM_\w+=", ln))
    return bool(re.search(r"\bSLURM_(JOB_?ID|ARRAY_JOB_ID)\b", body) or re.search(rf"(?<!\d){stand_in}(?!\d)", body))


def _fast_uses(body: str, stand_in: str) -> bool:
    return build._used_outside_definitions(build._JOB_ID_USE, body) or (
        stand_in in body and build._number_used_outside_definitions(stand_in, body)
    )


@S.fuzz_settings(100)
@given(
    st.lists(
        st.one_of(
            _piece,
            st.sampled_from(
                ["123456", "1234567", "x123456", "\nexport SLURM_JOB_ID=123456\n", "٣123456", "123456٣", "1123456"]
            ),
        ),
        max_size=40,
    ).map("".join)
)
def test_job_id_use_matches_filtering_the_lines(body):
    assert _fast_uses(body, "123456") == _reference_uses(body, "123456")


# ---- secrets: shapes pre-tested, names memoized --------------------------------------------------


def _reference_looks_secret(name: str, value: str):
    # the memoised answer is the plain rule's (the rule itself: tests/test_plan_secrets.py)
    return secrets._looks_secret(name, value)


def _reference_embedded_tokens(text: str):
    # every shape scanned, without the hint texts that let embedded_tokens skip most of them
    out = []
    for _, shape in secrets._EMBEDDED:
        for m in shape.finditer(text):
            tok = m.group("tok") if "tok" in shape.groupindex else m.group(0)
            if tok not in out:
                out.append(tok)
    return out


_names = st.one_of(
    st.sampled_from(
        ["HF_TOKEN", "hf_token", "KEY_PATH", "API_KEY", "DB_PASSWORD", "TOKEN_FILE", "X", "AUTH", "MY_SECRET_ID"]
    ),
    st.text(alphabet="ABCDEFGHIKNOPRSTWY_abk", max_size=14),
)


@S.fuzz_settings(100)
@given(_names, _texts)
def test_looks_secret_matches_the_plain_checks(name, value):
    assert secrets.looks_secret(name, value) == _reference_looks_secret(name, value)


@S.fuzz_settings(100)
@given(_texts)
def test_embedded_tokens_match_the_plain_scan(text):
    assert secrets.embedded_tokens(text) == _reference_embedded_tokens(text)
    assert secrets.has_token(text) == bool(_reference_embedded_tokens(text))


def test_a_token_start_alone_is_no_token():
    text = "--task-prolog|--task-epilog sk-short ghp_ hf_x"
    assert secrets.has_token_start(text) and not secrets.has_token(text)
    for frag in _FRAGMENTS:
        if isinstance(frag, str):
            for text in (frag, f"x{frag}y", frag * 2):
                assert secrets.has_token(text) == bool(_reference_embedded_tokens(text))


def _assignment(name, value, literal=True):
    from translator.read.ast import Assignment, Word

    return Assignment(1, name, Word(value, value, literal), True)


@S.fuzz_settings(75)
@given(st.lists(st.tuples(_names, _texts, st.booleans()), max_size=12))
def test_literal_secrets_match_looks_secret(items):
    assignments = [_assignment(n, v, lit) for n, v, lit in items]
    want = tuple(
        (a, why) for a in assignments if a.value.literal for why in [secrets.looks_secret(a.name, a.value.value)] if why
    )
    assert secrets.literal_secrets(assignments) == want
    assert secrets.literal_secrets(assignments) == want  # asked again: the memo's answers


# ---- findings: deduplicated by field tuple ------------------------------------------------------

_findings = st.builds(
    Finding,
    st.sampled_from([ERROR, WARNING, INFO]),
    st.sampled_from(["P401", "P435", "P448"]),
    st.sampled_from(["a", "a  b", " a\nb ", "a b", "x\u00a0y"]),
    st.sampled_from([None, 1, 2, 7]),
    st.sampled_from([None, "", "fix  it", "fix it"]),
)


@S.fuzz_settings(75)
@given(st.lists(_findings, max_size=30))
def test_dedupe_matches_the_records_equality(findings):
    want = tuple(sorted(dict.fromkeys(map(build._one_line, findings)), key=lambda f: (f.line is None, f.line or 0)))
    got = build._dedupe(findings)
    assert got == want
    assert [f.__class__ for f in got] == [f.__class__ for f in want]


_text_pieces = st.one_of(
    st.sampled_from(["a", "a  b", " a", "a ", "x\u00a0y", "\n", "fix it", "hf_" + "a" * 24, "sk-short", "\t", "é"]),
    st.text(alphabet="ab -\n_", max_size=8),
)


class _SecretScript:
    def __init__(self, assignments):
        self.body = tuple(assignments)


@S.fuzz_settings(75)
@given(
    st.lists(
        st.builds(
            Finding,
            st.sampled_from([ERROR, WARNING, INFO]),
            st.sampled_from(["P401", "P435"]),
            st.lists(_text_pieces, max_size=4).map("".join),
            st.sampled_from([None, 1, 2, 7]),
            st.one_of(st.none(), st.lists(_text_pieces, max_size=3).map("".join)),
        ),
        max_size=20,
    ),
    st.sampled_from([(), (("DB_PASSWORD", "hunter22"),), (("X", "1"),)]),
)
def test_final_findings_match_redact_then_dedupe(findings, assigned):
    script = _SecretScript(_assignment(n, v) for n, v in assigned)
    want = build._dedupe(build._redact(findings, build.script_secrets(script)))
    for _ in range(2):  # the second time, texts seen clean are not looked at again
        got = build._final_findings(findings, script, ())
        assert got == want
        assert [(f.message, f.suggestion) for f in got] == [(f.message, f.suggestion) for f in want]


def test_final_findings_keep_a_clean_text_cache_that_stays_correct():
    build._CLEAN_TEXTS.clear()
    script = _SecretScript(())
    clean = [Finding(INFO, "P435", "all on one line", 2, "fix it")]
    assert build._final_findings(clean, script, ()) == build._dedupe(clean)
    assert "all on one line" in build._CLEAN_TEXTS
    mixed = clean + [Finding(INFO, "P435", "two  spaces", 1), Finding(INFO, "P436", "tok hf_" + "a" * 24, 3)]
    assert build._final_findings(mixed, script, ()) == build._dedupe(build._redact(mixed, frozenset()))


# ---- the plan records' written-out __init__ against the generated one ----------------------------


def test_plan_records_init_like_the_generated_one():
    import dataclasses

    from translator.plan import model

    for cls in (model.EnvVar, model.SourceMap, model.PodPatch, model.TrainerPlan):
        fields = dataclasses.fields(cls)
        reference = dataclasses.make_dataclass(
            "Ref" + cls.__name__,
            [(f.name, f.type, f) for f in fields],
            frozen=True,
        )
        required = [f for f in fields if f.default is dataclasses.MISSING]
        values = [("x",) if "tuple" in str(f.type) else f"value-{f.name}" for f in fields]
        # positionally, by keyword, and with only the required ones
        assert vars(cls(*values)) == vars(reference(*values))
        kw = {f.name: v for f, v in zip(fields, values)}
        assert vars(cls(**kw)) == vars(reference(**kw))
        assert vars(cls(*values[: len(required)])) == vars(reference(*values[: len(required)]))
        assert list(vars(cls(*values))) == [f.name for f in fields]
        with pytest.raises(TypeError):  # refused, as the generated __init__ refuses it
            cls(*values, "extra")
        with pytest.raises(TypeError):
            cls(**kw, no_such_field=1)
        if required:
            with pytest.raises(TypeError):  # a required field is required
                cls()
        obj = cls(*values)
        assert obj == cls(**kw) and hash(obj) == hash(cls(**kw))
        assert dataclasses.replace(obj) == obj
        with pytest.raises(dataclasses.FrozenInstanceError):  # still frozen
            setattr(obj, fields[0].name, "x")


# ---- kube.escape: only the spots it changes are visited ------------------------------------------


def _reference_escape(text: str) -> str:
    """The earlier form: every `$$`, `$(` and `$`+non-ASCII spot through a callback."""
    name = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
    spot_re = re.compile(r"\$(?:\$|(?=[(\x80-\U0010ffff]))")

    def spot(m) -> str:
        if m.end() - m.start() == 2:
            return "$$$$"
        i = m.start()
        if text[i + 1] != "(":
            return "$$"
        close = text.find(")", i + 2)
        if close != -1 and (name.match(text, i + 2, close) or text.find("$", i + 2, close) != -1):
            return "$$"
        return "$"

    return spot_re.sub(spot, text)


_dollar_texts = st.lists(
    st.one_of(
        st.sampled_from(["$", "$$", "$(", "(", ")", "$((", "))", "a", "Z_9", " ", "é", "日", "\n", "'", "\\", "${X}"]),
        st.text(alphabet="$()aB_1 é-", max_size=5),
    ),
    max_size=30,
).map("".join)


@S.fuzz_settings(150)
@given(_dollar_texts)
def test_escape_matches_the_callback_form(text):
    from translator.plan import kube

    assert kube.escape(text) == _reference_escape(text)


def test_escape_long_hostile_texts():
    from translator.plan import kube

    for text in ("$(" * 3000, "$(a" * 3000 + ")", "$" * 3001, "$(" + "a" * 5000, "$((" * 3000, "$($x" * 2000):
        assert kube.escape(text) == _reference_escape(text)


# ---- resources._lines: the settings of a job indexed once ---------------------------------------


class _Setting:
    def __init__(self, name, line):
        self.name, self.line = name, line


class _Component:
    def __init__(self, settings):
        self.settings = settings


class _Job:
    def __init__(self, settings):
        self.main = _Component(settings)


def _reference_lines(job, *names):
    out: dict = {}
    for s in job.main.settings:
        if s.name in names and s.line is not None:
            out.setdefault(s.line, None)
    return tuple(out)


_option_names = st.sampled_from(["nodes", "ntasks", "time", "gres", "mem"])


@S.fuzz_settings(75)
@given(
    st.lists(st.tuples(_option_names, st.one_of(st.none(), st.integers(1, 9))), max_size=12),
    st.lists(st.lists(_option_names, max_size=4), min_size=1, max_size=5),
)
def test_lines_match_a_scan_of_the_settings(settings_, queries):
    job = _Job(tuple(_Setting(n, ln) for n, ln in settings_))
    for names in queries:  # several questions about one job: the index is reused
        assert resources._lines(job, *names) == _reference_lines(job, *names)
    other = _Job(tuple(_Setting(n, 1) for n, _ in settings_))  # another job: a new index
    for names in queries:
        assert resources._lines(other, *names) == _reference_lines(other, *names)


# ---- findings printed on one line: texts already on one line are kept as they are ---------------

_spaced = st.lists(
    st.one_of(
        st.sampled_from([" ", "  ", "\n", "\t", "\r\n", "\x0b", "\x1c", "\x85", "\u00a0", "\u2028", "\u3000"]),
        st.text(alphabet="ab-é.", min_size=1, max_size=6),
    ),
    max_size=12,
).map("".join)


@S.fuzz_settings(100)
@given(_spaced, st.one_of(st.none(), _spaced))
def test_one_line_matches_split_and_join(message, suggestion):
    f = Finding(WARNING, "P435", message, 3, suggestion)
    got = build._one_line(f)
    assert got.message == " ".join(message.split())
    assert got.suggestion == (" ".join(suggestion.split()) if suggestion else suggestion)
    if (got.message, got.suggestion) == (message, suggestion):
        assert got is f


# ---- plans copied with new findings without re-running the dataclass __init__ ------------------


def test_replace_matches_dataclasses_replace():
    import dataclasses

    from translator.pipeline import convert

    script = (
        b"#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=4\nexport NCCL_DEBUG=INFO\nsrun python train.py\n"
    )
    (plan,) = convert("job.sbatch", script).plans
    note = Finding(INFO, "P442", "x")
    want = dataclasses.replace(plan, findings=(note,), source_map=(), patches=())
    got = build._replace(plan, findings=(note,), source_map=(), patches=())
    assert got == want and repr(got) == repr(want) and hash(got) == hash(want)
    assert got.__dict__ == want.__dict__
    assert plan.findings != (note,)  # the original is left as it was
    try:
        build._replace(plan, no_such_field=1)
    except TypeError:
        pass
    else:
        raise AssertionError("an unknown field is refused, as dataclasses.replace refuses it")


# ---- findings redacted only when something could need it ---------------------------------------


class _Script:
    body = ()  # no assignments: only the token shapes can redact


@S.fuzz_settings(40)
@given(st.lists(st.tuples(_texts, st.one_of(st.none(), _texts)), max_size=6))
def test_redact_matches_cleaning_every_text(pairs):
    findings = [Finding(WARNING, "P436", m, 1, s) for m, s in pairs]

    def clean(text):
        if not text:
            return text
        for t in _reference_embedded_tokens(text):
            text = text.replace(t, "<secret>")
        # and the password of any URL (`scheme://user:PASSWORD@`), unless it is a shell reference
        return re.sub(
            r"([A-Za-z][A-Za-z0-9+.-]*://[^\s/:@'\"]*:)([^\s/@'\"]+)(@)",
            lambda m: m.group(0) if m.group(2).startswith(("$", "`", "<secret>")) else m.group(1) + "<secret>@",
            text,
        )

    want = [(clean(f.message), clean(f.suggestion)) for f in findings]
    got = build._redact(findings, frozenset())
    assert [(f.message, f.suggestion) for f in got] == want


def test_every_whitespace_but_the_space_is_unprintable():
    import sys

    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert " " in spaces and "\u3000" in spaces
    assert [c for c in spaces if c != " " and c.isprintable()] == []


@S.fuzz_settings(100)
@given(_spaced)
def test_spaced_once_never_claims_a_text_split_and_join_would_change(text):
    if build._spaced_once(text):
        assert " ".join(text.split()) == text


# ---- the script walked into lists once: same order as the generators of translator/read/ast.py ----


def _reference_commands(statements, depth=0):
    from translator.read.ast import Block, Command

    for stmt in statements:
        if isinstance(stmt, Command):
            yield stmt, depth
        elif isinstance(stmt, Block):
            if stmt.command is not None:
                yield stmt.command, depth + 1
            yield from _reference_commands(stmt.children, depth + 1)


@S.fuzz_settings(40)
@given(script_text())
def test_walks_match_the_generators(text):
    from translator.plan import env as envmod
    from translator.read import read_script
    from translator.read.ast import iter_assignments

    script = read_script(text.encode("utf-8", "surrogatepass"), "t.sbatch")
    want = tuple(iter_assignments(script.body))
    assert envmod.script_assignments(script) == want
    assert envmod.script_assignments(script) == want  # asked again: the kept list
    assert all(a is b for a, b in zip(envmod.script_assignments(script), want))
    assert list(build._commands(script.body)) == [cmd for cmd, _ in _reference_commands(script.body)]
    assert list(build._commands(list(script.body))) == [cmd for cmd, _ in _reference_commands(script.body)]
    assert envmod.script_assignments(script) == want


def test_assignments_off_the_entries_skip_here_document_commands():
    from translator.plan import env as envmod
    from translator.read import read_script
    from translator.read.ast import iter_assignments

    for text in (
        "#!/bin/bash\nA=1\nTOK=x cat > f <<EOF\nhi\nEOF\nB=2 python x.py\nfor i in 1; do C=3 srun x; D=4; done\n",
        "#!/bin/bash\nif true; then\n  X=1 cat <<EOF\nhi\nEOF\n  Y=2 run\nfi\nexport Z=3\n",
        "#!/bin/bash\nf() { Z=1 cat <<EOF\nhi\nEOF\n}\nW=1 f\n",
        "#!/bin/bash\nwhile true; do K=1 x; done\n",
    ):
        script = read_script(text.encode(), "t.sbatch")
        assert envmod.script_assignments(script) == tuple(iter_assignments(script.body))


# ---- prologue: batch-once rewriting pre-tested, definitions kept per job ------------------------


def _reference_batch_once(text: str):
    from translator.plan import prologue as P

    helpers = set()
    for pattern, repl in P._HOST_FORMS:
        new = pattern.sub(repl.replace("\\", "\\\\"), text)
        if new != text:
            helpers.add("batch_host")
            text = new
    new = P._RANDOM.sub("${_s2k_random}", text)
    if "((" in new:
        new = re.sub(r"(?<![A-Za-z0-9_${])S?RANDOM(?![A-Za-z0-9_])", "_s2k_random", new)
    if new != text:
        helpers.add("random")
        text = new
    unfixable = sorted({m.group(0).strip() for m in P._PER_RUN.finditer(text)})
    return text, helpers, unfixable


_shell_pieces = st.one_of(
    st.sampled_from(
        [
            "$(hostname)",
            "$( hostname -s )",
            "`hostname -f`",
            "${HOSTNAME}",
            "$HOSTNAME",
            "$HOSTNAMEX",
            "hostname",
            "$RANDOM",
            "${SRANDOM}",
            "$((RANDOM % 4))",
            "RANDOM",
            "((",
            "$(date +%s)",
            "`date`",
            "$$",
            "$BASHPID",
            "$(mktemp -d)",
            "$(openssl rand -hex 4)",
            "$",
            "`",
            "\\",
        ]
    ),
    st.text(alphabet="ab $`(){}\n\\'\"é", max_size=6),
)


@S.fuzz_settings(100)
@given(st.lists(_shell_pieces, max_size=15).map("".join))
def test_batch_once_matches_running_every_pattern(text):
    from translator.plan import prologue

    assert prologue.batch_once(text) == _reference_batch_once(text)


def test_definitions_kept_per_job_match_the_plain_lookup():
    import dataclasses

    from translator.launchers.common import job_shape
    from translator.pipeline import read_and_resolve
    from translator.plan import prologue

    from translator.launchers.script import BATCH_STEP_NAMES

    names = list(BATCH_STEP_NAMES) + list(prologue._DYNAMIC) + list(prologue._FROM_ENV) + ["NOT_SLURM", "SLURM_X"]
    for text in (
        b"#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gpus-per-node=8\n#SBATCH -J 'it''s'\nsrun x\n",
        b"#!/bin/bash\n#SBATCH --ntasks=3\n#SBATCH --mem=4G\n#SBATCH -p gpu\nsrun y\n",
    ):
        _, job, _ = read_and_resolve("a.sbatch", text)
        shape = job_shape(job.fields)
        for name in names + names:  # asked twice: the kept answer
            assert prologue.definition(name, job, shape) == prologue._definition(name, job, shape)
        again = dataclasses.replace(job_shape(job.fields))  # an equal Shape, another object: the kept table applies
        assert again == shape and again is not shape
        step = dataclasses.replace(shape, nodes=shape.nodes + 1, tasks_per_node=3)  # another shape: a new table
        for sh in (again, step, shape):
            for name in names:
                assert prologue.static_value(name, job, sh) == prologue._static_table(job, sh).get(name)
                assert prologue.definition(name, job, sh) == prologue._definition(name, job, sh)
        assert prologue.job_id_number(job) == prologue.job_id_number(dataclasses.replace(job))
