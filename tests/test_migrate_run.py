"""`slurm2kf migrate` end to end on the fixture repository: layout, kustomizations, idempotence,
--check, OUT refusal, stale outputs, bad files, and the report agreeing with per-script results."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).parent / "fixtures" / "repo"

# The job scripts of the fixture repository, found by content (a `#!` line and an #SBATCH header line).
SCRIPTS = {
    "single_gpu.sbatch": "single_gpu",
    "shared/single_gpu_copy.sbatch": "shared/single_gpu_copy",
    "shared/header_after_command.sbatch": "shared/header_after_command",
    "team-a/torchrun_multinode.sh": "team-a/torchrun_multinode",
    "team-a/nested/deep/mpi_allreduce.slurm": "team-a/nested/deep/mpi_allreduce",
    "team-b/train.sbatch": "team-b/train.sbatch",  # same stem as train.sh: full names
    "team-b/train.sh": "team-b/train.sh",
    "team-b/sweep_array.sbatch": "team-b/sweep_array",
    "team-b/run_extensionless": "team-b/run_extensionless",
    "team-b/bad_option.sbatch": "team-b/bad_option",
}
REFUSED = {"team-b/bad_option.sbatch"}  # `--nodez`: sbatch refuses the script
NOT_SCRIPTS = ("README.md", "team-a/helper.py", "team-a/notes.txt")


def run(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "translator", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def tree_state(root: Path) -> dict:
    """path -> (sha256, mtime_ns) of every file under root (symlinks as their target text)."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            if p.is_symlink():
                out[str(p.relative_to(root))] = ("link", os.readlink(p))
                continue
            st = p.stat()
            out[str(p.relative_to(root))] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    base = tmp_path_factory.mktemp("mig")
    src = base / "src"
    shutil.copytree(REPO, src)
    before = tree_state(src)
    out = base / "out"
    proc = run("migrate", src, "-o", out, "--jobs", "2")
    return src, out, proc, before


def test_exit_code_and_source_untouched(migrated):
    src, out, proc, before = migrated
    assert proc.returncode == 1, proc.stderr  # bad_option.sbatch: sbatch refuses it
    assert "team-b/bad_option.sbatch:3: error" in proc.stderr
    assert tree_state(src) == before


def test_mirror_layout_yaml_and_python(migrated):
    _src, out, _proc, _ = migrated
    for stem in SCRIPTS.values():
        y, p = out / (stem + ".trainjob.yaml"), out / (stem + ".trainjob.py")
        docs = [d for d in yaml.safe_load_all(y.read_text()) if d]
        assert docs and all(
            d["kind"] == "TrainJob" and d["apiVersion"] == "trainer.kubeflow.org/v1alpha1" for d in docs
        )
        compile(p.read_text(), str(p), "exec")
    for rel in NOT_SCRIPTS:
        stem = rel.rsplit(".", 1)[0]
        assert not list(out.glob(stem + "*.trainjob.*"))
    for name in ("slurm2kf-report.md", "slurm2kf-report.html", "slurm2kf-report.json", ".slurm2kf-migrate.json"):
        assert (out / name).stat().st_size > 0
    assert not list(out.rglob("*slurm2kf-tmp"))


def _kustomize(folder: Path, seen=None) -> list:
    """What `kubectl apply -k folder` would apply: TrainJob documents, following resources recursively."""
    k = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert k["apiVersion"] == "kustomize.config.k8s.io/v1beta1" and k["kind"] == "Kustomization"
    docs = []
    for res in k.get("resources") or []:
        target = folder / res
        assert target.exists(), f"{folder}/kustomization.yaml lists missing {res}"
        if target.is_dir():
            docs += _kustomize(target)
        else:
            docs += [(str(target), d) for d in yaml.safe_load_all(target.read_text()) if d]
    return docs


def test_kustomizations_cover_every_runnable_trainjob_once(migrated):
    _src, out, _proc, _ = migrated
    report = json.loads((out / "slurm2kf-report.json").read_text())
    runnable = {s["path"] for s in report["scripts"] if s["outcome"] != "errors" and s["names"]}
    docs = _kustomize(out)
    files = {Path(f).relative_to(out).as_posix() for f, _d in docs}
    assert files == {SCRIPTS[r] + ".trainjob.yaml" for r in runnable}
    assert not runnable & REFUSED  # a job sbatch refuses is written for review, never applied
    names = [(d["metadata"].get("namespace"), d["metadata"]["name"]) for _f, d in docs]
    assert len(names) == len(set(names)), "kustomize refuses two resources with the same name"


def test_duplicate_scripts_get_distinct_names_recorded_as_M607(migrated):
    _src, out, _proc, _ = migrated
    a = yaml.safe_load((out / "single_gpu.trainjob.yaml").read_text())["metadata"]["name"]
    b = yaml.safe_load((out / "shared/single_gpu_copy.trainjob.yaml").read_text())["metadata"]["name"]
    assert a != b and a.rsplit("-", 1)[0] == b.rsplit("-", 1)[0]
    report = json.loads((out / "slurm2kf-report.json").read_text())
    recs = {s["path"]: s for s in report["scripts"]}
    for rel in ("single_gpu.sbatch", "shared/single_gpu_copy.sbatch"):
        assert any(i["code"] == "M607" for i in recs[rel]["issues"])


def test_report_numbers_agree_with_per_script_records(migrated):
    _src, out, _proc, _ = migrated
    report = json.loads((out / "slurm2kf-report.json").read_text())
    scripts = report["scripts"]
    summ = report["summary"]
    assert sorted(s["path"] for s in scripts) == sorted(SCRIPTS)
    assert summ["scripts"] == len(scripts)
    for o in ("clean", "warnings", "errors"):
        assert summ["outcomes"][o] == sum(1 for s in scripts if s["outcome"] == o)
    accepted = [s for s in scripts if s["sbatch_accepts"]]  # a refused script requests nothing
    assert summ["gpus"] == sum(s["gpus"] for s in accepted)
    assert summ["nodes"] == sum(s["nodes"] for s in accepted)
    assert summ["gpu_hours"] == pytest.approx(sum(s["gpu_hours"] for s in accepted), abs=0.01)
    assert summ["node_hours"] == pytest.approx(sum(s["node_hours"] for s in accepted), abs=0.01)
    # by hand from the fixture: torchrun_multinode.sh asks 4 nodes x 8 GPUs for 2 days: 1536 GPU-hours, 192 node-hours
    tr = next(s for s in scripts if s["path"] == "team-a/torchrun_multinode.sh")
    assert (tr["nodes"], tr["gpus"], tr["gpu_hours"], tr["node_hours"]) == (4, 32, 1536.0, 192.0)
    blockers = {}
    for s in scripts:
        for code in {i["code"] for i in s["issues"] if i["severity"] == "error"}:
            blockers.setdefault(code, set()).add(s["path"])
    assert {b["code"]: b["scripts"] for b in summ["blockers"]} == {c: len(p) for c, p in blockers.items()}
    for b in summ["blockers"]:
        assert set(b["affected"]) <= blockers[b["code"]]
    launchers = {}
    for s in scripts:
        if s["launcher"]:
            launchers[s["launcher"]] = launchers.get(s["launcher"], 0) + 1
    assert summ["launchers"] == launchers
    # each record agrees with converting that script on its own
    from translator.pipeline import convert

    for s in scripts:
        conv = convert(s["path"], data=(_src / s["path"]).read_bytes())
        assert s["sbatch_accepts"] == (conv.job is not None and conv.job.sbatch_accepts)
        has_error = any(d.severity == "error" for d in tuple(conv.diagnostics) + tuple(conv.findings))
        assert (s["outcome"] == "errors") == (has_error or not conv.plans or not s["sbatch_accepts"])
    # the refused script: sbatch's own verdict (unrecognized option) is the blocker
    bad = next(s for s in scripts if s["path"] == "team-b/bad_option.sbatch")
    assert bad["outcome"] == "errors" and not bad["sbatch_accepts"]
    assert "O201" in {i["code"] for i in bad["issues"] if i["severity"] == "error"}


def test_second_run_rewrites_nothing(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(REPO, src)
    out = tmp_path / "out"
    first = run("migrate", src, "-o", out, "--jobs", "2")
    assert first.returncode == 1, first.stderr
    state = tree_state(out)
    second = run("migrate", src, "-o", out, "--jobs", "1")
    assert second.returncode == 1
    assert " 0 files written" in second.stderr, second.stderr
    assert tree_state(out) == state  # same bytes and same mtimes, reports and manifest included


def _clean_repo(root: Path) -> Path:
    (root / "a").mkdir(parents=True)
    (root / "a" / "one.sbatch").write_text(
        "#!/bin/bash\n#SBATCH --job-name=one\n#SBATCH --time=00:10:00\npython train.py\n"
    )
    (root / "two.sh").write_text("#!/bin/bash\n#SBATCH --job-name=two\n#SBATCH --time=00:20:00\npython eval.py\n")
    return root


def test_check_mode_for_ci(tmp_path):
    src = _clean_repo(tmp_path / "src")
    out = tmp_path / "out"
    assert run("migrate", src, "-o", out, "--check").returncode == 1  # nothing written yet: would change
    assert not out.exists()
    assert run("migrate", src, "-o", out).returncode == 0
    state = tree_state(out)
    ok = run("migrate", src, "-o", out, "--check")
    assert ok.returncode == 0, ok.stderr
    # a changed script: --check fails, names the file, and writes nothing
    (src / "two.sh").write_text("#!/bin/bash\n#SBATCH --job-name=two\n#SBATCH --time=00:30:00\npython eval.py\n")
    changed = run("migrate", src, "-o", out, "--check")
    assert changed.returncode == 1 and "would change: two.trainjob.yaml" in changed.stderr
    assert tree_state(out) == state
    run("migrate", src, "-o", out)
    assert run("migrate", src, "-o", out, "--check").returncode == 0
    # a script with an error (sbatch refuses the option) fails the check even when outputs are current
    (src / "a" / "bad.sbatch").write_text("#!/bin/bash\n#SBATCH --nodez=2\npython x.py\n")
    run("migrate", src, "-o", out)
    assert run("migrate", src, "-o", out, "--check").returncode == 1
    # a removed script: its outputs would be removed, so --check fails until migrate runs again
    (src / "a" / "bad.sbatch").unlink()
    (src / "a" / "one.sbatch").unlink()
    assert run("migrate", src, "-o", out, "--check").returncode == 1
    assert (out / "a" / "one.trainjob.yaml").exists()
    assert run("migrate", src, "-o", out).returncode == 0
    assert not (out / "a" / "one.trainjob.yaml").exists()
    assert run("migrate", src, "-o", out, "--check").returncode == 0


def test_stale_outputs_removed_unless_edited(tmp_path):
    src = _clean_repo(tmp_path / "src")
    (src / "a" / "three.sbatch").write_text("#!/bin/bash\n#SBATCH --job-name=three\n#SBATCH -t 5\npython t.py\n")
    out = tmp_path / "out"
    assert run("migrate", src, "-o", out).returncode == 0
    assert (out / "a" / "one.trainjob.yaml").exists()
    (src / "a" / "one.sbatch").unlink()
    (src / "a" / "three.sbatch").unlink()
    (out / "a" / "three.trainjob.py").write_text("# edited by hand\n")
    check = run("migrate", src, "-o", out, "--check")
    assert check.returncode == 1 and "would remove: a/one.trainjob.yaml" in check.stderr
    proc = run("migrate", src, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert not (out / "a" / "one.trainjob.yaml").exists() and not (out / "a" / "one.trainjob.py").exists()
    assert (out / "a" / "three.trainjob.py").read_text() == "# edited by hand\n"
    assert "a/three.trainjob.py: warning M608" in proc.stderr
    k = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert k["resources"] == ["two.trainjob.yaml"]  # folder a/ has no TrainJob left
    assert not (out / "a" / "kustomization.yaml").exists()


def test_foreign_output_folder_refused_without_force(tmp_path):
    src = _clean_repo(tmp_path / "src")
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    proc = run("migrate", src, "-o", out)
    assert proc.returncode == 2 and "M613" in proc.stderr and "--force" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["precious.txt"]
    forced = run("migrate", src, "-o", out, "--force")
    assert forced.returncode == 0, forced.stderr
    assert (out / "precious.txt").read_text() == "keep me" and (out / "two.trainjob.yaml").exists()
    # the source folder itself, or a folder containing it, is never an output
    assert run("migrate", src, "-o", src).returncode == 2
    assert run("migrate", src, "-o", tmp_path).returncode == 2
    assert run("migrate", tmp_path / "missing", "-o", tmp_path / "o2").returncode == 2


def test_bad_files_are_reported_and_the_run_continues(tmp_path):
    src = _clean_repo(tmp_path / "src")
    (src / "model.bin").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0" + os.urandom(2048))
    (src / "nul.sbatch").write_bytes(b"#!/bin/bash\n#SBATCH -J nul\npython x.py\0\n")
    (src / "crlf.sbatch").write_bytes(b"#!/bin/bash\r\n#SBATCH -J crlf\r\npython x.py\r\n")
    (src / "big.sbatch").write_bytes(b"#!/bin/bash\n#SBATCH -J big\n" + b"#" * 5000 + b"\n")
    if os.geteuid() == 0:  # root reads any mode: use a file whose read fails with EIO
        os.symlink("/proc/self/mem", src / "unreadable.sbatch")
    else:
        (src / "unreadable.sbatch").write_text("#!/bin/bash\n#SBATCH -J u\n")
        (src / "unreadable.sbatch").chmod(0)
    os.symlink("loop-b", src / "loop-a")
    os.symlink("loop-a", src / "loop-b")
    out = tmp_path / "out"
    proc = run("migrate", src, "-o", out, "--max-size", "4096", "--jobs", "2")
    assert proc.returncode == 1, proc.stderr
    report = json.loads((out / "slurm2kf-report.json").read_text())
    skipped = {s["path"]: s["code"] for s in report["skipped"]}
    # as root the unreadable file is a link into /proc, which leaves SRC: reported, never read (M619)
    assert skipped["unreadable.sbatch"] == ("M619" if os.geteuid() == 0 else "M602")
    assert skipped["big.sbatch"] == "M601"
    assert skipped["loop-a"] == "M604" and skipped["loop-b"] == "M604"
    recs = {s["path"]: s for s in report["scripts"]}
    assert "model.bin" not in recs and "model.bin" not in skipped
    # sbatch refuses NUL bytes and CRLF line endings: errors, no TrainJob
    for rel in ("nul.sbatch", "crlf.sbatch"):
        assert recs[rel]["outcome"] == "errors" and not recs[rel]["sbatch_accepts"]
    # the good scripts were still converted
    assert (out / "two.trainjob.yaml").exists() and (out / "a" / "one.trainjob.yaml").exists()
    if os.geteuid() != 0:
        assert "unreadable.sbatch: error M602" in proc.stderr


def test_reports_rendered_by_workers_equal_the_report_command(migrated):
    """migrate renders per-script report parts in its workers; `slurm2kf report OUT` re-renders the
    three reports from the JSON alone: both paths must give the same bytes."""
    _src, out, _proc, _ = migrated
    for fmt in ("md", "html", "json"):
        again = run("report", out, "--format", fmt)
        assert again.returncode == 1  # the repository has scripts with errors
        assert again.stdout == (out / f"slurm2kf-report.{fmt}").read_text(encoding="utf-8"), fmt


def test_report_command_on_source_and_on_output(tmp_path):
    src = _clean_repo(tmp_path / "src")
    out = tmp_path / "out"
    run("migrate", src, "-o", out)
    from_out = run("report", out, "--format", "json")
    from_src = run("report", src, "--format", "json")
    assert from_out.returncode == 0 and from_src.returncode == 0, from_src.stderr
    a, b = json.loads(from_out.stdout), json.loads(from_src.stdout)
    assert a["summary"] == b["summary"]
    assert [s["path"] for s in a["scripts"]] == [s["path"] for s in b["scripts"]] == ["a/one.sbatch", "two.sh"]
    html_file = tmp_path / "r.html"
    assert run("report", out, "-o", html_file).returncode == 0
    assert html_file.read_text().startswith("<!DOCTYPE html>")
    md = run("report", src / "two.sh")
    assert md.returncode == 0 and "two.sh" in md.stdout


def test_nearest_profile_applies_per_folder_and_report_lists_what_it_leaves(tmp_path):
    """A slurm2kf.yaml in team-a/ applies to the scripts below it only; the report's "still needs a
    home" lists only what that profile does not provide."""
    src = tmp_path / "src"
    shutil.copytree(REPO, src)
    profile = Path(__file__).parent / "fixtures" / "profiles" / "university" / "slurm2kf.yaml"
    shutil.copy(profile, src / "team-a" / "slurm2kf.yaml")
    out = tmp_path / "out"
    proc = run("migrate", src, "-o", out)
    assert proc.returncode == 1, proc.stderr
    recs = {s["path"]: s for s in json.loads((out / "slurm2kf-report.json").read_text())["scripts"]}
    # the university profile provides cuda/* and nccl/* and mounts /home, /scratch, /apps
    tr = recs["team-a/torchrun_multinode.sh"]
    assert tr["modules"] == [] and tr["paths"] == ["/gpfs"]
    assert recs["team-a/nested/deep/mpi_allreduce.slurm"]["modules"] == ["openmpi/4.1"]
    # outside team-a no profile applies
    single = recs["single_gpu.sbatch"]
    assert single["modules"] == ["cuda/12.1"] and single["paths"] == ["/scratch"]
    ns = {
        rel: yaml.safe_load((out / (SCRIPTS[rel] + ".trainjob.yaml")).read_text())["metadata"].get("namespace")
        for rel in ("team-a/torchrun_multinode.sh", "single_gpu.sbatch")
    }
    assert ns == {"team-a/torchrun_multinode.sh": "hpc-users", "single_gpu.sbatch": None}


def test_hostile_file_names_stay_data_in_every_output(tmp_path):
    src = tmp_path / "src"
    (src / "odd dir").mkdir(parents=True)
    name = 'we"ird\nname: [x] #1.sbatch'
    (src / "odd dir" / name).write_text("#!/bin/bash\n#SBATCH --job-name=odd\n#SBATCH -t 5\npython t.py\n")
    out = tmp_path / "out"
    proc = run("migrate", src, "-o", out)
    assert proc.returncode == 0, proc.stderr
    stem = 'we"ird\nname: [x] #1'
    assert (out / "odd dir" / (stem + ".trainjob.yaml")).is_file()
    k = yaml.safe_load((out / "odd dir" / "kustomization.yaml").read_text())
    assert k["resources"] == [stem + ".trainjob.yaml"]
    assert yaml.safe_load((out / "kustomization.yaml").read_text())["resources"] == ["odd dir"]
    md = (out / "slurm2kf-report.md").read_text()
    assert "- <code>odd dir/we&quot;ird name: [x] #1.sbatch</code>\n" in md  # one line, quote escaped
    missing = run("report", tmp_path / "src")  # a scripts folder: converted on the fly
    assert missing.returncode == 0
    (out / "slurm2kf-report.json").write_text("{}")
    broken = run("report", out)
    assert broken.returncode == 2 and "M614" in broken.stderr
