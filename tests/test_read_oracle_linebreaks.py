"""Line-break characters other than `\\n` in the header, against real Slurm 22.05 (../shared/slurm-oracle).

sbatch splits the file at `\\n` only and tokenizes a directive with C isspace() (space, \\t, \\n, \\v, \\f,
\\r): so \\v, \\f and \\r separate words, while \\x1c-\\x1e, NEL (U+0085), U+2028 and U+2029 are ordinary
bytes of a word, and a line starting with one of them is a command that ends the header. Our reader
must give the values real sbatch gives. Fails (never skips) when the oracle is not available.
"""

from __future__ import annotations

import pytest

from translator.read import read_file
from test_read_oracle_tokenizer import _our_options

pytestmark = pytest.mark.slurm

BREAKS = {
    "VT": "\v",
    "FF": "\f",
    "CR": "\r",
    "FS": "\x1c",
    "GS": "\x1d",
    "RS": "\x1e",
    "NEL": "\x85",
    "LS": "\u2028",
    "PS": "\u2029",
}

CASES = {}
for _name, _ch in BREAKS.items():
    CASES[f"in_value_{_name}"] = [f"#SBATCH --comment=a{_ch}--job-name=x"]
    CASES[f"quoted_{_name}"] = [f"#SBATCH --comment='a{_ch}b'"]
    CASES[f"before_comment_{_name}"] = ["#SBATCH --comment=before", f"{_ch}# a comment", "#SBATCH --comment=after"]
    CASES[f"in_comment_{_name}"] = [
        "#SBATCH --comment=before",
        f"# a{_ch}#SBATCH --job-name=no",
        "#SBATCH --comment=after",
    ]


@pytest.fixture(scope="module")
def oracle_run(slurm_oracle, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("linebreak-oracle")
    paths = {}
    for name, lines in CASES.items():
        path = tmp / f"{name}.sbatch"
        path.write_bytes(("#!/bin/bash\n" + "\n".join(lines) + "\nhostname\n").encode("utf-8"))
        paths[name] = path
    return paths, slurm_oracle.resolve(list(paths.values()))


@pytest.mark.parametrize("name", sorted(CASES))
def test_line_breaks_in_the_header_match_real_sbatch(oracle_run, name):
    paths, records = oracle_run
    rec = records[paths[name]]
    script = read_file(str(paths[name]))
    assert script.sbatch_refuses == (not rec["accepted"]), rec
    if not rec["accepted"]:
        return
    theirs = {k: v for k, v in rec["cli_options"].items() if k in ("comment", "job-name")}
    ours = _our_options(script)
    if "job-name" not in theirs:
        ours.pop("job-name", None)
    assert ours == theirs
