"""Bytes to lines, with the file checks sbatch itself makes (sbatch.c `_get_script_buffer`).

sbatch works on bytes and refuses a script that is empty or whitespace-only, whose first line does
not start with `#!`, that contains a NUL byte, or that contains a CRLF line break. It does not care
about the text encoding. We decode for display: every line that is valid UTF-8 is decoded as UTF-8,
every other line as Latin-1 (lossless: `line.encode("latin-1")` gives the bytes back), and each such
line is reported.

Lines are split on `\\n` only, as sbatch splits them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from translator.diagnostics import Diagnostic, ERROR, WARNING
from translator.records import Record

# Codes of this module (documented in README, section codes-R).
R110_EMPTY = "R110"
R111_WHITESPACE_ONLY = "R111"
R112_NO_SHEBANG = "R112"
R113_NUL_BYTE = "R113"
R114_CRLF = "R114"
R115_NOT_UTF8 = "R115"
R116_BOM = "R116"
R117_MIXED_LINE_ENDINGS = "R117"
R118_BARE_CR = "R118"
R119_BINARY = "R119"

_WHITESPACE_BYTES = b" \t\n\v\f\r"
_MAX_REPORTED_LINES = 5


@dataclass(init=False, repr=False, eq=False)
class Source(Record):
    """The decoded file: one string per line (no line breaks), plus what sbatch would say about it."""

    text: str
    lines: list[str]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sbatch_refuses: bool = False
    latin1_lines: tuple[int, ...] = ()
    encoding: str = "utf-8"

    def __init__(
        self,
        text: str,
        lines: list[str],
        diagnostics: list[Diagnostic] | None = None,
        sbatch_refuses: bool = False,
        latin1_lines: tuple[int, ...] = (),
        encoding: str = "utf-8",
    ):
        self.text = text
        self.lines = lines
        self.diagnostics = [] if diagnostics is None else diagnostics
        self.sbatch_refuses = sbatch_refuses
        self.latin1_lines = latin1_lines
        self.encoding = encoding


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _decode_lines(raw_lines: list[bytes]) -> tuple[list[str], list[int]]:
    out: list[str] = []
    bad: list[int] = []
    for number, raw in enumerate(raw_lines, 1):
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(raw.decode("latin-1"))
            bad.append(number)
    return out, bad


def _looks_binary(data: bytes) -> bool:
    sample = data[:8192]
    if not sample:
        return False
    control = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13))
    return control * 10 > len(sample)


def decode_source(data: bytes) -> Source:
    """Check `data` as sbatch does and split it into decoded lines. Never raises."""
    diags: list[Diagnostic] = []
    refuses = False

    if not data:
        return Source(
            "",
            [],
            [
                Diagnostic(
                    ERROR,
                    R110_EMPTY,
                    'the file is empty; sbatch refuses it ("Batch script is empty!")',
                    1,
                    "write a script starting with a `#!` line",
                )
            ],
            True,
        )

    # Byte-order marks: sbatch sees the BOM bytes before `#!`, so the first line has no shebang.
    encoding = "utf-8"
    body = data
    if data.startswith(b"\xef\xbb\xbf"):
        body = data[3:]
        diags.append(
            Diagnostic(
                ERROR,
                R116_BOM,
                "the file starts with a UTF-8 byte-order mark, so its first line does not "
                "start with `#!` for sbatch, which refuses it",
                1,
                "save the file without a BOM",
            )
        )
        refuses = True
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
        diags.append(
            Diagnostic(
                ERROR,
                R116_BOM,
                "the file is UTF-16 encoded (byte-order mark); sbatch reads bytes and refuses "
                "it (no `#!` first line, NUL bytes)",
                1,
                "save the file as UTF-8 or ASCII",
            )
        )
        refuses = True
        try:
            body = data.decode("utf-16").encode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            body = data

    if not data.startswith(b"#!") and not data.strip(_WHITESPACE_BYTES):
        return Source(
            data.decode("latin-1"),
            data.decode("latin-1").split("\n"),
            [
                Diagnostic(
                    ERROR,
                    R111_WHITESPACE_ONLY,
                    'the file holds only whitespace; sbatch refuses it ("Batch script contains only whitespace!")',
                    1,
                    "write the job script",
                )
            ],
            True,
        )

    if not data.startswith(b"#!") and not refuses:
        first = data.split(b"\n", 1)[0][:40].decode("utf-8", "replace").encode("unicode_escape").decode("ascii")
        diags.append(
            Diagnostic(
                ERROR,
                R112_NO_SHEBANG,
                f"the first line `{first}` does not start with `#!`; sbatch refuses the "
                'script ("This does not look like a batch script")',
                1,
                "add an interpreter line such as `#!/bin/bash` as line 1",
            )
        )
        refuses = True

    nul = data.find(b"\x00")
    if nul >= 0 and encoding == "utf-8":
        diags.append(
            Diagnostic(
                ERROR,
                R113_NUL_BYTE,
                f"NUL byte at line {_line_of(data, nul)}; sbatch refuses scripts that contain a NUL character",
                _line_of(data, nul),
                "remove the NUL bytes (is this a binary file?)",
            )
        )
        refuses = True
        if _looks_binary(data):
            diags.append(
                Diagnostic(
                    WARNING, R119_BINARY, "the file looks binary (many control characters); it is not a job script", 1
                )
            )

    crlf = body.find(b"\r\n")
    if crlf >= 0:
        lf_only = body.replace(b"\r\n", b"").count(b"\n")
        line = _line_of(body, crlf)
        diags.append(
            Diagnostic(
                ERROR,
                R114_CRLF,
                f"DOS line break (CRLF) first at line {line}; sbatch refuses scripts with CRLF line breaks",
                line,
                "convert with `dos2unix` or `sed -i 's/\\r$//'`",
            )
        )
        refuses = True
        if lf_only:
            # first LF-only line
            lf_line = None
            pos = 0
            while True:
                nl = body.find(b"\n", pos)
                if nl < 0:
                    break
                if nl == 0 or body[nl - 1 : nl] != b"\r":
                    lf_line = _line_of(body, nl)
                    break
                pos = nl + 1
            diags.append(
                Diagnostic(
                    WARNING,
                    R117_MIXED_LINE_ENDINGS,
                    f"mixed line endings: CRLF (first at line {line}) and LF (first at line {lf_line})",
                    lf_line,
                )
            )

    # Bare CR (old Mac) line breaks: sbatch and bash see them as ordinary characters.
    bare = body.replace(b"\r\n", b"").find(b"\r") if b"\r" in body else -1
    if bare >= 0:
        stripped = body.replace(b"\r\n", b"\n")
        cr_at = stripped.find(b"\r")
        # a CR at the very end of a line followed by more text indicates old-Mac line breaks
        line = _line_of(stripped, cr_at)
        diags.append(
            Diagnostic(
                WARNING,
                R118_BARE_CR,
                f"carriage return (CR) without LF at line {line}; sbatch and the shell do "
                "not treat it as a line break, the text is one long line for them",
                line,
                "convert the line breaks to LF",
            )
        )

    if crlf >= 0:
        body = body.replace(b"\r\n", b"\n")
    bad: list[int] = []
    decoded = None
    try:
        decoded = body.decode("utf-8")  # the common case: one decode for the whole file
        lines = decoded.split("\n")
    except UnicodeDecodeError:
        lines, bad = _decode_lines(body.split(b"\n"))
    if bad:
        shown = ", ".join(str(n) for n in bad[:_MAX_REPORTED_LINES]) + (
            ", ..." if len(bad) > _MAX_REPORTED_LINES else ""
        )
        diags.append(
            Diagnostic(
                WARNING,
                R115_NOT_UTF8,
                f"{len(bad)} line(s) are not valid UTF-8 (line {shown}); they were read as "
                "Latin-1 (sbatch does not care about the encoding)",
                bad[0],
                "save the file as UTF-8",
            )
        )
    # a trailing newline does not start a new line
    if lines and lines[-1] == "" and body.endswith(b"\n"):
        lines.pop()
        if decoded is not None:
            decoded = decoded[:-1]
    text = "\n".join(lines) if decoded is None else decoded
    return Source(text, lines, diags, refuses, tuple(bad), encoding)
