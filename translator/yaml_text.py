"""YAML text for values the user controls: one double-quoted scalar that reads back exactly.

Used where slurm2kf writes YAML by hand (kustomizations, the profile skeleton). Every character that
is not YAML-printable, or that some parsers treat as a line break (NEL, LS, PS) or strip (BOM), is
written as an escape; so is every lone surrogate (a file-name byte that is not UTF-8), shown as the
text `\\xNN` because YAML cannot hold it.
"""

from __future__ import annotations

import re


def _yaml_escape(ch: str) -> str:
    o = ord(ch)
    if 0xD800 <= o <= 0xDFFF:  # never valid in YAML: shown as the escape text (names are sanitised first)
        return "\\\\x%02x" % (o & 0xFF)
    if o <= 0xFF:
        return "\\x%02x" % o
    if o <= 0xFFFF:
        return "\\u%04x" % o
    return "\\U%08x" % o


def _yaml_printable(ch: str) -> bool:
    o = ord(ch)
    # YAML 1.2 c-printable minus the characters some parsers treat as line breaks (NEL, LS, PS) and the BOM
    return (
        (0x20 <= o <= 0x7E)
        or (0xA0 <= o <= 0xD7FF and o not in (0x2028, 0x2029))
        or (0xE000 <= o <= 0xFFFD and o != 0xFEFF)
        or o >= 0x10000
    )


# One character that is written other than as itself: `"`, `\`, or not `_yaml_printable` (the complement
# of its ranges: C0 controls, DEL..NBSP-1, LS, PS, surrogates, BOM, U+FFFE/U+FFFF).
_SPECIAL = re.compile('["\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]')


def _escaped(m: re.Match) -> str:
    ch = m.group()
    return "\\" + ch if ch == '"' or ch == "\\" else _yaml_escape(ch)


def yaml_quote(s: str) -> str:
    """A YAML double-quoted scalar holding exactly `s` on one line, whatever it contains."""
    if _SPECIAL.search(s) is None:  # the common case: every character stands for itself
        return '"' + s + '"'
    return '"' + _SPECIAL.sub(_escaped, s) + '"'
