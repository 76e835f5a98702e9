"""The reader: bytes -> Script (translator/read/ast.py), exactly as sbatch reads the file.

`read_file(path)` and `read_script(data, path)` never raise for bad content: an empty, binary,
CRLF or non-UTF-8 file gives a Script with diagnostics and `sbatch_refuses` set as sbatch would.
`ReadError` is raised only when the file cannot be read at all (missing, a directory, no
permission, not a regular file, larger than MAX_FILE_BYTES = 16 MiB).
"""

from __future__ import annotations

import gc

from translator.diagnostics import Diagnostic, ERROR, INFO
from translator.read.ast import ForeignDirective, Script, Statement
from translator.tables import keep

__all__ = ["read_file", "read_script", "ReadError", "MAX_FILE_BYTES"]

R100_NOT_FOUND = "R100"
R101_IS_DIRECTORY = "R101"
R102_UNREADABLE = "R102"
R103_TOO_LARGE = "R103"
R150_NOT_A_SHELL = "R150"

# Hard limit: job scripts are kilobytes. 16 MiB is far beyond any real script; reading a file that size
# takes seconds and a few hundred MiB, anything larger is refused (R103) to keep time and memory bounded.
MAX_FILE_BYTES = 16 * 1024 * 1024


class ReadError(Exception):
    """The file cannot be read at all. `.diagnostic` is an R10x error with line None."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def read_file(path: str) -> Script:
    """Read and parse one file. Raises ReadError only when it cannot be read.

    The shared guard (translator.fsio.read_user_file) opens without blocking and checks the open
    file: a FIFO or a device (/dev/zero) is refused before anything is read, and never more than
    MAX_FILE_BYTES + 1 bytes are read."""
    from translator import fsio

    try:
        data = fsio.read_user_file(path, MAX_FILE_BYTES)
    except fsio.UserFileError as exc:
        if exc.kind == fsio.MISSING:
            raise ReadError(Diagnostic(ERROR, R100_NOT_FOUND, f"{path}: no such file")) from None
        if exc.kind == fsio.DIRECTORY:
            raise ReadError(Diagnostic(ERROR, R101_IS_DIRECTORY, f"{path} is a directory, not a job script")) from None
        if exc.kind == fsio.TOO_LARGE:
            raise _too_large(path) from None
        if exc.kind == fsio.SPECIAL:
            # a FIFO would block and a device (/dev/zero) never ends: only regular files are read
            raise ReadError(
                Diagnostic(
                    ERROR, R102_UNREADABLE, f"{path} is not a regular file (a pipe, socket or device); it is not read"
                )
            ) from None
        raise ReadError(Diagnostic(ERROR, R102_UNREADABLE, exc.message)) from None
    return read_script(data, path)


def _too_large(path: str) -> ReadError:
    return ReadError(
        Diagnostic(
            ERROR,
            R103_TOO_LARGE,
            f"{path} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB, the limit for a job script; it is not read",
        )
    )


_KNOWN_SHELLS = {"bash": "bash", "sh": "sh", "zsh": "zsh", "csh": "csh", "tcsh": "tcsh", "ksh": "sh", "dash": "sh"}


def _interpreter(shebang: str | None) -> str:
    """The program a `#!` line runs: `#!/bin/bash -l` -> bash, `#!/usr/bin/env -S python3 -u` -> python3."""
    if not shebang or not shebang.startswith("#!"):
        return ""
    words = [w for w in shebang[2:].replace("\t", " ").split(" ") if w]  # the kernel splits on blanks only
    if not words:
        return ""
    prog = words[0].rsplit("/", 1)[-1]
    if prog == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        prog = rest[0].rsplit("/", 1)[-1] if rest else ""
    return prog


def shell_of(shebang: str | None) -> str:
    """ "bash", "sh", "zsh", "csh", "tcsh" or "unknown", from the `#!` line."""
    return _KNOWN_SHELLS.get(_interpreter(shebang), "unknown")


# (shell, interpreter) of the `#!` lines seen (a repository's scripts share a few), per process, bounded
_SHEBANGS: dict[str | None, tuple[str, str]] = {}


def _shell_and_interpreter(shebang: str | None) -> tuple[str, str]:
    found = _SHEBANGS.get(shebang)
    if found is None:
        interpreter = _interpreter(shebang)
        found = (_KNOWN_SHELLS.get(interpreter, "unknown"), interpreter)
        if shebang is None or len(shebang) <= 256:
            keep(_SHEBANGS, shebang, found, 256)
    return found


_STAGES: tuple | None = None  # the functions of the reader's stages, imported on the first read


def _stages() -> tuple:
    global _STAGES
    from translator.read.source import decode_source
    from translator.read.header import read_header, scan_after_header, scan_foreign
    from translator.read.body import parse_body

    _STAGES = (decode_source, read_header, scan_after_header, scan_foreign, parse_body)
    return _STAGES


def read_script(data: bytes, path: str) -> Script:
    """Parse `data` (the file's bytes). Never raises for bad content."""
    # The reader allocates many small acyclic objects; the cyclic garbage collector would scan the
    # growing heap again and again (quadratic on big files), so it is paused while reading.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _read_script(data, path)
    finally:
        if was_enabled:
            gc.enable()


def _read_script(data: bytes, path: str) -> Script:
    if data is None:
        data = b""
    elif isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    if len(data) > MAX_FILE_BYTES:
        raise _too_large(path)
    decode_source, read_header, scan_after_header, scan_foreign, parse_body = _STAGES or _stages()

    src = decode_source(bytes(data))
    lines = src.lines
    diags = list(src.diagnostics)
    refuses = src.sbatch_refuses

    header = read_header(lines)
    diags.extend(header.diagnostics)
    refuses = refuses or header.sbatch_refuses

    shebang = lines[0] if lines and lines[0].startswith("#!") else None
    shell, interpreter = _shell_and_interpreter(shebang)

    body: tuple[Statement, ...] = ()
    ignored = list(header.ignored)
    if header.body_start_line is not None and shell == "unknown" and interpreter:
        diags.append(
            Diagnostic(
                INFO,
                R150_NOT_A_SHELL,
                f"the interpreter `{interpreter}` is not a shell: the body is not "
                "parsed as shell commands (the header is read as sbatch reads it)",
                1,
            )
        )
    elif header.body_start_line is not None:
        parsed = parse_body(lines, header.body_start_line, shell)
        body = parsed.statements
        diags.extend(parsed.diagnostics)
        more, more_diags = scan_after_header(lines, header.body_start_line, parsed.heredoc_lines)
        ignored.extend(more)
        diags.extend(more_diags)
    foreign: tuple[ForeignDirective, ...] = ()
    if "#PBS" in src.text or "#BSUB" in src.text:
        found, fdiags = scan_foreign(lines)
        foreign = tuple(found)
        diags.extend(fdiags)

    if len(diags) > 1:
        diags.sort(key=lambda d: d.line if d.line is not None else 0)
    return Script(
        path=path,
        text=src.text,
        line_count=len(lines),
        shebang=shebang,
        shell=shell,
        directives=tuple(header.directives),
        ignored=tuple(sorted(ignored, key=lambda i: i.line)) if len(ignored) > 1 else tuple(ignored),
        foreign=foreign,
        body=tuple(body),
        body_start_line=header.body_start_line,
        components=header.components,
        diagnostics=tuple(diags),
        sbatch_refuses=refuses,
        hetjob_separator_lines=tuple(header.hetjob_separators),
        latin1_lines=src.latin1_lines,
    )
