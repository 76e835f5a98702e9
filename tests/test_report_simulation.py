"""The review report leads with the launch simulation's proof (`--simulate`): verdict counts in the JSON summary,
Markdown and HTML; inline SVG charts of the verdicts and of the kinds of difference; the verdict of each script
with the reason of an inconclusive or refused one and, for `differs`, the side-by-side process table.

The fixture's verdict records are built here by hand (ten scripts, their verdicts, reasons and difference
sentences in the wording of docs/simulate.md "The verdict"); every expected count below is counted from them.
"""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from translator.report import html as html_writer, json_report, markdown
from translator.report.build import simulation_record
from translator.report.model import Report, ScriptReport
from translator.simulate.model import Process, Reason, SideResult, Verdict

from test_report_html_chromium import probe

EX = Path(__file__).resolve().parents[1] / "examples"
EVIL_PROGRAM = "<img src=x onerror=alert(1)>.py"
EVIL_ARG = "\x1b]0;pwn\x07|*_`"


def _procs(side, hosts, per_node, world, gpus, master, program="train.py", argv=("--lr", "0.1")):
    out = []
    for node, (host, _n, _ip) in enumerate(hosts):
        for local in range(per_node):
            out.append(
                Process(
                    side=side,
                    node=node,
                    host=host,
                    program=program,
                    argv=tuple(argv),
                    interpreter="python",
                    launcher="torchrun",
                    rank=node * per_node + local,
                    local_rank=local,
                    world_size=world,
                    master_addr=master,
                    master_port="29500",
                    gpus=gpus,
                )
            )
    return tuple(out)


SLURM_HOSTS = (("node01", 0, "10.0.0.1"), ("node02", 1, "10.0.0.2"))
KF_HOSTS = (("job-node-0-0", 0, "10.244.0.10"), ("job-node-0-1", 1, "10.244.1.10"))


def differs_verdict(program="train.py", argv=("--lr", "0.1")) -> Verdict:
    """Slurm: 2 nodes x 4 ranks, world 8, one GPU each; Kubeflow: 2 pods x 8 ranks, world 16, 8 GPUs each. Both
    sides' MASTER_ADDR names node 0 (node01 / the first pod's FQDN)."""
    slurm = SideResult("slurm", _procs("slurm", SLURM_HOSTS, 4, 8, 1, "node01", program, argv), hosts=SLURM_HOSTS)
    kube = SideResult(
        "kubeflow", _procs("kubeflow", KF_HOSTS, 8, 16, 8, "job-node-0-0.job", program, argv), hosts=KF_HOSTS
    )
    return Verdict(
        "c.sbatch",
        "differs",
        differences=(
            "the training: world size on Slurm 8, on Kubeflow 16",
            "the training: GPUs visible per process on Slurm 1, on Kubeflow 8",
            "the training: environment variable X is '<iframe src=x>' on Slurm, '\x1b[2J' on Kubeflow",
        ),
        slurm=slurm,
        kubeflow=kube,
    )


def _sr(path, sim, outcome="warnings") -> ScriptReport:
    return ScriptReport(path=path, outcome=outcome, sbatch_accepts=True, names=(path.split(".")[0],), simulation=sim)


def _sim(verdict, differences=(), reason=None) -> dict:
    return {
        "verdict": verdict,
        "differences": list(differences),
        "slurm_processes": 1,
        "kubeflow_processes": 1,
        "reason": reason,
        "shared_failures": [],
    }


def fixture_scripts(evil: bool = True) -> list[ScriptReport]:
    """4 equivalent, 2 differs, 2 inconclusive (S807, S806), 1 refused (S813), 1 not simulated."""
    v = differs_verdict(EVIL_PROGRAM, (EVIL_ARG,)) if evil else differs_verdict()
    return [
        _sr("a.sbatch", _sim("equivalent"), "clean"),
        _sr("b.sbatch", _sim("equivalent"), "clean"),
        _sr("b2.sbatch", _sim("equivalent"), "clean"),
        _sr("b3.sbatch", _sim("equivalent"), "clean"),
        _sr("c.sbatch", simulation_record(v)),
        _sr(
            "d.sbatch",
            _sim(
                "differs",
                (
                    "Kubeflow: `shifter python x.py` fails on pod 0: shifter: command not found",
                    "the training: world size on Slurm 4, on Kubeflow 2",
                ),
            ),
        ),
        _sr(
            "e.sbatch",
            _sim(
                "inconclusive",
                reason={
                    "code": "S807",
                    "text": "the script has a placeholder to fill in before it can run",
                    "side": "slurm",
                    "where": "line 9: <your-token>",
                },
            ),
        ),
        _sr(
            "f.sbatch",
            _sim(
                "inconclusive",
                reason={"code": "S806", "text": "time ran out", "side": "slurm", "where": "batch script on node 0"},
            ),
        ),
        _sr(
            "g.sbatch",
            _sim(
                "refused", reason={"code": "S813", "text": "convert refused the script: O201", "side": "", "where": ""}
            ),
            "errors",
        ),
        _sr("h.sbatch", {"verdict": "not simulated", "differences": ["no sandbox"]}),
    ]


def report(evil: bool = True) -> Report:
    return Report.from_scripts("review", "repo", fixture_scripts(evil))


# Counted from fixture_scripts: scripts per verdict; per kind, the scripts that differ with one such sentence
# (c: world size, GPUs, environment; d: a failure in a pod, world size).
WANT_SUMMARY = {
    "equivalent": 4,
    "differs": 2,
    "inconclusive": 2,
    "refused": 1,
    "not_simulated": 1,
    "difference_kinds": {"world size": 2, "failure in pods": 1, "GPUs": 1, "environment": 1},
    "inconclusive_reasons": {"S807": 1, "S806": 1},
}
# The simulate CLI's table (docs/simulate.md): per node and command, `N proc  ranks A-B  world W  gpu G  master
# nodeK` (the rendezvous as the node it names). Node 0: Slurm ranks 0-3, Kubeflow 0-7; node 1: 4-7 and 8-15.
WANT_ROWS = [
    ["0", "python train.py --lr 0.1", "4 proc  ranks 0-3  world 8  gpu 1  master node0", "8 proc  ranks 0-7  world 16  gpu 8  master node0"],
    ["1", "python train.py --lr 0.1", "4 proc  ranks 4-7  world 8  gpu 1  master node0", "8 proc  ranks 8-15  world 16  gpu 8  master node0"],
]  # fmt: skip


def test_json_summary_leads_with_the_counts():
    doc = json.loads(json_report.render(report()))
    summary = doc["summary"]
    assert list(summary)[:2] == ["scripts", "simulation"]
    assert summary["simulation"] == WANT_SUMMARY
    assert list(summary["simulation"]["difference_kinds"]) == ["world size", "failure in pods", "GPUs", "environment"]
    c = next(s for s in doc["scripts"] if s["path"] == "c.sbatch")
    assert [r[0] for r in c["simulation"]["process_table"]] == ["0", "1"]
    # read back (`slurm2kf report OUT`): the summary is recomputed from the records, the same
    again = json.loads(json_report.render(json_report.load("r.json", json_report.render(report()).encode())))
    assert again["summary"]["simulation"] == WANT_SUMMARY


def test_process_table_of_a_differs_verdict():
    sim = simulation_record(differs_verdict())
    assert sim["verdict"] == "differs" and sim["reason"] is None
    assert sim["process_table"] == WANT_ROWS
    assert sim["slurm_processes"] == 8 and sim["kubeflow_processes"] == 16


@pytest.mark.parametrize(
    "sentence, kind",
    [
        ("Kubeflow: `apptainer exec img.sif python t.py` fails on pod 1: apptainer: command not found", "failure in pods"),
        ("Slurm starts no training process; Kubeflow starts 8 (`python t.py`)", "process count"),
        ("`python t.py`: Slurm starts 8, Kubeflow starts 16", "process count"),
        ("`python t.py --a`: Slurm starts 8, Kubeflow starts 0", "program/arguments"),
        ("… more programs differ", "program/arguments"),
        ("the training: world size on Slurm 8, on Kubeflow 16", "world size"),
        ("the training: processes per node on Slurm node0: 4, node1: 4; on Kubeflow node0: 8", "rank layout"),
        ("the training: rank -> node layout differs (rank 4 on Slurm node 1, on Kubeflow node 0; 4 rank(s) differ)",
         "rank layout"),
        ("`python t.py`: GPUs visible per process on Slurm 1, on Kubeflow 8", "GPUs"),
        ("the training: MASTER_ADDR points to node0 on Slurm, to node1 on Kubeflow", "rendezvous"),
        ("Kubeflow: the ranks of `python t.py` do not share one MASTER_PORT (1, 2)", "rendezvous"),
        ("the training: environment variable NCCL_SOCKET_IFNAME is 'ib0' on Slurm, unset on Kubeflow", "environment"),
        ("the training: 3 more environment variables differ", "environment"),
        # a command that holds another kind's words is still classified by the sentence's own wording
        ("`python 'world size on Slurm 1, on Kubeflow 2'`: GPUs visible per process on Slurm 1, on Kubeflow 8", "GPUs"),
        ("something new", "other"),
    ],
)  # fmt: skip
def test_difference_kinds(sentence, kind):
    from translator.report.simulation import classify

    assert classify(sentence) == kind


def test_record_of_an_inconclusive_verdict_keeps_its_reason():
    v = Verdict(
        "e.sbatch",
        "inconclusive",
        reason=Reason("S811", "both sides fail the same way before training", "both", "batch script on node 0, line 4"),
        shared=("Slurm: `module load x` fails on node 0: module: command not found",),
    )
    sim = simulation_record(v)
    assert sim["reason"] == {
        "code": "S811",
        "text": "both sides fail the same way before training",
        "side": "both",
        "where": "batch script on node 0, line 4",
    }
    assert sim["shared_failures"] == ["Slurm: `module load x` fails on node 0: module: command not found"]
    assert "process_table" not in sim  # only a `differs` verdict keeps its table
    page = html_writer.render(Report.from_scripts("r", "", [_sr("e.sbatch", sim)]))
    assert "Fails the same way on both sides" in page and "module load x" in page


def test_without_simulation_the_report_has_no_proof():
    plain = Report.from_scripts("review", "repo", [_sr("a.sbatch", None, "clean")])
    assert "simulation" not in json.loads(json_report.render(plain))["summary"]
    page = html_writer.render(plain)
    assert "chart-verdicts" not in page and "<svg" not in page and 'data-verdict="' not in page
    assert "Launch simulation" not in markdown.render(plain)


def _chart(page: str, chart_id: str) -> list[tuple[str, str, float]]:
    """(label, number text, bar width) of each bar of the chart, read from its SVG markup."""
    svg = re.search(rf'<svg class="chart" id="{chart_id}".*?</svg>', page, re.S).group(0)
    bars = re.findall(
        r'<g class="bar">.*?class="chart-label">([^<]*)</text><rect [^>]*width="([\d.]+)"[^>]*>'
        r'</rect><text [^>]*class="chart-value">([^<]*)</text></g>',
        svg,
    )
    return [(label, value, float(width)) for label, width, value in bars]


def test_html_leads_with_cards_and_charts_with_the_numbers():
    page = html_writer.render(report())
    assert page.index('id="proof"') < page.index('<div class="card "><b>10</b>scripts')
    verdicts = _chart(page, "chart-verdicts")
    # shares of the 10 scripts
    assert [(label, value) for label, value, _w in verdicts] == [
        ("equivalent", "4 (40%)"),
        ("differs", "2 (20%)"),
        ("inconclusive", "2 (20%)"),
        ("refused", "1 (10%)"),
        ("not simulated", "1 (10%)"),
    ]
    widths = {label: w for label, _v, w in verdicts}
    assert widths["equivalent"] == 2 * widths["differs"] == 4 * widths["refused"]
    kinds = _chart(page, "chart-kinds")
    assert [(label, value) for label, value, _w in kinds] == [
        ("world size", "2 (100%)"),  # shares of the 2 scripts that differ: c and d both change the world size
        ("failure in pods", "1 (50%)"),
        ("GPUs", "1 (50%)"),
        ("environment", "1 (50%)"),
    ]
    # accessible: a role, a title and a description that says the numbers
    svg_open = re.search(r'<svg class="chart" id="chart-verdicts"[^>]*>', page).group(0)
    assert 'role="img"' in svg_open and 'aria-labelledby="chart-verdicts-t chart-verdicts-d"' in svg_open
    assert (
        '<desc id="chart-verdicts-d">equivalent: 4 (40%); differs: 2 (20%); inconclusive: 2 (20%); '
        "refused: 1 (10%); not simulated: 1 (10%)</desc>"
    ) in page
    assert "<script src" not in page and page.count("<script>") == 1  # the page's own filter script only
    for label, n in (("equivalent", 4), ("differs", 2), ("inconclusive", 2), ("refused", 1), ("not simulated", 1)):
        assert f"<b>{n}</b>{label}</div>" in page


class _Sections(HTMLParser):
    """The text of each script section and the elements inside it, by section id."""

    def __init__(self) -> None:
        super().__init__()
        self.current = None
        self.depth = 0
        self.text: dict[str, list[str]] = {}
        self.tags: dict[str, list[tuple[str, dict]]] = {}
        self.all_tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.all_tags.append((tag, a))
        if tag == "section" and "script" in (a.get("class") or ""):
            self.current, self.depth = a["id"], 0
            self.text[self.current], self.tags[self.current] = [], []
        if self.current:
            self.tags[self.current].append((tag, a))
            if tag == "section":
                self.depth += 1

    def handle_endtag(self, tag):
        if self.current and tag == "section":
            self.depth -= 1
            if self.depth == 0:
                self.current = None

    def handle_data(self, data):
        if self.current:
            self.text[self.current].append(data)


def _parsed(page: str) -> _Sections:
    p = _Sections()
    p.feed(page)
    return p


def test_html_per_script_verdict_reason_and_process_table():
    page = html_writer.render(report(evil=False))
    p = _parsed(page)
    sid = html_writer.section_id
    c = "".join(p.text[sid("c.sbatch")])
    for node, command, slurm, kube in WANT_ROWS:
        assert f"{node}{command}{slurm}{kube}" in c  # one table row: node, command, Slurm, Kubeflow
    assert ("table", {"class": "proc"}) in p.tags[sid("c.sbatch")]
    e = "".join(p.text[sid("e.sbatch")])
    assert (
        "Why inconclusive: S807 the script has a placeholder to fill in before it can run (line 9: <your-token>)" in e
    )
    assert ("table", {"class": "proc"}) not in p.tags[sid("e.sbatch")]
    g = "".join(p.text[sid("g.sbatch")])
    assert "Why refused: S813 convert refused the script: O201" in g
    # the index: a launch column and the verdict to filter on
    rows = {a["data-path"]: a.get("data-verdict") for t, a in p.all_tags if t == "tr" and "data-path" in a}
    assert rows == {
        "a.sbatch": "equivalent",
        "b.sbatch": "equivalent",
        "b2.sbatch": "equivalent",
        "b3.sbatch": "equivalent",
        "c.sbatch": "differs",
        "d.sbatch": "differs",
        "e.sbatch": "inconclusive",
        "f.sbatch": "inconclusive",
        "g.sbatch": "refused",
        "h.sbatch": "not_simulated",
    }
    # fast and general renderers agree on simulated records (migrate workers use one, the parent the other)
    for sr in fixture_scripts():
        assert html_writer._script(sr, "s") == html_writer._script_general(sr, "s")
        ids = {sr.path: "s"}
        assert html_writer._index_rows([sr], ids, {sr.path}, True) == html_writer._index_row_general(
            sr, "s", {sr.path}, True
        )


def test_html_escapes_user_text_in_the_table_and_reason():
    page = html_writer.render(report(evil=True))
    p = _parsed(page)
    assert not [a for t, a in p.all_tags if t in ("img", "iframe")]
    c = "".join(p.text[html_writer.section_id("c.sbatch")])
    # command_of quotes a word with other characters in single quotes; the ESC and BEL are shown, not passed on
    assert f"python '{EVIL_PROGRAM}' '\\x1b]0;pwn\\x07|*_`'" in c
    table = re.search(r'<table class="proc">.*?</table>', page, re.S).group(0)
    assert "\x1b" not in table and "\x07" not in table and "&lt;img src=x onerror=alert(1)&gt;" in table


def test_markdown_leads_with_the_counts_and_tables():
    md = markdown.render(report(evil=False))
    head = md[: md.index("**10** scripts")]
    assert "## Launch simulation" in head
    assert "**4** equivalent, **2** differs, **2** inconclusive, **1** refused, **1** not simulated." in head
    for label, n in (("equivalent", 4), ("differs", 2), ("inconclusive", 2), ("refused", 1), ("not simulated", 1)):
        assert f"| {label} | {n} |\n" in head
    for kind, n in (("world size", 2), ("failure in pods", 1), ("GPUs", 1), ("environment", 1)):
        assert f"| {kind} | {n} |\n" in head
    assert "| placeholder to fill in | S807 | 1 |" in head and "| time ran out | S806 | 1 |" in head
    # per script: the verdict table with the reason, the process table of c, the reason of e
    assert "| <code>e.sbatch</code> | inconclusive | 0 | S807 the script has a placeholder" in md
    c = md[md.index("<code>c.sbatch</code> →") :]
    c = c[: c.index("</details>")]
    assert "**Processes side by side:**" in c
    for row in WANT_ROWS:
        assert "| " + " | ".join(markdown.code(x) for x in row) + " |" in c
    e = md[md.index("<code>e.sbatch</code> →") :]
    e = e[: e.index("</details>")]
    assert "**Why inconclusive:** S807 the script has a placeholder to fill in before it can run" in e


def test_markdown_escapes_user_text():
    md = markdown.render(report(evil=True))
    assert "\x1b" not in md and "\x07" not in md
    assert "<img" not in md and "<iframe" not in md
    rows = [line for line in md.splitlines() if "onerror" in line and line.startswith("| <code>0</code> |")]
    assert len(rows) == 1, "the process table row of node 0"
    # a table row of four cells: five pipes, none from the user's `|`; inside code, `\`, `|`, `*`, `_` and the
    # backtick are character references (docs/report.md), the ESC and BEL shown as `\x1b`, `\x07`
    assert rows[0].count("|") == 5
    assert "&#92;x1b]0;pwn&#92;x07&#124;&#42;&#95;&#96;" in rows[0]


def test_chart_text_is_visible_in_chromium(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(html_writer.render(report()), encoding="utf-8")
    js = (
        "var out=[],svg=document.getElementById('chart-verdicts'),r=svg.getBoundingClientRect();"
        "var ts=svg.querySelectorAll('text');"
        "for(var i=0;i<ts.length;i++){var b=ts[i].getBoundingClientRect();"
        "if(b.width>0&&b.height>0&&b.left>=r.left-1&&b.right<=r.right+1&&b.bottom<=r.bottom+1)"
        "{out.push(ts[i].textContent);}}"
        "document.body.setAttribute('data-visible',out.join('|'));"
        "document.body.setAttribute('data-top',Math.round(r.top));"
        "document.body.setAttribute('data-scroll-width',document.documentElement.scrollWidth);"
        "var k=document.getElementById('chart-kinds').getBoundingClientRect();"
        "document.body.setAttribute('data-kinds',Math.round(k.width)+'x'+Math.round(k.height));"
    )
    idx = probe(page, tmp_path, js)
    body = idx.find("body")[0]
    assert body["data-visible"].split("|") == [
        "equivalent",
        "4 (40%)",
        "differs",
        "2 (20%)",
        "inconclusive",
        "2 (20%)",
        "refused",
        "1 (10%)",
        "not simulated",
        "1 (10%)",
    ]
    assert 0 < int(body["data-top"]) < 2000  # in the first screen of a 1280 x 2000 window
    assert int(body["data-scroll-width"]) <= 1280
    w, h = map(int, body["data-kinds"].split("x"))
    assert w > 200 and h > 100


def test_verdict_filter_in_chromium(tmp_path):
    """The `launch:` buttons show only the scripts of one verdict (the fixture has 2 that differ)."""
    page = tmp_path / "report.html"
    page.write_text(html_writer.render(report(evil=False)), encoding="utf-8")
    js = (
        "document.querySelector('.toolbar button[data-verdict=differs]').click();"
        "function shown(sel){var s=document.querySelectorAll(sel),v=[];"
        "for(var i=0;i<s.length;i++){if(getComputedStyle(s[i]).display!=='none'){v.push(s[i].getAttribute('data-path')"
        "||s[i].id);}}return v;}"
        "document.body.setAttribute('data-rows',shown('#script-index tbody tr').join(' '));"
        "document.body.setAttribute('data-sections',shown('section.script').length);"
    )
    body = probe(page, tmp_path, js).find("body")[0]
    assert body["data-rows"] == "c.sbatch d.sbatch" and body["data-sections"] == "2"


@pytest.mark.usefixtures("cli")
def test_migrate_simulate_summary_of_two_examples(cli, tmp_path):
    """torchrun_multinode is equivalent; container_pyxis differs (docs: srun starts torchrun on 2 nodes without
    --nnodes, so on Slurm each node trains alone: world 8, ranks 0-7 twice, each node's ranks name their own
    node as master; the TrainJob trains across both: world 16, ranks 0-15, one master)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("torchrun_multinode", "container_pyxis"):
        shutil.copy(EX / name / "job.sbatch", src / f"{name}.sbatch")
    out = tmp_path / "out"
    assert cli("migrate", str(src), "-o", str(out), "-j", "1", "--simulate").exit_code in (0, 1)
    doc = json.loads((out / "slurm2kf-report.json").read_text())
    assert doc["summary"]["simulation"] == {
        "equivalent": 1,
        "differs": 1,
        "inconclusive": 0,
        "refused": 0,
        "not_simulated": 0,
        "difference_kinds": {"world size": 1, "rank layout": 1, "rendezvous": 1},
        "inconclusive_reasons": {},
    }
    pyxis = next(s for s in doc["scripts"] if s["path"] == "container_pyxis.sbatch")
    table = pyxis["simulation"]["process_table"]
    assert [r[0] for r in table] == ["0", "1"]
    assert "ranks 0-7  world 8" in table[1][2] and "ranks 8-15  world 16" in table[1][3]
    page = (out / "slurm2kf-report.html").read_text()
    assert '<table class="proc">' in page and 'id="chart-verdicts"' in page
