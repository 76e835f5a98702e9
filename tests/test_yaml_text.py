"""`yaml_quote`: one regex pass gives what the per-character writer gives, and the text reads back."""

from __future__ import annotations

import yaml
from hypothesis import given, strategies as st

import strategies as S

from translator.yaml_text import _yaml_escape, _yaml_printable, yaml_quote


def _reference(s: str) -> str:
    """`yaml_quote` as first written: one test per character."""
    out = ['"']
    for ch in s:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif _yaml_printable(ch):
            out.append(ch)
        else:
            out.append(_yaml_escape(ch))
    out.append('"')
    return "".join(out)


def test_every_code_point_as_the_reference_writes_it():
    for start in range(0, 0x110000, 0x1000):
        chunk = "".join(map(chr, range(start, start + 0x1000)))
        assert yaml_quote(chunk) == _reference(chunk), hex(start)
        assert yaml_quote("a" + chunk[:3] + "b") == _reference("a" + chunk[:3] + "b")


@S.fuzz_settings(250)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(['"', "\\", "\n", "\r", "\x00", "\x7f", "\x85", "\xa0", "\u2028", "\ufeff", "\ud800"]),
            st.text(max_size=10),
        ),
        max_size=10,
    ).map("".join)
)
def test_generated_text(s):
    got = yaml_quote(s)
    assert got == _reference(s)
    assert "\n" not in got
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in s):
        assert yaml.safe_load("k: " + got)["k"] == s


def test_known_cases():
    assert yaml_quote("") == '""'
    assert yaml_quote("plain/path.yaml") == '"plain/path.yaml"'
    assert yaml_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert yaml_quote("tab\tnl\n") == '"tab\\x09nl\\x0a"'
    assert yaml_quote("\u2028\ufeff\U0001f600") == '"\\u2028\\ufeff\U0001f600"'
    assert yaml_quote("\udcff") == '"\\\\xff"'
