"""The HTML report: one self-contained page (inline CSS and JS, no network), readable on a laptop.

The Content-Security-Policy forbids every network fetch, so the page behaves the same offline. The
side-by-side table uses a fixed layout with wrapping code cells, so it fits a 1280 px window without
horizontal scrolling. All user text goes through `html.escape`; element ids are generated numbers,
never user text.
"""

from __future__ import annotations

import hashlib
import json
import re
from html import escape
from typing import IO

from translator.report import simulation as simrep
from translator.report.model import CLEAN, ERRORS, WARNINGS, Report, ScriptReport, TextBuffer, prerendered

_CSS = """
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1d232a;background:#f6f7f9}
main{max-width:1500px;margin:0 auto;padding:16px 20px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d8dde3;padding-bottom:4px}
h3{font-size:15px;margin:0 0 6px;overflow-wrap:anywhere}
code,pre,.code{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
.muted{color:#5c6670}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}
.card{background:#fff;border:1px solid #d8dde3;border-radius:8px;padding:10px 14px;min-width:130px}
.card b{display:block;font-size:20px}
.card.clean b{color:#17803d}.card.warnings b{color:#a35f00}.card.errors b{color:#c21f32}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:14px}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border:1px solid #d8dde3;padding:4px 7px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#eef1f4;font-weight:600}
td.num,th.num{text-align:right;white-space:nowrap}
.sbs{table-layout:fixed}
.sbs td.src,.sbs td.fld{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px;white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word}
.sbs td.ln{color:#5c6670;text-align:right}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;white-space:nowrap}
.st-mapped{background:#dcf5e3;color:#0f5e2b}.st-approximated{background:#fff1d6;color:#7a4700}
.st-dropped{background:#eceff2;color:#46505a}.st-unsupported{background:#fde0e3;color:#8f1020}
.st-ignored{background:#e6e9ff;color:#2f3a8f}
.oc-clean{background:#dcf5e3;color:#0f5e2b}.oc-warnings{background:#fff1d6;color:#7a4700}.oc-errors{background:#fde0e3;color:#8f1020}
tr.row-unsupported td.src{border-left:4px solid #c21f32}tr.row-dropped td.src{border-left:4px solid #8a96a3}
tr.row-approximated td.src{border-left:4px solid #d18b00}tr.row-mapped td.src{border-left:4px solid #2ea44f}
tr.row-ignored td.src{border-left:4px solid #5563d6}
.note{margin:0 0 4px}.note .sev-error{color:#c21f32;font-weight:600}.note .sev-warning{color:#a35f00;font-weight:600}
.note .sev-info{color:#46505a;font-weight:600}
.fix{color:#2f3a8f}
section.script{content-visibility:auto;contain-intrinsic-size:auto 900px;background:#fff;border:1px solid #d8dde3;border-radius:8px;padding:12px 14px;margin:14px 0}
section.script.hidden,tr.hidden{display:none}
.decide{background:#fffaf0;border:1px solid #f0d9a8;border-radius:6px;padding:6px 10px 6px 28px;margin:8px 0}
pre.yaml{background:#f3f5f7;border:1px solid #d8dde3;border-radius:6px;padding:10px;white-space:pre-wrap;overflow-wrap:anywhere;max-width:100%}
details>summary{cursor:pointer;margin:6px 0}
.toolbar{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:8px 0}
.toolbar input{flex:1 1 280px;padding:5px 8px;border:1px solid #b9c1c9;border-radius:6px;font:inherit}
.toolbar button{padding:4px 10px;border:1px solid #b9c1c9;border-radius:6px;background:#fff;font:inherit;cursor:pointer}
.toolbar button[aria-pressed=true]{background:#1d232a;color:#fff}
.index td a{overflow-wrap:anywhere}
.vd-equivalent{background:#dcf5e3;color:#0f5e2b}.vd-differs{background:#fde0e3;color:#8f1020}
.vd-inconclusive{background:#fff1d6;color:#7a4700}.vd-refused,.vd-not_simulated{background:#eceff2;color:#46505a}
.card.vd-equivalent b{color:#17803d}.card.vd-differs b{color:#c21f32}.card.vd-inconclusive b{color:#a35f00}
.charts{display:flex;flex-wrap:wrap;gap:14px;margin:10px 0}
.charts figure{margin:0;background:#fff;border:1px solid #d8dde3;border-radius:8px;padding:10px 14px;flex:1 1 480px;max-width:560px}
.charts figcaption{font-weight:600;margin:0 0 6px}.charts figcaption .muted{font-weight:400}
svg.chart{display:block;max-width:100%;height:auto}
svg.chart text{font:13px system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;fill:#1d232a}
svg.chart text.chart-value{font-weight:600}
.sim{border:1px solid #d8dde3;border-radius:6px;padding:6px 10px;margin:8px 0;background:#fbfcfd}
.sim.sim-inconclusive{background:#fffaf0;border-color:#f0d9a8}.sim.sim-differs{border-color:#f3b6bd}
table.proc{table-layout:fixed;margin:6px 0}table.proc th{white-space:nowrap}
table.proc td{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px;white-space:pre-wrap}
table.proc td.ne{background:#fdecee}
"""

_JS = """
(function(){
  var q=document.getElementById('filter-text'),cur='all',curv='all';
  var rows=document.querySelectorAll('#script-index tbody tr');
  var secs=document.querySelectorAll('section.script');
  function apply(){
    var t=(q.value||'').toLowerCase();
    for(var i=0;i<rows.length;i++){
      var r=rows[i],ok=(cur==='all'||r.getAttribute('data-outcome')===cur)&&(curv==='all'||r.getAttribute('data-verdict')===curv)
        &&(!t||r.getAttribute('data-path').toLowerCase().indexOf(t)>=0);
      r.classList.toggle('hidden',!ok);
      var s=document.getElementById(r.getAttribute('data-target'));if(s){s.classList.toggle('hidden',!ok);}
    }
  }
  function group(sel,set){
    var bs=document.querySelectorAll(sel);
    for(var j=0;j<bs.length;j++){bs[j].addEventListener('click',function(){set(this);
      for(var k=0;k<bs.length;k++){bs[k].setAttribute('aria-pressed',bs[k]===this?'true':'false');}apply();});}
  }
  group('.toolbar button[data-outcome]',function(b){cur=b.getAttribute('data-outcome');});
  group('.toolbar button[data-verdict]',function(b){curv=b.getAttribute('data-verdict');});
  q.addEventListener('input',apply);
})();
"""

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)
_STATUS_LABEL = {
    "mapped": "mapped",
    "approximated": "approximated",
    "dropped": "dropped",
    "unsupported": "unsupported",
    "ignored": "ignored by Slurm",
}


# Large repositories: a browser stays responsive with this many detailed sections; the others are
# listed in the index (the Markdown and JSON reports and the output files hold the rest).
DETAILED_SECTIONS = 1000
INLINE_YAML_UP_TO = 300  # above this many scripts, sections link to the YAML file instead
_PART = "<!--part-->"  # separates pre-rendered parts in the spool (escaped text has no `<`)
_OUTCOME_ORDER = {ERRORS: 0, WARNINGS: 1, CLEAN: 2}


def _detailed(light) -> set:
    """Paths that get a full section: all of them, or the first DETAILED_SECTIONS by outcome (errors
    first), then path."""
    if len(light) <= DETAILED_SECTIONS:
        return {sr.path for sr in light}
    ranked = sorted(light, key=lambda sr: (_OUTCOME_ORDER.get(sr.outcome, 3), sr.path))
    return {sr.path for sr in ranked[:DETAILED_SECTIONS]}


_MARKUP = re.compile("[&<>\"'\x00]")


def e(s) -> str:
    s = str(s)
    if _MARKUP.search(s) is None:  # most texts: nothing to escape
        return s
    return _escape_text(s)


# Escaping a text that is not ASCII goes through its UTF-8 bytes: `bytes.replace` is about twice as fast as
# `str.replace` on such text, and an ASCII character's byte never occurs inside another character's bytes.
_BYTE_ESCAPES = (
    (b"&", b"&amp;"),
    (b"<", b"&lt;"),
    (b">", b"&gt;"),
    (b'"', b"&quot;"),
    (b"'", b"&#x27;"),
    (b"\x00", "\ufffd".encode()),
)


def _escape_text(s: str) -> str:
    """`html.escape(s, quote=True)` with NUL as U+FFFD (the same text, the faster way for long texts)."""
    if s.isascii():
        s = escape(s, quote=True)
        return s.replace("\x00", "\ufffd") if "\x00" in s else s
    b = s.encode("utf-8", "surrogatepass")  # lone surrogates survive the round trip unchanged
    for a, r in _BYTE_ESCAPES:
        b = b.replace(a, r)
    return b.decode("utf-8", "surrogatepass")


def _card(label: str, value, cls: str = "") -> str:
    return f'<div class="card {cls}"><b>{e(value)}</b>{e(label)}</div>'


def _table_counts(title: str, head: str, items, as_code: bool = True) -> str:
    if not items:
        return ""
    rows = "".join(
        f"<tr><td>{'<code>' + e(k) + '</code>' if as_code else e(k)}</td><td class=num>{v:,}</td></tr>"
        for k, v in items
    )
    return (
        f"<div><h3>{e(title)}</h3><table><thead><tr><th>{e(head)}</th><th class=num>scripts</th></tr>"
        f"</thead><tbody>{rows}</tbody></table></div>"
    )


def _codes_table(title: str, codes, ids) -> str:
    if not codes:
        return ""
    out = [
        f"<h2>{e(title)}</h2><table><colgroup><col style='width:8%'><col style='width:8%'>"
        "<col style='width:44%'><col style='width:40%'></colgroup><thead><tr><th>code</th>"
        "<th class=num>scripts</th><th>example</th><th>affected</th></tr></thead><tbody>"
    ]
    for c in codes:
        aff = ", ".join(
            (f'<a href="#{ids[p]}"><code>{e(p)}</code></a>' if p in ids else f"<code>{e(p)}</code>")
            for p in c.affected[:8]
        )
        if c.scripts > 8:
            aff += f" <span class=muted>and {c.scripts - min(8, len(c.affected))} more</span>"
        out.append(
            f"<tr><td><code>{e(c.code)}</code></td><td class=num>{c.scripts:,}</td>"
            f"<td>{e(c.example_message)}</td><td>{aff}</td></tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _inert(s) -> str:
    """User text of the simulation with control and bidi characters shown, never passed on (fsio.terminal_safe)."""
    from translator.fsio import terminal_safe

    return terminal_safe(str(s).replace("\r", " "))


def _proof(sim: dict) -> str:
    """The launch simulation's verdict counts, their chart and the chart of difference kinds (report top)."""
    items = simrep.verdict_items(sim)
    cards = "".join(_card(label, f"{n:,}", f"vd-{k}") for k, label, n in items)
    out = [
        '<h2 id="proof">Launch simulation</h2><p class="muted">Each script ran as a Slurm batch job and as its '
        "TrainJob with stub commands (nothing of the program runs), and the training processes of both sides "
        "were compared.</p>",
        f'<div class="cards">{cards}</div><div class="charts">',
        "<figure><figcaption>Verdicts</figcaption>" + simrep.verdict_chart(sim) + "</figure>",
        f"<figure><figcaption>Most common differences <span class=muted>(of the {int(sim.get('differs') or 0):,} "
        "scripts that differ; one script may have several)</span></figcaption>"
        + simrep.kinds_chart(sim)
        + "</figure></div>",
    ]
    reasons = sim.get("inconclusive_reasons") or {}
    if reasons:
        out.append(
            '<table style="max-width:560px"><thead><tr><th>why inconclusive</th><th>code</th>'
            "<th class=num>scripts</th></tr></thead><tbody>"
        )
        for code, n in reasons.items():
            label = simrep.REASON_LABELS.get(code, "")
            out.append(f"<tr><td>{e(label)}</td><td><code>{e(code)}</code></td><td class=num>{int(n):,}</td></tr>")
        out.append("</tbody></table>")
    return "".join(out) + "\n"


def _sim_details(sim) -> str:
    """A script's verdict details: why it is inconclusive or refused, the side-by-side process table of a
    `differs` one, and the failures both sides share. The same markup from the fast and the general path."""
    if not isinstance(sim, dict):
        return ""
    v = simrep.verdict_of(sim)
    out = []
    reason = sim.get("reason")
    if v in (simrep.INCONCLUSIVE, simrep.REFUSED) and isinstance(reason, dict):
        where = reason.get("where")
        out.append(
            f"<p><b>Why {v}:</b> <code>{e(_inert(reason.get('code', '')))}</code> {e(_inert(reason.get('text', '')))}"
            + (f' <span class="muted">({e(_inert(where))})</span>' if where else "")
            + "</p>"
        )
    table = sim.get("process_table")
    if v == simrep.DIFFERS and isinstance(table, list) and table:
        out.append(_process_table(table, sim.get("process_table_more")))
    shared = sim.get("shared_failures")
    if isinstance(shared, list) and shared:
        out.append("<p><b>Fails the same way on both sides</b> (listed once, not a difference):</p><ul>")
        out.extend(f"<li>{e(_inert(x))}</li>" for x in shared)
        out.append("</ul>")
    return f'<div class="sim sim-{v}">' + "".join(out) + "</div>" if out else ""


def _process_table(rows: list, more) -> str:
    out = [
        '<p><b>Processes side by side</b> <span class="muted">(per node and command, as '
        "<code>slurm2kf simulate</code> prints them; a shaded pair differs)</span></p>"
        '<table class="proc"><colgroup><col style="width:64px"><col style="width:28%"><col><col></colgroup>'
        "<thead><tr><th>node</th><th>command</th><th>Slurm</th><th>Kubeflow</th></tr></thead><tbody>"
    ]
    for r in rows:
        if not isinstance(r, (list, tuple)) or len(r) != 4:
            continue
        node, cmd, slurm, kube = (e(_inert(x)) for x in r)
        ne = ' class="ne"' if slurm != kube else ""
        out.append(f"<tr><td>{node}</td><td>{cmd}</td><td{ne}>{slurm}</td><td{ne}>{kube}</td></tr>")
    out.append("</tbody></table>")
    if type(more) is int and more > 0:
        out.append(f'<p class="muted">and {more:,} more rows: <code>slurm2kf simulate</code> lists them all.</p>')
    return "".join(out)


def _notes(row) -> str:
    out = []
    for n in row.notes:
        fix = f' <span class="fix">fix: {e(n.suggestion)}</span>' if n.suggestion else ""
        out.append(f'<p class="note"><span class="sev-{e(n.severity)}">{e(n.code)}</span> {e(n.message)}{fix}</p>')
    return "".join(out)


def section_id(path: str) -> str:
    """A stable element id for a script (from its path; never user text in the markup)."""
    return "s-" + hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def script_parts(sr: ScriptReport):
    """One script's section in parts (migrate workers render these in parallel): the section without
    its YAML, the inline YAML block, and a link to the YAML file."""
    return _script(sr, section_id(sr.path)), _yaml_block(sr), _yaml_link(sr)


def script_section(sr: ScriptReport, inline_yaml: bool = True) -> str:
    head, block, link = script_parts(sr)
    return head + (block if inline_yaml else link) + _END


_SEP = "\x1f"  # joins the texts of a section for one escape pass; a text holding it takes the other path


def _escape_all(texts: list) -> list:
    """`[e(t) for t in texts]` in one pass over the joined texts (escaping is per character, so escaping the
    joined texts and splitting again gives the same strings when no text holds the separator)."""
    joined = _SEP.join(texts)  # TypeError when a text is not a string: the caller takes the general path
    if _MARKUP.search(joined) is None:
        return texts
    parts = _escape_text(joined).split(_SEP)
    return parts if len(parts) == len(texts) else [e(t) for t in texts]


# Row openings and badges of the known statuses (their escaped form is themselves).
_ROW_OPEN = {st: f'<tr class="row-{st}"><td class="ln">' for st in _STATUS_LABEL}
_ROW_OPEN[""] = '<tr class="row-context"><td class="ln">'
_BADGE = {
    st: f'</td><td><span class="badge st-{st}">{label}</span></td><td class="fld">'
    for st, label in _STATUS_LABEL.items()
}
_BADGE[""] = '</td><td></td><td class="fld">'


def _script(sr: ScriptReport, sid: str) -> str:
    """The section without its YAML, rendered from the record's JSON form by the one fast renderer
    (`_script_record_fast`, which the parent also uses on spooled records); the same bytes as
    `_script_general`, which takes any record that does not have the expected shape."""
    try:
        return _script_record_fast(sr.to_json(), sid)
    except (KeyError, TypeError, AttributeError, ValueError):
        return _script_general(sr, sid)


def _script_record(d: dict, sid: str) -> str:
    """`_script(ScriptReport.from_json(d), sid)` read straight from the record's JSON form (the parent renders
    the detailed sections from the spooled records: no objects built per row). Same bytes; any record that
    does not have the expected shape takes the general path."""
    try:
        return _script_record_fast(d, sid)
    except (KeyError, TypeError, AttributeError, ValueError):
        return _script_general(ScriptReport.from_json(d), sid)


def _script_record_fast(d: dict, sid: str) -> str:
    m: list[str] = []
    u: list = []
    ma = m.append
    ua = u.append
    oc = d["outcome"]
    ma(f'<section class="script" id="{sid}" data-outcome="')
    ua(oc)
    ma('"><h3><span class="badge oc-')
    ua(oc)
    ma('">')
    ua(oc)
    ma("</span> <code>")
    ua(d["path"])
    t = '</code></h3><p class="muted">'
    names = tuple(d.get("names", ()))
    if names:
        t += "TrainJob <code>"
        for k, name in enumerate(names):
            ma(t if k == 0 else "</code>, <code>")
            ua(name)
        t = "</code>"
    else:
        t += "no TrainJob emitted"
    launcher = d.get("launcher")
    if launcher:
        ma(t + " · launcher <b>")
        ua(launcher)
        t = "</b>"
    runtime = d.get("runtime")
    if runtime:
        ma(t + " · runtime <code>")
        ua(runtime)
        t = "</code>"
    image = d.get("image")
    if image:
        ma(t + " · image <code>")
        ua(image)
        t = "</code>"
    t += f" · {int(d.get('nodes') or 0)} node(s), {int(d.get('gpus') or 0)} GPU(s)"
    sim = d.get("simulation")
    if sim:
        ma(t + " · launch <b>")
        ua(sim.get("verdict", ""))
        t = "</b>"
    limit = d.get("time_limit_seconds")
    if limit:
        t += f" · time limit {limit // 60} min"
    t += "</p>"
    if sim and sim.get("differences"):
        ma(t + '<div class="decide"><b>Launch simulation: ')
        ua(sim.get("verdict", ""))
        t = "</b><ul>"
        for x in sim["differences"]:
            ma(t + "<li>")
            ua(x)
            t = "</li>"
        t += "</ul></div>"
    if sim:
        t += _sim_details(sim)
    decisions = tuple(d.get("decisions", ()))
    if decisions:
        t += '<div class="decide"><b>Reviewer must decide</b><ul>'
        for x in decisions:
            ma(t + "<li>")
            ua(x)
            t = "</li>"
        t += "</ul></div>"
    rows = d.get("rows", ())
    if rows:
        t += (
            '<table class="sbs"><colgroup><col style="width:46px"><col style="width:37%">'
            '<col style="width:112px"><col style="width:24%"><col></colgroup>'
            "<thead><tr><th>#</th><th>sbatch line</th><th>status</th><th>Kubeflow field</th>"
            "<th>why</th></tr></thead><tbody>"
        )
        for r in rows:
            r["kind"]  # (a record without it is malformed: from_json refuses it)
            st = r.get("status") or ""
            line = r["line"]
            opening = _ROW_OPEN.get(st)
            if opening is not None:
                ma(f'{t}{opening}{line}</td><td class="src">')
                ua(r["text"])
                ma(_BADGE[st])
            else:
                ma(t + '<tr class="row-')
                ua(st)
                ma(f'"><td class="ln">{line}</td><td class="src">')
                ua(r["text"])
                ma('</td><td><span class="badge st-')
                ua(st)
                ma('">')
                ua(_STATUS_LABEL.get(st, st))
                ma('</span></td><td class="fld">')
            fs = r.get("fields", ())
            if len(fs) == 1:
                f = fs[0]
                fst = f["status"]
                ua(f["field"] if fst == st else f"{f['field']} ({fst})")
            else:
                ua("\n".join([f["field"] if f["status"] == st else f"{f['field']} ({f['status']})" for f in fs]))
            t = "</td><td>"
            for n in r.get("notes", ()):
                ma(t + '<p class="note"><span class="sev-')
                ua(n["severity"])
                ma('">')
                ua(n["code"])
                ma("</span> ")
                ua(n["message"])
                sug = n.get("suggestion")
                if sug:
                    ma(' <span class="fix">fix: ')
                    ua(sug)
                    t = "</span></p>"
                else:
                    t = "</p>"
            t += "</td></tr>"
        t += "</tbody></table>"
    general = [i for i in d.get("issues", ()) if i.get("line") is None]
    if general:
        t += "<ul>"
        for i in general:
            ma(t + '<li class="note"><span class="sev-')
            ua(i["severity"])
            ma('">')
            ua(i["code"])
            ma("</span> ")
            ua(i["message"])
            sug = i.get("suggestion")
            if sug:
                ma(' <span class="fix">fix: ')
                ua(sug)
                t = "</span></li>"
            else:
                t = "</li>"
        t += "</ul>"
    ma(t)
    out: list = [None] * (len(m) + len(u))
    out[0::2] = m
    out[1::2] = _escape_all(u)
    return "".join(out)


def _script_general(sr: ScriptReport, sid: str) -> str:
    """The section markup, escaping each text on its own (the reference for `_script`, which gives the same
    text; also the path for records holding values that are not strings)."""
    out = [
        f'<section class="script" id="{sid}" data-outcome="{e(sr.outcome)}">',
        f'<h3><span class="badge oc-{e(sr.outcome)}">{e(sr.outcome)}</span> <code>{e(sr.path)}</code></h3>',
    ]
    facts = []
    if sr.names:
        facts.append("TrainJob " + ", ".join(f"<code>{e(n)}</code>" for n in sr.names))
    else:
        facts.append("no TrainJob emitted")
    if sr.launcher:
        facts.append(f"launcher <b>{e(sr.launcher)}</b>")
    if sr.runtime:
        facts.append(f"runtime <code>{e(sr.runtime)}</code>")
    if sr.image:
        facts.append(f"image <code>{e(sr.image)}</code>")
    facts.append(f"{sr.nodes} node(s), {sr.gpus} GPU(s)")
    if sr.simulation:
        facts.append(f"launch <b>{e(sr.simulation.get('verdict', ''))}</b>")
    if sr.time_limit_seconds:
        facts.append(f"time limit {sr.time_limit_seconds // 60} min")
    out.append('<p class="muted">' + " · ".join(facts) + "</p>")
    if sr.simulation and sr.simulation.get("differences"):
        out.append('<div class="decide"><b>Launch simulation: ' + e(sr.simulation.get("verdict", "")) + "</b><ul>")
        out.extend(f"<li>{e(d)}</li>" for d in sr.simulation["differences"])
        out.append("</ul></div>")
    if sr.simulation:
        out.append(_sim_details(sr.simulation))
    if sr.decisions:
        out.append('<div class="decide"><b>Reviewer must decide</b><ul>')
        out.extend(f"<li>{e(d)}</li>" for d in sr.decisions)
        out.append("</ul></div>")
    if sr.rows:
        out.append(
            '<table class="sbs"><colgroup><col style="width:46px"><col style="width:37%">'
            '<col style="width:112px"><col style="width:24%"><col></colgroup>'
            "<thead><tr><th>#</th><th>sbatch line</th><th>status</th><th>Kubeflow field</th>"
            "<th>why</th></tr></thead><tbody>"
        )
        for r in sr.rows:
            st = r.status or ""
            badge = f'<span class="badge st-{e(st)}">{e(_STATUS_LABEL.get(st, st))}</span>' if st else ""
            fields = "\n".join((f.field if f.status == st else f"{f.field} ({f.status})") for f in r.fields)
            out.append(
                f'<tr class="row-{e(st) or "context"}"><td class="ln">{r.line}</td>'
                f'<td class="src">{e(r.text)}</td><td>{badge}</td><td class="fld">{e(fields)}</td>'
                f"<td>{_notes(r)}</td></tr>"
            )
        out.append("</tbody></table>")
    general = [i for i in sr.issues if i.line is None]
    if general:
        out.append("<ul>")
        for i in general:
            fix = f' <span class="fix">fix: {e(i.suggestion)}</span>' if i.suggestion else ""
            out.append(
                f'<li class="note"><span class="sev-{e(i.severity)}">{e(i.code)}</span> {e(i.message)}{fix}</li>'
            )
        out.append("</ul>")
    return "".join(out)


def _yaml_block(sr: ScriptReport) -> str:
    return _yaml_block_of(sr.yaml)


def _yaml_block_of(yaml) -> str:
    if not yaml:
        return ""
    return f'<details><summary>TrainJob YAML</summary><pre class="yaml">{e(yaml)}</pre></details>'


def _yaml_link(sr: ScriptReport) -> str:
    """A link to the emitted YAML next to the report (migrate output), instead of an inline copy."""
    return _yaml_link_of(sr.outputs, sr.yaml)


def _yaml_link_of(outputs, yaml) -> str:
    from urllib.parse import quote

    target = next((o for o in outputs if o.endswith(".yaml")), None)
    if target is None:
        return _yaml_block_of(yaml)
    return f'<p><a href="{e(quote(target))}">TrainJob YAML: <code>{e(target)}</code></a></p>'


def record_section(d: dict, inline_yaml: bool = True) -> str:
    """`script_section(ScriptReport.from_json(d), inline_yaml)` from the record's JSON form."""
    try:
        path = d["path"]
        yaml = d.get("yaml", "")
        tail = _yaml_block_of(yaml) if inline_yaml else _yaml_link_of(tuple(d.get("outputs", ())), yaml)
    except (KeyError, TypeError, AttributeError, ValueError):
        return script_section(ScriptReport.from_json(d), inline_yaml)
    return _script_record(d, section_id(path)) + tail + _END


_END = "</section>\n"


_INDEX_CHUNK = 2000  # index rows escaped and written together


def _launch_cell(sim) -> str:
    """The index's launch column: the verdict badge (our own words, never user text)."""
    v = simrep.verdict_of(sim)
    return f'<td><span class="badge vd-{v}">{simrep.VERDICT_LABELS[v]}</span></td>'


def _index_row_general(sr: ScriptReport, sid: str, detailed, simulated: bool = False) -> str:
    """One row of the script index, each text escaped on its own (the reference for `_index_rows`)."""
    codes = " ".join(sr.codes)
    return (
        f'<tr data-outcome="{e(sr.outcome)}"'
        + (f' data-verdict="{simrep.verdict_of(sr.simulation)}"' if simulated else "")
        + f' data-path="{e(sr.path)}" data-target="{sid}">'
        + (f'<td><a href="#{sid}">{e(sr.path)}</a></td>' if sr.path in detailed else f"<td>{e(sr.path)}</td>")
        + f'<td><span class="badge oc-{e(sr.outcome)}">{e(sr.outcome)}</span></td>'
        + (_launch_cell(sr.simulation) if simulated else "")
        + f"<td>{e(sr.launcher or '')}</td><td>{e(sr.runtime or '')}</td>"
        f"<td class=num>{sr.nodes}</td><td class=num>{sr.gpus}</td><td><code>{e(codes)}</code></td></tr>"
    )


def _index_rows(light, ids, detailed, simulated: bool = False) -> str:
    """Rows of the script index, their texts escaped in one pass (the bytes of `_index_row_general`)."""
    m: list[str] = []
    u: list = []
    ma = m.append
    ua = u.append
    t = ""
    for sr in light:
        path = sr.path
        sid = ids[path]
        oc = sr.outcome
        ma(t + '<tr data-outcome="')
        ua(oc)
        ma(f'" data-verdict="{simrep.verdict_of(sr.simulation)}" data-path="' if simulated else '" data-path="')
        ua(path)
        if path in detailed:
            ma(f'" data-target="{sid}"><td><a href="#{sid}">')
            ua(path)
            ma('</a></td><td><span class="badge oc-')
        else:
            ma(f'" data-target="{sid}"><td>')
            ua(path)
            ma('</td><td><span class="badge oc-')
        ua(oc)
        ma('">')
        ua(oc)
        ma("</span></td>" + _launch_cell(sr.simulation) + "<td>" if simulated else "</span></td><td>")
        ua(sr.launcher or "")
        ma("</td><td>")
        ua(sr.runtime or "")
        ma(f"</td><td class=num>{sr.nodes}</td><td class=num>{sr.gpus}</td><td><code>")
        ua(" ".join(sr.codes))
        t = "</code></td></tr>"
    ma(t)
    out: list = [None] * (len(m) + len(u))
    out[0::2] = m
    out[1::2] = _escape_all(u)
    return "".join(out)


def _index_head(sim: dict | None) -> str:
    """The script index's heading, filter toolbar (outcome buttons, and verdict buttons after a simulation) and
    table head."""
    out = [
        '<h2>Scripts</h2><div class="toolbar"><input id="filter-text" type="search" placeholder="filter by path" '
        'aria-label="filter by path">'
    ]
    for o, label in (("all", "all"), (ERRORS, "errors"), (WARNINGS, "warnings"), (CLEAN, "clean")):
        out.append(
            f'<button type=button data-outcome="{o}" aria-pressed="{"true" if o == "all" else "false"}">{label}</button>'
        )
    if sim is not None:
        out.append('<span class="muted">launch:</span>')
        verdicts = [(k, simrep.VERDICT_LABELS[k]) for k, _l, n in simrep.verdict_items(sim) if n]
        for v, label in (("all", "all"), *verdicts):
            out.append(
                f'<button type=button data-verdict="{v}" aria-pressed="{"true" if v == "all" else "false"}">{label}</button>'
            )
    out.append(
        '</div><table id="script-index" class="index"><thead><tr><th>script</th><th>outcome</th>'
        + ("<th>launch</th>" if sim is not None else "")
        + "<th>launcher</th><th>runtime</th><th class=num>nodes</th><th class=num>GPUs</th><th>codes</th></tr></thead><tbody>"
    )
    return "".join(out)


def write(report: Report, out: IO[str]) -> None:
    with TextBuffer(out) as buf:
        _write(report, buf)


def _write(report: Report, out: TextBuffer) -> None:
    s = report.summary
    w = out.write
    w(
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{e(report.title)}</title><style>{_CSS}</style></head><body><main>\n"
    )
    w(f"<h1>{e(report.title)}</h1>")
    if report.source:
        w(f'<p class="muted">Source: <code>{e(report.source)}</code></p>')
    sim = s.simulation
    simulated = sim is not None
    if sim is not None:  # the proof leads
        w(_proof(sim))
        w('<h2 id="conversion">Conversion</h2>')
    w(
        '<div class="cards">'
        + _card("scripts", f"{s.scripts:,}")
        + _card("clean", f"{s.outcome(CLEAN):,}", "clean")
        + _card("with warnings", f"{s.outcome(WARNINGS):,}", "warnings")
        + _card("with errors", f"{s.outcome(ERRORS):,}", "errors")
        + _card("nodes requested", f"{s.nodes:,}")
        + _card("GPUs requested", f"{s.gpus:,}")
        + _card("node-hours", f"{s.node_hours:,.1f}")
        + _card("GPU-hours", f"{s.gpu_hours:,.1f}")
        + _card("without time limit", f"{s.scripts_without_time_limit:,}")
        + "</div>\n"
    )

    light = list(report.light())
    detailed = _detailed(light)
    ids = {sr.path: section_id(sr.path) for sr in light}
    linked = {p: i for p, i in ids.items() if p in detailed}
    w(_codes_table("Most common blockers", s.blockers, linked))
    w(_codes_table("Most common warnings", s.warnings, linked))
    w('<h2>Mix and needs</h2><div class="grid">')
    w(_table_counts("Launchers", "launcher", s.launchers, as_code=False))
    w(_table_counts("Runtimes", "runtime", s.runtimes))
    w(_table_counts("Modules that need an image", "module", s.modules))
    w(_table_counts("Environments that need an image", "environment", s.environments))
    w(_table_counts("Paths that need a volume", "path prefix", s.paths))
    w("</div>\n")
    if report.skipped:
        w("<h2>Files not converted</h2><table><thead><tr><th>file</th><th>code</th><th>why</th></tr></thead><tbody>")
        for f in report.skipped:
            w(f"<tr><td><code>{e(f.path)}</code></td><td><code>{e(f.code)}</code></td><td>{e(f.message)}</td></tr>")
        w("</tbody></table>\n")

    w(_index_head(sim))
    for k in range(0, len(light), _INDEX_CHUNK):
        chunk = light[k : k + _INDEX_CHUNK]
        try:
            w(_index_rows(chunk, ids, detailed, simulated))
        except TypeError:  # a record read back from a JSON file may hold values that are not strings
            for sr in chunk:
                w(_index_row_general(sr, ids[sr.path], detailed, simulated))
    w("</tbody></table>\n")
    if len(detailed) < len(ids):
        w(
            f'<p class="muted">{len(ids) - len(detailed):,} more scripts are listed above without a detailed section '
            f"(this page details {len(detailed):,}: errors first, then warnings); every script is in "
            f"slurm2kf-report.json.</p>"
        )
    inline = len(ids) <= INLINE_YAML_UP_TO
    spool = prerendered(report, "html")
    if spool is not None:
        for _p, text in spool.raw("html", [p for p in ids if p in detailed]):
            head, block, link = text.split(_PART)
            w(head + (block if inline else link) + _END)
    else:
        records = prerendered(report, "json")
        get = getattr(report.scripts, "get", None)
        if records is not None:  # a spool: render the sections straight from the records that get one
            for _p, text in records.raw("json", [p for p in ids if p in detailed]):
                w(record_section(json.loads(text), inline))
        elif callable(get):  # read back only the records that get a section
            for p in ids:
                if p in detailed:
                    w(script_section(get(p), inline))
        else:
            for sr in report.scripts:
                if sr.path in detailed:
                    w(script_section(sr, inline))
    w(f"</main><script>{_JS}</script></body></html>\n")


def render(report: Report) -> str:
    import io

    buf = io.StringIO()
    write(report, buf)
    return buf.getvalue()
