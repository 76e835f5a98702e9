"""`slurm2kf profile init DIR`: the survey of a script repository and the skeleton it writes."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from translator.cli import cli
from translator.profile.load import load_profile, parse_profile
from translator.profile.scan import survey

FIX = Path(__file__).parent / "fixtures" / "profiles"


def _repo(tmp_path: Path) -> Path:
    """The nine fixture scripts of the three sites plus files that are not job scripts."""
    root = tmp_path / "repo"
    for site in ("university", "ailab", "amd"):
        shutil.copytree(FIX / site / "scripts", root / site)
    (root / "README.md").write_text("#SBATCH lines in docs do not make a job script\n")
    (root / "util.sh").write_text("#!/bin/bash\necho no directives here\n")
    (root / ".git").mkdir()
    (root / ".git" / "hidden.sbatch").write_text("#!/bin/bash\n#SBATCH -p hiddenpart\n")
    return root


def test_survey_counts_what_the_scripts_use(tmp_path):
    usage = survey(str(_repo(tmp_path)))
    assert usage.scripts == 9
    assert {k: t.count for k, t in usage.partitions.items()} == {
        "a100-mig": 1,
        "h100-prio": 1,
        "mi300x": 1,
        "standard-g": 1,
        "dev-g": 1,
        "cpu-long": 1,
        "gpu": 1,
        "debug": 1,
    }
    assert usage.no_partition == 1  # ailab/default_partition.sbatch
    assert usage.accounts["project_465000123"].count == 2
    assert set(usage.qos) == {"urgent", "long", "normal"}
    assert set(usage.gpu_types) == {"1g.10gb", "mi300x", "a100", "v100"}
    assert set(usage.features) == {"ib"}
    assert usage.partitions["cpu-long"].notes == {"--exclusive": 1, "--mem=0": 1}
    envs = {k: t.count for k, t in usage.environments.items()}
    assert envs[("module", "pytorch/2.4.1-rocm-6.1")] == 2
    assert envs[("container", "/lustre/containers/pytorch_24.05.sif")] == 1
    assert envs[("venv", "/lustre/envs/llm-eval")] == 1
    assert envs[("conda", "torch21")] == 1
    assert ("module", "purge") not in envs
    paths = {k: t.count for k, t in usage.paths.items()}
    assert paths == {
        "/scratch": 3,
        "/home": 3,
        "$SCRATCH": 3,
        "/lustre": 3,
        "/checkpoints": 2,
        "$HOME": 1,
        "/data": 1,
        "/appl": 1,
    }


def test_init_writes_a_skeleton_that_checks_and_lists_everything(tmp_path):
    repo = _repo(tmp_path)
    out = tmp_path / "slurm2kf.yaml"
    res = CliRunner().invoke(cli, ["profile", "init", str(repo), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "surveyed 9 job scripts" in res.output
    text = out.read_text()
    profile = load_profile(str(out))  # the skeleton is valid as written
    assert sorted(r.pattern.text for r in profile.partitions) == sorted(
        ["a100-mig", "h100-prio", "mi300x", "standard-g", "dev-g", "cpu-long", "gpu", "debug"]
    )
    assert all(r.queue is None for r in profile.partitions)
    assert [r.pattern.text for r in profile.accounts][0] == "project_465000123"  # most used first
    assert {r.pattern.text: r.resource for r in profile.gpu_types} == {
        "1g.10gb": "nvidia.com/mig-1g.10gb",
        "mi300x": "amd.com/gpu",
        "a100": "nvidia.com/gpu",
        "v100": "nvidia.com/gpu",
    }
    assert [f.path for f in profile.filesystems][:3] == ["$SCRATCH", "/home", "/lustre"]
    assert all(f.source is None for f in profile.filesystems)
    matchers = [(k, p.text) for r in profile.image_rules for k, p in r.matchers]
    assert matchers[0] == ("module", "pytorch/2.4.1-rocm-6.1")
    assert ("container", "/lustre/containers/pytorch_24.05.sif") in matchers
    # counts and examples are in the comments
    assert "  # 2 scripts (e.g. amd/gpt_mi250x.sbatch, amd/osu_mpi.sbatch)\n  project_465000123:\n" in text
    assert "; --exclusive: 1, --mem=0: 1" in text
    assert "hiddenpart" not in text  # .git is not surveyed
    # refuses to overwrite without --force
    res = CliRunner().invoke(cli, ["profile", "init", str(repo), "-o", str(out)])
    assert res.exit_code == 2 and "--force" in res.output
    res = CliRunner().invoke(cli, ["profile", "init", str(repo), "-o", str(out), "--force"])
    assert res.exit_code == 0


def test_init_to_stdout_and_odd_names_round_trip(tmp_path):
    root = tmp_path / "odd"
    root.mkdir()
    (root / "a.sbatch").write_text(
        "#!/bin/bash\n#SBATCH -p 'gpu*weird'\n#SBATCH --qos=true\n#SBATCH -A '123'\n"
        "module load 'py[torch]/2'\npython /work/x.py\n"
    )
    res = CliRunner().invoke(cli, ["profile", "init", str(root)])
    assert res.exit_code == 0, res.output
    text = res.output[: res.output.index("surveyed")] if "surveyed" in res.output else res.output
    profile = parse_profile(text)
    (part,) = profile.partitions
    assert part.pattern.matches("gpu*weird") and not part.pattern.matches("gpu-x-weird")
    assert profile.qos[0].pattern.matches("true")
    assert profile.accounts[0].pattern.matches("123")
    (rule,) = profile.image_rules
    assert rule.matchers[0][1].matches("py[torch]/2") and not rule.matchers[0][1].matches("pyt/2")
    assert [f.path for f in profile.filesystems] == ["/work"]


def test_init_on_a_missing_directory_is_a_usage_error(tmp_path):
    res = CliRunner().invoke(cli, ["profile", "init", str(tmp_path / "nope")])
    assert res.exit_code == 2


def test_init_on_a_directory_without_job_scripts(tmp_path):
    res = CliRunner().invoke(cli, ["profile", "init", str(tmp_path)])
    assert res.exit_code == 0
    assert "no job scripts found" in res.output
    assert yaml.safe_load(res.output.split("surveyed")[0])["apiVersion"] == "slurm2kf/v1"


def test_survey_counts_launcher_families_and_their_runtimes(tmp_path):
    usage = survey(str(_repo(tmp_path)))
    assert {k: t.count for k, t in usage.launchers.items()} == {
        ("python", "torch-distributed"): 4,
        ("torchrun", "torch-distributed"): 3,
        ("srun-tasks", "torch-distributed"): 1,
        ("mpi", "deepspeed-distributed"): 1,
    }
    from translator.profile.skeleton import render_skeleton

    profile = parse_profile(render_skeleton(usage, "repo"))
    assert [(r.name, r.launchers, r.image) for r in profile.runtimes] == [
        ("torch-distributed", ("python", "torchrun", "srun-tasks"), None),
        ("deepspeed-distributed", ("mpi",), None),
    ]


def test_survey_survives_a_resolver_failure(tmp_path, monkeypatch):
    import translator.slurm.resolve as resolve_mod

    def broken(*a, **k):
        raise RuntimeError("resolver bug")

    monkeypatch.setattr(resolve_mod, "resolve", broken)
    usage = survey(str(_repo(tmp_path)))
    assert usage.scripts == 9
    # the directive fallback still finds partitions, accounts and GPU types
    assert set(usage.partitions) == {
        "a100-mig",
        "h100-prio",
        "mi300x",
        "standard-g",
        "dev-g",
        "cpu-long",
        "gpu",
        "debug",
    }
    assert usage.accounts["project_465000123"].count == 2
    assert set(usage.gpu_types) == {"1g.10gb", "mi300x", "a100", "v100"}
    assert usage.launchers == {}
