"""One script's launch-equivalence review: the simulate verdict set against the conversion's own findings.

A conversion is *equivalent* (both sides start the same training processes), *differs-but-flagged* (they
differ and the conversion carries an error or warning finding, or sbatch refuses the script),
*differs-silently* (they differ and nothing says so: the outcome a migration tool must never have),
*inconclusive* (the simulation cannot judge it: the verdict's reason says why) or *refused* (convert refused it).
Used by benchmarks/bench_simulate.py and the corpus test.
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.simulate.model import Verdict

EQUIVALENT = "equivalent"
FLAGGED = "differs-but-flagged"
SILENT = "differs-silently"
INCONCLUSIVE = "inconclusive"
REFUSED = "refused"


@dataclass(frozen=True)
class Review:
    path: str
    kind: str  # EQUIVALENT | FLAGGED | SILENT | INCONCLUSIVE | REFUSED
    accepted: bool  # sbatch accepts the script
    verdict: Verdict


def review(path: str, settings=None) -> Review:
    """Convert and simulate `path` (SimulateError when it cannot be simulated at all)."""
    from translator.pipeline import ConvertSettings, convert
    from translator.simulate import simulate_script

    settings = settings or ConvertSettings()
    conv = convert(path, settings=settings)
    v = simulate_script(path, settings)
    flagged = any(f.severity in ("error", "warning") for f in conv.findings) or any(
        d.severity == "error" for d in conv.diagnostics
    )
    if v.verdict in (EQUIVALENT, INCONCLUSIVE, REFUSED):
        kind = v.verdict
    else:
        kind = FLAGGED if flagged else SILENT
    return Review(path, kind, conv.job is not None and conv.job.sbatch_accepts, v)
