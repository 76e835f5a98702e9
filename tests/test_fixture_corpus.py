"""Sanity of the job-script corpus itself (tests/fixtures/sbatch/).

Each fixture is hand-written and starts with a header:

    #!/bin/bash
    # fixture: <what it tests>
    # expect: accepted | sbatch-refuses | slurmctld-rejects

The expected verdict is checked against real Slurm (the shared oracle), so a fixture that does
not test what its header claims fails here, independently of the translator.
"""

from __future__ import annotations

import re

import pytest

import oracles

pytestmark = pytest.mark.slurm

FIXTURES = oracles.fixture_scripts()
VERDICTS = ("accepted", "sbatch-refuses", "slurmctld-rejects")

# Accepted fixtures that deliberately ask for more than one oracle node has (sbatch and a held
# submission accept them; only `sbatch --test-only` finds them unplaceable).
NOT_PLACEABLE_ON_PURPOSE = {"mem_terabyte_suffix.sbatch"}


def _verdict(rec: dict) -> str:
    if rec["accepted"]:
        return "accepted"
    return {"sbatch": "sbatch-refuses", "slurmctld": "slurmctld-rejects"}.get(rec["rejected_by"], rec["rejected_by"])


def test_oracle_runs_the_base_cluster(shared_dir):
    """The expected verdicts assume the base oracle cluster. Permissive mode (adapt.py) adds
    partitions, features and nodes and lifts debug's limit, which changes verdicts: say so
    plainly instead of failing fixtures one by one."""
    import os

    state = os.environ.get("SLURM_ORACLE_STATE") or str(shared_dir / "slurm-oracle" / "state")
    adapt_env = os.path.join(state, "etc", "adapt.env")
    assert not os.path.exists(adapt_env), (
        "the Slurm oracle at %s is adapted (permissive mode, %s exists); run "
        "`SLURM_ORACLE_STATE=%s python3 %s/slurm-oracle/adapt.py --reset`" % (state, adapt_env, state, shared_dir)
    )
    conf = os.path.join(state, "etc", "slurm.conf")
    assert os.path.exists(conf), "no oracle config at %s: start the oracle (./test.sh)" % conf
    text = open(conf, encoding="utf-8", errors="replace").read()
    assert re.search(r"^PartitionName=debug\b.*MaxTime=00:30:00", text, re.M), "debug partition is not the base one"


def test_corpus_size():
    assert len(FIXTURES) >= 50, "the corpus needs at least 50 scripts, has %d" % len(FIXTURES)


def test_corpus_mix_of_verdicts():
    counts = {v: 0 for v in VERDICTS}
    for p in FIXTURES:
        counts[oracles.fixture_header(p)[1]] = counts.get(oracles.fixture_header(p)[1], 0) + 1
    assert counts["accepted"] >= 60, counts
    assert counts["sbatch-refuses"] >= 15, counts
    assert counts["slurmctld-rejects"] >= 3, counts


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixture_has_header(path):
    what, expect = oracles.fixture_header(path)
    assert what and len(what) >= 20, "missing or too short '# fixture: <what it tests>' line"
    assert expect in VERDICTS, "missing '# expect: %s' line" % "|".join(VERDICTS)
    lines = path.read_bytes().split(b"\n")
    head = lines[:4]
    assert any(line.startswith(b"# fixture: ") for line in head), "the header must be at the top"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixture_name_says_what_it_tests(path):
    stem = path.name.rsplit(".", 1)[0]
    assert re.fullmatch(r"[a-z][a-zA-Z0-9]*(_[a-zA-Z0-9]+)+", stem), (
        "name %r: words joined by '_', at least two of them" % path.name
    )
    what, expect = oracles.fixture_header(path)
    if expect == "sbatch-refuses":
        assert "refused" in stem, "scripts sbatch refuses carry 'refused' in their name"
    if expect == "slurmctld-rejects":
        assert "rejected" in stem, "scripts the controller rejects carry 'rejected' in their name"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixture_verdict_matches_real_slurm(path, slurm_oracle):
    """The header's verdict is what real sbatch/slurmctld do with the script."""
    rec = slurm_oracle[path]
    expect = oracles.fixture_header(path)[1]
    assert _verdict(rec) == expect, "header says %s, Slurm: %s (%s)" % (expect, _verdict(rec), rec.get("error"))
    if expect == "accepted":
        # placeable on the oracle's nodes unless the fixture is about that
        want = path.name not in NOT_PLACEABLE_ON_PURPOSE
        assert rec.get("resources_valid") is want, rec.get("test_only")


def test_refused_fixtures_are_refused_by_sbatch_itself(slurm_oracle):
    """Every 'sbatch-refuses' fixture is refused by the sbatch client (not the controller),
    for the reason its name gives."""
    reasons = {}
    for p in FIXTURES:
        if oracles.fixture_header(p)[1] == "sbatch-refuses":
            rec = slurm_oracle[p]
            assert rec["rejected_by"] == "sbatch", (p.name, rec["rejected_by"], rec.get("error"))
            reasons[p.name] = rec["error"]
    assert "DOS line breaks" in reasons["crlf_line_endings_refused.sbatch"]
    assert "DOS line breaks" in reasons["crlf_mixed_single_line_refused.sbatch"]
    assert "NULL character" in reasons["nul_byte_refused.sbatch"]
    assert "first line must start with #!" in reasons["no_shebang_refused.sbatch"]
    assert "Unmatched" in reasons["syntax_unmatched_quote_refused.sbatch"]
    assert "ambiguous" in reasons["syntax_ambiguous_abbreviation_refused.sbatch"]
    assert "unrecognized option" in reasons["syntax_unknown_option_refused.sbatch"]
    assert "mutually exclusive" in reasons["mem_and_mem_per_cpu_exclusive_refused.sbatch"]
    assert "Invalid directive found in batch script: user" in reasons["exclusive_space_value_refused.sbatch"]


def test_special_bytes_survive_checkout():
    """CRLF and NUL fixtures are committed byte-exact (.gitattributes: -text)."""
    crlf = (oracles.FIXTURES / "crlf_line_endings_refused.sbatch").read_bytes()
    assert crlf.count(b"\r\n") == crlf.count(b"\n") > 3
    mixed = (oracles.FIXTURES / "crlf_mixed_single_line_refused.sbatch").read_bytes()
    assert mixed.count(b"\r\n") == 1 and mixed.count(b"\n") > 5
    assert b"\0" in (oracles.FIXTURES / "nul_byte_refused.sbatch").read_bytes()
    for p in FIXTURES:
        if "crlf" not in p.name:
            assert b"\r" not in p.read_bytes(), p.name


# What the corpus must cover (issue 2, "How it is checked"): each pattern is searched in the
# header part (#SBATCH lines) or the body of at least one fixture.
COVERAGE = {
    "node range": r"^#SBATCH --nodes=\d+-\d+",
    "ntasks": r"^#SBATCH (--ntasks=|-n ?\d)",
    "ntasks-per-node": r"^#SBATCH --ntasks-per-node",
    "cpus-per-task": r"^#SBATCH (--cpus-per-task|-c ?\d)",
    "gres untyped": r"^#SBATCH --gres=gpu:\d",
    "gres typed": r"^#SBATCH --gres=gpu:a100:\d",
    "gres type only": r"^#SBATCH --gres=gpu:a100$",
    "several gres": r"^#SBATCH --gres=gpu:[^ ]*,gpu",
    "gpus typed": r"^#SBATCH --gpus=a100:\d",
    "-G": r"^#SBATCH -G ?\d",
    "gpus-per-node typed": r"^#SBATCH --gpus-per-node=a100:",
    "gpus-per-task": r"^#SBATCH --gpus-per-task",
    "cpus-per-gpu": r"^#SBATCH --cpus-per-gpu",
    "mem-per-gpu": r"^#SBATCH --mem-per-gpu",
    "mem-per-cpu": r"^#SBATCH --mem-per-cpu",
    "mem K": r"^#SBATCH --mem=\d+K",
    "mem M": r"^#SBATCH --mem=\d+M",
    "mem g": r"^#SBATCH --mem=\d+g",
    "mem GB": r"^#SBATCH --mem=\d+GB",
    "mem T": r"^#SBATCH --mem=\d+T",
    "mem 0": r"^#SBATCH --mem=0$",
    "mem no unit": r"^#SBATCH --mem=\d+$",
    "time M": r"^#SBATCH --time=\d+$",
    "time M:S": r"^#SBATCH -t \d+:\d+$",
    "time H:M:S": r"^#SBATCH --time=\d+:\d+:\d+$",
    "time D-H": r"^#SBATCH -t \d+-\d+$",
    "time D-H:M": r"^#SBATCH -t \d+-\d+:\d+$",
    "time D-H:M:S": r"^#SBATCH --time=\d+-\d+:\d+:\d+$",
    "time UNLIMITED": r"^#SBATCH --time=UNLIMITED",
    "time 0": r"^#SBATCH -t 0$",
    "job name spaces": r'^#SBATCH -J "[^"]* [^"]*"',
    "array list": r"^#SBATCH --array=\d+(,\d+)+$",
    "array step": r"^#SBATCH --array=\d+-\d+:\d+$",
    "array throttle": r"^#SBATCH --array=.*%\d+$",
    "array brackets": r"^#SBATCH --array=\[",
    "dependency afterok": r"afterok:\d",
    "dependency afterany": r"afterany:",
    "dependency afternotok": r"afternotok:",
    "dependency after+delay": r"after:\d+\+\d+",
    "dependency singleton": r"singleton",
    "dependency aftercorr": r"aftercorr:",
    "dependency ?": r"--dependency=\S+\?",
    "exclusive": r"^#SBATCH --exclusive$",
    "exclusive=user": r"--exclusive=user",
    "exclusive=mcs": r"--exclusive=mcs",
    "constraint &": r"--constraint=\"gpu&a100\"",
    "constraint []|": r"\[gpu\|a100\]",
    "output patterns": r"%x.*%j",
    "array output": r"%A_%a",
    "padded %j": r"%4j",
    "%%": r"%%",
    "chdir": r"^#SBATCH (--chdir|-D)",
    "requeue": r"^#SBATCH --requeue",
    "no-requeue": r"^#SBATCH --no-requeue",
    "signal B:USR1@300": r"--signal=B:USR1@300",
    "export NONE": r"--export=NONE",
    "export ALL,VAR": r"--export=ALL,",
    "comment": r"--comment=",
    "mail-type repeated": r"(?s)--mail-type=.*--mail-type=",
    "partition": r"^#SBATCH (-p|--partition)",
    "account": r"^#SBATCH -A ",
    "qos": r"--qos=",
    "reservation": r"--reservation=",
    "trailing comment": r"^#SBATCH \S+ +# ",
    "glued short": r"^#SBATCH -N2 -c10 -t05-00:00:00",
    "quoted #": r'^#SBATCH .*"[^"]*#[^"]*"',
    "backslash": r"^#SBATCH .*\\",
    "separate-line value": r"^#SBATCH --nodes\n#SBATCH 2",
    "abbreviation": r"^#SBATCH --part=",
    "ambiguous": r"^#SBATCH --mem-per=",
    "--tasks=": r"^#SBATCH --tasks=14",
    "jinja": r"\{\{nodes\}\}",
    "netid": r"<netid>",
    "after set -e": r"set -e\n#SBATCH",
    "# SBATCH": r"^# SBATCH",
    "##SBATCH": r"^##SBATCH",
    "indented": r"^[ \t]+#SBATCH",
    "#SBATCh": r"^#SBATCh",
    "#SBTACH": r"^#SBTACH",
    "hetjob": r"^#SBATCH hetjob",
    "packjob": r"^#SBATCH packjob",
    "heredoc generator": r"<<EOT\n#!/bin/bash\n#SBATCH",
    "csh": r"^#!/bin/csh",
    "#SLURM": r"^#SLURM ",
    "#PBS": r"^#PBS ",
    "torchrun multi-node": r"--rdzv_backend c10d",
    "srun python": r"^srun python",
    "accelerate": r"accelerate launch",
    "deepspeed hostfile": r"deepspeed --hostfile",
    "mpirun": r"^mpirun ",
    "jax": r"multiprocess_gpu",
    "apptainer": r"apptainer exec --nv",
    "pyxis": r"--container-image=",
    "pip install": r"^pip install -r",
    "module load": r"^module load",
    "conda activate": r"^conda activate",
    "venv": r"^source \S*bin/activate",
    "srun loop": r"(?s)for .*\n\s*srun",
    "no shebang": r"\A# fixture",
    "unknown option": r"--gpu-type=",
    "unmatched quote": r'--job-name="unterminated\n',
    "exclusive user refused": r"^#SBATCH --exclusive user",
}


@pytest.mark.parametrize("name", sorted(COVERAGE), ids=str)
def test_corpus_covers(name):
    rx = re.compile(COVERAGE[name], re.M)
    hits = [p.name for p in FIXTURES if rx.search(p.read_bytes().decode("utf-8", "replace"))]
    assert hits, "no fixture covers %s (pattern %r)" % (name, COVERAGE[name])


@pytest.mark.parametrize("name", sorted(oracles.EDGE_SCRIPTS), ids=str)
def test_generated_edge_script_verdict_matches_real_slurm(name, slurm_oracle, edge_scripts_dir):
    """The generated edge scripts (no room for a header) do what oracles.EDGE_SCRIPTS says."""
    data, what, expect = oracles.EDGE_SCRIPTS[name]
    assert (edge_scripts_dir / name).read_bytes() == data
    rec = slurm_oracle[edge_scripts_dir / name]
    assert _verdict(rec) == expect, "%s: expected %s, Slurm: %s (%s)" % (what, expect, _verdict(rec), rec.get("error"))
