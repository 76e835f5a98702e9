"""Sandbox records -> the side's Process and Failure lists."""

from __future__ import annotations

from collections.abc import Sequence

from translator.simulate.model import Failure, Process, SideResult
from translator.simulate.sandbox import S822_TIME_LIMIT, SandboxResult


def side_result(
    side: str, res: SandboxResult, unit_names: Sequence[str], unit_nodes: Sequence[int], notes: Sequence[str] = ()
) -> SideResult:
    procs: list[Process] = []
    fails: list[Failure] = []
    for r in res.records:
        kind = r.get("kind")
        if kind == "process":
            env = r.get("env") or {}
            procs.append(
                Process(
                    side=side,
                    node=int(r.get("node", 0)),
                    host=str(r.get("host", "")),
                    program=str(r.get("program", "")),
                    argv=tuple(str(a) for a in r.get("argv", ())),
                    interpreter=str(r.get("interpreter", "")),
                    launcher=str(r.get("launcher", "")),
                    rank=r.get("rank"),
                    local_rank=r.get("local_rank"),
                    world_size=r.get("world_size"),
                    master_addr=r.get("master_addr"),
                    master_port=r.get("master_port"),
                    gpus=int(r.get("gpus", 0)),
                    env=tuple(sorted((str(k), str(v)) for k, v in env.items())),
                    cwd=str(r.get("cwd", "")),
                    defaulted=tuple(str(n) for n in r.get("defaulted", ())),
                )
            )
        elif kind == "failure":
            argv = " ".join(str(a) for a in r.get("argv", ()))
            fails.append(
                Failure(
                    side=side,
                    node=int(r.get("node", 0)),
                    command=(str(r.get("name", "")) + (" " + argv if argv else ""))[:200],
                    reason=str(r.get("reason", "")),
                    kind=str(r.get("category", "")),
                )
            )
    incomplete = list(res.incomplete)
    for i, u in enumerate(res.units):
        where = unit_names[i] if i < len(unit_names) else f"unit {i}"
        node = unit_nodes[i] if i < len(unit_nodes) else 0
        if u.timed_out:
            fails.append(Failure(side, node, where, "did not finish within the simulation time limit", "timeout"))
            if not res.incomplete:  # (the overall deadline's sentence already covers it)
                incomplete.append((S822_TIME_LIMIT, f"{where} did not finish within its time limit"))
        elif u.rc not in (0, None):
            last = [ln for ln in u.stderr.strip().splitlines() if ln.strip()]
            why = f"exited with status {u.rc}" + (f" ({last[-1][:160]})" if last else "")
            fails.append(Failure(side, node, where, why, "exit"))
    procs.sort(key=lambda p: (p.node, p.rank if p.rank is not None else -1, p.local_rank or 0, p.program))
    return SideResult(
        side=side,
        processes=tuple(procs),
        failures=tuple(fails),
        notes=tuple([f"isolation: {res.isolation}"] + list(res.notes) + list(notes)),
        incomplete=tuple(incomplete),
    )
