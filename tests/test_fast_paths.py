"""The hand-written fast paths give exactly what the slower reference implementation gives.

Each optimisation of a hot path (issue 13) is checked against the code it replaced or against the
standard-library function it stands in for, on generated inputs that stress its edge cases.
"""

from __future__ import annotations

import textwrap

from hypothesis import given, settings, strategies as st

from translator.emit.sdk_python import _wrap

# sanitized comments hold no blank but the space; runs of spaces and words of every length around
# the line width (96, and 94 after the two-space continuation indent) are the interesting cases
_piece = st.one_of(
    st.integers(1, 3).map(lambda k: " " * k),
    st.just(" " * 120),
    st.sampled_from([1, 2, 5, 20, 93, 94, 95, 96, 97, 150]).map(lambda k: "w" * k),
    st.text(alphabet="ab-é.,", min_size=1, max_size=12),
)


@settings(max_examples=2000)
@given(st.lists(_piece, max_size=30).map("".join), st.sampled_from([96, 20, 5]))
def test_comment_wrap_matches_textwrap(text, width):
    want = textwrap.wrap(text, width=width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
    assert _wrap(text, width, "  ") == want


# ---- read/words.py: runs of ordinary characters are copied in one step -----------------------------
# The reference reads a word one character at a time, as bash's quote removal is specified (bash manual,
# "Quoting" and "Quote Removal"): outside quotes `\c` -> c; in '…' nothing is special; in "…" a
# backslash escapes only $ ` " \ and newline; $'…' decodes C escapes; expansions are kept verbatim.


def _reference_value(raw: str) -> str:
    from translator.read.words import _DQ_ESCAPABLE, _expansion, ansi_c_string

    out, i, n = [], 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            if i + 1 < n and raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
        elif c == "'":
            k = raw.find("'", i + 1)
            k = n if k < 0 else k
            out.append(raw[i + 1 : k])
            i = k + 1
        elif c == "$" and raw[i + 1 : i + 2] == "'":
            k = i + 2  # $'...': C escapes, decoded by the (separately tested) decoder
            while k < n and raw[k] != "'":
                k += 2 if raw[k] == "\\" else 1
            decoded = ansi_c_string(raw[i + 2 : min(k, n)])
            out.append(raw[i : k + 1] if decoded is None else decoded)
            i = k + 1
        elif c == "$" and raw[i + 1 : i + 2] == '"':
            i += 1  # $"...": read as "..." (no message catalog)
        elif c == '"':
            i += 1
            while i < n and raw[i] != '"':
                d = raw[i]
                if d == "\\" and i + 1 < n:
                    if raw[i + 1] in _DQ_ESCAPABLE:
                        if raw[i + 1] != "\n":
                            out.append(raw[i + 1])
                    else:
                        out.append("\\" + raw[i + 1])
                    i += 2
                elif d in "$`":
                    end, _ = _expansion(raw, i)
                    out.append(raw[i:end])
                    i = end
                else:
                    out.append(d)
                    i += 1
            i += 1
        elif c in "$`":
            end, _ = _expansion(raw, i)
            out.append(raw[i:end])
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


@settings(max_examples=3000)
@given(st.text(alphabet="ab $'\"\\`(){}*?[~,\n é=-x", max_size=40))
def test_word_value_matches_character_by_character_reading(raw):
    from translator.read.words import _make_word

    assert _make_word(raw).value == _reference_value(raw)


def test_long_quoted_words():
    from translator.read.words import _make_word

    text = 'line with \\"q\\" and $(date) `x` and \\$HOME\n' * 500
    w = _make_word('"' + text + '"')
    assert w.value == _reference_value('"' + text + '"')
    assert w.value.count('"q"') == 500 and "$HOME" in w.value and not w.literal
    w = _make_word("abc" * 5000 + "'x y'" + "*")
    assert w.value == "abc" * 5000 + "x y*" and not w.literal  # an unquoted `*` is a glob
