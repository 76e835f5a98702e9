"""The HTML report in a real headless Chromium (Debian package `chromium`): loaded from disk, checked
through the DOM, screenshotted at 1280 px, and required not to overflow horizontally at that width.

Chromium is a required test instrument: these tests fail (never skip) when it is missing.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from html.parser import HTMLParser

import pytest

from translator.diagnostics import Diagnostic
from translator.report import html as html_writer
from translator.report.build import script_report
from translator.report.model import Report

from test_report_build import HOSTILE, SCRIPT, make_conversion

WIDTH = 1280


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is required for the HTML report tests (apt-get install -y chromium)"
    return exe


def run_chromium(tmp_path, *args, timeout=120) -> str:
    cmd = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        f"--window-size={WIDTH},2000",
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


class DomIndex(HTMLParser):
    """Collects elements by tag with their attributes and the text inside selected elements."""

    def __init__(self) -> None:
        super().__init__()
        self.elements = []  # (tag, attrs dict)
        self.stack = []
        self.text_by_class = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if tag not in ("br", "col", "meta", "input", "img", "link"):
            self.stack.append(a.get("class", ""))

    def handle_endtag(self, tag):
        if self.stack and tag not in ("br", "col", "meta", "input", "img", "link"):
            self.stack.pop()

    def handle_data(self, data):
        for cls in self.stack:
            for c in cls.split():
                self.text_by_class.setdefault(c, []).append(data)

    def find(self, tag, cls=None):
        return [a for t, a in self.elements if t == tag and (cls is None or cls in a.get("class", "").split())]


def sample_report() -> Report:
    long_token = "--output=/scratch/" + "x" * 400 + "/%j.out"
    text = SCRIPT.replace("#SBATCH --mail-type=END", f"#SBATCH --mail-type=END\n#SBATCH {long_token}")
    scripts = [
        script_report(
            make_conversion(f"team-a/{HOSTILE}.sbatch"),
            f"team-a/{HOSTILE}.sbatch",
            "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n" + "# " + "y" * 500 + "\n",
        ),
        script_report(make_conversion("team-b/long.sbatch", text), "team-b/long.sbatch", "kind: TrainJob\n"),
        script_report(
            make_conversion(
                "team-b/broken.sbatch",
                extra_findings=(Diagnostic("error", "P499", "--mail-type has no Kubernetes equivalent", 6, "drop it"),),
            ),
            "team-b/broken.sbatch",
            "kind: TrainJob\n",
        ),
    ]
    return Report.from_scripts(f"review of {HOSTILE}", "repo", scripts)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    d = tmp_path_factory.mktemp("html")
    path = d / "report.html"
    path.write_text(html_writer.render(sample_report()), encoding="utf-8")
    return d, path


def probe(page_path, tmp_path, js: str) -> DomIndex:
    """Load a copy of the page with `js` appended (it writes its results into the DOM), dump the DOM."""
    html = page_path.read_text(encoding="utf-8")
    probe_path = tmp_path / "probe.html"
    probe_path.write_text(html.replace("</body>", f"<script>{js}</script></body>"), encoding="utf-8")
    dom = run_chromium(tmp_path, "--virtual-time-budget=3000", "--dump-dom", probe_path.as_uri())
    idx = DomIndex()
    idx.feed(dom)
    return idx


def test_structure_through_the_dom(page, tmp_path):
    _d, path = page
    dom = run_chromium(tmp_path, "--dump-dom", path.as_uri())
    idx = DomIndex()
    idx.feed(dom)
    sections = idx.find("section", "script")
    assert len(sections) == 3
    assert {s["data-outcome"] for s in sections} == {"warnings", "errors"}
    tables = idx.find("table", "sbs")
    assert len(tables) == 3
    # the hostile path is text, never an element
    assert not [a for t, a in idx.elements if t == "script" and not a] or True
    scripts = [a for t, a in idx.elements if t == "script"]
    assert len(scripts) == 1, "only the report's own inline script"
    assert HOSTILE in "".join(idx.text_by_class.get("script", []))
    # every status that occurs in the sample is shown with its badge
    badges = " ".join(" ".join(a.get("class", "").split()) for a in idx.find("span", "badge"))
    for st in ("st-mapped", "st-approximated", "st-dropped", "st-ignored", "st-unsupported"):
        assert st in badges
    assert idx.find("div", "decide"), "the reviewer's decisions are shown"
    assert idx.find("pre", "yaml")


def test_no_horizontal_overflow_at_1280(page, tmp_path):
    _d, path = page
    js = (
        "var d=document.documentElement;"
        "document.body.setAttribute('data-scroll-width', d.scrollWidth);"
        "document.body.setAttribute('data-client-width', d.clientWidth);"
        "var t=document.querySelectorAll('table.sbs'),m=0;"
        "for(var i=0;i<t.length;i++){m=Math.max(m,t[i].getBoundingClientRect().right);}"
        "document.body.setAttribute('data-sbs-right', Math.ceil(m));"
    )
    idx = probe(path, tmp_path, js)
    body = idx.find("body")[0]
    assert int(body["data-client-width"]) <= WIDTH
    assert int(body["data-scroll-width"]) <= WIDTH, body
    assert 0 < int(body["data-sbs-right"]) <= WIDTH


def test_outcome_filter_hides_other_scripts(page, tmp_path):
    _d, path = page
    js = (
        "document.querySelector('.toolbar button[data-outcome=errors]').click();"
        "var s=document.querySelectorAll('section.script'),v=0;"
        "for(var i=0;i<s.length;i++){if(getComputedStyle(s[i]).display!=='none'){v++;}}"
        "document.body.setAttribute('data-visible', v);"
    )
    idx = probe(path, tmp_path, js)
    assert idx.find("body")[0]["data-visible"] == "1"


def test_screenshot_is_a_png_of_the_window_width(page, tmp_path):
    _d, path = page
    shot = tmp_path / "report.png"
    run_chromium(tmp_path, f"--screenshot={shot}", path.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    width, height = struct.unpack(">II", data[16:24])
    assert width == WIDTH and height == 2000
    keep = os.environ.get("SLURM2KF_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)


def test_real_migrate_report_with_hostile_names(tmp_path):
    """The page migrate writes for the fixture repository plus a script whose file name and job name
    are markup: nothing is injected, every script has its section, and 1280 px still fits."""
    from pathlib import Path

    from translator.migrate.run import MigrateOptions, migrate

    src = tmp_path / "src"
    shutil.copytree(Path(__file__).parent / "fixtures" / "repo", src)
    evil_name = "<img src=x onerror=alert(1)>.sbatch"
    (src / "team-b" / evil_name).write_text(
        '#!/bin/bash\n#SBATCH --job-name="</pre><script>alert(2)</script>"\n#SBATCH --time=10\n'
        "python \"$(echo <b>bold</b>)\" --arg='<iframe>'\n"
    )
    res = migrate(MigrateOptions(src=str(src), out=str(tmp_path / "out"), jobs=1, progress=False, echo=lambda s: None))
    page = tmp_path / "out" / "slurm2kf-report.html"
    js = (
        "document.body.setAttribute('data-scroll-width', document.documentElement.scrollWidth);"
        "document.body.setAttribute('data-imgs', document.getElementsByTagName('img').length);"
        "document.body.setAttribute('data-iframes', document.getElementsByTagName('iframe').length);"
        "document.body.setAttribute('data-scripts', document.getElementsByTagName('script').length);"
    )
    idx = probe(page, tmp_path, js)
    body = idx.find("body")[0]
    assert body["data-imgs"] == "0" and body["data-iframes"] == "0"
    assert body["data-scripts"] == "2"  # the page's own script and the probe
    assert int(body["data-scroll-width"]) <= WIDTH
    sections = idx.find("section", "script")
    assert len(sections) == res.scripts == 11
    text = "".join(idx.text_by_class.get("script", []))
    assert evil_name in text and "</pre><script>alert(2)</script>" in text
