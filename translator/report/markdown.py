"""The Markdown report: sized for a pull request description or a file committed next to the outputs.

Repository summary first, then one collapsible section per script that needs a decision (errors
first, then warnings), each with its side-by-side table and emitted YAML. Clean scripts are listed
in one line each. All user text is escaped (HTML entities plus Markdown punctuation), so a hostile
file name or directive cannot inject markup, and every control sequence is shown, never passed on
(as on the terminal: fsio.terminal_safe).
"""

from __future__ import annotations

import html
import re
from typing import IO

from translator.report import simulation as simrep
from translator.report.model import CLEAN, ERRORS, WARNINGS, Report, ScriptReport, TextBuffer, prerendered

# Scripts shown in full; the rest are listed (the HTML and JSON reports always hold every script).
DETAILED_SCRIPTS = 200
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_MD_SPECIAL_CHARS = "\\`*_[]|~"  # the same characters, the backslash first
_STATUS_MARK = {
    "mapped": "✅ mapped",
    "approximated": "≈ approximated",
    "dropped": "✂ dropped",
    "unsupported": "⛔ unsupported",
    "ignored": "💤 ignored by Slurm",
}
_OUTCOME_MARK = {CLEAN: "✅ clean", WARNINGS: "⚠️ warnings", ERRORS: "⛔ errors"}


# Link and image syntax, and what GitHub-flavoured Markdown turns into links by itself (autolinks:
# `https://…`, `www.…`, `user@host`): written as character references (and `@` as `<span>@</span>`,
# which GFM email autolinks do not cross), so user text renders as the
# same characters but never as a live link or a remote image.
_DEFANG = (("(", "&#40;"), (")", "&#41;"), ("!", "&#33;"), ("://", "&#58;//"), ("@", "<span>@</span>"))
_WWW = re.compile(r"(?i)(www)\.")


def _defang(s: str) -> str:
    for a, b in _DEFANG:
        s = s.replace(a, b)
    return _WWW.sub(r"\1&#46;", s)


# Characters fsio.terminal_safe may rewrite (a superset, so that most text, non-ASCII included, is
# checked with one regex search): C0 controls, DEL, C1 controls, zero-width and bidi marks, embeddings,
# overrides and isolates, line/paragraph separators, BOM, surrogate escapes of undecodable bytes.
# tests/test_hostile_limits_markdown.py checks that every character terminal_safe rewrites is in it.
_TERMINAL_CANDIDATES = (
    r"\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff"
)
_NEEDS_TERMINAL = re.compile(f"[{_TERMINAL_CANDIDATES}]")
# ... in texts joined with _SEP (\x1f, which splits them again) where a CR is no control: it becomes a space
_NEEDS_TERMINAL_JOINED = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1e\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff]"
)

# Texts with none of these need no escaping at all (most names and paths): `text` and `code` return them as
# they are (code() wrapped). Every character or sequence either function rewrites is listed.
_PLAIN_TEXT = re.compile(rf"[\\`*_\[\]|~&<>()!@\r\n{_TERMINAL_CANDIDATES}]|://|(?i:www)\.")
_PLAIN_CODE = re.compile(rf"[\\`*_|&<>\"'()!@\r\n{_TERMINAL_CANDIDATES}]|://|(?i:www)\.")
# The same for texts joined with _SEP (checked for controls apart, with _NEEDS_TERMINAL_JOINED).
_PLAIN_TEXT_JOINED = re.compile(r"[\\`*_\[\]|~&<>()!@\r\n]|://|(?i:www)\.")
_PLAIN_CODE_JOINED = re.compile(r"[\\`*_|&<>\"'()!@\r\n]|://|(?i:www)\.")


def _inert(s: str) -> str:
    """User text with every control sequence made visible, exactly as on the terminal (fsio.terminal_safe:
    C0 and C1 controls, so ESC and every CSI, OSC and DCS sequence, and bidi overrides become `\\x1b`,
    `\\u202e`...): a report pasted into a terminal or a review tool shows them, never obeys them. A
    carriage return becomes a space first (Windows line ends), as in every cell."""
    if _NEEDS_TERMINAL.search(s) is None:
        return s
    from translator.fsio import terminal_safe

    return terminal_safe(s.replace("\r", " "))


def text(s) -> str:
    """Escape user text for Markdown table cells and prose: no markup, no links, no line breaks, no
    control sequences."""
    s = str(s)
    if _PLAIN_TEXT.search(s) is None:
        return s
    return _text_body(_inert(s))


def code(s) -> str:
    """Inline code that survives any content (HTML <code>, entities escaped, pipes escaped, no links, no
    control sequences)."""
    s = str(s)
    if _PLAIN_CODE.search(s) is None:
        return f"<code>{s}</code>" if s else ""
    s = _code_body(_inert(s))
    return f"<code>{s}</code>" if s else ""


_SEP = "\x1f"  # joins texts for one escaping pass: no rule matches or writes it, and no match crosses it


def _text_body(s: str) -> str:
    for ch in _MD_SPECIAL_CHARS:  # `_MD_SPECIAL.sub(r"\\\1", s)`, without a template expanded per match
        if ch in s:
            s = s.replace(ch, "\\" + ch)
    s = html.escape(s, quote=False)  # < > & : no raw HTML (and no <autolink>) reaches the renderer
    return _defang(s).replace("\r", " ").replace("\n", " ")


def _code_body(s: str) -> str:
    s = html.escape(s, quote=True).replace("|", "&#124;").replace("\r", " ").replace("\n", " ")
    s = s.replace("\\", "&#92;").replace("`", "&#96;").replace("*", "&#42;").replace("_", "&#95;")
    return _defang(s)


def _escaped(texts: list, plain, body) -> list | None:
    """`[body(t) for t in texts]` for the escaping of `text` or `code` (`plain`: their nothing-to-do test),
    from the joined texts in one pass: every rule rewrites a character or a sequence that cannot hold the
    separator, so the escaped joined text splits back into the escaped texts. None when a text is not a
    string or holds the separator (the part count tells): then each text takes its own path."""
    try:
        joined = _SEP.join(texts)
    except TypeError:
        return None
    if _NEEDS_TERMINAL_JOINED.search(joined) is not None:  # a control character (rare): each text alone
        return None
    if plain.search(joined) is None:
        return texts if joined.count(_SEP) == len(texts) - 1 else None  # (a text holding _SEP: its own path)
    parts = body(joined).split(_SEP)
    return parts if len(parts) == len(texts) else None


def _texts(texts: list) -> list:
    """`[text(t) for t in texts]`."""
    out = _escaped(texts, _PLAIN_TEXT_JOINED, _text_body)
    return out if out is not None else [text(t) for t in texts]


def _codes(texts: list) -> list:
    """`[code(t) for t in texts]`."""
    out = _escaped(texts, _PLAIN_CODE_JOINED, _code_body)
    if out is None:
        return [code(t) for t in texts]
    return [f"<code>{c}</code>" if c else "" for c in out]


def fenced(body: str, lang: str = "") -> str:
    # one backtick longer than the longest run in the body (at least three): the shortest run the body lacks
    if _NEEDS_TERMINAL.search(body) is not None:
        from translator.fsio import terminal_safe

        body = terminal_safe(body)  # (the emitted YAML escapes controls itself; its comments quote user text)
    fence = "```"
    while fence in body:
        fence += "`"
    return f"{fence}{lang}\n{body.rstrip()}\n{fence}\n"


def _hours(x: float) -> str:
    return f"{x:,.1f}"


def _summary(report: Report, w) -> None:
    s = report.summary
    w(f"# {text(report.title)}\n\n")
    if report.source:
        w(f"Source: {code(report.source)}\n\n")
    if s.simulation is not None:  # the proof leads
        w(_proof(s.simulation))
    w(
        f"**{s.scripts}** scripts: **{s.outcome(CLEAN)}** clean, **{s.outcome(WARNINGS)}** with warnings, "
        f"**{s.outcome(ERRORS)}** with errors.\n\n"
    )
    w("| requested in total | value |\n|---|---:|\n")
    w(
        f"| nodes | {s.nodes:,} |\n| GPUs | {s.gpus:,} |\n| node-hours (from time limits) | {_hours(s.node_hours)} |\n"
        f"| GPU-hours (from time limits) | {_hours(s.gpu_hours)} |\n"
        f"| scripts without a time limit | {s.scripts_without_time_limit:,} |\n\n"
    )
    if s.blockers:
        w("## Most common blockers\n\n| code | scripts | example | affected |\n|---|---:|---|---|\n")
        for c in s.blockers[:15]:
            aff = ", ".join(code(p) for p in c.affected[:5]) + (" …" if c.scripts > 5 else "")
            w(f"| {text(c.code)} | {c.scripts} | {text(c.example_message)} | {aff} |\n")
        w("\n")
    if s.warnings:
        w("## Most common warnings\n\n| code | scripts | example |\n|---|---:|---|\n")
        for c in s.warnings[:15]:
            w(f"| {text(c.code)} | {c.scripts} | {text(c.example_message)} |\n")
        w("\n")
    if s.launchers or s.runtimes:
        w("## Launchers and runtimes\n\n| launcher | scripts |\n|---|---:|\n")
        for k, v in s.launchers:
            w(f"| {text(k)} | {v} |\n")
        w("\n| runtime | scripts |\n|---|---:|\n")
        for k, v in s.runtimes:
            w(f"| {code(k)} | {v} |\n")
        w("\n")
    if s.modules or s.environments or s.paths:
        w("## Still needs a home (feeds the site profile)\n\n| kind | name | scripts |\n|---|---|---:|\n")
        for kind, items in (("module", s.modules), ("environment", s.environments), ("path", s.paths)):
            for k, v in items[:30]:
                w(f"| {kind} | {code(k)} | {v} |\n")
        w("\n")
    sims = [(sr.path, sr.simulation) for sr in report.light() if sr.simulation]
    if sims:
        w("## Launch simulation per script\n\n| script | launch | differences | why |\n|---|---|---:|---|\n")
        for path, sim in sims[:500]:
            w(f"| {code(path)} | {text(sim.get('verdict', ''))} | {len(sim.get('differences', ()))} | {_why(sim)} |\n")
        if len(sims) > 500:
            w(f"\n… and {len(sims) - 500} more (see the HTML and JSON reports)\n")
        w("\n")
    if s.skipped:
        w("## Files not converted\n\n| code | files |\n|---|---:|\n")
        for k, v in s.skipped:
            w(f"| {text(k)} | {v} |\n")
        w("\n")
        for f in report.skipped[:50]:
            w(f"- {code(f.path)}: {text(f.code)} {text(f.message)}\n")
        if len(report.skipped) > 50:
            w(f"- … and {len(report.skipped) - 50} more (see the JSON report)\n")
        w("\n")


def _proof(sim: dict) -> str:
    """The launch simulation's counts and kinds of difference, as plain tables (report top)."""
    counts = ", ".join(f"**{n:,}** {label}" for _k, label, n in simrep.verdict_items(sim))
    out = [
        "## Launch simulation\n\n",
        f"{counts}.\n\n| verdict | scripts |\n|---|---:|\n",
        *(f"| {label} | {n:,} |\n" for _k, label, n in simrep.verdict_items(sim)),
    ]
    kinds = simrep.kind_items(sim)
    if kinds:
        out.append("\n| most common differences | scripts |\n|---|---:|\n")
        out.extend(f"| {kind} | {n:,} |\n" for kind, n in kinds)
    reasons = sim.get("inconclusive_reasons") or {}
    if reasons:
        out.append("\n| why inconclusive | code | scripts |\n|---|---|---:|\n")
        out.extend(f"| {simrep.REASON_LABELS.get(c, '')} | {text(c)} | {int(n):,} |\n" for c, n in reasons.items())
    out.append("\n## Conversion\n\n")
    return "".join(out)


def _why(sim) -> str:
    """The reason of an inconclusive or refused verdict, for a table cell ('' otherwise)."""
    reason = sim.get("reason") if isinstance(sim, dict) else None
    if simrep.verdict_of(sim) not in (simrep.INCONCLUSIVE, simrep.REFUSED) or not isinstance(reason, dict):
        return ""
    return f"{text(reason.get('code', ''))} {text(reason.get('text', ''))}"


def _sim_details(sim) -> str:
    """A script's verdict details: why inconclusive or refused, the process table of a `differs` one, and the
    failures both sides share."""
    if not isinstance(sim, dict):
        return ""
    v = simrep.verdict_of(sim)
    out = []
    why = _why(sim)
    if why:
        where = sim["reason"].get("where")
        out.append(f"**Why {v}:** {why}" + (f" ({text(where)})" if where else "") + "\n\n")
    table = sim.get("process_table")
    if v == simrep.DIFFERS and isinstance(table, list) and table:
        out.append("**Processes side by side:**\n\n| node | command | Slurm | Kubeflow |\n|---|---|---|---|\n")
        for r in table:
            if isinstance(r, (list, tuple)) and len(r) == 4:
                out.append("| " + " | ".join(code(x) for x in r) + " |\n")
        more = sim.get("process_table_more")
        if type(more) is int and more > 0:
            out.append(f"\n… and {more:,} more rows (`slurm2kf simulate` lists them all)\n")
        out.append("\n")
    shared = sim.get("shared_failures")
    if isinstance(shared, list) and shared:
        out.append("**Fails the same way on both sides** (listed once, not a difference):\n\n")
        out.extend(f"- {text(x)}\n" for x in shared)
        out.append("\n")
    return "".join(out)


def script_section(sr: ScriptReport) -> str:
    """One script's collapsible section (migrate workers render these in parallel)."""
    parts: list[str] = []
    _script(sr, parts.append)
    return "".join(parts)


_FIELDS: dict = {}  # (field, status) -> its cell text (a few hundred distinct pairs recur in every script)


def _field(field, status) -> str:
    """`f"{code(field)} ({text(status)})"`, kept per pair."""
    if type(field) is not str or type(status) is not str:  # a record read back from a file may hold anything
        return f"{code(field)} ({text(status)})"
    out = _FIELDS.get((field, status))
    if out is None:
        out = f"{code(field)} ({text(status)})"
        if len(_FIELDS) < 4096:
            _FIELDS[(field, status)] = out
    return out


def _script(sr: ScriptReport, w) -> None:
    names = ", ".join(code(n) for n in sr.names) or "no TrainJob"
    w(f"<details><summary>{_OUTCOME_MARK[sr.outcome]} {code(sr.path)} → {names}</summary>\n\n")
    facts = []
    if sr.launcher:
        facts.append(f"launcher {text(sr.launcher)}")
    if sr.runtime:
        facts.append(f"runtime {code(sr.runtime)}")
    facts.append(f"{sr.nodes} node(s), {sr.gpus} GPU(s)")
    if sr.simulation:
        facts.append(f"launch {text(sr.simulation.get('verdict', ''))}")
    w(" · ".join(facts) + "\n\n")
    if sr.simulation and sr.simulation.get("differences"):
        w(
            f"**Launch simulation: {text(sr.simulation.get('verdict', ''))}** "
            f"({sr.simulation.get('slurm_processes', 0)} process(es) on Slurm, "
            f"{sr.simulation.get('kubeflow_processes', 0)} on Kubeflow):\n\n"
        )
        for d in sr.simulation["differences"]:
            w(f"- {text(d)}\n")
        w("\n")
    if sr.simulation:
        w(_sim_details(sr.simulation))
    if sr.decisions:
        w("**Reviewer must decide:**\n\n")
        for d in sr.decisions:
            w(f"- [ ] {text(d)}\n")
        w("\n")
    if sr.rows:
        w("| line | sbatch | status | Kubeflow field | why |\n|---:|---|---|---|---|\n")
        rows = sr.rows
        sources = _codes([r.text for r in rows])  # the texts of all rows escaped together
        notes = _texts([t for r in rows for n in r.notes for t in (n.code, n.message)])
        k = 0
        for r, src in zip(rows, sources):
            fields = "<br>".join([_field(f.field, f.status) for f in r.fields]) if r.fields else ""
            if r.notes:
                why = "<br>".join([f"{notes[k + 2 * j]} {notes[k + 2 * j + 1]}" for j in range(len(r.notes))])
                k += 2 * len(r.notes)
            else:
                why = ""
            mark = _STATUS_MARK.get(r.status or "", "")
            w(f"| {r.line} | {src} | {mark} | {fields} | {why} |\n")
        w("\n")
    other = [i for i in sr.issues if i.line is None]
    for i in other:
        w(f"- {text(i.severity)} {text(i.code)}: {text(i.message)}\n")
    if other:
        w("\n")
    if sr.yaml:
        w(fenced(sr.yaml, "yaml"))
    w("\n</details>\n\n")


def write(report: Report, out: IO[str]) -> None:
    with TextBuffer(out) as buf:
        _write(report, buf)


def _write(report: Report, out: TextBuffer) -> None:
    w = out.write
    _summary(report, w)
    detailed: list[str] = []
    rest: list[str] = []
    clean: list[str] = []
    for wanted in (ERRORS, WARNINGS):
        for sr in report.light():
            if sr.outcome == wanted:
                (detailed if len(detailed) < DETAILED_SCRIPTS else rest).append(sr.path)
    for sr in report.light():
        if sr.outcome == CLEAN:
            clean.append(sr.path)
    if detailed:
        outcome = {sr.path: sr.outcome for sr in report.light()}
        spool = prerendered(report, "md")
        if spool is not None:
            texts = spool.raw("md", detailed)
        else:
            get = getattr(report.scripts, "get", None)
            if callable(get):  # a spool: read back only the detailed records, not all of them
                texts = ((p, script_section(get(p))) for p in detailed)
            else:
                wanted_paths = set(detailed)
                full = {sr.path: sr for sr in report.scripts if sr.path in wanted_paths}
                texts = ((p, script_section(full[p])) for p in detailed)
        current = None
        for p, text in texts:
            if outcome[p] != current:
                current = outcome[p]
                w(f"## Scripts with {current}\n\n")
            w(text or "")
    if rest:
        w(f"{len(rest)} more scripts need review (shown in the HTML and JSON reports):\n\n")
        for p in rest[:500]:
            w(f"- {code(p)}\n")
        if len(rest) > 500:
            w(f"- … and {len(rest) - 500} more\n")
        w("\n")
    if clean:
        w(f"## Clean scripts ({len(clean)})\n\n")
        for p in clean[:500]:
            w(f"- {code(p)}\n")
        if len(clean) > 500:
            w(f"- … and {len(clean) - 500} more\n")
        w("\n")


def render(report: Report) -> str:
    import io

    buf = io.StringIO()
    write(report, buf)
    return buf.getvalue()
