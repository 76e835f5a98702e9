"""Property tests of the reader and the resolver on generated scripts and raw bytes.

Invariants (from issue 2 and sbatch's own rules in shared/docs/sbatch-semantics.md §1):
  * no exception escapes `read_script` except `ReadError`, which carries an R1xx diagnostic;
  * no exception escapes `resolve`;
  * every diagnostic line is a 1-based line of the file (or None), codes carry the stage prefix;
  * sbatch's script sanity rules hold: a file with a NUL byte, a CRLF line break, or whose first
    line does not start with `#!`, is one sbatch refuses (`sbatch_refuses` / `sbatch_accepts`);
  * a directive found after the first command is never applied.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

import strategies as S

VALID_CODE = re.compile(r"^[RO][0-9]{3}$")


def read(data: bytes, path: str = "job.sbatch"):
    from translator.read import ReadError, read_script

    try:
        return read_script(data, path), None
    except ReadError as exc:
        return None, exc


def check_read(data: bytes):
    script, err = read(data)
    if err is not None:
        diag = err.diagnostic
        assert diag.code.startswith("R"), diag
        assert diag.severity == "error", diag
        assert diag.message, diag
        return None
    assert script.path == "job.sbatch"
    n = script.line_count
    assert n >= 0
    for d in script.diagnostics:
        assert d.code.startswith("R") and VALID_CODE.match(d.code), d
        assert d.severity in ("error", "warning", "info"), d
        assert d.line is None or 1 <= d.line <= max(n, 1), (d, n)
    previous = 0
    for directive in script.directives:
        assert 1 <= directive.line <= n, directive
        assert directive.line >= previous, "directives out of line order"
        previous = directive.line
        assert directive.prefix in ("#SBATCH", "#SLURM"), directive
        if script.body_start_line is not None:
            assert directive.line < script.body_start_line, (directive, script.body_start_line)
    for ignored in script.ignored:
        assert 1 <= ignored.line <= n and ignored.reason.startswith("R"), ignored
    # sbatch.c script sanity checks
    if b"\x00" in data or b"\r\n" in data or not data.startswith(b"#!") or not data.strip():
        assert script.sbatch_refuses, "sbatch refuses this file (NUL/CRLF/no #!/empty) but the reader accepts it"
    return script


def check_resolve(script):
    from translator.slurm.resolve import resolve

    job = resolve(script, env={}, cli_args=())
    assert job.components, "a job always has component 0"
    if script.sbatch_refuses:
        assert not job.sbatch_accepts
    for d in job.diagnostics:
        assert d.code[:1] in ("R", "O") and VALID_CODE.match(d.code), d
        assert d.line is None or 1 <= d.line <= max(script.line_count, 1), d
    payload = job.to_json()
    import json

    json.dumps(payload)  # the inspect --json contract object is always serialisable
    f = job.fields
    for name in ("nodes_min", "nodes_max", "ntasks", "cpus_per_task", "mem_per_node_mb", "time_limit_seconds"):
        value = getattr(f, name)
        assert value is None or (isinstance(value, int) and value >= 0), (name, value)
    if f.nodes_min is not None and f.nodes_max is not None:
        assert f.nodes_min <= f.nodes_max
    return job


@S.fuzz_settings(600)
@given(S.raw_bytes())
def test_reader_survives_raw_bytes(data):
    script = check_read(data)
    if script is not None:
        check_resolve(script)


@S.fuzz_settings(250)
@given(S.script_bytes())
def test_reader_and_resolver_survive_generated_scripts(data):
    script = check_read(data)
    if script is not None:
        check_resolve(script)


@S.fuzz_settings(60)
@given(S.header_lines(), st.lists(S.simple_statement(), min_size=1, max_size=3), S.header_lines())
def test_directives_after_first_command_are_never_applied(head, body, late):
    """sbatch stops scanning at the first command: directives after it change nothing."""
    if any(line.strip() and not line.lstrip().startswith("#") for line in body[0].splitlines()[:1]):
        before = "#!/bin/bash\n" + "\n".join(head) + "\n" + "\n".join(body) + "\n"
        late = [line for line in late if not line.startswith(("#PBS", "#BSUB"))]  # those are scanned further
        after = before + "\n".join(late) + "\n"
        s1, s2 = check_read(before.encode()), check_read(after.encode())
        if s1 is None or s2 is None:
            return
        assert [d.words for d in s1.directives] == [d.words for d in s2.directives]
        j1, j2 = check_resolve(s1), check_resolve(s2)
        assert j1.options == j2.options


@S.fuzz_settings(300)
@given(st.sampled_from(S.OPTIONS), st.data())
def test_escaped_values_reach_the_option_unchanged(option, data):
    """A value backslash-escaped for sbatch's tokenizer comes back as exactly that value (no expansion)."""
    long, _short, kind, _vtype = option
    if kind != "req" or long in ("export", "container-image", "container-mounts"):
        return
    value = data.draw(S.hostile_text(1, 30))
    text = f"#!/bin/bash\n#SBATCH --{long}={S.sbatch_escape(value)}\necho hi\n"
    script = check_read(text.encode())
    assert script is not None
    assert script.directives and script.directives[0].words == (f"--{long}={value}",), script.directives


NUMERIC_OPTIONS = [
    o for o in S.OPTIONS if o[2] == "req" and o[3] in ("int", "mem", "time", "nodes", "signal", "gpus", "array")
]


@S.fuzz_settings(200)
@given(
    st.sampled_from(NUMERIC_OPTIONS), st.integers(0, 10**6), st.sampled_from(sorted(set(S._UNICODE_DIGITS.values())))
)
def test_unicode_digits_in_numeric_options(option, number, digit):
    """Python's isdigit()/int() accept digits that sbatch's C parsing (isdigit, strtol) rejects.

    No exception may escape, and for counts, sizes and times the value is invalid for sbatch. Checked
    with the Slurm 22.05 oracle for every such option here: each is refused by sbatch itself
    ("Invalid numeric value", "Invalid --mem-per-cpu specification", ...), except --priority (and
    --nice), which sbatch does not validate; the live check is
    test_hostile_inputs.py::test_non_ascii_digits_never_crash_and_match_real_slurm."""
    long, _short, _kind, vtype = option
    text = str(number)
    value = text[:-1] + digit if len(text) > 1 else digit
    if vtype == "mem":
        value += "G"
    script = check_read(f"#!/bin/bash\n#SBATCH --{long}={value}\nsrun python t.py\n".encode())
    job = check_resolve(script)
    if vtype in ("int", "mem", "time", "nodes") and long not in ("priority", "nice"):
        assert not job.sbatch_accepts, f"--{long}={value} is not a number for sbatch"
