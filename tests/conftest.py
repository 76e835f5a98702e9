"""Session fixtures shared by the whole test suite.

Oracles (see ``tests/oracles.py`` for the helpers behind these fixtures):

``shared_dir``
    The shared directory (env ``SLURM2KF_SHARED``, default ``<repo>/../shared``). A test that
    asks for it FAILS with a clear message when it is missing; nothing is ever skipped.
``slurm_oracle``
    Real Slurm's reading of every corpus script (``tests/fixtures/sbatch/*`` and the oracle's
    own ``samples/*.sh``), from ONE ``resolve.py`` call per session. It is a mapping
    ``path -> resolve.py record`` (any spelling of the path works) with extras:
    ``slurm_oracle.jsonl`` (raw output, for compare.py) and
    ``slurm_oracle.resolve(paths, env=(), sbatch_args=())`` for other scripts or for
    precedence runs (``SBATCH_*`` variables, sbatch command-line words); those are cached.
    Fails when the oracle answers "oracle-unavailable".
``corpus_scripts``
    The list of corpus paths above: fixtures, the generated edge scripts (``edge_scripts_dir``:
    empty file, CR-only line breaks, ... from ``oracles.EDGE_SCRIPTS``), the oracle's samples.
``kf_oracle``
    The Kubeflow oracle helpers as one namespace: ``kf_oracle.validate_trainjob(...)``,
    ``kf_oracle.run_sdk_code(...)``, ``kf_oracle.compare_outputs(...)`` (checked to exist).

Our CLI:

``cli``
    Runs ``slurm2kf`` in-process with click's ``CliRunner``: ``cli("inspect", "--json", path)``
    returns the click ``Result`` (``exit_code``, ``output``, ``stdout``, ``stderr``).
``cli_subprocess``
    Runs ``slurm2kf`` as a separate process: ``cli_subprocess("inspect", path)`` returns a
    ``subprocess.CompletedProcess`` (text mode; ``input=``, ``env=``, ``cwd=`` keywords).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from collections.abc import Sequence

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import oracles  # noqa: E402  (tests/oracles.py)
from kube_cluster import kube  # noqa: E402,F401  (fixture: the real kube-apiserver, one namespace per test module)


@pytest.fixture
def mpi_env(tmp_path):
    """Real Open MPI starting batch-mode steps on "other pods" of this machine (tests/batch_prologue_helpers.py);
    fails, never skips, without Debian's openmpi-bin."""
    from batch_prologue_helpers import mpi_env_for

    return mpi_env_for(tmp_path)


# Oracle-dependent tests are marked automatically, so `pytest -m "not slurm and not sdk"` is a real fast loop:
# a test that asks for the Slurm oracle (fixture or helper) is `slurm`; one that runs the Kubeflow oracle or the
# real SDK is `sdk`. Explicit marks in test modules still work; this only adds what a test's code reveals.
_ORACLE_MARKS = (
    ("slurm", ("slurm_oracle", "resolve_scripts", "corpus_scripts")),
    (
        "sdk",
        (
            "kf_oracle",
            "oracle_validate",
            "oracle_run_sdk",
            "oracle_compare",
            "oracle_compare_with_runtimes",
            "run_sdk_code",
            "validate_trainjob",
            "VENV_PY",
        ),
    ),
)


def _uses(item, names) -> bool:
    if any(n in getattr(item, "fixturenames", ()) for n in names):
        return True
    import inspect

    fn = getattr(item, "function", None)
    try:
        src = inspect.getsource(fn) if fn is not None else ""
    except (OSError, TypeError):
        src = ""
    return any(n in src for n in names)


def pytest_collection_modifyitems(config, items):
    for item in items:
        for mark, names in _ORACLE_MARKS:
            if mark not in item.keywords and _uses(item, names):
                item.add_marker(getattr(pytest.mark, mark))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return oracles.REPO


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return oracles.FIXTURES


def _call_or_fail(fn, *args, **kwargs):
    """Run an oracle helper; an OracleMissing becomes a plain test failure with its message
    (outside the except block, so the report shows the message only)."""
    try:
        return fn(*args, **kwargs)
    except oracles.OracleMissing as exc:
        message = str(exc)
    pytest.fail(message, pytrace=False)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return _call_or_fail(oracles.shared_dir)


@pytest.fixture(scope="session")
def edge_scripts_dir(tmp_path_factory) -> Path:
    """A directory holding ``oracles.EDGE_SCRIPTS`` (empty file, CR-only, ...), written once."""
    d = tmp_path_factory.mktemp("edge-scripts")
    oracles.write_edge_scripts(d)
    return d


@pytest.fixture(scope="session")
def corpus_scripts(shared_dir, edge_scripts_dir) -> list:
    """Our fixtures, the generated edge scripts, then the Slurm oracle's own samples."""
    samples = sorted((shared_dir / "slurm-oracle" / "samples").glob("*.sh"))
    if not samples:
        pytest.fail("no samples in %s/slurm-oracle/samples" % shared_dir, pytrace=False)
    edges = [edge_scripts_dir / name for name in sorted(oracles.EDGE_SCRIPTS)]
    return oracles.fixture_scripts() + edges + samples


class SlurmOracle(oracles.OracleRecords):
    """The session's corpus records plus a cached ``resolve()`` for other runs."""

    def __init__(self, base: oracles.OracleRecords):
        super().__init__((), base.jsonl)
        self._by = dict(base._by)
        self._cache: dict[tuple, oracles.OracleRecords] = {}

    def resolve(
        self, paths: Sequence, env: Sequence[tuple[str, str]] = (), sbatch_args: Sequence[str] = ()
    ) -> oracles.OracleRecords:
        """resolve.py over ``paths`` (one call), with ``--env`` items and ``--sbatch-arg``
        words; cached per (paths, env, args) for the session."""
        key = (tuple(oracles.realpath(p) for p in paths), tuple(env), tuple(sbatch_args))
        if key not in self._cache:
            self._cache[key] = _call_or_fail(oracles.resolve_scripts, paths, env=env, sbatch_args=sbatch_args)
        return self._cache[key]


@pytest.fixture(scope="session")
def slurm_oracle(corpus_scripts) -> SlurmOracle:
    return SlurmOracle(_call_or_fail(oracles.resolve_scripts, corpus_scripts))


@pytest.fixture(scope="session")
def kf_oracle(shared_dir):
    _call_or_fail(oracles.kubeflow_oracle_dir, shared_dir)
    return types.SimpleNamespace(
        validate_trainjob=oracles.validate_trainjob,
        run_sdk_code=oracles.run_sdk_code,
        compare_outputs=oracles.compare_outputs,
    )


@pytest.fixture
def cli():
    """In-process ``slurm2kf``: ``cli(*args, input=None, env=None)`` -> click Result."""
    from click.testing import CliRunner

    from translator.cli import cli as group

    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 always keeps stderr apart
        runner = CliRunner()

    def invoke(*args, input=None, env=None):
        return runner.invoke(group, [str(a) for a in args], input=input, env=env, catch_exceptions=False)

    return invoke


@pytest.fixture
def cli_subprocess():
    """``slurm2kf`` in a child process: ``cli_subprocess(*args, input=None, env=None, cwd=None)``."""
    return oracles.run_slurm2kf
