"""The launch simulation in the review report (`--simulate`): the verdict counts that lead the report, the kinds
of difference, and the inline SVG charts of both.

A script's `simulation` record (translator/report/build.py, `with_simulation`) holds its verdict
(`equivalent` | `differs` | `inconclusive` | `refused`, or `not simulated` when simulate could not run), the
reason of an inconclusive or refused one, the difference sentences and, for `differs`, the side-by-side
process table. Records written by older versions (no reason, no table) are read as they are.
"""

from __future__ import annotations

import re
from collections import Counter
from html import escape

EQUIVALENT = "equivalent"
DIFFERS = "differs"
INCONCLUSIVE = "inconclusive"
REFUSED = "refused"
VERDICTS = (EQUIVALENT, DIFFERS, INCONCLUSIVE, REFUSED)
NOT_SIMULATED = "not_simulated"  # summary key: no record, or simulate could not run (S803)

PROCESS_TABLE_ROWS = 100  # a differs script's process table keeps this many rows (the rest are counted)

# The kinds of difference, in the order the charts list ties; each difference sentence of
# translator/simulate/verdict.py falls in exactly one (the first pattern that matches it).
FAILURE_PODS = "failure in pods"
FAILURE_SLURM = "failure on Slurm"
PROCESS_COUNT = "process count"
PROGRAM = "program/arguments"
WORLD_SIZE = "world size"
RANK_LAYOUT = "rank layout"
GPUS = "GPUs"
RENDEZVOUS = "rendezvous"
ENVIRONMENT = "environment"
OTHER = "other"
KINDS = (FAILURE_PODS, PROCESS_COUNT, PROGRAM, WORLD_SIZE, RANK_LAYOUT, GPUS, RENDEZVOUS, ENVIRONMENT, FAILURE_SLURM)

# A failure sentence starts with the side and the command (`Kubeflow: `cmd` fails on pod 0: ...`); the others
# end with a fixed phrase after the command they name, so they are matched at their end (a command's own text
# cannot pose as one: what follows it is the verdict's wording).
_FAILURE = re.compile(r"(Slurm|Kubeflow): `.*` fails on (?:node|pod) \d+: ", re.S)
_STARTS = re.compile(r": Slurm starts (\d+), Kubeflow starts (\d+)\Z")
_TAILS = (
    (re.compile(r"^(?:Slurm|Kubeflow) starts no training process; "), PROCESS_COUNT),
    (re.compile(r"^… more programs differ\Z"), PROGRAM),
    (re.compile(r": world size on Slurm [^`]*, on Kubeflow [^`]*\Z"), WORLD_SIZE),
    (re.compile(r": processes per node on Slurm [^`]*; on Kubeflow [^`]*\Z"), RANK_LAYOUT),
    (re.compile(r": rank -> node layout differs \([^`]*\)\Z"), RANK_LAYOUT),
    (re.compile(r": GPUs visible per process on Slurm [^`]*, on Kubeflow [^`]*\Z"), GPUS),
    (re.compile(r": MASTER_ADDR points to [^`]* on Slurm, to [^`]* on Kubeflow\Z"), RENDEZVOUS),
    (
        re.compile(r"do not share one MASTER_(?:ADDR|PORT) \([^`]*\)(?:: they would not form one training)?\Z"),
        RENDEZVOUS,
    ),
    (re.compile(r": environment variable [A-Za-z_][A-Za-z0-9_]* is .* on Slurm, .* on Kubeflow\Z", re.S), ENVIRONMENT),
    (re.compile(r": \d+ more environment variables differ\Z"), ENVIRONMENT),
)

# Why a verdict is inconclusive (docs/codes.md), as the chart and tables name it.
REASON_LABELS = {
    "S806": "time ran out",
    "S807": "placeholder to fill in",
    "S808": "feature not emulated",
    "S809": "site file not here",
    "S810": "batch script fails here",
    "S811": "both sides fail the same way",
    "S812": "no training process",
    "S813": "convert refused it",
    "S821": "more nodes than simulated",
    "S822": "deadline ended the run",
}

VERDICT_COLORS = {
    EQUIVALENT: "#2ea44f",
    DIFFERS: "#c21f32",
    INCONCLUSIVE: "#d18b00",
    REFUSED: "#6b7580",
    NOT_SIMULATED: "#aab3bc",
}
VERDICT_LABELS = {
    EQUIVALENT: "equivalent",
    DIFFERS: "differs",
    INCONCLUSIVE: "inconclusive",
    REFUSED: "refused",
    NOT_SIMULATED: "not simulated",
}
KINDS_SHOWN = 8  # the kinds chart shows the most common ones


def classify(sentence: str) -> str:
    """The kind of one difference sentence (KINDS, else OTHER)."""
    s = str(sentence)
    m = _FAILURE.match(s)
    if m:
        return FAILURE_PODS if m.group(1) == "Kubeflow" else FAILURE_SLURM
    m = _STARTS.search(s)
    if m:  # a command one side starts and the other does not is another program; else the counts differ
        return PROGRAM if "0" in (m.group(1), m.group(2)) else PROCESS_COUNT
    for rx, kind in _TAILS:
        if rx.search(s):
            return kind
    return OTHER


def verdict_of(sim) -> str:
    """The summary key a script's simulation record counts under."""
    v = sim.get("verdict") if isinstance(sim, dict) else None
    return v if v in VERDICTS else NOT_SIMULATED


class SimulationTally:
    """Accumulates the verdict counts of a report, one script at a time (SummaryBuilder feeds it)."""

    def __init__(self) -> None:
        self.scripts = 0
        self.simulated = False  # at least one script has a simulation record
        self.verdicts: Counter = Counter()
        self.kinds: Counter = Counter()  # kind -> scripts with a difference of that kind
        self.reasons: Counter = Counter()  # reason code -> inconclusive scripts

    def add(self, sim) -> None:
        self.scripts += 1
        if sim is None:
            self.verdicts[NOT_SIMULATED] += 1
            return
        self.simulated = True
        v = verdict_of(sim)
        self.verdicts[v] += 1
        if v == DIFFERS:
            diffs = sim.get("differences") or ()
            if isinstance(diffs, (list, tuple)):
                self.kinds.update({classify(d) for d in diffs})
        elif v == INCONCLUSIVE:
            reason = sim.get("reason")
            code = reason.get("code") if isinstance(reason, dict) else None
            self.reasons[str(code) if code else "unknown"] += 1

    def build(self) -> dict | None:
        """The JSON summary's `simulation` object; None when no script was simulated."""
        if not self.simulated:
            return None
        out: dict = {v: self.verdicts.get(v, 0) for v in VERDICTS}
        out[NOT_SIMULATED] = self.verdicts.get(NOT_SIMULATED, 0)
        out["difference_kinds"] = dict(_ranked(self.kinds, KINDS + (OTHER,)))
        out["inconclusive_reasons"] = dict(_ranked(self.reasons, tuple(REASON_LABELS)))
        return out


def _ranked(c: Counter, order: tuple) -> list[tuple[str, int]]:
    rank = {k: i for i, k in enumerate(order)}
    return sorted(c.items(), key=lambda kv: (-kv[1], rank.get(kv[0], len(rank)), kv[0]))


def verdict_items(summary: dict) -> list[tuple[str, str, int]]:
    """(key, label, count) of every verdict, `not simulated` last and only when there are some."""
    keys = list(VERDICTS) + ([NOT_SIMULATED] if summary.get(NOT_SIMULATED) else [])
    return [(k, VERDICT_LABELS[k], int(summary.get(k) or 0)) for k in keys]


def kind_items(summary: dict) -> list[tuple[str, int]]:
    kinds = summary.get("difference_kinds") or {}
    return list(kinds.items())[:KINDS_SHOWN]


# ---------------------------------------------------------------- inline SVG (no script, no external file)

_BAR_H = 22
_GAP = 8
_LABEL_W = 170
_CHART_W = 520


def bar_chart_svg(
    chart_id: str, title: str, desc: str, items: list[tuple[str, int, str]], unit: str, total: int = 0
) -> str:
    """A horizontal bar chart: one bar per (label, value, colour), the label left of it and the number right of it
    as text (readable without the bars, and by a screen reader: role=img with a title and a description).
    `chart_id` must be markup-safe (ours, never user text). With `total`, each number is followed by its share."""
    n = max(len(items), 1)
    height = n * (_BAR_H + _GAP) + _GAP
    top = max([v for _l, v, _c in items] + [1])
    span = _CHART_W - _LABEL_W - 100  # room for the number (and share) after the longest bar
    parts = [
        f'<svg class="chart" id="{chart_id}" role="img" aria-labelledby="{chart_id}-t {chart_id}-d" '
        f'viewBox="0 0 {_CHART_W} {height}" width="{_CHART_W}" height="{height}" '
        'xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{chart_id}-t">{escape(title)}</title><desc id="{chart_id}-d">{escape(desc)}</desc>'
    ]
    if not items:
        parts.append(f'<text x="0" y="{_GAP + 15}" class="chart-label">none</text>')
    for k, (label, value, color) in enumerate(items):
        y = _GAP + k * (_BAR_H + _GAP)
        w = round(span * value / top, 1) if value else 0.0
        parts.append(
            f'<g class="bar"><title>{escape(label)}: {value:,} {escape(unit)}</title>'
            f'<text x="{_LABEL_W - 8}" y="{y + 15}" text-anchor="end" class="chart-label">{escape(label)}</text>'
            f'<rect x="{_LABEL_W}" y="{y}" width="{(max(w, 2.0) if value else 0.0):g}" height="{_BAR_H}" rx="3" '
            f'fill="{color}"></rect>'
            f'<text x="{_LABEL_W + w + 6:g}" y="{y + 15}" class="chart-value">{value:,}{_share(value, total)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _share(value: int, total: int) -> str:
    return f" ({100 * value / total:.0f}%)" if total else ""


def verdict_chart(summary: dict) -> str:
    items = [(label, n, VERDICT_COLORS[k]) for k, label, n in verdict_items(summary)]
    total = sum(n for _l, n, _c in items)
    desc = "; ".join(f"{label}: {n:,}{_share(n, total)}" for label, n, _c in items)
    return bar_chart_svg("chart-verdicts", "Launch simulation verdicts (scripts)", desc, items, "scripts", total)


def kinds_chart(summary: dict) -> str:
    items = [(kind, n, "#c21f32") for kind, n in kind_items(summary)]
    total = int(summary.get(DIFFERS) or 0)  # a share of the scripts that differ (one may have several kinds)
    desc = "; ".join(f"{kind}: {n:,}{_share(n, total)}" for kind, n, _c in items) or "no differences"
    return bar_chart_svg(
        "chart-kinds", "Most common kinds of difference (scripts that differ)", desc, items, "scripts", total
    )


def process_table(v) -> tuple[list[list[str]], int]:
    """A verdict's side-by-side process table as kept in the record: (rows, rows left out)."""
    from translator.simulate.table import process_rows

    rows = [list(r) for r in process_rows(v)]
    return rows[:PROCESS_TABLE_ROWS], max(0, len(rows) - PROCESS_TABLE_ROWS)
