"""Reading user files and writing outputs safely: one place for every command.

Reading (`read_user_file`, `read_stream`): a file is opened without blocking (`O_NONBLOCK`, so a FIFO
never hangs), checked with `fstat` on the open descriptor (only regular files are read: a device such
as /dev/zero or a pipe is refused before a byte is read), and read up to a size cap (a file that grew
past it is refused too). Errors are `UserFileError`s whose `kind` lets each command choose its
diagnostic code (R1xx for scripts, F5xx for profiles, V7xx for TrainJobs and CRDs).

Writing (`write_output`): the target of `-o FILE` must be absent or a regular file (never a symlink,
directory, FIFO or device), must not be one of the command's input files, and is written through a
temporary file in the target's folder that is renamed over it, so readers only ever see the old or
the new content. `write_atomic` is the rename step alone (also used by `migrate` inside OUT).
"""

from __future__ import annotations

import os
import re
import stat
from typing import IO
from collections.abc import Callable, Iterable

# Kinds of UserFileError
MISSING = "missing"
DIRECTORY = "directory"
SPECIAL = "special"  # FIFO, socket, device
SYMLINK = "symlink"  # only when symlinks are not followed
TOO_LARGE = "too_large"
DENIED = "denied"
OTHER = "other"

TMP_TAG = ".slurm2kf-tmp"  # temporary files: ".<name>.<pid>.<n>.slurm2kf-tmp"
_counter = [0]


class UserFileError(Exception):
    """A user file that is not read: `kind` (one of the constants above) and a message that names it."""

    def __init__(self, kind: str, path: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.path = path
        self.message = message


class OutputRefused(Exception):
    """An output target that is not written (a symlink, special file, an input of the command...)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def kind_of_mode(mode: int) -> str:
    """Words for a file type: 'a directory', 'a FIFO', 'a character device', ..."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def _size_words(n: int) -> str:
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10} KiB"
    return f"{n} bytes"


def read_fd_regular(fd: int, path: str, limit: int) -> bytes:
    """Read an open descriptor that must be a regular file of at most `limit` bytes."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        kind = DIRECTORY if stat.S_ISDIR(st.st_mode) else SPECIAL
        raise UserFileError(kind, path, f"{path} is {kind_of_mode(st.st_mode)}, not a regular file; it is not read")
    if st.st_size > limit:
        raise UserFileError(
            TOO_LARGE, path, f"{path} is larger than {_size_words(limit)}, the limit for this file; it is not read"
        )
    chunks = []
    total = 0
    while total <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:  # grew after fstat
        raise UserFileError(
            TOO_LARGE, path, f"{path} is larger than {_size_words(limit)}, the limit for this file; it is not read"
        )
    return b"".join(chunks)


def read_user_file(
    path: str, limit: int, *, follow_symlinks: bool = True, dir_fd: int | None = None, checked: bool = False
) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; UserFileError otherwise. Never blocks on a
    FIFO, never reads a device, never reads past `limit`. `checked`: the caller has just seen, with a
    stat of the same path and link rule, that it is a regular file (the stat before the open is skipped;
    the open descriptor is still checked)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    # A device is refused before it is even opened (opening some devices has effects, e.g. a tape
    # rewinds); the type is checked again on the open descriptor below, which closes the race.
    try:
        if not checked:
            st = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) or stat.S_ISSOCK(st.st_mode):
                raise UserFileError(
                    SPECIAL, path, f"{path} is {kind_of_mode(st.st_mode)}, not a regular file; it is not read"
                )
            if stat.S_ISLNK(st.st_mode):
                raise UserFileError(SYMLINK, path, f"{path} is a symbolic link; it is not followed")
    except OSError:
        pass  # the open below reports missing files, permissions, loops
    try:
        fd = os.open(path, flags, dir_fd=dir_fd) if dir_fd is not None else os.open(path, flags)
    except FileNotFoundError:
        raise UserFileError(MISSING, path, f"{path}: no such file") from None
    except PermissionError:
        raise UserFileError(DENIED, path, f"{path}: permission denied") from None
    except IsADirectoryError:
        raise UserFileError(DIRECTORY, path, f"{path} is a directory, not a file") from None
    except OSError as exc:
        if exc.errno == 40 and not follow_symlinks:  # ELOOP from O_NOFOLLOW
            raise UserFileError(SYMLINK, path, f"{path} is a symbolic link; it is not followed") from None
        if exc.errno in (6, 19):  # ENXIO (socket / FIFO without writer), ENODEV
            raise UserFileError(SPECIAL, path, f"{path} is not a regular file; it is not read") from None
        raise UserFileError(OTHER, path, f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return read_fd_regular(fd, path, limit)
    except UserFileError:
        raise
    except OSError as exc:
        raise UserFileError(OTHER, path, f"{path}: cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def read_stream(stream: IO[bytes], label: str, limit: int) -> bytes:
    """Read at most `limit` bytes from a stream (standard input); an endless or huge one is refused
    after `limit + 1` bytes instead of filling memory."""
    chunks = []
    total = 0
    try:
        while total <= limit:
            chunk = stream.read(min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8", "surrogateescape")
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise UserFileError(OTHER, label, f"{label}: cannot be read ({exc.strerror or exc})") from None
    if total > limit:
        raise UserFileError(
            TOO_LARGE, label, f"{label} is larger than {_size_words(limit)}, the limit for this input; it is not read"
        )
    return b"".join(chunks)


# ---- writing ------------------------------------------------------------------------------------


def tmp_name(base: str) -> str:
    """A hidden temporary name next to `base`, unique per process and call, never longer than a file
    name may be (a long `base` is cut: the name only has to be unique, not readable)."""
    _counter[0] += 1
    raw = os.fsencode(base)
    if len(raw) > 160:
        base = os.fsdecode(raw[:160])
    return f".{base}.{os.getpid()}.{_counter[0]}{TMP_TAG}"


Content = bytes | Callable[[Callable[[bytes], None]], None]


def write_atomic(dir_fd: int, name: str, content: Content, mode: int = 0o644) -> None:
    """Write `content` (bytes, or a producer called with a `write(bytes)` function) to `name` in the
    folder open as `dir_fd`: a new temporary file there (O_EXCL, never following a link), then a
    rename over `name`. The temporary file is removed on any failure or interruption."""
    tmp = tmp_name(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, mode, dir_fd=dir_fd)
    try:
        try:

            def put(data: bytes) -> None:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]

            if isinstance(content, (bytes, bytearray, memoryview)):
                put(bytes(content))
            else:
                content(put)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def check_output_target(
    path: str,
    inputs: Iterable[str] = (),
    input_trees: Iterable[str] = (),
    is_input: Callable[[str], bool] | None = None,
) -> None:
    """Refuse (OutputRefused) an output target that exists and is not a regular file, that is one of
    `inputs`, or an existing file inside one of the `input_trees` folders for which `is_input(path)`
    says it is an input (every such file when `is_input` is None)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputRefused(path, f"cannot check the output {path}: {exc.strerror or exc}") from None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise OutputRefused(
                path,
                f"refusing to write {path}: it is {kind_of_mode(st.st_mode)}, not a regular "
                "file (only regular files are replaced; remove it or choose another name)",
            )
        for inp in inputs:
            if not inp or inp == "-":
                continue
            try:
                if _same_file(os.stat(inp), st):
                    raise OutputRefused(
                        path,
                        f"refusing to write {path}: it is an input of this command ({inp}); choose another output file",
                    )
            except OSError:
                continue
        real = os.path.realpath(path)
        for tree in input_trees:
            root = os.path.realpath(tree)
            if real.startswith(root.rstrip(os.sep) + os.sep) and (is_input is None or is_input(path)):
                raise OutputRefused(
                    path,
                    f"refusing to write {path}: it is an input of this command (a file "
                    f"read from {tree}); choose another output file",
                )
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise OutputRefused(path, f"cannot write {path}: no such directory {parent}")


def write_output(
    path: str,
    content: Content,
    inputs: Iterable[str] = (),
    input_trees: Iterable[str] = (),
    unchanged_ok: bool = True,
    is_input: Callable[[str], bool] | None = None,
) -> bool:
    """`-o FILE` for every command: checks (check_output_target), then an atomic write in the target's
    folder. When the file already holds `content` (bytes) it is left untouched (mtime kept). Returns
    whether the file was written. Raises OutputRefused, or OSError for I/O failures."""
    check_output_target(path, inputs, input_trees, is_input)
    parent = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(path)
    dfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        if unchanged_ok and isinstance(content, (bytes, bytearray)):
            try:
                old = read_user_file(name, len(content), follow_symlinks=False, dir_fd=dfd)
                if old == content:
                    return False
            except UserFileError:
                pass
        mode = 0o644
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode):
                mode = stat.S_IMODE(st.st_mode)
        except OSError:
            pass
        write_atomic(dfd, name, content, mode)
        return True
    finally:
        os.close(dfd)


# ---- terminal output ----------------------------------------------------------------------------


def _escape_char(ch: str) -> str:
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


# C0 controls except TAB and LF (ESC starts every CSI, OSC -- window title, OSC 52 clipboard, OSC 8
# links --, DCS, APC, PM and SOS sequence; BEL and ST end them), DEL, C1 controls (the 8-bit forms: CSI
# U+009B, OSC U+009D, DCS U+0090, ST U+009C, ...), the bidirectional embeddings, overrides, isolates and
# marks (text that displays in another order than it reads: U+202A-U+202E, U+2066-U+2069, U+200E/F,
# U+061C), line/paragraph separators, BOM. With ESC and the C1 introducers made visible, no sequence can
# start, so the bytes that follow them are plain text.
_TERMINAL_UNSAFE = {
    c: _escape_char(chr(c))
    for c in [
        *range(0, 9),
        *range(11, 32),
        127,
        *range(0x80, 0xA0),
        0x061C,
        0x2028,
        0x2029,
        0x202A,
        0x202B,
        0x202C,
        0x202D,
        0x202E,
        0x2066,
        0x2067,
        0x2068,
        0x2069,
        0x200E,
        0x200F,
        0xFEFF,
    ]
}


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def has_escaped_bytes(text: str) -> bool:
    """Whether `text` holds surrogate escapes (bytes that were not UTF-8, as os.listdir returns them)."""
    return not text.isascii() and _ESCAPED_BYTE.search(text) is not None


def terminal_safe(text: str) -> str:
    """User text made inert for a terminal: ESC (and so every CSI/OSC sequence), other control
    characters, C1 controls and bidi overrides become visible escapes such as `\\x1b`. Tabs and
    newlines stay. Undecodable file-name bytes (surrogate escapes) are shown as `\\xNN` too."""
    out = text.translate(_TERMINAL_UNSAFE)
    if has_escaped_bytes(out):
        out = "".join(f"\\x{ord(ch) - 0xDC00:02x}" if "\udc80" <= ch <= "\udcff" else ch for ch in out)
    return out


def display_name(name: str) -> str:
    """A file name as text that can be encoded (UTF-8) in reports and records: bytes that are not UTF-8
    (surrogate escapes, as os.listdir returns them) are shown as `\\xNN`. Other characters stay; each
    output format escapes them (and terminal output goes through terminal_safe)."""
    if not has_escaped_bytes(name):
        return name
    return "".join(f"\\x{ord(ch) - 0xDC00:02x}" if "\udc80" <= ch <= "\udcff" else ch for ch in name)


def json_loads(data: bytes | str):
    """`json.loads` for data read from disk that may be hostile: bytes must be UTF-8, and a document
    nested too deeply for the decoder (`[[[[…` 100,000 deep) is a ValueError like any other malformed
    JSON, not a RecursionError that would end the command with an internal error."""
    import json

    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def looks_like_job_script(path: str) -> bool:
    """Whether an existing file starts like a Slurm job script (`#!`, then #SBATCH header lines)."""
    from translator.migrate.discover import is_job_script

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return is_job_script(os.read(fd, 65536))
    except OSError:
        return False
    finally:
        os.close(fd)
