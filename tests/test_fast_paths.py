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
_piece = st.one_of(st.integers(1, 3).map(lambda k: " " * k), st.just(" " * 120),
                   st.sampled_from([1, 2, 5, 20, 93, 94, 95, 96, 97, 150]).map(lambda k: "w" * k),
                   st.text(alphabet="ab-é.,", min_size=1, max_size=12))


@settings(max_examples=2000)
@given(st.lists(_piece, max_size=30).map("".join), st.sampled_from([96, 20, 5]))
def test_comment_wrap_matches_textwrap(text, width):
    want = textwrap.wrap(text, width=width, subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False)
    assert _wrap(text, width, "  ") == want
