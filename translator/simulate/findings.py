"""The simulation's verdict as `convert` findings (S8xx, documented in docs/codes.md)."""

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


def not_simulated(reason: str) -> Finding:
    return Finding(WARNING, S803_NOT_SIMULATED, f"simulation could not run: {reason}")


def simulation_json(verdict) -> dict:
    """The plan JSON's "simulation" object."""
    from translator.cli.simulate_cmd import process_json

    return {
        "verdict": verdict.verdict,
        "differences": list(verdict.differences),
        "slurm": [process_json(p) for p in verdict.slurm.processes],
        "kubeflow": [process_json(p) for p in verdict.kubeflow.processes],
        "failures": {
            s.side: [{"node": f.node, "command": f.command, "reason": f.reason} for f in s.failures]
            for s in (verdict.slurm, verdict.kubeflow)
        },
        "notes": {s.side: list(s.notes) for s in (verdict.slurm, verdict.kubeflow)},
    }
