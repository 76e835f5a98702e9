"""migrate under attack (issue 10): it stays inside OUT (no symlink in OUT is followed, every manifest
path is checked, only files it wrote with a matching hash are deleted), never reads special files in
OUT or SRC, survives any file name, does not follow links out of SRC unless asked, its workers die
with it, and a per-script timeout never leaves unlisted outputs."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

import strategies as S

EXE = S.REPO / ".venv" / "bin" / "slurm2kf"
GOOD = "#!/bin/bash\n#SBATCH --job-name={name}\n#SBATCH -N 1\n#SBATCH -t 10\nsrun python train.py --tag {name}\n"


def run(*args, timeout=120):
    return subprocess.run(
        [str(EXE), *map(str, args)], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def tree(root: Path) -> dict:
    """Every entry under root (no link followed): path -> kind and content hash."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            if p.is_symlink():
                out[str(p)] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[str(p)] = "dir"
            elif p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[str(p)] = "special"
    return out


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


# ---- severe 3: migrate stays inside OUT ------------------------------------------------------


def test_a_symlinked_folder_inside_out_never_redirects_writes_or_deletes(tmp_path):
    src, out, elsewhere = tmp_path / "src", tmp_path / "out", tmp_path / "elsewhere"
    (src / "a").mkdir(parents=True)
    (src / "a" / "one.sbatch").write_text(GOOD.format(name="one"))
    (src / "a" / "gone.sbatch").write_text(GOOD.format(name="gone"))
    (src / "two.sbatch").write_text(GOOD.format(name="two"))
    assert run("migrate", src, "-o", out).returncode == 0
    # an attacker moves OUT/a away and puts a link to another folder in its place, holding copies
    # of the outputs (same hashes, so a naive stale-output removal would delete them)
    os.rename(out / "a", elsewhere)
    (out / "a").symlink_to(elsewhere)
    (src / "a" / "gone.sbatch").unlink()  # its output is now stale: removal must not follow the link
    (src / "a" / "one.sbatch").write_text(GOOD.format(name="one-changed"))  # its output would be rewritten
    before = tree(elsewhere)
    proc = run("migrate", src, "-o", out)
    assert "Traceback" not in proc.stderr
    assert tree(elsewhere) == before, "migrate wrote or deleted through a symlink inside OUT"
    assert proc.returncode == 1, proc.stderr
    assert "M618" in proc.stderr and "a/one.sbatch" in proc.stderr
    assert "M620" in proc.stderr  # the stale entry behind the link is not acted on
    rec = {s["path"]: s for s in json.loads((out / "slurm2kf-report.json").read_text())["scripts"]}
    assert "M618" in {i["code"] for i in rec["a/one.sbatch"]["issues"]}
    assert rec["two.sbatch"]["outcome"] in ("clean", "warnings")
    assert (out / "a").is_symlink()  # not replaced either


def _forge_manifest(out: Path, extra: dict) -> None:
    m = json.loads((out / ".slurm2kf-migrate.json").read_text())
    m["outputs"].update(extra)
    (out / ".slurm2kf-migrate.json").write_text(json.dumps(m))


def test_an_edited_manifest_never_deletes_outside_out_or_files_migrate_did_not_write(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "two.sbatch").write_text(GOOD.format(name="two"))
    assert run("migrate", src, "-o", out).returncode == 0
    victims = {}
    for rel in ("victim.trainjob.yaml", "deep/victim.trainjob.py"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("precious\n")
        victims[p] = sha(p)
    (out / "notes.txt").write_text("mine\n")  # a user's file inside OUT
    (out / "sub").mkdir()
    (out / "sub" / "keep.trainjob.yaml").write_text("hand-written\n")
    forged = {
        "../victim.trainjob.yaml": sha(tmp_path / "victim.trainjob.yaml"),
        str(tmp_path / "deep" / "victim.trainjob.py"): sha(tmp_path / "deep" / "victim.trainjob.py"),
        "sub/../../victim.trainjob.yaml": sha(tmp_path / "victim.trainjob.yaml"),
        "./sub/keep.trainjob.yaml": sha(out / "sub" / "keep.trainjob.yaml"),
        "sub//keep.trainjob.yaml": sha(out / "sub" / "keep.trainjob.yaml"),
        "notes.txt": sha(out / "notes.txt"),  # right hash, but not a name migrate writes
        "sub/keep.trainjob.yaml": "0" * 64,  # a name migrate writes, wrong hash: kept (M608)
    }
    _forge_manifest(out, forged)
    proc = run("migrate", src, "-o", out)
    assert proc.returncode == 0, proc.stderr
    for p, digest in victims.items():
        assert p.exists() and sha(p) == digest
    assert (out / "notes.txt").read_text() == "mine\n"
    assert (out / "sub" / "keep.trainjob.yaml").read_text() == "hand-written\n"
    assert proc.stderr.count("M620") == 6, proc.stderr
    assert "sub/keep.trainjob.yaml: warning M608" in proc.stderr
    # the rewritten manifest only holds what this run wrote
    m = json.loads((out / ".slurm2kf-migrate.json").read_text())
    assert not any(".." in k or k.startswith("/") or k == "notes.txt" for k in m["outputs"])


@pytest.mark.parametrize(
    "entry,kind",
    [
        ("slurm2kf-report.md", "devzero"),
        ("slurm2kf-report.json", "fifo"),
        ("kustomization.yaml", "devzero"),
        (".slurm2kf-migrate.json", "fifo"),
        ("two.trainjob.yaml", "fifo"),
        ("two.trainjob.py", "devzero"),
    ],
)
def test_special_files_in_out_never_hang_or_fill_memory(tmp_path, entry, kind):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "two.sbatch").write_text(GOOD.format(name="two"))
    assert run("migrate", src, "-o", out).returncode == 0
    target = out / entry
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    t0 = time.monotonic()
    proc = run("migrate", src, "-o", out, "--force", timeout=60)
    assert time.monotonic() - t0 < 45
    assert "Traceback" not in proc.stderr
    assert proc.returncode in (1, 2) and "M618" in proc.stderr, (proc.returncode, proc.stderr)
    assert target.is_fifo() if kind == "fifo" else target.is_symlink()  # left as it was
    if entry.endswith(".json") and entry.startswith("slurm2kf"):
        rep = run("report", out, timeout=60)  # reading it back: refused, no hang
        assert rep.returncode == 2 and "M614" in rep.stderr


# ---- severe 4: file names --------------------------------------------------------------------


def test_hostile_file_names_never_abort_the_run_and_never_collide(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    raw = os.fsencode(src)
    names = {
        b"caf\xe9.sbatch": "latin",
        b"bad\xff\xfe.sh": "badbytes",
        b"del\x7fname.sbatch": "del",
        "nel\u0085name.sbatch".encode(): "nel",
        b"new\nline.sbatch": "newline",
        "ls\u2028sep.sbatch".encode(): "lsep",
        b"train.sh": "a",
        b"train.sbatch": "b",
        b"train.sh.sbatch": "c",
        b"x.sbatch": "x",
        b"L" * 248 + b".sbatch": "long",
    }  # 255 bytes: the longest name there is
    for n, job in names.items():
        with open(raw + b"/" + n, "wb") as fh:
            fh.write(GOOD.format(name=job).encode())
    for d in (b"kustomization.yaml", b"slurm2kf-report.md", b"x.trainjob.yaml", b"dir\xff"):
        os.mkdir(raw + b"/" + d)
        with open(raw + b"/" + d + b"/inner.sbatch", "wb") as fh:
            fh.write(GOOD.format(name="in-" + str(len(d))).encode())
    proc = run("migrate", src, "-o", out)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "slurm2kf-report.json").read_text(encoding="utf-8"))
    recs = {s["path"]: s for s in report["scripts"]}
    assert len(recs) == len(names) + 4  # every script is in the report
    assert "caf\\xe9.sbatch" in recs and "bad\\xff\\xfe.sh" in recs and "dir\\xff/inner.sbatch" in recs
    # every script has its own outputs, holding its own job (nothing silently lost or overwritten)
    yamls = {}
    for rec in recs.values():
        ys = [o for o in rec["outputs"] if o.endswith(".trainjob.yaml")]
        assert len(ys) == 1, rec
        yamls[rec["path"]] = ys[0]
    assert len(set(yamls.values())) == len(yamls)
    for y in yamls.values():
        doc = yaml.safe_load((out / y).read_text(encoding="utf-8"))
        assert doc["kind"] == "TrainJob"
    job_of = {rel: yaml.safe_load((out / y).read_text())["metadata"]["name"] for rel, y in yamls.items()}
    assert {job_of["train.sh"], job_of["train.sbatch"], job_of["train.sh.sbatch"]} == {"a", "b", "c"}
    # kustomizations parse and name exactly the files that exist (kubectl apply -k works)
    for k in out.rglob("kustomization.yaml"):
        if not k.is_file():
            continue
        res = yaml.safe_load(k.read_text(encoding="utf-8"))["resources"]
        for r in res:
            assert (k.parent / r).exists(), (k, r)
    root_res = yaml.safe_load((out / "kustomization.yaml").read_text())["resources"]
    assert "nel\u0085name.trainjob.yaml" in root_res and "new\nline.trainjob.yaml" in root_res
    # reserved names stay migrate's: the folders were written under other names, and said so (M617)
    assert (out / "kustomization.yaml").is_file() and (out / "slurm2kf-report.md").is_file()
    assert (out / "x.trainjob.yaml").is_file()
    skipped = {s["path"]: s for s in report["skipped"]}
    for d in ("kustomization.yaml", "slurm2kf-report.md", "x.trainjob.yaml", "dir\\xff"):
        assert skipped[d]["code"] == "M617", skipped
    assert "M617" in {i["code"] for i in recs["train.sh.sbatch"]["issues"]} or "M617" in {
        i["code"] for i in recs["caf\\xe9.sbatch"]["issues"]
    }
    assert "M617" in {i["code"] for i in recs["bad\\xff\\xfe.sh"]["issues"]}
    # idempotent, and the other commands read the same tree without a traceback
    check = run("migrate", src, "-o", out, "--check")
    assert check.returncode == 0, check.stderr
    for args in (("report", out), ("report", src, "--format", "html"), ("report", src, "--format", "json")):
        r = run(*args)
        assert r.returncode == 0 and "Traceback" not in r.stderr and r.stdout, (args, r.stderr)


def test_output_names_are_deterministic_and_distinct():
    from translator.migrate.discover import _folder_plan, _out_names

    names = ["train.sh", "train.sbatch", "train.sh.sbatch", "job", "job.sh", "eval.slurm"]
    n = _out_names(names)
    assert n == {
        "train.sh": "train.sh",
        "train.sbatch": "train.sbatch",
        "train.sh.sbatch": "train.sh.sbatch",
        "job": "job",
        "job.sh": "job.sh",
        "eval.slurm": "eval",
    }
    files, dirs = _folder_plan(names + ["a\udcff", "a%FF"], ["kustomization.yaml", "eval.trainjob.yaml", "d"], "")
    stems = [s for s, _ in files.values()]
    assert len(set(stems)) == len(stems)
    assert files["a\udcff"][0] != files["a%FF"][0] and files["a%FF"][0] == "a%FF"
    assert dirs["d"] == ("d", "")
    assert (
        dirs["kustomization.yaml"][0] != "kustomization.yaml" and dirs["eval.trainjob.yaml"][0] != "eval.trainjob.yaml"
    )
    assert _folder_plan(list(reversed(names)), ["d"], "")[0] == _folder_plan(names, ["d"], "")[0]
    long = "L" * 250 + ".sbatch"
    ((stem, note),) = _folder_plan([long], [], "")[0].values()
    assert len((stem + ".trainjob.yaml").encode()) <= 255 and note


# ---- medium: links leaving SRC -------------------------------------------------------------


def _link_bomb(tmp_path: Path, depth: int = 13) -> Path:
    """outside/d0 .. d{depth}: each d{i} holds two links to d{i+1}; the last holds one script.
    Followed naively that is 2**depth copies of the script (8,192 for depth 13, 26 links)."""
    outside = tmp_path / "outside"
    for i in range(depth + 1):
        (outside / f"d{i}").mkdir(parents=True)
    for i in range(depth):
        (outside / f"d{i}" / "l1").symlink_to(outside / f"d{i + 1}")
        (outside / f"d{i}" / "l2").symlink_to(outside / f"d{i + 1}")
    (outside / f"d{depth}" / "job.sbatch").write_text(GOOD.format(name="bomb"))
    return outside


def test_links_out_of_src_are_not_followed_by_default(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "ok.sbatch").write_text(GOOD.format(name="ok"))
    (src / "bomb").symlink_to(_link_bomb(tmp_path) / "d0")
    (src / "proc").symlink_to("/proc/self")
    (src / "kmsg.sbatch").symlink_to("/proc/kmsg")
    proc = run("migrate", src, "-o", out, timeout=60)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "slurm2kf-report.json").read_text())
    assert [s["path"] for s in report["scripts"]] == ["ok.sbatch"]
    codes = {s["path"]: s["code"] for s in report["skipped"]}
    assert codes == {"bomb": "M619", "proc": "M619", "kmsg.sbatch": "M619"}


def test_follow_symlinks_visits_each_folder_once_and_never_enters_proc(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "bomb").symlink_to(_link_bomb(tmp_path) / "d0")
    (src / "proc").symlink_to("/proc/self")
    (src / "dev").symlink_to("/dev")
    t0 = time.monotonic()
    proc = run("migrate", src, "-o", out, "--follow-symlinks", timeout=60)
    assert time.monotonic() - t0 < 45
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "slurm2kf-report.json").read_text())
    paths = [s["path"] for s in report["scripts"]]
    assert len(paths) == 1 and paths[0].endswith("/job.sbatch"), paths  # one copy, not 8,192
    codes = {s["path"]: s["code"] for s in report["skipped"]}
    assert codes["proc"] == "M619" and codes["dev"] == "M619"


# ---- medium: workers die with the parent ---------------------------------------------------


def _children(pid: int):
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    kids.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return kids


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killing_the_migrate_parent_kills_its_workers(tmp_path, sig):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(3000):
        (src / f"j{i:04d}.sbatch").write_text(GOOD.format(name=f"j{i}"))
    parent = subprocess.Popen(
        [str(EXE), "migrate", str(src), "-o", str(tmp_path / "out"), "-j", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    workers = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(workers) < 2:
            workers = [k for k in _children(parent.pid) if _alive(k)]
            time.sleep(0.05)
        assert len(workers) >= 2 and parent.poll() is None, "migrate finished before its workers were seen"
        parent.send_signal(sig)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.05)
        assert not [w for w in workers if _alive(w)], "worker processes outlived the migrate parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        for w in workers:  # never leave processes behind, even when the test fails
            if _alive(w):
                os.kill(w, signal.SIGKILL)


# ---- medium: a timeout never leaves outputs outside the manifest ---------------------------


def test_a_timeout_after_the_conversion_leaves_no_unlisted_outputs(tmp_path, monkeypatch):
    from translator.migrate.run import MigrateOptions, migrate
    from translator.report import build

    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "slow.sbatch").write_text(GOOD.format(name="slow"))
    (src / "fast.sbatch").write_text(GOOD.format(name="fast"))
    real = build.script_report

    def slow_report(conv, rel, *a, **kw):  # the slow part comes after the YAML is rendered
        if rel == "slow.sbatch":
            time.sleep(3)
        return real(conv, rel, *a, **kw)

    monkeypatch.setattr(build, "script_report", slow_report)
    res = migrate(MigrateOptions(src=str(src), out=str(out), jobs=1, timeout=1.0, echo=lambda s: None))
    assert res.exit_code == 1
    manifest = json.loads((out / ".slurm2kf-migrate.json").read_text())
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != ".slurm2kf-migrate.json"}
    assert on_disk == set(manifest["outputs"]), (on_disk, manifest["outputs"])
    assert not (out / "slow.trainjob.yaml").exists() and (out / "fast.trainjob.yaml").exists()


def test_a_source_folder_whose_own_name_is_not_utf8(tmp_path):
    src = os.fsdecode(os.fsencode(tmp_path) + b"/jobs\xff")
    os.mkdir(src)
    Path(src, "a.sbatch").write_text(GOOD.format(name="a"))
    out = tmp_path / "out"
    assert run("migrate", src, "-o", out).returncode == 0
    for f in ("slurm2kf-report.md", "slurm2kf-report.html"):
        assert "xff" in (out / f).read_text(encoding="utf-8")  # valid UTF-8, byte shown as \xff
    assert json.loads((out / "slurm2kf-report.json").read_text(encoding="utf-8"))["source"] == "jobs\\xff"
    for args in (("report", out, "--format", "html"), ("report", src), ("report", Path(src) / "a.sbatch")):
        r = run(*args)
        assert r.returncode == 0 and "Traceback" not in r.stderr and r.stdout, (args, r.stderr)
