"""The sbatch 22.05 option table (translator.slurm.options) against the real sbatch binary.

The Slurm oracle's sbatch 22.05.8 is asked directly: every long option and short letter that
`sbatch --help` lists must be in our table, and for every entry of our table sbatch must say the
same about its argument (required / optional / none). These tests need the oracle's Slurm
client (see tests/oracles.py) and FAIL when it is missing.
"""

import os
import re
import subprocess

import pytest

import oracles
from translator.slurm.options import (
    CANONICAL,
    ENV_OPTIONS,
    LONG_OPTIONS,
    NONE,
    OPTIONAL,
    REQUIRED,
    SHORT_OPTIONS,
    SPANK_OPTIONS,
)

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def sbatch():
    state = os.environ.get("SLURM_ORACLE_STATE") or str(oracles.slurm_oracle_dir() / "state")
    conf = os.path.join(state, "etc", "slurm.conf")
    if not os.path.exists(conf):
        pytest.fail(f"no Slurm oracle config at {conf}: start the oracle (./test.sh)", pytrace=False)
    env = dict(os.environ, SLURM_CONF=conf)

    def run(*args):
        p = subprocess.run(
            ["sbatch", *args], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=30
        )
        return p.stdout + p.stderr

    return run


def test_every_help_option_is_in_the_table(sbatch):
    text = sbatch("--help") + sbatch("--usage")
    longs = set(re.findall(r"--([a-z][a-z0-9-]+)", text))
    shorts = set(re.findall(r"(?:^|\s)-([A-Za-z])[,\s]", text))
    assert len(longs) > 80
    missing = sorted(n for n in longs if n not in LONG_OPTIONS)
    assert missing == [], f"sbatch --help lists options our table lacks: {missing}"
    assert sorted(s for s in shorts if s not in SHORT_OPTIONS and s != "r") == []


def test_argument_kinds_agree_with_sbatch(sbatch):
    wrong = []
    for name, spec in LONG_OPTIONS.items():
        if name in ("help", "usage", "version", "wrap"):
            continue
        bare = sbatch(f"--{name}")
        with_value = sbatch(f"--{name}=zz")
        if "requires an argument" in bare:
            kind = REQUIRED
        elif "doesn't allow an argument" in with_value:
            kind = NONE
        else:
            kind = OPTIONAL
        if "unrecognized option" in bare or kind != spec.arg:
            wrong.append((name, spec.arg, bare.strip()[:80]))
    assert wrong == []


def test_short_letters_agree_with_sbatch(sbatch):
    wrong = []
    for letter, spec in SHORT_OPTIONS.items():
        if letter in ("h", "V"):
            continue
        out = sbatch(f"-{letter}")
        says_required = "option requires an argument" in out
        if "invalid option" in out or says_required != (spec.arg == REQUIRED):
            wrong.append((letter, spec.name, out.strip()[:80]))
    assert wrong == []


def test_spank_options_are_not_sbatch_options(sbatch):
    for name in ("container-image", "container-mounts", "image"):
        assert name not in LONG_OPTIONS and name in SPANK_OPTIONS
        assert "unrecognized option" in sbatch(f"--{name}=x")


def test_hidden_aliases():
    assert LONG_OPTIONS["tasks-per-node"].key == "ntasks-per-node"
    assert LONG_OPTIONS["cluster"].key == "clusters"
    assert "tasks-per-node" not in CANONICAL


def test_optional_argument_options_of_22_05():
    assert sorted(n for n, s in CANONICAL.items() if s.arg == OPTIONAL) == [
        "exclusive",
        "get-user-env",
        "nice",
        "no-kill",
        "propagate",
    ]


def test_environment_table():
    assert ENV_OPTIONS["SBATCH_TIMELIMIT"] == "time"
    assert ENV_OPTIONS["SBATCH_MEM_PER_NODE"] == "mem"
    assert ENV_OPTIONS["SBATCH_PARTITION"] == "partition"
    for absent in ("SBATCH_NODES", "SBATCH_NTASKS", "SBATCH_CPUS_PER_TASK", "SBATCH_CHDIR", "SBATCH_DEPENDENCY"):
        assert absent not in ENV_OPTIONS
    assert all(v in CANONICAL for v in ENV_OPTIONS.values())
