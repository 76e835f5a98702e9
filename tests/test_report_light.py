"""The light record (`ScriptReport.light()`, what a migrate worker sends to the parent) is the record read
back from its light JSON, and the summary builder counts as it did when it was first written."""

from __future__ import annotations

import pickle
from collections import Counter

from hypothesis import given, strategies as st

import strategies as S
from test_report_fast_paths import reports

from translator.report.model import AFFECTED_SHOWN, Issue, ScriptReport, SummaryBuilder


def _state(sr: ScriptReport) -> list:
    return [(k, type(v), v) for k, v in sr.__dict__.items() if k != "codes"]


@S.fuzz_settings(150)
@given(reports)
def test_light_is_the_record_read_back_from_its_light_json(sr):
    want = ScriptReport.from_json(sr.light_json())
    got = sr.light()
    assert got == want
    assert _state(got) == _state(want)  # the same fields, in the same order, of the same types
    assert repr(got.node_hours) == repr(want.node_hours) and repr(got.gpu_hours) == repr(want.gpu_hours)
    assert got.__dict__["codes"] == tuple(sorted({i.code for i in sr.issues}))
    back = pickle.loads(pickle.dumps(got))
    assert repr(back) == repr(want) and back.__dict__["codes"] == got.codes  # the codes travel with the record


def test_light_of_odd_values_takes_the_general_path():
    sr = ScriptReport(
        path="p",
        outcome="clean",
        sbatch_accepts=1,  # type: ignore[arg-type]
        names=["a"],  # type: ignore[arg-type]
        nodes=True,  # type: ignore[arg-type]
        node_hours=-0.0,
        gpu_hours=0,  # type: ignore[arg-type]
        simulation={"verdict": "same"},
        rows=(),
        yaml="y",
    )
    got = sr.light()
    assert _state(got) == _state(ScriptReport.from_json(sr.light_json()))
    assert got.sbatch_accepts is True and got.names == ("a",) and got.nodes == 1 and got.yaml == ""


def test_codes_are_kept_once_computed():
    sr = ScriptReport(path="p", outcome="warnings", sbatch_accepts=True, issues=(Issue("warning", "B", "m"),))
    assert sr.codes == ("B",) and sr.codes is sr.codes


class _ReferenceBuilder(SummaryBuilder):
    def add(self, s: ScriptReport) -> None:  # SummaryBuilder.add as first written
        self.scripts += 1
        self.outcomes[s.outcome] += 1
        worst: dict[str, str] = {}
        for i in s.issues:
            if i.severity == "error" or (i.severity == "warning" and worst.get(i.code) != "error"):
                worst[i.code] = i.severity
            self.code_message.setdefault(i.code, i.message)
        for code, sev in worst.items():
            self.code_scripts[code] += 1
            if self.code_severity.get(code) != "error":
                self.code_severity[code] = sev
            aff = self.code_affected.setdefault(code, [])
            aff.append(s.path)
            if len(aff) > 4 * AFFECTED_SHOWN:
                aff.sort()
                del aff[AFFECTED_SHOWN:]
        if s.launcher:
            self.launchers[s.launcher] += 1
        if s.runtime:
            self.runtimes[s.runtime] += 1
        if s.sbatch_accepts:
            self.gpus += s.gpus
            self.nodes += s.nodes
            self.gpu_hours += s.gpu_hours
            self.node_hours += s.node_hours
        if s.sbatch_accepts and s.names and not s.time_limit_seconds:
            self.no_limit += 1
        self.modules.update(set(s.modules))
        self.environments.update(set(s.environments))
        self.paths.update(set(s.paths))


issue_lists = st.lists(
    st.builds(
        Issue,
        severity=st.sampled_from(("error", "warning", "info", "odd")),
        code=st.sampled_from(("A1", "B2", "C3", "D4")),
        message=st.sampled_from(("m1", "m2", "")),
    ),
    max_size=6,
).map(tuple)
records = st.builds(
    ScriptReport,
    path=st.text(alphabet="ab/.", min_size=1, max_size=6),
    outcome=st.sampled_from(("clean", "warnings", "errors")),
    sbatch_accepts=st.booleans(),
    names=st.lists(st.sampled_from(("j1", "j2")), max_size=2).map(tuple),
    launcher=st.one_of(st.none(), st.sampled_from(("torchrun", ""))),
    runtime=st.one_of(st.none(), st.just("torch-distributed")),
    nodes=st.integers(0, 4),
    gpus=st.integers(0, 8),
    time_limit_seconds=st.one_of(st.none(), st.integers(0, 7200)),
    node_hours=st.floats(0, 10),
    gpu_hours=st.floats(0, 10),
    issues=issue_lists,
    modules=st.lists(st.sampled_from(("cuda", "gcc")), max_size=3).map(tuple),
    environments=st.lists(st.sampled_from(("conda:a", "venv:b")), max_size=2).map(tuple),
    paths=st.lists(st.sampled_from(("/scratch", "$WORK")), max_size=2).map(tuple),
)


@S.fuzz_settings(100)
@given(st.lists(records, max_size=120))
def test_summary_builder_counts_as_the_reference(scripts):
    fast, ref = SummaryBuilder(), _ReferenceBuilder()
    for s in scripts:
        fast.add(s)
        ref.add(s)
    assert fast.build() == ref.build()
    assert fast.code_affected == ref.code_affected and fast.code_message == ref.code_message


def test_summary_builder_keeps_the_smallest_affected_paths():
    b = SummaryBuilder()
    for n in range(500, 0, -1):
        b.add(ScriptReport(path=f"p{n:03d}", outcome="errors", sbatch_accepts=True, issues=(Issue("error", "E", "m"),)))
    (blocker,) = b.build().blockers
    assert blocker.scripts == 500 and blocker.affected == tuple(f"p{n:03d}" for n in range(1, AFFECTED_SHOWN + 1))
    assert Counter(b.code_scripts) == Counter({"E": 500})


def test_light_reads_negative_zero_hours_as_from_json_does():
    sr = ScriptReport(path="p", outcome="clean", sbatch_accepts=True, node_hours=-0.0, gpu_hours=-0.0)
    got = sr.light()
    assert repr(got.node_hours) == repr(ScriptReport.from_json(sr.light_json()).node_hours) == "0.0"


md_texts = st.one_of(
    st.text(alphabet="\\`*_[]|~&<>()!@:/wW.\r\n\"' a\x1fé", max_size=30),
    st.sampled_from(("www.x", "WwW.x", "http://x", "a@b", "![i](u)", "", "\x1f", "w\x1fww.", ":\x1f//", 7, None, True)),
)


@S.fuzz_settings(200)
@given(st.lists(md_texts, max_size=8))
def test_markdown_batch_escapes_are_the_escapes_text_by_text(values):
    from translator.report import markdown

    assert markdown._texts(list(values)) == [markdown.text(v) for v in values]
    assert markdown._codes(list(values)) == [markdown.code(v) for v in values]


def test_markdown_field_cells_keep_types_apart():
    from translator.report import markdown

    assert markdown._field(1, "mapped") == "<code>1</code> (mapped)"
    assert markdown._field(True, "mapped") == "<code>True</code> (mapped)"
    assert markdown._field("a_b", "mapped") == markdown._field("a_b", "mapped") == "<code>a&#95;b</code> (mapped)"


@S.fuzz_settings(200)
@given(st.text(alphabet="`a\n", max_size=40), st.sampled_from(("", "yaml")))
def test_fenced_is_one_backtick_longer_than_the_longest_run(body, lang):
    import re

    from translator.report.markdown import fenced

    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    assert fenced(body, lang) == f"{fence}{lang}\n{body.rstrip()}\n{fence}\n"
