"""Discovery: job scripts found by content, VCS folders/binaries/oversized/unreadable files and
symlinks handled, output names chosen without clashes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from translator.migrate.discover import Candidate, _out_names, discover, is_job_script
from translator.report.model import SkippedFile

REPO = Path(__file__).parent / "fixtures" / "repo"


@pytest.mark.parametrize(
    "data,expected",
    [
        (b"#!/bin/bash\n#SBATCH -N 2\nsrun hostname\n", True),
        (b"#!/bin/sh\n\n# comment\n#SBATCH --time=5\n", True),
        (b"#!/bin/bash\r\n#SBATCH -N 2\r\n", True),  # CRLF: still a job script (sbatch refuses it; reported)
        (b"#!/bin/bash\n# SBATCH -N 2\necho\n", True),  # `# SBATCH`: reported as ignored by the converter
        (b"#!/bin/bash\n#SLURM -N 2\n", True),
        (b"#!/bin/bash\necho hi\n#SBATCH -N 2\n", False),  # directive after the first command: no header directive
        (b"#SBATCH -N 2\nsrun x\n", False),  # no shebang
        (b"\n#!/bin/bash\n#SBATCH -N 2\n", False),  # shebang not on the first line
        (b"#!/usr/bin/env python3\nprint(1)\n", False),
        (b"#!/bin/bash\n#SBATCHX\n", False),
        (b"", False),
    ],
)
def test_is_job_script_by_content(data, expected):
    assert is_job_script(data) is expected


def test_output_names_drop_script_extensions_unless_they_clash():
    names = _out_names(["train.sh", "train.sbatch", "eval.slurm", "run", "README.md", "x.SBATCH"])
    assert names["train.sh"] == "train.sh" and names["train.sbatch"] == "train.sbatch"
    assert names["eval.slurm"] == "eval" and names["run"] == "run" and names["x.SBATCH"] == "x"
    # a file literally named like another's stem makes both keep their full names
    n2 = _out_names(["job", "job.sh"])
    assert n2 == {"job": "job", "job.sh": "job.sh"}


def _copy_repo(tmp_path) -> Path:
    dst = tmp_path / "src"
    shutil.copytree(REPO, dst, symlinks=True)
    return dst


def _split(found):
    cands = [f for f in found if isinstance(f, Candidate)]
    skipped = [f for f in found if isinstance(f, SkippedFile)]
    return cands, skipped


def test_discovery_walks_nested_folders_in_order_and_skips_vcs(tmp_path):
    src = _copy_repo(tmp_path)
    (src / ".git").mkdir()
    (src / ".git" / "hook.sh").write_text("#!/bin/bash\n#SBATCH -N 1\n")
    (src / "team-a" / ".svn").mkdir()
    (src / "team-a" / ".svn" / "x.sbatch").write_text("#!/bin/bash\n#SBATCH -N 1\n")
    cands, skipped = _split(list(discover(str(src))))
    rels = [c.rel for c in cands]
    assert not any(".git" in r or ".svn" in r for r in rels)
    assert "team-a/nested/deep/mpi_allreduce.slurm" in rels
    # a folder's files (sorted) come before its subfolders (sorted): the same order on every run
    assert rels == [
        "README.md",
        "single_gpu.sbatch",
        "shared/header_after_command.sbatch",
        "shared/single_gpu_copy.sbatch",
        "team-a/helper.py",
        "team-a/notes.txt",
        "team-a/torchrun_multinode.sh",
        "team-a/nested/deep/mpi_allreduce.slurm",
        "team-b/bad_option.sbatch",
        "team-b/run_extensionless",
        "team-b/sweep_array.sbatch",
        "team-b/train.sbatch",
        "team-b/train.sh",
    ]
    assert list(discover(str(src))) == list(discover(str(src)))
    assert skipped == []


def test_oversized_files_are_reported_not_read(tmp_path):
    src = _copy_repo(tmp_path)
    big = src / "team-b" / "huge.sbatch"
    big.write_bytes(b"#!/bin/bash\n#SBATCH -N 1\n" + b"# pad\n" * 2000)
    cands, skipped = _split(list(discover(str(src), max_size=4096)))
    assert "team-b/huge.sbatch" not in [c.rel for c in cands]
    (sk,) = [s for s in skipped if s.path == "team-b/huge.sbatch"]
    assert sk.code == "M601" and sk.severity == "warning" and "4096" in sk.message


def test_symlinks_loops_and_broken_links(tmp_path):
    src = _copy_repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "ext.sbatch").write_text("#!/bin/bash\n#SBATCH -J ext\nhostname\n")
    os.symlink(src / "single_gpu.sbatch", src / "team-a" / "alias.sbatch")  # duplicate of an inside file
    os.symlink(outside / "ext.sbatch", src / "team-b" / "external.sbatch")  # file outside the tree
    os.symlink(src / "team-a", src / "team-a" / "nested" / "loop")  # loop to an ancestor
    os.symlink(src / "nowhere.sbatch", src / "dangling.sbatch")  # broken
    os.symlink(src / "team-b", src / "team-b-link")  # folder inside the tree
    os.symlink("self-loop", src / "self-loop")  # ELOOP
    cands, skipped = _split(list(discover(str(src))))
    rels = {c.rel for c in cands}
    by_path = {s.path: s for s in skipped}
    # issue 10: a link out of SRC is reported (M619) and not followed by default ...
    assert "team-b/external.sbatch" not in rels and by_path["team-b/external.sbatch"].code == "M619"
    # ... and with --follow-symlinks it is converted under the link's path
    followed, _ = _split(list(discover(str(src), follow_symlinks=True)))
    assert "team-b/external.sbatch" in {c.rel for c in followed}
    assert "team-a/alias.sbatch" not in rels and by_path["team-a/alias.sbatch"].code == "M605"
    assert by_path["team-a/nested/loop"].code == "M604"
    assert by_path["dangling.sbatch"].code == "M604" and "broken" in by_path["dangling.sbatch"].message
    assert by_path["self-loop"].code == "M604" and "loop" in by_path["self-loop"].message
    assert by_path["team-b-link"].code == "M605"
    assert not any(r.startswith("team-b-link/") for r in rels)


def test_include_exclude_globs_and_output_folder_inside_source(tmp_path):
    src = _copy_repo(tmp_path)
    out = src / "k8s"
    out.mkdir()
    (out / "leftover.sbatch").write_text("#!/bin/bash\n#SBATCH -N 1\n")
    cands, _ = _split(list(discover(str(src), out_dir=str(out), exclude=["team-a"])))
    rels = {c.rel for c in cands}
    assert not any(r.startswith("team-a/") or r.startswith("k8s/") for r in rels)
    cands, _ = _split(list(discover(str(src), include=["*.slurm", "team-b/train.*"])))
    assert {c.rel for c in cands} == {
        "team-a/nested/deep/mpi_allreduce.slurm",
        "team-b/train.sbatch",
        "team-b/train.sh",
    }
    # output names do not depend on the filters: train.sh keeps its full name next to train.sbatch
    cands, _ = _split(list(discover(str(src), include=["team-b/train.sh"])))
    assert [(c.rel, c.out_stem) for c in cands] == [("team-b/train.sh", "team-b/train.sh")]
