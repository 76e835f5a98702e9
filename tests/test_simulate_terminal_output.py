"""Nothing simulate prints to a terminal can drive it (issue 23, point 8).

A hostile script (and its file name) carries OSC sequences (window title, OSC 52 clipboard write), a DCS
string, 8-bit C1 controls and bidi overrides; they reach simulate's table, differences, failures and
`-v` process lists. The expected escapes are derived from ECMA-48 (ESC, the C1 range U+0080-U+009F) and
Unicode UAX #9 (the explicit directional formatting characters): each such character is shown as a
visible `\\xNN`/`\\uNNNN` escape, so no sequence can start.
"""

from __future__ import annotations

from translator.fsio import terminal_safe

RAW = ["\x1b", "\x07", "\x90", "\x9b", "\x9c", "\x9d", "\u202e", "\u2066", "\u2069", "\u061c", "\r"]


def test_terminal_safe_makes_every_sequence_inert():
    assert terminal_safe("a\x1b]52;c;cHduZWQ=\x07b") == "a\\x1b]52;c;cHduZWQ=\\x07b"  # OSC 52 (clipboard)
    assert terminal_safe("\x1b]0;title\x1b\\") == "\\x1b]0;title\\x1b\\"  # OSC 0, ST-terminated
    assert terminal_safe("\x1bP1$r0m\x1b\\") == "\\x1bP1$r0m\\x1b\\"  # DCS
    assert terminal_safe("\x9d0;t\x9c \x90q\x9c \x9b2J") == "\\x9d0;t\\x9c \\x90q\\x9c \\x9b2J"  # 8-bit C1
    assert terminal_safe("\u202ax\u202c\u2066y\u2069\u061cz") == "\\u202ax\\u202c\\u2066y\\u2069\\u061cz"
    assert terminal_safe("\x00\x7f\r\x08") == "\\x00\\x7f\\x0d\\x08"
    assert terminal_safe("tab\tnewline\n caf\xe9 \u4e2d") == "tab\tnewline\n caf\xe9 \u4e2d"


def test_simulate_prints_no_control_sequence(tmp_path, cli):
    script = tmp_path / "job\x1b]0;pwned\x07.sbatch"
    script.write_text(
        "#!/bin/bash\n#SBATCH --nodes=1\n"
        "srun python $'tr\\u202eain.py' $'\\033]52;c;cHduZWQ=\\007' $'\\x9d0;t\\x9c'\n"
        "printf '\\033]0;owned\\007\\033P1$r\\033\\\\ \\u2066x\\u2069\\n' >&2\n"
        "exit 3\n",
        encoding="utf-8",
    )
    for args in (["simulate", script], ["simulate", "-v", script]):
        r = cli(*args)
        text = r.stdout + r.stderr
        assert r.exit_code in (1, 3), text  # differs, or inconclusive (the batch script exits 3)
        for ch in RAW:
            assert ch not in text, (repr(ch), text)
        # the text is there, made visible
        assert "job\\x1b]0;pwned\\x07.sbatch" in text
        assert "\\x1b]0;owned\\x07" in text  # the batch script's last stderr line, in its failure
    r = cli("simulate", "-v", script)
    assert "tr\\u202eain.py" in r.stdout and "\\x1b]52;c;cHduZWQ=\\x07" in r.stdout
