"""The report's fast paths give exactly what the general paths give.

The builders and writers have a fast path for the common case (texts escaped in one pass, the JSON record
assembled from pre-encoded pieces, rows built with tuple keys) and keep the first, general version as
the reference. These tests compare the two on hostile text (quotes, `$'..'`, backslashes, markup,
NUL, the separator the fast escape joins with, lone surrogates, non-ASCII, empty and huge strings), on
values of unexpected types (a record read back from a JSON file) and on generated real-sized scripts.
"""

from __future__ import annotations

import html
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

import strategies as S

from translator.pipeline import ConvertSettings, convert
from translator.report import build, html as html_writer
from translator.report.build import script_report
from collections.abc import Sequence

from translator.read.ast import IgnoredLine
from translator.report.model import (
    DROPPED,
    IGNORED,
    UNSUPPORTED,
    FieldRef,
    Issue,
    LineRow,
    ScriptReport,
    TextBuffer,
    worst_status,
)

REPO = Path(__file__).resolve().parents[1]

TRICKY = (
    "",
    '"',
    "'",
    "$'a\\tb'",
    "\\",
    "\\\\n",
    "<script>alert(1)</script>",
    "a & b",
    "\x00",
    "\x1f",
    "a\x1fb",
    "\ud800",
    "\udc80x\ud83d",
    "é·≈",
    "\U0001f600",
    "\r\n",
    "\u2028",
    "x" * 5000,
)

texts = st.one_of(
    st.sampled_from(TRICKY), st.text(max_size=60), st.text(alphabet="&<>\"'\x00\x1f é\ud800", max_size=30)
)
opt_texts = st.one_of(st.none(), texts)
issues = st.builds(
    Issue,
    severity=st.one_of(st.sampled_from(("error", "warning", "info")), texts),
    code=texts,
    message=texts,
    line=st.one_of(st.none(), st.integers(min_value=-3, max_value=10**12)),
    suggestion=opt_texts,
)
field_refs = st.builds(
    FieldRef,
    field=texts,
    status=st.one_of(st.sampled_from(("mapped", "approximated", "dropped", "unsupported", "ignored")), texts),
)
rows = st.builds(
    LineRow,
    line=st.integers(min_value=0, max_value=10**6),
    text=texts,
    kind=st.sampled_from(("directive", "ignored", "body", "shebang")),
    status=st.one_of(
        st.none(), st.just(""), st.sampled_from(("mapped", "approximated", "dropped", "unsupported", "ignored")), texts
    ),
    fields=st.lists(field_refs, max_size=3).map(tuple),
    notes=st.lists(issues, max_size=3).map(tuple),
)
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from((0.0, 1e-7, 123456789.125, 4.0)))
simulations = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"verdict": texts, "differences": st.lists(texts, max_size=3), "slurm_processes": st.integers(0, 9)}
    ),
)
reports = st.builds(
    ScriptReport,
    path=texts,
    outcome=st.one_of(st.sampled_from(("clean", "warnings", "errors")), texts),
    sbatch_accepts=st.booleans(),
    names=st.lists(texts, max_size=3).map(tuple),
    launcher=opt_texts,
    runtime=opt_texts,
    image=opt_texts,
    nodes=st.integers(min_value=0, max_value=10**6),
    gpus=st.integers(min_value=0, max_value=10**6),
    time_limit_seconds=st.one_of(st.none(), st.integers(min_value=0, max_value=10**9)),
    node_hours=floats,
    gpu_hours=floats,
    issues=st.lists(issues, max_size=4).map(tuple),
    rows=st.lists(rows, max_size=5).map(tuple),
    decisions=st.lists(texts, max_size=3).map(tuple),
    modules=st.lists(texts, max_size=2).map(tuple),
    environments=st.lists(texts, max_size=2).map(tuple),
    paths=st.lists(texts, max_size=2).map(tuple),
    yaml=texts,
    outputs=st.lists(st.one_of(texts, st.just("a/b.trainjob.yaml")), max_size=2).map(tuple),
    simulation=simulations,
)


def _dumps(sr: ScriptReport) -> str:
    return json.dumps(sr.to_json(), ensure_ascii=False, separators=(",", ":"))


def _same_or_same_error(fast, general):
    """Both give the same text, or both raise the same exception type."""
    try:
        want = general()
    except Exception as exc:  # noqa: BLE001 - the fast path must fail the same way
        with pytest.raises(type(exc)):
            fast()
        return
    assert fast() == want


def _rows_reference(script, job, plans, issues: Sequence[Issue]) -> tuple[LineRow, ...]:
    """`build._rows` as first written (any issues, repeats allowed): the reference `_rows` is compared with."""
    lines = script.text.split("\n") if getattr(script, "text", "") else []  # `\n` only, as sbatch and bash

    def text_of(n: int) -> str:
        return lines[n - 1] if 0 < n <= len(lines) else ""

    fields: dict[int, list[FieldRef]] = {}
    for plan in plans:
        for sm in getattr(plan, "source_map", ()) or ():
            for ln in sm.lines or ():
                lst = fields.setdefault(int(ln), [])
                ref = FieldRef(str(sm.field), str(sm.status))
                if ref not in lst:
                    lst.append(ref)
    notes: dict[int, list[Issue]] = {}
    for i in issues:
        if i.line is not None:
            at_line = notes.setdefault(int(i.line), [])
            if i not in at_line:
                at_line.append(i)

    kinds: dict[int, str] = {}
    if getattr(script, "shebang", None) is not None:
        kinds[1] = "shebang"
    for d in getattr(script, "directives", ()) or ():
        kinds[d.line] = "directive"
    ignored: dict[int, IgnoredLine] = {}
    for ig in getattr(script, "ignored", ()) or ():
        kinds[ig.line] = "ignored"
        ignored[ig.line] = ig
    for fd in getattr(script, "foreign", ()) or ():
        kinds.setdefault(fd.line, "directive")

    wanted = sorted(set(kinds) | set(fields) | set(notes))
    rows = []
    for n in wanted:
        status: str | None
        kind = kinds.get(n, "body")
        f = tuple(fields.get(n, ()))
        ns = list(notes.get(n, ()))
        if kind == "ignored":
            ig = ignored[n]
            status = IGNORED
            expl = Issue("info", str(ig.reason), str(ig.explanation), n, None)
            if not any(x.code == expl.code for x in ns):
                ns.insert(0, expl)
        elif f:
            status = worst_status(x.status for x in f)
        elif kind == "directive":
            status = UNSUPPORTED if any(x.severity == "error" for x in ns) else DROPPED
        elif any(x.severity == "error" for x in ns):
            status = UNSUPPORTED
        else:
            status = None
        rows.append(LineRow(n, text_of(n), kind, status, f, tuple(ns)))
    return tuple(rows)


@S.fuzz_settings(75)
@given(reports)
def test_fast_paths_agree_with_the_general_paths(sr):
    assert sr.record_json() == _dumps(sr)
    light = sr.to_json()
    del light["rows"], light["yaml"]
    assert sr.light_json() == light and list(sr.light_json()) == list(light)
    assert html_writer._script(sr, "s-1") == html_writer._script_general(sr, "s-1")
    ids = {sr.path: "s-1"}
    for detailed in (set(), {sr.path}):
        assert html_writer._index_rows([sr], ids, detailed) == html_writer._index_row_general(sr, "s-1", detailed)


@S.fuzz_settings(75)
@given(texts)
def test_escape_text_is_html_escape(s):
    assert html_writer._escape_text(s) == html.escape(s, quote=True).replace("\x00", "\ufffd")
    assert html_writer.e(s) == html.escape(s, quote=True).replace("\x00", "\ufffd")


def test_escape_all_takes_the_general_path_for_a_text_holding_the_separator():
    got = html_writer._escape_all(["a<b", "c\x1fd", "&"])
    assert got == ["a&lt;b", "c\x1fd", "&amp;"]


@pytest.mark.parametrize(
    "odd",
    [
        {"line": "7"},
        {"line": 7.0},
        {"line": True},
        {"text": 42},
        {"status": 3},
        {"status": ["x"]},
        {"kind": None},
    ],
)
def test_records_read_back_with_values_of_other_types(odd):
    """A JSON report from disk may hold anything: both paths write the same, or fail the same way."""
    row = {"line": 3, "text": "srun x", "kind": "body", "status": "mapped", "fields": [], "notes": []}
    row.update(odd)
    d = {
        "path": "a.sbatch",
        "outcome": "warnings",
        "sbatch_accepts": True,
        "nodes": 1,
        "gpus": 0,
        "issues": [{"severity": "warning", "code": 5, "message": None, "line": "2"}],
        "rows": [row],
        "names": ["x"],
    }
    sr = ScriptReport.from_json(d)
    _same_or_same_error(sr.record_json, lambda: _dumps(sr))
    _same_or_same_error(lambda: html_writer._script(sr, "s-2"), lambda: html_writer._script_general(sr, "s-2"))
    _same_or_same_error(
        lambda: html_writer._index_rows([sr], {sr.path: "s-2"}, set()),
        lambda: html_writer._index_row_general(sr, "s-2", set()),
    )


def test_odd_scalars_of_a_record_are_encoded_as_json_does():
    sr = ScriptReport(
        path="p",
        outcome="clean",
        sbatch_accepts=1,  # type: ignore[arg-type]
        nodes=True,  # type: ignore[arg-type]
        gpus=2.5,  # type: ignore[arg-type]
        time_limit_seconds="60",  # type: ignore[arg-type]
        node_hours=float("nan"),
        gpu_hours=float("inf"),
        launcher=7,  # type: ignore[arg-type]
        simulation={"verdict": "same", "differences": []},
    )
    assert sr.record_json() == _dumps(sr)


def _generated(n: int):
    return S.realistic_scripts(n)


def _fixtures():
    for p in sorted((REPO / "tests" / "fixtures").rglob("*.sbatch"))[:60]:
        yield str(p.relative_to(REPO)), p.read_bytes()


def test_rows_and_issues_agree_with_the_general_versions_on_real_scripts():
    conv_settings = ConvertSettings()
    checked = 0
    for name, data in [*_generated(40), *_fixtures()]:
        conv = convert(name, data=data, settings=conv_settings)
        if conv.script is None:
            continue
        raw = list(conv.job.diagnostics if conv.job is not None else conv.script.diagnostics)
        for p in conv.plans:
            raw.extend(p.findings)
        want = sorted(dict.fromkeys(build._issue(d) for d in raw), key=build._issue_key)
        assert build._issues(raw) == want, name
        assert build._rows(conv.script, conv.job, conv.plans, want) == _rows_reference(
            conv.script, conv.job, conv.plans, want
        ), name
        sr = script_report(conv, name, "kind: TrainJob\n", ["a.yaml"], settings=conv_settings)
        assert sr.record_json() == _dumps(sr)
        assert ScriptReport.from_json(json.loads(sr.record_json())) == sr
        assert html_writer._script(sr, "s") == html_writer._script_general(sr, "s")
        checked += 1
    assert checked >= 40


class _Sink:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, s: str) -> int:
        self.parts.append(s)
        return len(s)


def test_text_buffer_writes_everything_in_order_in_pieces():
    sink = _Sink()
    pieces = [f"{i}:" + "é" * (i % 97) for i in range(20000)]
    with TextBuffer(sink, size=4096) as buf:
        for p in pieces:
            buf.write(p)
    assert "".join(sink.parts) == "".join(pieces)
    assert 10 < len(sink.parts) < len(pieces)
    assert all(len(p) < 4096 + 200 for p in sink.parts)


def test_text_buffer_writes_nothing_more_after_an_error():
    sink = _Sink()
    with pytest.raises(ValueError):
        with TextBuffer(sink, size=100) as buf:
            buf.write("x" * 150)
            buf.write("tail")
            raise ValueError("render failed")
    assert sink.parts == ["x" * 150]


def test_json_report_is_the_same_written_whole_or_through_the_buffer():
    from translator.report import json_report
    from translator.report.model import Report

    scripts = []
    for name, data in _generated(30):
        conv = convert(name, data=data)
        scripts.append(script_report(conv, name, "kind: TrainJob\n# é\n", ["a.yaml"]))
    report = Report.from_scripts("t", "src", scripts)
    out = io.StringIO()
    json_report.write(report, out)
    loaded = json.loads(out.getvalue())
    assert [json.dumps(s, ensure_ascii=False, separators=(",", ":")) for s in loaded["scripts"]] == [
        s.record_json() for s in scripts
    ]


def _md_text_reference(s) -> str:
    from translator.fsio import terminal_safe
    from translator.report.markdown import _MD_SPECIAL, _defang

    s = terminal_safe(str(s).replace("\r", " "))  # control sequences shown, as on the terminal
    s = _MD_SPECIAL.sub(r"\\\1", s)
    s = html.escape(s, quote=False)
    return _defang(s).replace("\r", " ").replace("\n", " ")


def _md_code_reference(s) -> str:
    from translator.fsio import terminal_safe
    from translator.report.markdown import _defang

    s = terminal_safe(str(s).replace("\r", " "))  # control sequences shown, as on the terminal
    s = html.escape(s, quote=True).replace("|", "&#124;").replace("\r", " ").replace("\n", " ")
    s = s.replace("\\", "&#92;").replace("`", "&#96;").replace("*", "&#42;").replace("_", "&#95;")
    s = _defang(s)
    return f"<code>{s}</code>" if s else ""


md_texts = st.one_of(
    texts,
    st.text(alphabet="\\`*_[]|~&<>()!@:/wW.\r\n\"' a\x1b\x07\x1f\x9b\u202e\u2066\xe9", max_size=30),
    st.sampled_from(("www.x", "WwW.x", "http://x", "a@b", "![i](u)", "team3/job_01.sbatch", "P450", 7, None)),
)


@S.fuzz_settings(100)
@given(md_texts)
def test_markdown_plain_text_shortcut_matches_the_full_escape(s):
    from translator.report import markdown

    assert markdown.text(s) == _md_text_reference(s)
    assert markdown.code(s) == _md_code_reference(s)


@S.fuzz_settings(75)
@given(reports, st.booleans())
def test_sections_rendered_from_records_match_the_records_read_back(sr, inline):
    """The parent renders the detailed HTML sections straight from the spooled JSON records."""
    d = json.loads(sr.record_json())
    _same_or_same_error(
        lambda: html_writer.record_section(json.loads(sr.record_json()), inline),
        lambda: html_writer.script_section(ScriptReport.from_json(d), inline),
    )


@pytest.mark.parametrize(
    "odd",
    [
        {"rows": [{"line": 1, "text": "x", "status": "mapped", "fields": [], "notes": []}]},  # no "kind"
        {"rows": [{"line": 1, "text": "x", "kind": "body", "fields": [{"field": "a"}], "notes": []}]},
        {"names": None},
        {"nodes": "3"},
        {"outputs": ["a.yaml", 7]},
        {"issues": [{"severity": "error", "code": "E", "message": 5}]},
    ],
)
def test_sections_from_odd_records_fail_or_render_as_before(odd):
    d = {"path": "a.sbatch", "outcome": "errors", "sbatch_accepts": False, "yaml": "y: 1\n", **odd}
    for inline in (True, False):
        _same_or_same_error(
            lambda inline=inline: html_writer.record_section(dict(d), inline),
            lambda inline=inline: html_writer.script_section(ScriptReport.from_json(dict(d)), inline),
        )


def test_text_buffer_passes_a_large_write_on_as_it_is_after_the_pending_ones():
    sink = _Sink()
    big = "y" * 10000
    with TextBuffer(sink, size=1000) as buf:
        buf.write("a")
        buf.write(big)
        buf.write("b")
    assert sink.parts == ["a", big, "b"] and sink.parts[1] is big
