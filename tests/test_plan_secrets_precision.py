"""The P447/P448 figures of docs/findings-precision.md, computed on its fixture set
(tests/fixtures/findings_precision/cases.txt, labelled by hand: see tests/findings_precision.py).

The bounds are the ones the page claims; the named cases are the classes issue 20 found firing wrongly
(paths, versions, `hostname`) or missed (issue 23: URL passwords, webhooks, JWTs, DB_PASS/DB_PWD,
`--password` values, `apptainer --env`)."""

from __future__ import annotations

import re

import findings_precision as fp


def test_the_fixture_set_is_big_enough_and_labelled_both_ways():
    cases = fp.cases()
    assert len(cases) >= 40
    assert sum(c.secret for c in cases) >= 20 and sum(not c.secret for c in cases) >= 20
    assert sum(c.address for c in cases) >= 8 and sum(not c.address for c in cases) >= 20


def test_precision_and_recall_are_what_the_docs_claim():
    m = fp.measure()
    p447, p448 = m["P447"], m["P448"]
    # docs/findings-precision.md: P447 precision 1.00, recall >= 0.90; P448 precision 1.00, recall >= 0.90
    assert p447.fp == 0 and p447.recall >= 0.90, p447
    assert p448.fp == 0 and p448.recall >= 0.90, p448


def test_no_p447_on_a_path_and_no_p448_on_a_version():
    for case in fp.cases():
        text = case.text.split("=", 1)[-1]
        got = fp.fired(case)
        if not case.secret and text.startswith(("/", "~", "checkpoints/", "s3://", "https://huggingface")):
            assert "P447" not in got, case
        if not case.address and re.search(r"\d+\.\d+\.\d+\.\d+", case.text):  # a four-part version
            assert "P448" not in got, case


def test_the_known_misses_are_the_documented_ones():
    # docs/findings-precision.md, "What it does not catch": a short option (`-p VALUE`), and a secret
    # whose name and value say nothing (`HUB_CREDS=<16 random characters>`)
    wrong = {(code, case.text) for code, case, _ in fp.misses()}
    assert wrong == {("P447", "-p hunter2secret"), ("P447", "export HUB_CREDS=Zx8Kp2Lm9Qr4Tv6Y")}
