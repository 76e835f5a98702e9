"""Profiles under attack (issue 10): `profile init` always writes a skeleton its own `profile check`
accepts; regexes with catastrophic backtracking are refused; `profile check` is linear in the number
of partitions; `--profile` on a FIFO, a device or a huge file is an F5xx diagnostic, never a hang."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies as S
from translator.profile.load import ProfileError, load_profile, parse_profile
from translator.profile.patterns import PatternError, compile_pattern
from translator.profile.scan import survey
from translator.profile.skeleton import render_skeleton

EXE = S.REPO / ".venv" / "bin" / "slurm2kf"

# Words a hostile repository puts where init collects names: partitions, QoS, accounts, GPU types,
# constraint features, modules, conda/venv names, containers and paths.
_JUNK = st.sampled_from(
    [
        "/..",
        "/.",
        "$rundir",
        "${rundir}",
        "/",
        "//x",
        "/a b",
        "$1",
        "${@}",
        "/-x",
        "~/x",
        "x:y",
        "re:.*",
        "*",
        "[",
        "a]",
        "-",
        "ü",
        "\u2028",
        "#",
        "'",
        '"',
        "&",
        "!",
        "%",
        "@",
        "null",
        "true",
        "0x1",
        "1e3",
        "~",
        "? x",
        "- x",
        "{a}",
        "[a]",
        "a,b",
        "A_B",
        "gpu",
        "a100",
        "h100:2",
        "tmp/..",
        "/scratch/../etc",
        "$SCRATCH",
        "$HOME",
        "/proc/self",
    ]
)
_WORD = st.one_of(
    _JUNK,
    st.text(
        st.characters(min_codepoint=33, max_codepoint=0x2030, blacklist_categories=("Cs",)), min_size=1, max_size=12
    ),
)


@st.composite
def hostile_script(draw) -> str:
    def w() -> str:
        return draw(_WORD).replace("\n", " ")

    lines = ["#!/bin/bash"]
    for opt in ("--partition", "--qos", "--account", "--constraint", "--gres=gpu:", "--gpus="):
        if draw(st.booleans()):
            value = w()
            lines.append(f"#SBATCH {opt}{value}" if opt.endswith(("=", ":")) else f"#SBATCH {opt}={value}")
    lines.append("#SBATCH --nodes=1")
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(
            st.sampled_from(
                [
                    "module load",
                    "conda activate",
                    "source",
                    "cd",
                    "ls",
                    "export X=",
                    "srun python",
                    "singularity exec",
                    "apptainer run",
                ]
            )
        )
        lines.append(f"{kind} {w()}/{w()} {w()}")
    return "\n".join(lines) + "\n"


@settings(
    max_examples=int(os.environ.get("HOSTILE_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(scripts=st.lists(hostile_script(), min_size=1, max_size=4))
def test_init_skeleton_always_passes_check(tmp_path_factory, scripts):
    root = tmp_path_factory.mktemp("repo")
    for i, text in enumerate(scripts):
        (root / f"job{i}.sbatch").write_text(text, encoding="utf-8")
    usage = survey(str(root))
    skeleton = render_skeleton(usage, str(root))
    try:
        profile = parse_profile(skeleton, "slurm2kf.yaml")
    except ProfileError as exc:
        raise AssertionError("the skeleton fails its own check:\n" + exc.format() + "\n---\n" + skeleton)
    # junk prefixes are never proposed as file systems (`/..` is the root again, `$rundir` no env name)
    for fs in profile.filesystems:
        assert fs.key not in ("/.", "/..") and not fs.key.startswith("$rundir"), fs


def test_init_on_a_repository_with_junk_prefixes_proposes_only_real_ones(tmp_path):
    (tmp_path / "a.sbatch").write_text(
        "#!/bin/bash\n#SBATCH -N 1\ncd /..\nls /./x\ncp $rundir/x /scratch/y\nsrun python t.py\n"
    )
    out = tmp_path / "p.yaml"
    proc = subprocess.run([str(EXE), "profile", "init", str(tmp_path), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    check = subprocess.run([str(EXE), "profile", "check", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    text = out.read_text()
    assert 'path: "/scratch"' in text and '"/.."' not in text and '"/."' not in text and "rundir" not in text


# ---- regular expressions with catastrophic backtracking ------------------------------------------


@pytest.mark.parametrize("pattern", ["re:(a+)+$", "re:(a*)*b", "re:^(\\w+-?)*$", "re:(x+x+)+y", "re:((ab)*)+c"])
def test_nested_quantifiers_are_refused(pattern):
    with pytest.raises(PatternError, match="catastrophic backtracking"):
        compile_pattern(pattern)


@pytest.mark.parametrize("pattern", ["re:^h100(-.*)?$", "re:gpu[0-9]+", "re:(ab)+", "re:(?:a|b)+-x", "re:a{2,5}"])
def test_ordinary_regexes_still_compile(pattern):
    assert compile_pattern(pattern).kind == "regex"


def test_profile_with_an_exponential_regex_is_an_f553_error_not_a_hang(tmp_path):
    prof = tmp_path / "p.yaml"
    prof.write_text("apiVersion: slurm2kf/v1\nkind: SiteProfile\npartitions:\n  're:(a+)+$':\n    queue: q\n")
    script = tmp_path / "j.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH -p " + "a" * 40 + "!\nsrun python t.py\n")  # 2^40 steps with (a+)+$
    t0 = time.monotonic()
    proc = subprocess.run(
        [str(EXE), "convert", str(script), "--profile", str(prof)], capture_output=True, text=True, timeout=60
    )
    assert time.monotonic() - t0 < 30
    assert proc.returncode == 2 and "F553" in proc.stderr and ":4:" in proc.stderr, proc.stderr


# ---- profile check is linear in the number of partitions ----------------------------------------


def _big_profile(path: Path, n: int) -> None:
    lines = [
        "apiVersion: slurm2kf/v1",
        "kind: SiteProfile",
        "gpuTypes:",
        "  a100: {resource: nvidia.com/gpu}",
        "partitions:",
    ]
    for i in range(n):
        lines.append(f"  p{i}: {{queue: q{i}, gpuType: t{i}}}")  # every gpuType unknown: F525 each
    path.write_text("\n".join(lines) + "\n")


def test_profile_check_time_grows_linearly_with_partitions(tmp_path):
    from translator.profile.lint import lint_profile

    times = {}
    for n in (2000, 8000):
        p = tmp_path / f"p{n}.yaml"
        _big_profile(p, n)
        prof = load_profile(str(p))
        t0 = time.perf_counter()
        diags = lint_profile(prof)
        times[n] = time.perf_counter() - t0
        assert len(diags) == n
    # 4x the partitions: a linear lint takes ~4x; a quadratic one ~16x. Allow noise up to 8x.
    assert times[8000] < 8 * max(times[2000], 0.005), times


def test_unreachable_partitions_are_still_reported():
    from translator.profile.lint import lint_profile

    prof = parse_profile(
        "apiVersion: slurm2kf/v1\nkind: SiteProfile\npartitions:\n  '*': {queue: a}\n"
        "  gpu: {queue: b}\n  gpu-*: {queue: c}\n",
        "p.yaml",
    )
    diags = lint_profile(prof)
    assert [(d.code, d.line) for d in diags] == [("F526", 5), ("F526", 6)]


# ---- --profile on FIFOs, devices and huge files --------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "devzero", "huge", "directory"])
def test_profile_that_is_not_a_readable_regular_file_is_f5xx_never_a_hang(tmp_path, kind):
    script = tmp_path / "j.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH -N 1\nsrun python t.py\n")
    prof = tmp_path / "p.yaml"
    if kind == "fifo":
        os.mkfifo(prof)
    elif kind == "devzero":
        prof.symlink_to("/dev/zero")
    elif kind == "huge":
        prof.write_bytes(b"# " + b"x" * (2 << 20) + b"\n")
    else:
        prof.mkdir()
    for args in (
        ["convert", str(script), "--profile", str(prof)],
        ["profile", "check", str(prof)],
        ["migrate", str(tmp_path), "-o", str(tmp_path.parent / (tmp_path.name + "-out")), "--profile", str(prof)],
    ):
        proc = subprocess.run([str(EXE), *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert proc.returncode == 2, (args, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert ("F560" in proc.stderr) or ("F550" in proc.stderr and kind == "huge"), (args, proc.stderr)


def test_init_names_unreadable_files_with_f528(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from translator import fsio
    from translator.cli import cli

    (tmp_path / "ok.sbatch").write_text("#!/bin/bash\n#SBATCH -p gpu\nsrun python t.py\n")
    (tmp_path / "secret.sbatch").write_text("#!/bin/bash\n#SBATCH -p hidden\n")
    os.mkfifo(tmp_path / "pipe.sbatch")  # special file: skipped silently, never opened
    real = fsio.read_user_file

    def deny(path, *a, **kw):  # root reads mode-000 files: simulate the permission error
        if str(path).endswith("secret.sbatch"):
            raise fsio.UserFileError(fsio.DENIED, str(path), f"{path}: permission denied")
        return real(path, *a, **kw)

    monkeypatch.setattr(fsio, "read_user_file", deny)
    res = CliRunner().invoke(cli, ["profile", "init", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert f"{tmp_path / 'secret.sbatch'}: warning F528 cannot be read, not surveyed (permission denied)" in res.output
    assert "surveyed 1 job script" in res.output and "pipe.sbatch" not in res.output
