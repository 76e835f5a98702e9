"""File-level checks (sbatch.c `_get_script_buffer`) and ReadError (files that cannot be read at all)."""

from __future__ import annotations

import os

import pytest

import translator.read as reader
from translator.read import ReadError, read_file, read_script


def errors(s):
    return [(d.code, d.line) for d in s.diagnostics if d.severity == "error"]


def test_a_good_script_has_no_diagnostics():
    s = read_script(b"#!/bin/bash\n#SBATCH -N 1\nsrun hostname\n", "ok.sh")
    assert s.diagnostics == () and not s.sbatch_refuses and s.line_count == 3
    assert s.text == "#!/bin/bash\n#SBATCH -N 1\nsrun hostname"


@pytest.mark.parametrize("data,code", [(b"", "R110"), (b"  \n\t\n\n", "R111")])
def test_empty_and_whitespace_only_are_refused(data, code):
    s = read_script(data, "e.sh")
    assert s.sbatch_refuses and errors(s) == [(code, 1)]


def test_first_line_must_start_with_shebang():
    s = read_script(b"echo hi\n#SBATCH -N 2\n", "x.sh")
    assert s.sbatch_refuses and ("R112", 1) in errors(s)
    assert s.shebang is None and s.shell == "unknown"
    s = read_script(b" #!/bin/bash\nsrun x\n", "x.sh")  # a blank before `#!` is not a shebang either
    assert ("R112", 1) in errors(s)


def test_nul_byte_names_its_line():
    s = read_script(b"#!/bin/bash\n#SBATCH -N 2\necho a\nsrun ho\x00stname\n", "n.sh")
    assert s.sbatch_refuses and errors(s) == [("R113", 4)]


def test_crlf_is_refused_with_the_first_line_and_still_read():
    s = read_script(b"#!/bin/bash\n#SBATCH -N 2\r\n#SBATCH -t 5\r\nsrun x\r\n", "c.sh")
    assert s.sbatch_refuses and errors(s) == [("R114", 2)]
    assert [(d.code, d.line) for d in s.diagnostics if d.code == "R117"] == [("R117", 1)]  # mixed: LF at line 1
    assert [d.words for d in s.directives] == [("-N", "2"), ("-t", "5")]  # no stray \r in the words


def test_bare_cr_makes_one_long_line():
    s = read_script(b"#!/bin/bash\r#SBATCH -N 2\rsrun x\r", "mac.sh")
    assert s.line_count == 1 and s.directives == ()  # sbatch sees a single (shebang) line
    assert [(d.code, d.line) for d in s.diagnostics] == [("R118", 1)]
    assert not s.sbatch_refuses


def test_utf8_bom_means_no_shebang_for_sbatch():
    s = read_script(b"\xef\xbb\xbf#!/bin/bash\n#SBATCH -N 2\nsrun x\n", "bom.sh")
    assert s.sbatch_refuses and ("R116", 1) in errors(s)


def test_utf16_is_refused_and_decoded_for_display():
    s = read_script("#!/bin/bash\n#SBATCH -N 2\nsrun x\n".encode("utf-16"), "u16.sh")
    assert s.sbatch_refuses and ("R116", 1) in errors(s)
    assert [d.words for d in s.directives] == [("-N", "2")]


def test_non_utf8_lines_are_read_as_latin1_losslessly_with_a_warning():
    raw = b"#!/bin/bash\n#SBATCH -J caf\xe9\necho ok\necho \xff\xfe\n"
    s = read_script(raw, "l1.sh")
    assert not s.sbatch_refuses
    assert [(d.code, d.line, d.severity) for d in s.diagnostics] == [("R115", 2, "warning")]
    assert s.latin1_lines == (2, 4)
    assert s.directives[0].words == ("-J", "café")
    lines = s.text.split("\n")
    assert (
        b"\n".join(
            ln.encode("latin-1") if i + 1 in s.latin1_lines else ln.encode("utf-8") for i, ln in enumerate(lines)
        )
        + b"\n"
        == raw
    )


def test_binary_data_is_reported_not_raised():
    s = read_script(bytes(range(256)) * 8, "blob.bin")
    codes = {d.code for d in s.diagnostics}
    assert s.sbatch_refuses and {"R112", "R113", "R119"} <= codes


# ---- ReadError --------------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(ReadError) as exc:
        read_file(str(tmp_path / "nope.sh"))
    d = exc.value.diagnostic
    assert (d.code, d.severity, d.line) == ("R100", "error", None) and "nope.sh" in d.message


def test_directory(tmp_path):
    with pytest.raises(ReadError) as exc:
        read_file(str(tmp_path))
    assert exc.value.diagnostic.code == "R101"


def test_fifo_is_not_opened(tmp_path):
    fifo = tmp_path / "pipe.sh"
    os.mkfifo(fifo)
    with pytest.raises(ReadError) as exc:
        read_file(str(fifo))
    assert exc.value.diagnostic.code == "R102" and "regular file" in exc.value.diagnostic.message


def test_permission_denied(tmp_path, monkeypatch):
    path = tmp_path / "secret.sh"
    path.write_text("#!/bin/bash\n")

    real_open = os.open

    def deny(p, *args, **kwargs):  # the reader opens with os.open (O_NONBLOCK, then fstat)
        if str(p) == str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(p, *args, **kwargs)

    monkeypatch.setattr("os.open", deny)
    with pytest.raises(ReadError) as exc:
        read_file(str(path))
    assert exc.value.diagnostic.code == "R102" and "permission denied" in exc.value.diagnostic.message


def test_too_large(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_FILE_BYTES", 100)
    path = tmp_path / "big.sh"
    path.write_bytes(b"#!/bin/bash\n" + b"echo x\n" * 20)
    with pytest.raises(ReadError) as exc:
        read_file(str(path))
    assert exc.value.diagnostic.code == "R103"
    with pytest.raises(ReadError):
        read_script(path.read_bytes(), str(path))


def test_read_file_and_read_script_agree(tmp_path):
    path = tmp_path / "job.sh"
    data = b"#!/bin/bash\n#SBATCH -N 2\nsrun python t.py\n"
    path.write_bytes(data)
    assert read_file(str(path)) == read_script(data, str(path))
