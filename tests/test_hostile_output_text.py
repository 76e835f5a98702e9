"""User text in reports and on the terminal is data only (issue 10, "Low").

Markdown: a hostile file name, directive or message must not render as a live link, a remote image or
raw HTML. Checked with GitHub's own Markdown implementation (cmark-gfm, through the cmarkgfm binding,
with raw HTML allowed as GitHub's sanitiser allows <code>/<details>/<span>): the rendered HTML of the
report holds no <a> and no <img> that the report did not write itself.

Terminal: ESC (so every CSI/OSC sequence), other C0/C1 controls and bidi overrides in user text are
printed as visible escapes by every command (ECMA-48: ESC is 0x1B, CSI is ESC [ or U+009B, OSC is
ESC ] or U+009D).
"""

from __future__ import annotations

import json
import re
import subprocess

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

import strategies as S
from translator.fsio import terminal_safe
from translator.report.markdown import code, text

EXE = S.REPO / ".venv" / "bin" / "slurm2kf"

HOSTILE = [
    "[click](https://evil.example/x)",
    "![pixel](https://evil.example/p.png)",
    "<img src=https://evil.example/i>",
    "<https://evil.example>",
    "https://evil.example/a",
    "see www.evil.example now",
    "mail me@evil.example",
    "[ref]: https://evil.example",
    "<a href='https://evil.example'>x</a>",
    "mailto:me@evil.example",
    "`code` **bold** _it_ | pipe",
    "&lt;already&gt; &amp;",
    "ftp://evil.example/f",
]


def _html(md: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(md, options=Options.CMARK_OPT_UNSAFE)


@pytest.mark.parametrize("value", HOSTILE)
def test_markdown_text_and_code_never_render_links_or_images(value):
    md = f"| a | b |\n|---|---|\n| {text(value)} | {code(value)} |\n\n- {text(value)} {code(value)}\n"
    html = _html(md)
    assert "<a " not in html and "<img" not in html, html
    # the characters are all still there for the reader (entities decoded by the renderer)
    shown = re.sub(r"<[^>]+>", "", html)
    import html as H

    assert value.replace("\n", " ") in H.unescape(shown), (value, shown)


def test_migrate_markdown_report_of_a_hostile_repository_has_no_links(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    name = "[x](evil.example) ![i](evil.example) www.evil.example a@evil.example.sbatch"  # no "/" in a name
    (src / name).write_text(
        "#!/bin/bash\n#SBATCH --job-name=![i](https://evil.example/p.png)\n"
        "#SBATCH --comment=<img src=https://evil.example/x>\n#SBATCH --nodez=1\n"
        "srun python train.py --url https://evil.example/data [l](http://evil.example)\n"
    )
    out = tmp_path / "out"
    proc = subprocess.run([str(EXE), "migrate", str(src), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    html = _html((out / "slurm2kf-report.md").read_text())
    assert "<img" not in html
    # the only links of the report are the ones it writes itself (none today)
    assert "evil.example" in html and "<a " not in html, [ln for ln in html.splitlines() if "<a " in ln][:5]


# ---- terminal ------------------------------------------------------------------------------------


def test_terminal_safe_escapes_control_sequences():
    assert terminal_safe("a\x1b]8;;https://e\x07link\x1b]8;;\x07b") == "a\\x1b]8;;https://e\\x07link\\x1b]8;;\\x07b"
    assert terminal_safe("x\x1b[2Jy\x9b31mz\rw") == "x\\x1b[2Jy\\x9b31mz\\x0dw"
    assert terminal_safe("bidi \u202eevil\u202c tab\tnl\n") == "bidi \\u202eevil\\u202c tab\tnl\n"
    assert terminal_safe("caf\xe9 \u00e9\u4e2d") == "caf\xe9 \u00e9\u4e2d"  # printable text unchanged


ESCAPES = "\x1b]0;pwned\x07\x1b[31m\x9b2J\u202e"


def _no_raw_controls(out: str) -> None:
    for ch in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert ch not in out, repr(out[:400])


def test_every_command_prints_user_text_inert(tmp_path):
    script = tmp_path / "job.sbatch"
    script.write_text(f"#!/bin/bash\n#SBATCH --nodez={ESCAPES}\n#SBATCH --job-name=x{ESCAPES}\nsrun python t.py\n")
    runs = [
        ["inspect", str(script)],
        ["inspect", "--json", str(script)],
        ["convert", str(script), "-o", str(tmp_path / "o.yaml")],
        ["migrate", str(tmp_path), "-o", str(tmp_path.parent / (tmp_path.name + "-out"))],
        ["report", str(tmp_path), "-o", str(tmp_path.parent / (tmp_path.name + "-r.md"))],
    ]
    bad_yaml = tmp_path.parent / (tmp_path.name + "-bad.yaml")
    bad_yaml.write_text(
        f"apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: a\n"
        f"spec:\n  runtimeRef: {{name: torch-distributed}}\n  bogus{json.dumps(ESCAPES)[1:-1]}: 1\n"
    )
    runs.append(["validate", str(bad_yaml)])
    prof = tmp_path.parent / (tmp_path.name + "-p.yaml")
    prof.write_text(
        f"apiVersion: slurm2kf/v1\nkind: SiteProfile\npartitions:\n  gpu:\n    queu{json.dumps(ESCAPES)[1:-1]}: x\n"
    )
    runs.append(["profile", "check", str(prof)])
    for args in runs:
        proc = subprocess.run([str(EXE), *args], capture_output=True, text=True)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        _no_raw_controls(proc.stdout)
        _no_raw_controls(proc.stderr)
    # the text is still there, visibly escaped
    proc = subprocess.run([str(EXE), "inspect", str(script)], capture_output=True, text=True)
    assert "\\x1b]0;pwned\\x07" in proc.stdout
