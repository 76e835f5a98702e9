"""Round 3 of the attack (issue 23), point 8: a TrainJob the API server would refuse for its size is never
written with exit 0 (L378/L379), and the Markdown report never passes a control sequence on (C0/C1
controls, so CSI, OSC and DCS sequences, and bidi overrides are shown, not obeyed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

import strategies as S

CRD = S.REPO / "translator" / "validate" / "data" / "trainer.kubeflow.org_trainjobs.yaml"


def cli(*args, timeout=120):
    env = {**os.environ, "PYTHONPATH": str(S.REPO)}
    return subprocess.run(
        [sys.executable, "-m", "translator", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def _crd_trainer_limits() -> dict:
    """maxLength/maxItems of spec.trainer.command and args, read from the TrainJob CRD itself."""
    crd = yaml.safe_load(CRD.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    trainer = schema["properties"]["spec"]["properties"]["trainer"]["properties"]
    return {f: (trainer[f]["items"]["maxLength"], trainer[f]["maxItems"]) for f in ("command", "args")}


def _fallback_script(body_bytes: int) -> str:
    """A batch script with no launch line: its whole body becomes one `bash -c` argument."""
    lines = ["#!/bin/bash", "#SBATCH --nodes=1", "#SBATCH --time=10"]
    i, size = 0, 0
    while size < body_bytes:
        line = f"echo step {i} of the data preparation, padded to look like a real generated script"
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def test_the_limits_checked_are_the_crds():
    # The CRD of Kubeflow Trainer v2 (the file the validator bundles): 1 MiB per item, 128 items.
    from translator.plan import limits

    assert _crd_trainer_limits() == {"command": (1048576, 128), "args": (1048576, 128)}
    assert (limits.MAX_ITEM_CHARS, limits.MAX_ITEMS) == _crd_trainer_limits()["args"]


def test_a_1_2_mb_fallback_script_is_an_error_not_a_silent_invalid_trainjob(tmp_path):
    script = tmp_path / "big.sbatch"
    script.write_text(_fallback_script(1_200_000))
    out = tmp_path / "big.yaml"
    proc = cli("convert", script, "-o", out)
    assert proc.returncode == 1, proc.stderr  # an error finding: exit 1 (README's exit table)
    assert "Traceback" not in proc.stderr
    # the body starts at line 4: that is where the argument comes from
    assert f"{script}:4: error L378" in proc.stderr, proc.stderr[-2000:]
    doc = yaml.safe_load(out.read_text())
    assert len(doc["spec"]["trainer"]["args"][0]) > 1048576  # what the finding is about, really over
    # the server-side schema agrees: `validate` refuses the same object
    val = cli("validate", out)
    assert val.returncode != 0


def test_a_fallback_script_under_the_limit_has_no_size_finding(tmp_path):
    script = tmp_path / "ok.sbatch"
    script.write_text(_fallback_script(900_000))
    proc = cli("convert", script, "-o", tmp_path / "ok.yaml")
    assert proc.returncode == 0, proc.stderr
    assert "L378" not in proc.stderr and "L379" not in proc.stderr


def test_more_than_128_arguments_is_l378(tmp_path):
    script = tmp_path / "many.sbatch"
    script.write_text(
        "#!/bin/bash\n#SBATCH -N 1\npython train.py " + " ".join(f"--opt{i}=1" for i in range(200)) + "\n"
    )
    proc = cli("convert", script, "-o", tmp_path / "many.yaml")
    assert proc.returncode == 1, proc.stderr
    assert f"{script}:3: error L378" in proc.stderr and "201 items" in proc.stderr


def test_an_object_over_etcds_request_limit_is_l379(tmp_path):
    # two arguments of 800,000 characters: each under maxLength, together over etcd's default
    # --max-request-bytes of 1.5 MiB (1,572,864 bytes; etcd docs, "System limits")
    big = "x" * 800_000
    script = tmp_path / "two.sbatch"
    script.write_text(f"#!/bin/bash\n#SBATCH -N 1\npython train.py --a={big} --b={big}\n")
    proc = cli("convert", script, "-o", tmp_path / "two.yaml")
    assert proc.returncode == 1, proc.stderr
    assert f"{script}:3: error L379" in proc.stderr and "L378" not in proc.stderr


def test_migrate_leaves_an_oversized_trainjob_out_of_the_kustomization(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "big.sbatch").write_text(_fallback_script(1_200_000))
    (src / "small.sbatch").write_text(_fallback_script(200))
    proc = cli("migrate", src, "-o", out, "-j", "1", "--max-size", 2_000_000)
    assert proc.returncode == 1, proc.stderr
    assert yaml.safe_load((out / "kustomization.yaml").read_text())["resources"] == ["small.trainjob.yaml"]
    records = {s["path"]: s for s in json.loads((out / "slurm2kf-report.json").read_text())["scripts"]}
    assert records["big.sbatch"]["outcome"] == "errors"


# ---- Markdown report: control sequences ------------------------------------------------------------

OSC_TITLE = "\x1b]0;pwned\x07"  # xterm: set the window title
OSC_52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # xterm: write the clipboard
OSC_LINK = "\x1b]8;;https://evil.example\x1b\\"  # hyperlink, ST-terminated
DCS = "\x1bP+q544e\x1b\\"  # DCS request (XTGETTCAP)
C1 = "\x9b2J\x9d0;t\x9c\x90q\x9c"  # C1 CSI, OSC, ST, DCS as single code points
BIDI = "\u202eevil\u202c \u2066iso\u2069 \u202a\u202b\u202d\u2067\u2068"
HOSTILE = OSC_TITLE + OSC_52 + OSC_LINK + DCS + C1 + BIDI + "\x00\x08\x7f"


def _raw_controls(text: str) -> set:
    """Characters that a terminal or a renderer acts on instead of showing: C0 controls but tab and
    newline, DEL and C1 (ECMA-48), and the bidi embeddings, overrides and isolates (Unicode UAX #9)."""
    bidi = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
    return {ch for ch in text if (ord(ch) < 0x20 and ch not in "\t\n") or 0x7F <= ord(ch) <= 0x9F or ch in bidi}


def test_markdown_report_shows_every_control_sequence_and_obeys_none(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    name = "evil" + OSC_TITLE + "\u202e.sbatch"  # a file name holding ESC, BEL and a bidi override
    (src / name).write_bytes(
        (
            "#!/bin/bash\n"
            f"#SBATCH --job-name=j{OSC_52}\n"
            f"#SBATCH --nodez={OSC_LINK}{DCS}\n"  # unknown option: an error, quoted in the message
            f"#SBATCH --comment={C1}{BIDI}\n"
            f"echo '{HOSTILE}'\n"
            f"srun python train.py --tag '{HOSTILE}'\n"
        ).encode()
    )
    proc = cli("migrate", src, "-o", out, "-j", "1")
    assert proc.returncode == 1, proc.stderr  # the unknown option
    md = (out / "slurm2kf-report.md").read_text(encoding="utf-8")
    assert "evil" in md and "pwned" in md and "nodez" in md  # the script is detailed in the report
    assert _raw_controls(md) == set()
    # shown as escapes instead (a backslash is escaped in Markdown text, an entity in code)
    for shown in ("x1b", "x07", "x9b", "u202e", "u2066"):
        assert shown in md, shown


def test_markdown_escapes_are_the_terminal_escapes():
    from translator.fsio import terminal_safe
    from translator.report import markdown

    for s in (HOSTILE, "plain", "café ✓", "a\x1fb", "tab\there"):
        assert _raw_controls(markdown.text(s)) == set()
        assert _raw_controls(markdown.code(s)) == set()
        assert _raw_controls(markdown.fenced(s)) == set()
        # the same characters are escaped as on the terminal: every escape it shows, the report shows
        for esc in {terminal_safe(ch) for ch in s} - set(s):
            assert esc.lstrip("\\") in markdown.text(s), (s, esc)
    assert markdown._texts(["a", HOSTILE, "b"]) == [markdown.text(t) for t in ("a", HOSTILE, "b")]
    assert markdown._codes(["a", HOSTILE, "b"]) == [markdown.code(t) for t in ("a", HOSTILE, "b")]


def test_report_of_one_script_to_a_file_is_clean_too(tmp_path):
    script = tmp_path / "job.sbatch"
    script.write_text(f"#!/bin/bash\n#SBATCH --nodez={OSC_TITLE}\nsrun python t.py '{HOSTILE}'\n")
    target = tmp_path / "r.md"
    proc = cli("report", script, "-o", target)
    assert proc.returncode == 1, proc.stderr
    text = target.read_text(encoding="utf-8")
    assert _raw_controls(text) == set() and "nodez" in text


def test_every_character_the_terminal_escapes_is_caught_by_the_markdown_check():
    """The Markdown writer looks for control characters with one regex (fast on ordinary text, accents and
    arrows included) and then escapes exactly as fsio.terminal_safe does: the regex must match every
    character terminal_safe rewrites, or one would slip through unescaped."""
    from translator.fsio import terminal_safe
    from translator.report import markdown

    rewritten = [chr(c) for c in range(0x110000) if terminal_safe(chr(c)) != chr(c)]
    assert "\x1b" in rewritten and "\u202e" in rewritten and "\x9b" in rewritten
    missed = [f"U+{ord(ch):04X}" for ch in rewritten if not markdown._NEEDS_TERMINAL.search(ch)]
    assert missed == []
    for ch in rewritten:
        assert markdown.text("a" + ch + "b") == markdown.text("a" + terminal_safe(ch) + "b") or ch == "\r"
