"""The Kubeflow side: run the pods the Trainer and the kubelet would start, in the sandbox.

Each PodLaunch becomes one sandbox unit with the pod's hostname, env, working directory and
mounted files (the MPI hostfile). Nodes are numbered in training order (`training_pods`: the
hostfile's order for MPI, else the completion index), which is how ranks are compared with
the Slurm allocation's nodes. Slurm's commands do not exist there: they are failures.
"""

from __future__ import annotations

from collections.abc import Sequence

from translator.simulate.model import PodLaunch, SideResult

DEFAULT_WORKDIR = "/home/user"  # no workingDir: the image's is not known; taken as where Slurm runs the job
HOME = "/home/user"  # both sides run as the same user with the same home
# Site tools that exist on a login node but not in a container (sim_stub.LOGIN_NODE_TOOLS); an image may
# provide some. The images below are known to (pytorch/pytorch is built on conda); `--image-provides` adds.
IMAGE_TOOLS = (("pytorch/pytorch", ("conda",)), ("continuumio/", ("conda",)), ("condaforge/", ("conda",)))


def image_tools(image: str, declared=()) -> list[str]:
    """The site tools the pod's image provides: the known images' and the declared ones."""
    out = [t for prefix, tools in IMAGE_TOOLS if image.startswith(prefix) for t in tools]
    return sorted(set(out) | set(declared))


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


GROUP = 16  # pods per sandbox; a larger job's pods run in several sandboxes at once, one per core


def run_in_groups(units, table, timeout: float, deadline: float | None = None):
    """Run the pods' units in sandboxes of at most max(GROUP, units/cores) units, at the same time; the
    results in the units' order. A pod runs in its own mount and UTS namespace either way (sim_init)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from translator.simulate import sandbox

    size = max(GROUP, -(-len(units) // (os.cpu_count() or 1)))
    groups = [units[i : i + size] for i in range(0, len(units), size)] or [[]]
    with ThreadPoolExecutor(max_workers=len(groups)) as pool:
        results = list(pool.map(lambda g: sandbox.run_units(g, "kubeflow", table, timeout=timeout, deadline=deadline), groups))
    notes = list(dict.fromkeys(n for r in results for n in r.notes))
    return sandbox.SandboxResult(
        [u for r in results for u in r.units],
        [x for r in results for x in r.records],
        results[0].isolation,
        notes,
        list(dict.fromkeys(x for r in results for x in r.incomplete)),
    )


def run_pods(
    pods: Sequence[PodLaunch], timeout: float = 5.0, provides: Sequence[str] = (), deadline: float | None = None
) -> SideResult:
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
        if p.batch and p.role != "launcher":  # batch mode: sshd only; a step's mpirun starts its tasks there
            notes.append(f"pod {p.name}: runs sshd; the steps' tasks reach it through mpirun")
            continue
        env: dict[str, str] = {"HOME": HOME}
        for k, v in p.env:
            env[k] = v
        cwd = p.workdir or DEFAULT_WORKDIR
        files = list(p.files)
        if cwd != env.get("HOME", cwd) and env.get("HOME") == HOME:
            files.append((HOME + "/.bashrc", ""))  # so that the home directory exists
        units.append(
            sandbox.Unit(
                argv=list(p.argv),
                env=env,
                hostname=p.hostname,
                node=node_of[p.hostname],
                cwd=cwd,
                files=files,
                config={"gpus": p.gpus, "role": p.role, "pod": p.name, "provides": image_tools(p.image, provides)},
                programs=sandbox.program_paths([" ".join(p.argv[:1])] + list(p.argv[1:])),
            )
        )
        names.append(f"pod {p.name}")
        nodes.append(node_of[p.hostname])
    res = run_in_groups(units, table, timeout, deadline)
    out = side_result("kubeflow", res, names, nodes, notes)
    from dataclasses import replace

    return replace(out, hosts=tuple((h[0], h[1], h[2]) for h in table))
