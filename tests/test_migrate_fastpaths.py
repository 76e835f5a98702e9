"""The migrate fast paths agree with the general paths they stand for (issue 13).

- `files.out_write_many` (a script's outputs share one descent into OUT, one stat per existing file)
  gives, output by output, the status or the error `files.out_write` gives, and leaves the same tree;
- the record files workers append to (`spool.RecordWriter`) read back through `ScriptSpool` exactly
  as records added as text;
- `fsio.has_escaped_bytes` is the per-character test it replaced, and `read_user_file(checked=True)`
  reads what the checked-twice path reads.
"""

from __future__ import annotations

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
