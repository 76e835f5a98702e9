"""Launch equivalence over the shipped examples and every conversion fixture (issue: never silently different).

Each script is converted and simulated; a script whose two sides differ must carry an error or warning
finding (or be refused by sbatch). The golden per-family expectations live in test_simulate_slurm_side.py,
test_simulate_pods_verdict.py and test_convert_equivalence.py; this test is the corpus-wide guard.
"""

from __future__ import annotations

import glob
from pathlib import Path

import pytest

from translator.simulate.review import EQUIVALENT, SILENT, review

REPO = Path(__file__).resolve().parents[1]
CORPUS = sorted(glob.glob(str(REPO / "examples" / "*" / "job.sbatch"))) + sorted(
    glob.glob(str(REPO / "tests" / "fixtures" / "convert" / "**" / "*.sbatch"), recursive=True)
)


@pytest.fixture(scope="module")
def reviews():
    return {p: review(p) for p in CORPUS}


def test_the_corpus_is_there():
    assert len(CORPUS) >= 40


def test_no_conversion_differs_silently(reviews):
    silent = {str(Path(p).relative_to(REPO)): r.verdict.differences for p, r in reviews.items() if r.kind == SILENT}
    assert not silent, silent


def test_most_accepted_scripts_are_equivalent(reviews):
    accepted = [r for r in reviews.values() if r.accepted]
    equivalent = [r for r in accepted if r.kind == EQUIVALENT]
    assert len(equivalent) >= 0.8 * len(accepted), (len(equivalent), len(accepted))
