"""The Kubeflow side: run the pods the Trainer and the kubelet would start, in the sandbox.

Each PodLaunch becomes one sandbox unit with the pod's hostname, env, working directory and
mounted files (the MPI hostfile). Nodes are numbered in training order (`training_pods`: the
hostfile's order for MPI, else the completion index), which is how ranks are compared with
the Slurm allocation's nodes. Slurm's commands do not exist there: they are failures.
"""

from __future__ import annotations

from collections.abc import Sequence

from translator.simulate.model import PodLaunch, SideResult

DEFAULT_WORKDIR = "/workspace"


def host_table(pods: Sequence[PodLaunch]) -> list[tuple[str, int, str, int]]:
    from translator.simulate.kubeflow_pods import training_pods

    order = list(training_pods(pods))
    table = []
    for i, p in enumerate(order):
        table.append((p.hostname, i, f"10.244.{i}.10", p.gpus))
    extra = -1
    for p in pods:
        if p not in order:
            table.append((p.hostname, extra, f"10.244.{100 - extra}.10", p.gpus))
            extra -= 1
    return table


def run_pods(pods: Sequence[PodLaunch], timeout: float = 5.0, deadline: float | None = None) -> SideResult:
    from translator.simulate import sandbox
    from translator.simulate.collect import side_result

    table = host_table(pods)
    node_of = {h[0]: h[1] for h in table}
    units, names, nodes, notes = [], [], [], []
    for p in pods:
        if getattr(p, "image_entrypoint", False):
            notes.append(
                f"pod {p.name}: no container command, the image's entrypoint runs (not known here); "
                f"args: {' '.join(p.argv) or '(none)'}"
            )
            continue
        if not p.argv:
            notes.append(f"pod {p.name}: empty command")
            continue
        env: dict[str, str] = {}
        for k, v in p.env:
            env[k] = v
        units.append(
            sandbox.Unit(
                argv=list(p.argv),
                env=env,
                hostname=p.hostname,
                node=node_of[p.hostname],
                cwd=p.workdir or DEFAULT_WORKDIR,
                files=list(p.files),
                config={"gpus": p.gpus, "role": p.role, "pod": p.name},
                programs=sandbox.program_paths([" ".join(p.argv[:1])] + list(p.argv[1:])),
            )
        )
        names.append(f"pod {p.name}")
        nodes.append(node_of[p.hostname])
    res = sandbox.run_units(units, "kubeflow", table, timeout=timeout, deadline=deadline)
    out = side_result("kubeflow", res, names, nodes, notes)
    from dataclasses import replace

    return replace(out, hosts=tuple((h[0], h[1], h[2]) for h in table))
