"""The migrate fast paths agree with the general paths they stand for (issue 13).

- `files.out_write_many` (a script's outputs share one descent into OUT, one stat per existing file)
  gives, output by output, the status or the error `files.out_write` gives, and leaves the same tree;
- the record files workers append to (`spool.RecordWriter`) read back through `ScriptSpool` exactly
  as records added as text;
- `fsio.has_escaped_bytes` is the per-character test it replaced, and `read_user_file(checked=True)`
  reads what the checked-twice path reads.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

import strategies as S

from translator.fsio import has_escaped_bytes, read_user_file
from translator.migrate import files as F
from translator.report.model import Issue, ScriptReport
from translator.report.spool import RecordWriter, ScriptSpool


def _snapshot(root: Path) -> dict:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif p.is_file():
                out[rel] = p.read_bytes()
            else:
                out[rel] = "special"
    return out


def _general(root: Path, items, check: bool) -> list:
    results = []
    for rel, data in items:
        try:
            results.append(F.out_write(str(root), rel, data, check))
        except OSError as exc:
            results.append(exc)
    return results


def _shown(results) -> list:
    return [r if isinstance(r, str) else (type(r).__name__, str(r)) for r in results]


def _layout(root: Path, kind: str) -> None:
    """OUT as a previous run (or an attacker) left it."""
    (root / "team" / "jobs").mkdir(parents=True)
    (root / "team" / "jobs" / "a.trainjob.yaml").write_bytes(b"kind: TrainJob\n")  # same content
    (root / "team" / "jobs" / "a.trainjob.py").write_bytes(b"print(2)\n")  # same size, other content
    (root / "team" / "jobs" / "b.trainjob.yaml").write_bytes(b"longer old content\n")
    outside = root.parent / f"outside-{kind}"
    outside.mkdir(exist_ok=True)
    if kind == "links":
        os.symlink(f"../{outside.name}", root / "linked")  # a folder that is a link
        os.symlink(f"../../../{outside.name}/x", root / "team" / "jobs" / "c.trainjob.yaml")  # a file that is one
    elif kind == "special":
        os.mkfifo(root / "team" / "jobs" / "c.trainjob.yaml")
        (root / "team" / "jobs" / "d.trainjob.yaml").mkdir()
        (root / "plainfile").write_bytes(b"x")  # a file where a folder should be


ITEMS = [
    ("team/jobs/a.trainjob.yaml", b"kind: TrainJob\n"),
    ("team/jobs/a.trainjob.py", b"print(1)\n"),
    ("team/jobs/b.trainjob.yaml", b"new\n"),
    ("team/jobs/b.trainjob.py", b""),
    ("team/jobs/c.trainjob.yaml", b"c\n"),
    ("team/jobs/c.trainjob.py", b"c\n"),
    ("team/jobs/d.trainjob.yaml", b"d\n"),
    ("linked/e.trainjob.yaml", b"e\n"),
    ("linked/e.trainjob.py", b"e\n"),
    ("plainfile/f.trainjob.yaml", b"f\n"),
    ("new/deep/f\u00e9.trainjob.yaml", "caf\u00e9 \u2603\n".encode()),
    ("new/deep/f\u00e9.trainjob.py", b"\x00\xff"),
    ("top.trainjob.yaml", b"top\n"),
    ("../escape.trainjob.yaml", b"no\n"),
    ("a//b.trainjob.yaml", b"no\n"),
    ("", b"no\n"),
    ("x/./y.trainjob.yaml", b"no\n"),
]


@pytest.mark.parametrize("kind", ["plain", "links", "special"])
@pytest.mark.parametrize("check", [False, True])
def test_out_write_many_answers_as_out_write_one_output_at_a_time(tmp_path, kind, check):
    general, fast = tmp_path / "g" / "out", tmp_path / "f" / "out"
    for root in (general, fast):
        root.parent.mkdir()
        root.mkdir()
        _layout(root, kind)
    expected = _shown(_general(general, ITEMS, check))
    got = _shown(F.out_write_many(str(fast), ITEMS, check))
    assert got == expected
    assert _snapshot(fast) == _snapshot(general)
    assert _snapshot(fast.parent / f"outside-{kind}") == {}  # nothing written through a link


def test_out_write_many_in_check_mode_with_no_output_folder(tmp_path):
    items = [("a/b.trainjob.yaml", b"1"), ("a/b.trainjob.py", b"2"), ("c.trainjob.yaml", b"3")]
    missing = tmp_path / "absent"
    assert F.out_write_many(str(missing), items, True) == _general(missing, items, True)
    assert not missing.exists()


_names = st.sampled_from(["a", "b", "\u00e9t\u00e9", "x y", "n\u2603"])


@S.fuzz_settings(60)
@given(
    st.lists(
        st.tuples(
            st.lists(_names, min_size=0, max_size=2),
            _names,
            st.sampled_from([".trainjob.yaml", ".trainjob.py"]),
            st.binary(max_size=40),
        ),
        max_size=8,
    ),
    st.lists(st.tuples(st.integers(0, 7), st.sampled_from(["same", "other", "dir", "longer"])), max_size=4),
    st.booleans(),
)
def test_out_write_many_matches_out_write_on_random_trees(tmp_path_factory, specs, existing, check):
    items = [("/".join([*folders, name + suffix]), data) for folders, name, suffix, data in specs]
    base = tmp_path_factory.mktemp("t")
    general, fast = base / "g", base / "f"
    for root in (general, fast):
        root.mkdir()
        for index, state in existing:
            if index >= len(items):
                continue
            rel, data = items[index]
            p = root / rel
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
                if state == "dir":
                    p.mkdir(exist_ok=True)
                elif not p.is_dir():
                    p.write_bytes(data if state == "same" else (data + b"~" if state == "longer" else b"?" * len(data)))
            except OSError:  # a folder of one item is a file of another: leave it
                pass
    assert _snapshot(fast) == _snapshot(general)
    assert _shown(F.out_write_many(str(fast), items, check)) == _shown(_general(general, items, check))
    assert _snapshot(fast) == _snapshot(general)
    shutil.rmtree(base)


def _record(path: str, n: int) -> ScriptReport:
    return ScriptReport(
        path=path,
        outcome="warnings",
        sbatch_accepts=True,
        names=(f"job-{n}",),
        issues=(Issue("warning", "L300", f'message {n} \u00e9 "quoted" \\ back', n, None),),
        yaml=f"kind: TrainJob # {n}\n",
    )


def test_records_written_by_processes_read_back_as_records_added_as_text(tmp_path):
    from translator.report.json_report import record_text

    records = [_record(f"dir/s{n:02d}.sbatch", n) for n in range(30)]
    with ScriptSpool(str(tmp_path)) as spool, ScriptSpool(str(tmp_path)) as plain:
        writers = [RecordWriter(spool.folder), RecordWriter(spool.folder)]
        assert writers[0].name != writers[1].name
        places = []
        for n, sr in enumerate(records):
            places.append((sr, writers[n % 2].put(record_text(sr).encode("utf-8"))))
        for w in writers:
            w.close()
        for sr, where in reversed(places):  # in any order
            light = ScriptReport.from_json({k: v for k, v in sr.to_json().items() if k not in ("rows", "yaml")})
            spool.add_written(sr.path, where, light)
            plain.add_text(sr.path, record_text(sr).encode("utf-8"), light)
        # a later record for the same path replaces the earlier one
        again = _record("dir/s03.sbatch", 99)
        w = RecordWriter(spool.folder)
        spool.add_written(again.path, w.put(record_text(again).encode("utf-8")), again)
        w.close()
        plain.add_text(again.path, record_text(again).encode("utf-8"), again)
        assert list(spool.raw("json")) == list(plain.raw("json"))
        assert list(spool) == list(plain)
        assert spool.light() == plain.light()
        assert spool.get("dir/s03.sbatch").names == ("job-99",)
        with pytest.raises(ValueError):
            spool.add_written("x", ("../elsewhere", 0, 1), again)
        folder = spool.folder
    assert not os.path.exists(folder)  # the workers' files go with the spool


def test_a_writer_buffers_until_flushed(tmp_path):
    w = RecordWriter(str(tmp_path))
    where = w.put(b"abc")
    assert where == (w.name, 0, 3) and os.path.getsize(tmp_path / w.name) == 0
    assert w.put(b"de") == (w.name, 3, 2)
    w.flush()
    assert (tmp_path / w.name).read_bytes() == b"abcde"
    w.close()


@given(st.text(alphabet=st.sampled_from("a\u00e9\u2603\udc80\udcff\udc7f\ud800\ue000 \n"), max_size=12))
def test_has_escaped_bytes_is_the_per_character_test(text):
    assert has_escaped_bytes(text) == any("\udc80" <= ch <= "\udcff" for ch in text)


@pytest.mark.parametrize("data", [b"", b"#!/bin/bash\n", "caf\u00e9".encode() * 1000, b"\x00" * 70000])
def test_read_user_file_checked_reads_what_the_full_path_reads(tmp_path, data):
    p = tmp_path / "f"
    p.write_bytes(data)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for limit in (len(data), len(data) + 1, max(0, len(data) - 1)):
            results = []
            for checked in (False, True):
                try:
                    results.append(read_user_file("f", limit, follow_symlinks=False, dir_fd=fd, checked=checked))
                except Exception as exc:  # noqa: BLE001 - compared below
                    results.append((type(exc).__name__, getattr(exc, "kind", None), str(exc)))
            assert results[0] == results[1]
    finally:
        os.close(fd)


@S.fuzz_settings(40)
@given(st.lists(st.text(alphabet=st.sampled_from("a\u00e9\u2603\ud83d\ude00\udc80\n"), max_size=9), max_size=12))
def test_streamed_reports_are_the_bytes_of_each_write_encoded_alone(tmp_path_factory, pieces):
    import hashlib

    expected = b"".join(p.encode("utf-8", "backslashreplace") for p in pieces)
    root = tmp_path_factory.mktemp("s")

    def produce(out):
        for p in pieces:
            out.write(p)

    old = F._HashingText.FLUSH_AT
    F._HashingText.FLUSH_AT = 5  # several flushes, pieces split anywhere
    try:
        status, digest = F.out_write_stream(str(root), "r.json", produce)
        assert (root / "r.json").read_bytes() == expected
        assert digest == hashlib.sha256(expected).hexdigest() and status == F.WRITTEN
        assert F.out_write_stream(str(root), "r.json", produce) == (F.UNCHANGED, digest)
        assert F.out_write_stream(str(root), "r.json", produce, check=True) == (F.UNCHANGED, digest)
    finally:
        F._HashingText.FLUSH_AT = old
    shutil.rmtree(root)


# ---- the second pass: the light record built in place, the JSON report copied as bytes ------------------------

_FIXTURES = Path(__file__).parent / "fixtures"


def _round_trip(sr: ScriptReport) -> ScriptReport:
    return ScriptReport.from_json(sr.light_json())


def _same_record(a: ScriptReport, b: ScriptReport) -> None:
    import pickle

    a.codes, b.codes  # noqa: B018 - derived and kept on first use (the worker computes it): both hold it
    assert a == b
    assert {k: type(v) for k, v in a.__dict__.items()} == {k: type(v) for k, v in b.__dict__.items()}
    assert list(a.__dict__) == list(b.__dict__)
    assert pickle.dumps(a, protocol=pickle.HIGHEST_PROTOCOL) == pickle.dumps(b, protocol=pickle.HIGHEST_PROTOCOL)


def test_light_is_the_json_round_trip_on_the_fixture_scripts(tmp_path):
    from translator.migrate import worker
    from translator.migrate.discover import Candidate
    from translator.pipeline import ConvertSettings

    ctx = worker.WorkContext(out_dir=None, settings=ConvertSettings())
    paths = sorted((_FIXTURES / "sbatch").glob("*.sbatch"))[:120] + sorted((_FIXTURES / "repo").rglob("*.sbatch"))
    assert len(paths) > 50
    seen = 0
    for p in paths:
        c = Candidate(p.name, str(p), p.stem)
        try:
            done = worker._convert(c, p.read_bytes(), ctx, None if seen % 3 else "abcd1234")
        except Exception:  # noqa: BLE001 - the worker records these (M606); not what this test is about
            continue
        _same_record(done.sr.light(), _round_trip(done.sr))
        seen += 1
    assert seen > 50


_odd = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), st.just(-0.0), st.text(max_size=3)
)
_strs = st.lists(st.text(alphabet="a\u00e9\udc80 ", max_size=4), max_size=3)


@S.fuzz_settings(150)
@given(
    nodes=st.one_of(st.integers(0, 9), st.booleans(), st.just(0.0)),
    hours=st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.just(-0.0), st.integers(0, 5)),
    accepts=st.one_of(st.booleans(), st.integers(0, 2)),
    seqs=st.tuples(_strs, _strs, _strs, _strs, _strs, _strs).map(
        lambda t: [tuple(x) if i % 2 else x for i, x in enumerate(t)]
    ),
    line=_odd,
    sim=st.one_of(st.none(), st.just({"verdict": "same", "differences": []})),
    rows=st.booleans(),
)
def test_light_is_the_json_round_trip_on_odd_values(nodes, hours, accepts, seqs, line, sim, rows):
    from translator.report.model import LineRow

    names, decisions, modules, environments, paths, outputs = seqs
    sr = ScriptReport(
        path="d/\u00e9 \udc80.sbatch",
        outcome="errors",
        sbatch_accepts=accepts,
        names=names,
        launcher=None,
        runtime="r",
        nodes=nodes,
        gpus=3,
        time_limit_seconds=line if not isinstance(line, float) else None,
        node_hours=hours,
        gpu_hours=hours,
        issues=(Issue("error", "M606", 'a "b" \\ \u00e9', line, None), Issue("info", "P1", "", 3, "s")),
        rows=(LineRow(1, "#!/bin/sh", "shebang", None),) if rows else (),
        decisions=decisions,
        modules=modules,
        environments=environments,
        paths=paths,
        yaml="kind: TrainJob\n",
        outputs=outputs,
        simulation=sim,
    )
    _same_record(sr.light(), _round_trip(sr))


def test_the_json_report_copies_spooled_records_as_the_text_path_writes_them(tmp_path):
    """The JSON report through migrate's hashing sink (records copied as bytes, coalesced reads across
    writer files and the spool's own file) is the text the plain text path writes."""
    import hashlib
    import io

    from translator.report import json_report
    from translator.report.json_report import record_text
    from translator.report.model import Report

    records = [_record(f"d{n % 3}/s{n:03d}.sbatch", n) for n in range(60)]
    with ScriptSpool(str(tmp_path)) as spool:
        writers = [RecordWriter(spool.folder), RecordWriter(spool.folder)]
        for n, sr in enumerate(records):
            data = record_text(sr).encode("utf-8")
            if n % 7 == 0:
                spool.add_text(sr.path, data, sr)  # the parent's own file (a re-converted script)
            else:
                spool.add_written(sr.path, writers[(n // 5) % 2].put(data), sr)
        for w in writers:
            w.close()
        report = Report.from_scripts("t \u00e9", "src", records, [])
        report.scripts = spool
        report.index = spool.light()
        report.fragments = spool
        text = io.StringIO()
        json_report.write(report, text)
        expected = text.getvalue().encode("utf-8")
        assert json.loads(expected)["scripts"] == [sr.to_json() for sr in sorted(records, key=lambda s: s.path)]
        for read_at, flush_at in ((1 << 20, 1 << 18), (300, 100), (1, 1)):
            spool.READ_AT = read_at
            old = F._HashingText.FLUSH_AT
            F._HashingText.FLUSH_AT = flush_at
            try:
                root = tmp_path / f"out{read_at}"
                root.mkdir()
                status, digest = F.out_write_stream(str(root), "r.json", lambda out: json_report.write(report, out))
                assert (root / "r.json").read_bytes() == expected
                assert (status, digest) == (F.WRITTEN, hashlib.sha256(expected).hexdigest())
                assert F.out_write_stream(str(root), "r.json", lambda out: json_report.write(report, out), True) == (
                    F.UNCHANGED,
                    digest,
                )
            finally:
                F._HashingText.FLUSH_AT = old


@S.fuzz_settings(40)
@given(st.lists(st.one_of(st.text(alphabet="a\u00e9\udc80\n", max_size=6), st.binary(max_size=9)), max_size=14))
def test_hashing_sink_mixes_text_and_bytes_in_order(tmp_path_factory, pieces):
    import hashlib

    expected = b"".join(p if isinstance(p, bytes) else p.encode("utf-8", "backslashreplace") for p in pieces)
    root = tmp_path_factory.mktemp("m")

    def produce(out):
        for p in pieces:
            if isinstance(p, bytes):
                out.write_bytes(memoryview(p) if len(p) % 2 else p)
            else:
                out.write(p)

    old = F._HashingText.FLUSH_AT
    F._HashingText.FLUSH_AT = 4
    try:
        status, digest = F.out_write_stream(str(root), "r.json", produce)
        assert (root / "r.json").read_bytes() == expected and digest == hashlib.sha256(expected).hexdigest()
    finally:
        F._HashingText.FLUSH_AT = old
    shutil.rmtree(root)


# ---- the reports written by forked processes (migrate --jobs > 1) -----------------------------------------------


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _migrate(src: Path, out: Path, jobs: int, **kw):
    from translator.migrate.run import MigrateOptions, migrate

    return migrate(MigrateOptions(src=str(src), out=str(out), jobs=jobs, echo=lambda s: None, progress=False, **kw))


def _small_repo(root: Path) -> Path:
    src = root / "src"
    for p in sorted((_FIXTURES / "sbatch").glob("*.sbatch"))[:40]:
        d = src / ("a" if len(p.name) % 2 else "b/c")
        d.mkdir(parents=True, exist_ok=True)
        (d / p.name).write_bytes(p.read_bytes())
    return src


def test_reports_of_a_pool_run_are_the_reports_of_one_process(tmp_path):
    src = _small_repo(tmp_path)
    one, two = _migrate(src, tmp_path / "one", 1), _migrate(src, tmp_path / "two", 2)
    assert _tree(tmp_path / "one") == _tree(tmp_path / "two")
    assert (one.exit_code, sorted(one.written)) == (two.exit_code, sorted(two.written))
    again = _migrate(src, tmp_path / "two", 2, check=True)
    assert again.written == [] and again.exit_code == two.exit_code


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_report_writer_failing_fails_the_run_and_leaves_no_temporary_file(tmp_path, monkeypatch, jobs):
    from translator.migrate import run as R
    from translator.report import html

    src = _small_repo(tmp_path)
    out = tmp_path / "out"

    def broken(report, stream):
        stream.write("<!DOCTYPE html>")
        raise ValueError("the writer broke")

    monkeypatch.setattr(html, "write", broken)
    with pytest.raises(ValueError, match="the writer broke"):
        _migrate(src, out, jobs)
    assert not (out / "slurm2kf-report.html").exists()
    assert not [p for p in out.iterdir() if p.name.endswith(".slurm2kf-tmp")]  # no temporary file left
    monkeypatch.undo()
    # an entry migrate must not replace: M618
    (out / "slurm2kf-report.md").unlink(missing_ok=True)
    (out / "slurm2kf-report.md").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(R.MigrateError) as info:
        _migrate(src, out, jobs)
    assert info.value.code == "M618" and "slurm2kf-report.md" in info.value.message
    assert (out / "slurm2kf-report.md").is_symlink() and not (tmp_path / "elsewhere").exists()
