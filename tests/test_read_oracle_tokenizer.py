"""Differential test of the header reader against real Slurm 22.05 (../shared/slurm-oracle).

Each script carries a `--comment=VALUE` (or `--job-name=`) directive whose raw text exercises one rule
of sbatch's tokenizer or header scan; real sbatch's merged option value (cli_options) must equal the
value our reader's directive words give. Fails (never skips) when the oracle is not available.
"""

from __future__ import annotations

import pytest

from translator.read import read_file

pytestmark = pytest.mark.slurm

# name -> (header lines after `#!/bin/bash`, body)
CASES = {
    "quoted_with_comment": ['#SBATCH --comment="my job" # note'],
    "hash_mid_word": ["#SBATCH --comment=a#b -N 3"],
    "escaped_blank_in_single_quotes": ["#SBATCH --comment='spaces\\ out'"],
    "double_backslash": ["#SBATCH --comment=out\\\\_%j"],
    "single_backslash": ["#SBATCH --comment=out\\_%j"],
    "escaped_quote_in_single_quotes": ["#SBATCH --comment='\\'q'"],
    "escaped_double_quote": ['#SBATCH --comment=x\\"y'],
    "quoted_hash": ['#SBATCH --comment="a#b"'],
    "escaped_hash": ["#SBATCH --comment=\\#x"],
    "dollar_kept": ["#SBATCH --comment=$HOME/x"],
    "trailing_backslash": ["#SBATCH --comment=abc\\"],
    "mixed_quotes_mid_word": ["#SBATCH --comment=\"x\"y'z w'"],
    "no_blank_after_magic": ["#SBATCH--comment=glued"],
    "slurm_prefix": ["#SLURM --comment=old-prefix"],
    "last_wins": ["#SBATCH --comment=first", "#SBATCH --comment=second"],
    "after_first_command": ["#SBATCH --comment=kept", "set -e", "#SBATCH --comment=ignored"],
    "lookalikes_ignored": [
        "#SBATCH --comment=kept",
        "# SBATCH --comment=a",
        "##SBATCH --comment=b",
        "  #SBATCH --comment=c",
        "#sbatch --comment=d",
        "#SBTACH --comment=e",
    ],
    "blank_and_comment_lines": ["#SBATCH --comment=one", "", "# a comment", "   ", "#SBATCH --job-name=two"],
    "hetjob_word_mid_line": ["#SBATCH --comment=x hetjob --job-name=dropped"],
    "empty_word_ends_line": ['#SBATCH --comment=x "" --job-name=dropped'],
    "empty_value_after_equals": ['#SBATCH --comment="" --job-name=kept'],
}
REFUSED = {
    "unmatched_double": ['#SBATCH --comment="a b'],
    "unmatched_single": ["#SBATCH --comment='oops"],
    "leading_colon": ["#SBATCH -N 2 :"],
    "no_shebang": None,
    "crlf": None,
}


def _write(tmp_path, name, lines):
    path = tmp_path / f"{name}.sbatch"
    if name == "no_shebang":
        path.write_bytes(b"#SBATCH --comment=x\nhostname\n")
    elif name == "crlf":
        path.write_bytes(b"#!/bin/bash\r\n#SBATCH --comment=x\r\nhostname\r\n")
    else:
        path.write_text("#!/bin/bash\n" + "\n".join(lines) + "\nhostname\n")
    return path


def _our_options(script, component=0):
    """The --comment / --job-name values our directive words give (last occurrence wins)."""
    out = {}
    for d in script.directives:
        if d.component != component:
            continue
        for w in d.words:
            for opt in ("comment", "job-name"):
                if w.startswith(f"--{opt}="):
                    out[opt] = w.split("=", 1)[1]
    return out


@pytest.fixture(scope="module")
def oracle_run(slurm_oracle, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tokenizer-oracle")
    paths = {name: _write(tmp, name, lines) for name, lines in {**CASES, **REFUSED}.items()}
    het = tmp / "hetjob.sbatch"
    het.write_text(
        "#!/bin/bash\n#SBATCH --comment=first-component\n#SBATCH hetjob\n#SBATCH --comment=second\nhostname\n"
    )
    paths["hetjob"] = het
    records = slurm_oracle.resolve(list(paths.values()))
    return paths, records


@pytest.mark.parametrize("name", sorted(CASES))
def test_directive_values_match_real_sbatch(oracle_run, name):
    paths, records = oracle_run
    rec = records[paths[name]]
    assert rec["accepted"], rec.get("error")
    theirs = {k: v for k, v in rec["cli_options"].items() if k in ("comment", "job-name")}
    script = read_file(str(paths[name]))
    assert not script.sbatch_refuses
    ours = _our_options(script)
    if "job-name" not in theirs:  # sbatch's default job name is the file name: not a directive
        ours.pop("job-name", None)
    assert ours == theirs


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_match_real_sbatch(oracle_run, name):
    paths, records = oracle_run
    rec = records[paths[name]]
    assert rec["rejected_by"] == "sbatch", rec
    script = read_file(str(paths[name]))
    assert script.sbatch_refuses
    assert any(d.severity == "error" for d in script.diagnostics)


def test_hetjob_components_match_real_sbatch(oracle_run):
    paths, records = oracle_run
    rec = records[paths["hetjob"]]
    comps = rec["cli_options"]
    assert isinstance(comps, list) and len(comps) == 2
    script = read_file(str(paths["hetjob"]))
    assert script.components == 2 and script.hetjob_separator_lines == (3,)
    assert [_our_options(script, i)["comment"] for i in range(2)] == [c["comment"] for c in comps]
