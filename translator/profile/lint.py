"""Warnings about a valid profile that probably does not do what its author meant (`profile check`).

The profile can be used as it is; these point at entries that can never take effect.
"""

from __future__ import annotations

from typing import Any

from translator.diagnostics import WARNING, Diagnostic
from translator.profile.model import Profile, RuntimeRule

F_DANGLING_GPU_TYPE = "F525"
F_UNREACHABLE = "F526"
F_LAUNCHER_TWICE = "F527"

_CATCH_ALL = {"*", "re:.*", "re:.+", "re:^.*$", "re:^.+$"}


def _unreachable(rules, section: str) -> list[Diagnostic]:
    """One pass (linear in the number of rules): the first catch-all and the first rule of each pattern
    text are remembered; any later rule they shadow is reported."""
    out = []
    first_catch_all = None
    first_by_text: dict[str, Any] = {}  # pattern text -> the first rule written with it
    for rule in rules:
        text = rule.pattern.text
        first = first_catch_all or first_by_text.get(text)
        if first is not None:
            out.append(
                Diagnostic(
                    WARNING,
                    F_UNREACHABLE,
                    f"{rule.key}: never used; `{first.pattern.text}` (line {first.line}) matches first",
                    rule.line,
                    f"move it above line {first.line} or remove it",
                )
            )
        first_by_text.setdefault(text, rule)
        if first_catch_all is None and text in _CATCH_ALL:
            first_catch_all = rule
    return out


def lint_profile(profile: Profile) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    known = {}  # gpuType value -> whether a gpuTypes key matches it (linear in partitions)
    for p in profile.partitions:
        if p.gpu_type and p.gpu_type not in known:
            known[p.gpu_type] = any(g.pattern.matches(p.gpu_type) for g in profile.gpu_types)
        if p.gpu_type and not known[p.gpu_type]:
            out.append(
                Diagnostic(
                    WARNING,
                    F_DANGLING_GPU_TYPE,
                    f"{p.key}.gpuType: `{p.gpu_type}` matches no key "
                    f"of `gpuTypes`, so it sets no GPU placement or resource",
                    p.line,
                    f"add `{p.gpu_type}` to `gpuTypes`",
                )
            )
    for rules, section in (
        (profile.partitions, "partitions"),
        (profile.qos, "qos"),
        (profile.accounts, "accounts"),
        (profile.gpu_types, "gpuTypes"),
        (profile.constraints, "constraints"),
    ):
        out.extend(_unreachable(list(rules), section))
    seen: dict[str, RuntimeRule] = {}  # launcher family -> the runtime that has it first
    for r in profile.runtimes:
        for family in r.launchers:
            if family in seen:
                first = seen[family]
                out.append(
                    Diagnostic(
                        WARNING,
                        F_LAUNCHER_TWICE,
                        f"{r.key}.launchers: `{family}` is already "
                        f"given to runtime `{first.name}` (line {first.line}), which wins",
                        r.line,
                    )
                )
            else:
                seen[family] = r
    return sorted(out, key=lambda d: d.line or 0)
