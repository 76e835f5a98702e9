"""The simulation's verdict as `convert` findings (S8xx, documented in docs/codes.md).

equivalent -> S801 (info); differs -> one S802 (warning) per difference; inconclusive -> one warning with the
reason's own code (S806-S812: which side could not be judged, and where); refused -> S813 (info: convert's
own error findings already say why).
"""

from __future__ import annotations


from translator.diagnostics import INFO, WARNING, Finding

S801_EQUIVALENT = "S801"
S802_DIFFERS = "S802"
S803_NOT_SIMULATED = "S803"


def findings_of(verdict) -> list[Finding]:
    if verdict.verdict == "equivalent":
        n = len(verdict.slurm.processes)
        return [
            Finding(
                INFO,
                S801_EQUIVALENT,
                f"simulation: the TrainJob starts the same {n} training process(es) as Slurm "
                "(program, arguments, world size, rank layout, GPUs, environment)",
            )
        ]
    if verdict.verdict in ("inconclusive", "refused"):
        return [_reason_finding(verdict)]
    return [
        Finding(
            WARNING,
            S802_DIFFERS,
            f"simulation: {d}",
            suggestion="see `slurm2kf simulate` for both process lists; adjust the script or the "
            "TrainJob until they match",
        )
        for d in verdict.differences
    ]


def _reason_finding(verdict) -> Finding:
    r = verdict.reason
    where = f" ({r.where})" if r.where else ""
    if verdict.verdict == "refused":
        return Finding(INFO, r.code, f"simulation: not compared, {r.text}")
    return Finding(
        WARNING,
        r.code,
        f"simulation inconclusive: {r.text}{where}",
        suggestion="the launch is neither proved equivalent nor shown to differ; see `slurm2kf simulate`",
    )


def not_simulated(reason: str) -> Finding:
    return Finding(WARNING, S803_NOT_SIMULATED, f"simulation could not run: {reason}")


def simulation_json(verdict) -> dict:
    """The plan JSON's "simulation" object."""
    from translator.cli.simulate_cmd import process_json, reason_json

    return {
        "verdict": verdict.verdict,
        "reason": reason_json(verdict.reason),
        "differences": list(verdict.differences),
        "shared_failures": list(verdict.shared),
        "slurm": [process_json(p) for p in verdict.slurm.processes],
        "kubeflow": [process_json(p) for p in verdict.kubeflow.processes],
        "failures": {
            s.side: [{"node": f.node, "command": f.command, "reason": f.reason} for f in s.failures]
            for s in (verdict.slurm, verdict.kubeflow)
        },
        "notes": {s.side: list(s.notes) for s in (verdict.slurm, verdict.kubeflow)},
    }
