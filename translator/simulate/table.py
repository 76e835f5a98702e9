"""The side-by-side process table of a verdict: one row per (node, command), what each side starts there.

Shared by `slurm2kf simulate` (translator/cli/simulate_cmd.py prints it) and the review report
(translator/report/build.py keeps it in a `differs` script's record).
"""

from __future__ import annotations

from collections import OrderedDict

HEADER = ("node", "command", "Slurm", "Kubeflow")
COMMAND_WIDTH = 60  # longer commands are cut to this many characters, ending in "..."


def _ranks(ranks: list) -> str:
    rs = sorted(r for r in ranks if r is not None)
    if not rs:
        return "-"
    if rs == list(range(rs[0], rs[-1] + 1)):
        return str(rs[0]) if len(rs) == 1 else f"{rs[0]}-{rs[-1]}"
    return ",".join(map(str, rs[:6])) + ("…" if len(rs) > 6 else "")


def _groups(procs):
    from translator.simulate.verdict import command_of

    out: OrderedDict[tuple, list] = OrderedDict()  # (node, command) -> its processes
    for p in procs:
        out.setdefault((p.node, command_of(p)), []).append(p)
    return out


def _cell(ps, side) -> str:
    if not ps:
        return "-"
    from translator.simulate.verdict import _hosts_index, endpoint_node

    worlds = sorted({str(p.world_size) if p.world_size is not None else "-" for p in ps})
    gpus = sorted({str(p.gpus) for p in ps})
    eps = sorted({endpoint_node(p.master_addr, p, _hosts_index(side)) or "-" for p in ps})
    return (
        f"{len(ps)} proc  ranks {_ranks([p.rank for p in ps])}  world {','.join(worlds)}  "
        f"gpu {','.join(gpus)}  master {','.join(eps)}"
    )


def process_rows(v) -> list[tuple[str, str, str, str]]:
    """The table's rows (without HEADER), sorted by node then command; one placeholder row when neither
    side starts a training process."""
    from translator.simulate.verdict import normalized

    sg, kg = _groups(normalized(v.slurm).processes), _groups(normalized(v.kubeflow).processes)
    keys = list(OrderedDict.fromkeys(list(sg) + list(kg)))
    keys.sort(key=lambda k: (k[0], k[1]))
    rows = []
    for node, cmd in keys:
        rows.append(
            (
                str(node),
                cmd if len(cmd) <= COMMAND_WIDTH else cmd[: COMMAND_WIDTH - 3] + "...",
                _cell(sg.get((node, cmd), []), v.slurm),
                _cell(kg.get((node, cmd), []), v.kubeflow),
            )
        )
    if not rows:
        rows.append(("-", "(no training process on either side)", "-", "-"))
    return rows
