"""The flat, listed-once views of a body (translator/read/walk.py) and the container pre-test of the
profile scan give what the generator walks and the full scan give (issue 13 fast paths)."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, strategies as st

from translator.profile import usage
from translator.read import read_script
from translator.read.ast import iter_assignments, iter_commands
from translator.read.walk import assignments_in, commands_in

import strategies as S
from strategies import script_text

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))


def _check(script) -> None:
    assert list(commands_in(script.body)) == list(iter_commands(script.body))
    assert list(assignments_in(script.body)) == list(iter_assignments(script.body))
    # asked again (the kept entry): the same answer, and the same for a list body (walked every time)
    assert commands_in(script.body) == tuple(iter_commands(script.body))
    assert list(commands_in(list(script.body))) == list(iter_commands(script.body))
    assert list(assignments_in(list(script.body))) == list(iter_assignments(script.body))


def test_walks_on_the_fixture_corpus_and_realistic_scripts():
    import realistic_scripts

    paths = sorted(p for p in (REPO / "tests" / "fixtures").rglob("*.sbatch") if p.is_file())
    assert len(paths) > 100
    blocks = 0
    for p in paths:
        script = read_script(p.read_bytes(), str(p))
        _check(script)
    for i in range(60):
        script = read_script(realistic_scripts.script(i).encode(), f"r{i}")
        blocks += sum(1 for st_ in script.body if type(st_).__name__ == "Block")
        _check(script)
    assert blocks > 0  # the realistic scripts have loops and conditionals to descend into


def test_two_bodies_in_turn_do_not_share_an_entry():
    a = read_script(b"#!/bin/bash\nA=1\nsrun a\n", "a")
    b = read_script(b"#!/bin/bash\nB=2\nfor i in 1 2; do srun b; done\n", "b")
    for _ in range(2):
        assert [c.argv for c in commands_in(a.body)] == [("srun", "a")]
        assert [c.argv for c in commands_in(b.body)] == [("srun", "b")]
        assert [x.name for x in assignments_in(a.body)] == ["A"]
        assert [x.name for x in assignments_in(b.body)] == ["B"]


@given(script_text())
@S.fuzz_settings(150)
def test_walks_on_generated_scripts(text):
    _check(read_script(text.encode("utf-8", "surrogateescape"), "gen"))


_WORDS = st.sampled_from(
    [
        "srun",
        "apptainer",
        "/opt/bin/singularity",
        "exec",
        "run",
        "--nv",
        "-B",
        "/data:/data",
        "img.sif",
        "x.simg",
        "a.sqsh",
        "b.squashfs",
        "c.sif.bak",
        ".sif",
        "--container-image=nvcr.io/x:1",
        "--container-image",
        "/images/t.sqsh",
        "./local.sif",
        "docker://x",
        "python",
        "train.py",
        "a\0.sif",
        "",
    ]
)


@given(st.lists(st.one_of(_WORDS, S.hostile_text(max_size=12)), max_size=8).map(tuple))
@S.fuzz_settings(1500)
def test_container_pretest_never_hides_an_image(argv):
    found = usage._containers(argv)
    if found:
        assert usage._may_name_container(argv)
    if not usage._may_name_container(argv):
        assert found == []


def test_container_pretest_examples():
    assert usage._may_name_container(("singularity", "exec", "x", "python"))
    assert usage._may_name_container(("srun", "--container-image=nvcr.io/x:1", "python"))
    assert usage._may_name_container(("srun", "python", "img.sif"))
    assert not usage._may_name_container(("srun", "python", "train.py", "--lr", "0.1"))
    assert not usage._may_name_container(())
