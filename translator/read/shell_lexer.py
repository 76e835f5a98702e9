"""A fast, forgiving lexer for the shell body: text -> line tokens for the block grammar.

One pass over the text, jumping over runs of ordinary characters with a regex. It knows just enough
bash to find where commands start and end: quotes ('...', "...", $'...'), escapes and `\\`-newline
continuations, command and arithmetic substitution ($(...), $((...)), backticks), ${...}, comments,
here-documents (<<EOF, <<-EOF, <<'EOF'), `[[ ... ]]`, `(( ... ))`, redirections, and the operators
`;` `&` `&&` `||` `|` `;;`. Reserved words are recognised where bash recognises them (first word of
a command) and become block tokens; everything else becomes a `Segment` (one simple command).

It never fails: an unterminated quote, heredoc or block is reported (R14x) and closed at the end of
the file, and a closing word without its opener is kept as an ordinary command.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
import sys
from dataclasses import dataclass, field

from translator.diagnostics import Diagnostic, WARNING

R140_UNTERMINATED_HEREDOC = "R140"
R141_UNCLOSED_BLOCK = "R141"
R142_UNEXPECTED_CLOSER = "R142"
R143_UNTERMINATED_QUOTE = "R143"
R147_TOO_DEEP_QUOTES = "R147"

# Quotes and substitutions inside each other ("${A:-"$(...)"}") are scanned by mutually recursive
# methods; deeper nesting than this (no real script comes close) is reported and read as one word.
MAX_WORD_NESTING = 100

# ordinary word characters: anything but blanks, quotes, escapes, expansions and operators
_PLAIN = re.compile(r"[^ \t\n'\"\\`$;&|<>()]+")
_BLANKS = re.compile(r"[ \t]+")
_PAREN_PLAIN = re.compile(r"[^()'\"\\`$#<\n]+")
_INNER_HEREDOC = re.compile(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([^ \t\n;&|<>()'\"]+))")
_DQ_PLAIN = re.compile(r"[^\"\\`$]+")
_NAME_PAREN = re.compile(r"[ \t]*\([ \t]*\)")
_REDIR_OP = re.compile(r"&>>|&>|<<<|<<-|<<|<>|<&|>&|>>|>\||<|>")
_FD_PREFIX = re.compile(r"^(?:[0-9]+|\{[A-Za-z_][A-Za-z0-9_]*\})$")

_SLOTS = {"slots": True} if sys.version_info >= (3, 10) else {}

_CONTINUATION = re.compile(r"[ \t]*\\\n[ \t]*")

# Fast paths of the main scan (ShellLexer.run). A word made only of pieces whose extent the general
# scan finds without recursion: runs of ordinary characters, '...', an escaped character (not a
# newline), ${...} with nothing special inside, a `$` that starts no nested expansion, and "..." made of
# the same pieces. Each alternative is chosen by its first character, so there is one way to match.
_DQ_SIMPLE = r"\$\{[^{}'\"\\`$]*\}|\$(?![({'\"])"
_WORD_PIECES = (
    r"(?:[^ \t\n'\"\\`$;&|<>()]+|'[^']*'|\\[^\n]|" + _DQ_SIMPLE + r"|\"(?:[^\"\\`$]|\\[\s\S]|" + _DQ_SIMPLE + r")*\")+"
)
_FAST_WORD = re.compile(_WORD_PIECES)
# A line is a simple command split at its blanks when it has none of these characters (operators,
# redirections, escapes, substitutions, blanks that str.split splits at and the shell does not) ...
_LINE_SPECIAL = re.compile("[`\\\\;&|<>()\r\x0b\x0c\x1c-\x1f]")
# ... it has quotes of one kind only, an even number of them (its words are then these patterns' matches),
# and each `${` is closed before any blank or quote
_DQ_WORDS = re.compile(r'(?:[^ \t"]+|"[^"]*")+')
_SQ_WORDS = re.compile(r"(?:[^ \t']+|'[^']*')+")
_COMPLEX_BRACE = re.compile(r"\$\{(?![^{}'\"`$\\ \t]*\})")

# The line-at-a-time path for command lines with operators (`;` `&&` `||` `|` `&`), `$(...)`, `[[ ... ]]`,
# reserved words and `NAME() {` (ShellLexer._fast_line_ops). Every piece is one whose extent the general scan
# finds the same way (it is always matched up to the end of the line only): the word pieces above, $'...',
# `...`, and $(...) / $((...)) whose inside has no nested parenthesis, `$(`, `#`, `<`, newline or backquote.
_SIMPLE_DQ = r"\"(?:[^\"\\`$]|\\[\s\S]|" + _DQ_SIMPLE + r")*\""
_SUB_INNER = r"(?:[^()'\"\\`$#<\n]|'[^']*'|" + _SIMPLE_DQ + "|" + _DQ_SIMPLE + r")*"
_CMD_SUB = r"\$\(\(" + _SUB_INNER + r"\)\)|\$\(" + _SUB_INNER + r"\)"
_LINE_WORD = re.compile(
    r"(?:[^ \t\n'\"\\`$;&|<>()]+|'[^']*'|\\[^\n]|\$'(?:[^'\\]|\\[\s\S])*'|`(?:[^`\\]|\\[\s\S])*`|"
    + _CMD_SUB
    + "|"
    + _DQ_SIMPLE
    + r"|\"(?:[^\"\\`$]|\\[\s\S]|"
    + _DQ_SIMPLE
    + "|"
    + _CMD_SUB
    + r")*\")+"
)
# `[[ ... ]]` at the start of a command (ShellLexer._double_bracket): up to the first `]]` followed by a
# blank, an operator, `)` or the end of the line
_DOUBLE_BRACKET = re.compile(
    r"\[\[(?:[^'\"\]\\`$\n]|'[^']*'|" + _SIMPLE_DQ + "|" + _DQ_SIMPLE + r"|\](?!\](?:[ \t;&|)]|$)))*\]\](?=[ \t;&|)]|$)"
)
_LINE_OPS = {
    ";": ";",
    "&&": "&&",
    "||": "||",
    "|": "|",
    "&": "",
    ";;": "",
    ";&": "",
    ";;&": "",
}  # operator -> connector after it


def _newline_offsets(text: str) -> list[int]:
    """Offsets of the newlines of text: the k-th is the length of the k+1 first lines plus k."""
    return _line_ends(text.split("\n"))


def _line_ends(lines: list[str]) -> list[int]:
    """The offsets of the newlines of "\\n".join(lines), the ends of its lines but the last."""
    ends = list(map(operator.add, itertools.accumulate(map(len, lines)), itertools.count()))
    ends.pop()
    return ends


def _join_continuations(text: str) -> str:
    """Command text with `\\`-newline continuations joined by one blank."""
    if "\\\n" in text:
        text = _CONTINUATION.sub(" ", text)
    return text.strip()


OPENERS_THEN_CMD = {"if": "IF", "elif": "ELIF", "while": "LOOP", "until": "LOOP"}
SIMPLE_KEYWORDS = {"then": "THEN", "else": "ELSE", "do": "DO", "{": "LBRACE"}
CLOSERS = {"fi": "FI", "done": "DONE", "esac": "ESAC", "}": "RBRACE"}
# first words of a command that the general scan treats specially (reserved words, `!`, `[[`)
_SPECIAL_FIRST = frozenset(
    (*OPENERS_THEN_CMD, *SIMPLE_KEYWORDS, *CLOSERS, "for", "select", "case", "function", "!", "[[")
)


@dataclass(**_SLOTS)
class Heredoc:
    delimiter: str
    quoted: bool
    strip_tabs: bool
    line: int  # line of the `<<` operator
    body: str = ""
    body_start: int = 0  # first line of the body
    end_line: int = 0  # line of the closing delimiter (or last line when unterminated)


@dataclass(**_SLOTS)
class Segment:
    """One simple command as written: raw words (quotes kept), redirections, heredocs, position."""

    start: int  # offset in text
    end: int = 0
    words: list[str] = field(default_factory=list)
    redirections: list[str] = field(default_factory=list)
    heredocs: list[Heredoc] = field(default_factory=list)
    connector: str = ""  # "", ";", "&&", "||", "|"
    background: bool = False
    line: int = 0
    end_line: int = 0
    text: str = ""


@dataclass(**_SLOTS)
class LexToken:
    type: str  # grammar terminal name
    line: int
    end_line: int
    text: str
    segment: Segment | None = None
    synthetic: bool = False


@dataclass(**_SLOTS)
class _Frame:
    kind: str  # if, loop, case, group, subshell
    phase: str  # if: cond/body/else; loop: cond/body; case: pattern/body
    line: int
    word: str


def _one_line_command(start: int, end: int, words, connector: str, background: bool, line: int, text: str):
    """The CMD token of a command on one line: LexToken("CMD", line, line, text, Segment(start, end,
    list(words), [], [], connector, background, line, line, text)), with the fields set one by one (a
    quarter cheaper than the two constructor calls, and this runs for most lines of a script)."""
    seg = _new(Segment)
    seg.start = start
    seg.end = end
    seg.words = list(words)
    seg.redirections = []
    seg.heredocs = []
    seg.connector = connector
    seg.background = background
    seg.line = seg.end_line = line
    seg.text = text
    tok = _new(LexToken)
    tok.type = "CMD"
    tok.line = tok.end_line = line
    tok.text = text
    tok.segment = seg
    tok.synthetic = False
    return tok


_new = object.__new__


class ShellLexer:
    def __init__(self, text: str, first_line: int = 1, fast: bool = True):
        self.text = text
        self.fast = fast  # the fast paths of `run` (False: the general scan only, for tests)
        self.n = len(text)
        self.first_line = first_line
        self.lines = text.split("\n")
        self.newlines = _line_ends(self.lines)
        self.tokens: list[LexToken] = []
        self.diagnostics: list[Diagnostic] = []
        self.frames: list[_Frame] = []
        self.heredoc_lines: set = set()
        self.pending_heredocs: list[Heredoc] = []
        self.pending_func: int | None = None  # index of a FUNC token waiting for its body
        self.max_depth = 0
        self.nesting = 0  # quotes/substitutions open around the scan position
        # the state of the main scan (see run)
        self._seg: Segment | None = None
        self._word = -1
        self._mode = "cmd"
        self._header_kind = ""
        self._header_start = 0
        self._connector = ""
        self._resume = 0

    # ---- positions -----------------------------------------------------------------------------
    def line_at(self, offset: int) -> int:
        return self.first_line + bisect.bisect_left(self.newlines, offset)

    # ---- token emission with balancing ---------------------------------------------------------
    def _push(self, tok: LexToken) -> None:
        if self.pending_func is not None and tok.type != "COMMENT":
            if tok.type not in ("LBRACE", "LPAREN", "IF", "LOOP", "CASE"):
                ftok = self.tokens[self.pending_func]
                ftok.type = "CMD"
                ftok.segment = Segment(
                    0, words=ftok.text.split()[:1], line=ftok.line, end_line=ftok.line, text=ftok.text
                )
            self.pending_func = None
        self.tokens.append(tok)

    def _demote(self, tok: LexToken, why: str) -> None:
        self.diagnostics.append(Diagnostic(WARNING, R142_UNEXPECTED_CLOSER, why, tok.line))
        seg = tok.segment or Segment(
            0,
            words=[tok.text.split()[0] if tok.text.split() else tok.text],
            line=tok.line,
            end_line=tok.end_line,
            text=tok.text,
        )
        self._push(LexToken("CMD", tok.line, tok.end_line, tok.text, seg))

    def _close_frame(self, frame: _Frame, line: int) -> None:
        if frame.kind == "if":
            if frame.phase == "cond":
                self._push(LexToken("THEN", line, line, "", synthetic=True))
            self._push(LexToken("FI", line, line, "", synthetic=True))
        elif frame.kind == "loop":
            if frame.phase == "cond":
                self._push(LexToken("DO", line, line, "", synthetic=True))
            self._push(LexToken("DONE", line, line, "", synthetic=True))
        elif frame.kind == "case":
            self._push(LexToken("ESAC", line, line, "", synthetic=True))
        elif frame.kind == "group":
            self._push(LexToken("RBRACE", line, line, "", synthetic=True))
        elif frame.kind == "subshell":
            self._push(LexToken("RPAREN", line, line, "", synthetic=True))

    _CLOSES = {"FI": "if", "DONE": "loop", "ESAC": "case", "RBRACE": "group", "RPAREN": "subshell"}
    _EXPECT = {"if": "fi", "loop": "done", "case": "esac", "group": "}", "subshell": ")"}
    # token -> (frame kind, first phase) for block openers
    _OPENS = {
        "IF": ("if", "cond"),
        "LOOP": ("loop", "cond"),
        "CASE": ("case", "pattern"),
        "LBRACE": ("group", "body"),
        "LPAREN": ("subshell", "body"),
    }
    # token -> (frame kind it belongs to, phases it may follow, phase it starts, complaint otherwise)
    _MIDDLES = {
        "THEN": ("if", ("cond", "elifcond"), "body", "`then` without a matching `if`"),
        "ELIF": ("if", ("body",), "elifcond", "`elif` without a matching `if ... then`"),
        "ELSE": ("if", ("body",), "else", "`else` without a matching `if ... then`"),
        "DO": ("loop", ("cond",), "body", "`do` without a matching `for`/`while`/`until`"),
    }

    def emit(self, tok: LexToken) -> None:
        t = tok.type
        frames = self.frames
        top = frames[-1] if frames else None
        closes = self._CLOSES.get(t)
        if closes is not None and top is not None and top.kind == closes:
            # the common case of a closer: it closes the innermost block (see the general case below)
            frames.pop()
            if closes == "if" and (top.phase == "cond" or top.phase == "elifcond"):
                self._push(LexToken("THEN", tok.line, tok.line, "", synthetic=True))
            elif closes == "loop" and top.phase == "cond":
                self._push(LexToken("DO", tok.line, tok.line, "", synthetic=True))
            if self.pending_func is None:
                self.tokens.append(tok)
            else:
                self._push(tok)
            return
        middle = self._MIDDLES.get(t)
        if middle is not None:
            kind, allowed, phase, complaint = middle
            if top is not None and top.kind == kind and top.phase in allowed:
                top.phase = phase
                if self.pending_func is None:
                    self.tokens.append(tok)
                else:
                    self._push(tok)
            else:
                self._demote(tok, complaint)
        elif t in ("CMD", "COMMENT"):
            self._push(tok)
        elif t in self._OPENS:
            kind, phase = self._OPENS[t]
            if t == "LOOP":
                name = tok.text.split()[0] if tok.text.split() else "for"
            else:
                name = tok.text if t in ("LBRACE", "LPAREN") else kind
            frames.append(_Frame(kind, phase, tok.line, name))
            self.max_depth = max(self.max_depth, len(frames))
            self._push(tok)
        elif t == "FUNC":
            self._push(tok)
            self.pending_func = len(self.tokens) - 1
        elif t == "PATTERN":
            assert top is not None  # the lexer emits PATTERN inside a case block only
            top.phase = "body"
            self._push(tok)
        elif t == "DSEMI":
            if top is not None and top.kind == "case" and top.phase == "body":
                top.phase = "pattern"
                self._push(tok)
        elif t in self._CLOSES:
            kind = self._CLOSES[t]
            idx = len(frames) - 1
            while idx >= 0 and frames[idx].kind != kind:
                idx -= 1
            if idx < 0:
                self._demote(
                    tok,
                    f"`{tok.text.split()[0] if tok.text.split() else t.lower()}` without a matching opener; "
                    "kept as a command",
                )
                return
            while len(frames) - 1 > idx:
                inner = frames.pop()
                self.diagnostics.append(
                    Diagnostic(
                        WARNING,
                        R141_UNCLOSED_BLOCK,
                        f"`{inner.word}` opened at line {inner.line} "
                        f"has no `{self._EXPECT[inner.kind]}` before line {tok.line}; closed there",
                        inner.line,
                    )
                )
                self._close_frame(inner, tok.line)
            frame = frames.pop()
            if frame.kind == "if" and frame.phase in ("cond", "elifcond"):
                self._push(LexToken("THEN", tok.line, tok.line, "", synthetic=True))
            elif frame.kind == "loop" and frame.phase == "cond":
                self._push(LexToken("DO", tok.line, tok.line, "", synthetic=True))
            self._push(tok)
        else:  # pragma: no cover
            self._push(tok)

    def finish(self) -> None:
        last = self.line_at(self.n) if self.n else self.first_line
        if self.pending_func is not None:
            # the FUNC token has no body: it becomes a command (see _push), the token that showed it is dropped
            self._push(
                LexToken("CMD", last, last, "", Segment(self.n, self.n, line=last, end_line=last), synthetic=True)
            )
            self.tokens.pop()
        while self.frames:
            frame = self.frames.pop()
            self.diagnostics.append(
                Diagnostic(
                    WARNING,
                    R141_UNCLOSED_BLOCK,
                    f"`{frame.word}` opened at line {frame.line} has no "
                    f"`{self._EXPECT[frame.kind]}` before the end of the file",
                    frame.line,
                )
            )
            self._close_frame(frame, last)

    # ---- scanning helpers ----------------------------------------------------------------------
    def _unterminated(self, what: str, start: int) -> int:
        line = self.line_at(start)
        self.diagnostics.append(
            Diagnostic(
                WARNING,
                R143_UNTERMINATED_QUOTE,
                f"unterminated {what} starting at line {line}; the rest of the file is read as part of it",
                line,
            )
        )
        return self.n

    def skip_single(self, i: int) -> int:
        """i at the opening quote; returns the offset after the closing one."""
        j = self.text.find("'", i + 1)
        if j < 0:
            return self._unterminated("single quote", i)
        return j + 1

    def skip_ansi(self, i: int) -> int:
        """i at `$'`."""
        return self._skip_to(i + 2, "'", "$'...' string", i)

    def _skip_to(self, j: int, close: str, what: str, origin: int) -> int:
        """From j, the offset after the first unescaped `close` (backslash escapes the next char)."""
        text = self.text
        while j < self.n:
            c = text[j]
            if c == "\\":
                j += 2
                continue
            if c == close:
                return j + 1
            j += 1
        return self._unterminated(what, origin)

    def _nested(self, scan, i: int) -> int:
        """Run one of the recursive scanners below, one nesting level deeper, or stop at MAX_WORD_NESTING."""
        if self.nesting >= MAX_WORD_NESTING:
            return self._too_deep(i)
        self.nesting += 1
        j = scan(i)
        self.nesting -= 1
        return j

    def _too_deep(self, i: int) -> int:
        line = self.line_at(i)
        if not any(d.code == R147_TOO_DEEP_QUOTES for d in self.diagnostics):
            self.diagnostics.append(
                Diagnostic(
                    WARNING,
                    R147_TOO_DEEP_QUOTES,
                    f"quotes and substitutions are nested more than "
                    f"{MAX_WORD_NESTING} levels deep at line {line}; the rest of the file is read "
                    "as one word (its commands are not listed; the text is kept as written)",
                    line,
                    "simplify the expression",
                )
            )
        return self.n

    def skip_double(self, i: int) -> int:
        return self._nested(self._skip_double, i)

    def skip_parens(self, i: int) -> int:
        return self._nested(self._skip_parens, i)

    def skip_braces(self, i: int) -> int:
        return self._nested(self._skip_braces, i)

    def _skip_double(self, i: int) -> int:
        text, n = self.text, self.n
        j = i + 1
        while j < n:
            m = _DQ_PLAIN.match(text, j)
            if m:
                j = m.end()
                if j >= n:
                    break
            c = text[j]
            if c == '"':
                return j + 1
            if c == "\\":
                j += 2
            elif c == "`":
                j = self.skip_backtick(j)
            elif c == "$":
                j = self.skip_dollar(j)
            else:  # pragma: no cover
                j += 1
        return self._unterminated("double quote", i)

    def skip_backtick(self, i: int) -> int:
        return self._skip_to(i + 1, "`", "backquote", i)

    def skip_dollar(self, i: int) -> int:
        """i at `$`; returns the offset after the expansion (or after `$` when nothing follows)."""
        text = self.text
        nxt = text[i + 1 : i + 2]
        if nxt == "(":
            return self.skip_parens(i + 1)
        if nxt == "{":
            return self.skip_braces(i + 1)
        if nxt == "'":
            return self.skip_ansi(i)
        if nxt == '"':
            return self.skip_double(i + 1)
        return i + 1

    def _skip_parens(self, i: int) -> int:
        """i at `(`: skip a balanced (...) group, quote- and substitution-aware."""
        text, n = self.text, self.n
        depth = 0
        j = i
        heredocs: list[tuple[str, bool]] = []  # here-documents opened inside, e.g. x=$(cat <<EOF ...)
        while j < n:
            c = text[j]
            if c == "(":
                depth += 1
                j += 1
            elif c == ")":
                depth -= 1
                j += 1
                if depth == 0:
                    return j
            elif c == "<":
                m = _INNER_HEREDOC.match(text, j)
                if m and not text.startswith("<<<", j):
                    heredocs.append((m.group(2) or m.group(3) or m.group(4), m.group(1) == "-"))
                    j = m.end()
                else:
                    j += 1
            elif c == "\n":
                j += 1
                for delimiter, strip_tabs in heredocs:
                    while j < n:
                        k = text.find("\n", j)
                        end = n if k < 0 else k
                        line = text[j:end]
                        j = end + 1 if k >= 0 else n
                        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                            break
                heredocs = []
            elif c == "'":
                j = self.skip_single(j)
            elif c == '"':
                j = self.skip_double(j)
            elif c == "\\":
                j += 2
            elif c == "`":
                j = self.skip_backtick(j)
            elif c == "$":
                j = self.skip_dollar(j) if text[j + 1 : j + 2] in ("{", "'", '"') else j + 1
            elif c == "#" and (j == 0 or text[j - 1] in " \t\n;(|&"):
                k = text.find("\n", j)
                j = n if k < 0 else k
            else:
                m = _PAREN_PLAIN.match(text, j)
                j = m.end() if m else j + 1
        return self._unterminated("`(`", i)

    def _skip_braces(self, i: int) -> int:
        text, n = self.text, self.n
        depth = 0
        j = i
        while j < n:
            c = text[j]
            if c == "{":
                depth += 1
                j += 1
            elif c == "}":
                depth -= 1
                j += 1
                if depth == 0:
                    return j
            elif c == "'":
                j = self.skip_single(j)
            elif c == '"':
                j = self.skip_double(j)
            elif c == "\\":
                j += 2
            elif c == "`":
                j = self.skip_backtick(j)
            elif c == "$":
                j = self.skip_dollar(j) if text[j + 1 : j + 2] in ("(", "{") else j + 1
            else:
                j += 1
        return self._unterminated("`${`", i)

    def read_heredoc_bodies(self, i: int) -> int:
        """i just after a newline: consume the bodies of pending heredocs, return the new offset."""
        text, n = self.text, self.n
        for hd in self.pending_heredocs:
            hd.body_start = self.line_at(i)
            start = i
            found = False
            if self.fast and i < n and hd.delimiter and "\n" not in hd.delimiter:
                # the first line that is the delimiter (after leading tabs for <<-); i is a line start
                m = _delimiter_line(hd.delimiter, hd.strip_tabs).search(text, i)
                if m is not None:
                    hd.body = text[start : m.start()]
                    hd.end_line = self.line_at(m.start())
                    i = m.end() + 1 if m.end() < n else n
                    found = True
                else:
                    i = n
            while not found and i < n:
                k = text.find("\n", i)
                end = n if k < 0 else k
                line = text[i:end]
                check = line.lstrip("\t") if hd.strip_tabs else line
                if check == hd.delimiter:
                    hd.body = text[start:i]
                    hd.end_line = self.line_at(i)
                    i = end + 1 if k >= 0 else n
                    found = True
                    break
                i = end + 1 if k >= 0 else n
            if not found:
                hd.body = text[start:n]
                hd.end_line = self.line_at(n)
                self.diagnostics.append(
                    Diagnostic(
                        WARNING,
                        R140_UNTERMINATED_HEREDOC,
                        f"here-document `<<{hd.delimiter}` at line "
                        f"{hd.line} is not terminated by a `{hd.delimiter}` line; it runs to the end "
                        "of the file",
                        hd.line,
                    )
                )
            self.heredoc_lines.update(range(hd.body_start, hd.end_line + (0 if found else 1)))
        self.pending_heredocs = []
        return min(i, n)

    # ---- the main scan -------------------------------------------------------------------------
    # One method per character class, each taking the offset of its character and returning the
    # offset to continue from; `_DISPATCH` (after the class) names the method of each special
    # character, every other character starts or continues a plain word. The scan state:
    #   _seg            the simple command being read (None between commands)
    #   _word           start offset of the current word, -1 between words
    #   _mode           "cmd" | "header" (for/select/case/function headers) | "tail" (after a closer)
    #   _header_kind    for/select/case/function, and _header_start its offset (mode "header")
    #   _connector      the operator before the next command: "", ";", "&&", "||", "|"
    #   _resume         an offset the scan must jump ahead to (after the `()` of `function f()`)
    def run(self) -> ShellLexer:
        text, n = self.text, self.n
        handlers = _HANDLERS  # character -> ShellLexer method (a plain function: called with self)
        plain = ShellLexer._on_plain
        frames = self.frames
        fast = self.fast
        i = 0
        while i < n:
            if self._resume > i:
                i = self._resume
                continue
            if self._seg is None and self._word < 0:
                if frames and frames[-1].kind == "case" and frames[-1].phase == "pattern":
                    i = self._case_pattern(i)
                    continue
                if fast and self._mode == "cmd":
                    end = self._fast_lines(i)
                    if end > i:
                        i = end
                        continue
            handler = handlers.get(text[i])
            if handler is None and fast:
                # ordinary character: the whole word, or as much of it as needs no recursion
                start = self._word if self._word >= 0 else i
                end = _FAST_WORD.match(text, i).end()  # type: ignore[union-attr]  # text[i] is ordinary
                if text.startswith("[[", start):
                    i = plain(self, i)  # perhaps `[[ ... ]]`: the general scan decides
                    continue
                if self._word < 0:
                    self._word = i
                    if self._seg is None:
                        self._seg = self._new_segment(i)
                i = end
                continue
            i = (handler or plain)(self, i)
        self._end_segment(n, "")
        if self.pending_heredocs:
            self.read_heredoc_bodies(n)
        self.finish()
        return self

    def _fast_lines(self, i: int) -> int:
        """At the start of a command: read blank lines, comments and whole lines the line path reads (see
        _line_entry: simple command lines, reserved words alone on their line, lines of words and operators)
        as the general scan would; return the offset where the general scan must take over (i if none). What
        a line is read as depends on its text only and comes from the per-process table _LINES."""
        lines = self.lines
        last = len(lines) - 1
        k = bisect.bisect_left(self.newlines, i)  # the line of i, from 0
        start = self.newlines[k - 1] + 1 if k else 0  # its offset
        line = self.first_line + k
        tokens = self.tokens
        append = tokens.append
        get = _LINES.get
        connector = self._connector  # "" after the first line
        waiting = self.pending_func is not None  # a FUNC token waits for its body
        heredocs = bool(self.pending_heredocs)  # here-documents whose bodies follow the line
        raw = lines[k]
        at = i
        if i > start:
            raw = raw[i - start :]
        while True:
            end = at + len(raw)
            kind, a, b, indent = get(raw) or _line_miss(raw)
            if kind is _SIMPLE:
                tok = _one_line_command(at + indent, end, a, connector, False, line, b)
                if waiting:
                    self._push(tok)
                    waiting = False
                else:
                    append(tok)
                connector = ""
            elif kind is _COMMENT:
                tok = LexToken("COMMENT", line, line, a)
                if waiting:
                    self._push(tok)
                else:
                    append(tok)
            elif kind is not _BLANK:
                i = at + indent
                if kind is _KEYWORD:
                    self.emit(LexToken(a, line, line, b))
                elif kind is _CONTINUED and not heredocs and k < last:
                    # a simple command continued on the next lines: when each of them is simple (or continued)
                    words = list(a)
                    parts = [b]
                    m = k
                    while kind is _CONTINUED and m < last:
                        m += 1
                        raw = lines[m]
                        end += 1 + len(raw)
                        kind, a, b, _ = get(raw) or _line_miss(raw)
                        if kind is _SIMPLE or kind is _CONTINUED:
                            words.extend(a)
                        parts.append(b)
                    if kind is not _SIMPLE:
                        self._connector = connector
                        return i
                    b = " ".join(parts)
                    last_line = line + m - k
                    tok = LexToken(
                        "CMD", line, last_line, b, Segment(i, end, words, [], [], connector, False, line, last_line, b)
                    )
                    if waiting:
                        self._push(tok)
                        waiting = False
                    else:
                        append(tok)
                    connector = ""
                    line = last_line
                    k = m
                elif kind is _OPS and not heredocs:
                    # operators, $(...), [[ ]], headers, definitions: the whole line, or up to `;;` / `in`
                    self._connector = connector
                    j = self._line_ops(i, end, line, a)
                    if j < end:
                        return j
                    connector = self._connector  # "", or the one a case header's operator left (`case &&`)
                    heredocs = bool(self.pending_heredocs)
                else:
                    self._connector = connector
                    return i
                waiting = self.pending_func is not None
                frames = self.frames
                if frames and frames[-1].kind == "case" and frames[-1].phase == "pattern":
                    self._connector = connector
                    return end
            # the end of the line
            if k == last or heredocs:
                self._connector = connector
                return end
            connector = ""
            k += 1
            line += 1
            at = end + 1
            raw = lines[k]

    def _line_ops(self, i: int, end: int, line: int, actions: tuple) -> int:
        """Run the actions _line_actions compiled for the line [i, end) (offsets from i): emit its tokens as
        the general scan emits them; return the offset where the general scan goes on."""
        tokens = self.tokens
        entry_connector = self._connector
        for act in actions:
            op = act[0]
            if op is _A_CMD:
                _, start, stop, words, redirections, background, text, connector = act
                conn = entry_connector if connector is None else connector
                tok = _one_line_command(i + start, i + stop, words, conn, background, line, text)
                for at, fd in redirections:
                    self._redirection(i + at, tok.segment, fd)
                if self.pending_func is None:
                    tokens.append(tok)
                else:
                    self._push(tok)
            elif op is _A_EMIT:
                self.emit(LexToken(act[1], line, line, act[2]))
            elif op is _A_CHECK:
                frames = self.frames
                if frames and frames[-1].kind == "case" and frames[-1].phase == "pattern":
                    self._connector = act[2]
                    return i + act[1]
            elif op is _A_STOP:
                if act[2] is not None:
                    self._connector = act[2]
                return i + act[1]
            elif op is _A_DSEMI:
                self._connector = ""
                frames = self.frames
                if frames and frames[-1].kind == "case":
                    self.emit(LexToken("DSEMI", line, line, act[2]))
                return i + act[1]
            else:  # _A_REDIRECT: a redirection after a closer (`done < list`): for its here-document only
                self._redirection(i + act[1], Segment(0), act[2])
        self._connector = ""
        return end

    # -- words and commands
    def _new_segment(self, at: int) -> Segment:
        return Segment(at, connector=self._connector)

    def _finish_word(self, end: int) -> None:
        """The word that started at `_word` ends at `end`: add it to the command, or act on it when it
        is a reserved word or part of a for/select/case/function header."""
        raw = self.text[self._word : end]
        self._word = -1
        seg = self._seg
        if seg is None:
            seg = self._seg = self._new_segment(end - len(raw))
        if self._mode == "tail":
            return
        if self._mode == "header":
            self._header_word(seg, raw, end)
            return
        if not seg.words and not seg.redirections and self._reserved_word(raw, seg):
            return
        seg.words.append(raw)

    def _header_word(self, seg: Segment, raw: str, end: int) -> None:
        seg.words.append(raw)
        if self._header_kind == "case" and raw == "in" and len(seg.words) >= 3:
            self._emit_header(seg, self._header_kind, self._header_start, end)
            self._seg = None
            self._mode = "cmd"
        elif self._header_kind == "function" and len(seg.words) == 2:
            k = _NAME_PAREN.match(self.text, end)
            hdr_end = k.end() if k else end
            self._emit_func(seg.words[1], self._header_start, hdr_end)
            self._seg = None
            self._mode = "cmd"
            self._resume = hdr_end  # skip the `()` of `function f() {`

    def _reserved_word(self, raw: str, seg: Segment) -> bool:
        """The first word of a command: a reserved word becomes a block token (True when it did)."""
        if raw in SIMPLE_KEYWORDS or raw in OPENERS_THEN_CMD:
            ln = self.line_at(seg.start)
            self.emit(LexToken(SIMPLE_KEYWORDS.get(raw) or OPENERS_THEN_CMD[raw], ln, ln, raw))
            self._seg = None
            self._connector = ""
            return True
        if raw in CLOSERS:
            ln = self.line_at(seg.start)
            self.emit(LexToken(CLOSERS[raw], ln, ln, raw))
            self._mode = "tail"
            return True
        if raw in ("for", "select", "case", "function"):
            self._mode = "header"
            self._header_kind = raw
            self._header_start = seg.start
            seg.words.append(raw)
            return True
        return raw == "!"

    def _end_segment(self, end: int, conn_after: str = "", background: bool = False) -> None:
        """The command ends at `end` (an operator, a newline, a comment or the end of the text)."""
        if self._word >= 0:
            self._finish_word(end)
        seg = self._seg
        if seg is not None:
            if self._mode == "header":
                self._emit_header(seg, self._header_kind, self._header_start, end)
            elif self._mode == "tail":
                pass
            elif seg.words or seg.redirections:
                seg.end = end
                seg.background = background
                seg.line = self.line_at(seg.start)
                seg.end_line = self.line_at(max(seg.start, end - 1))
                seg.text = _join_continuations(self.text[seg.start : end])
                self.emit(LexToken("CMD", seg.line, seg.end_line, seg.text, seg))
        self._seg = None
        self._mode = "cmd"
        self._connector = conn_after

    # -- character classes
    def _on_plain(self, i: int) -> int:
        """Ordinary characters (and `#` inside a word): a run of them starts or continues a word."""
        text = self.text
        if self._word < 0:
            self._word = i
            if self._seg is None:
                self._seg = self._new_segment(i)
        m = _PLAIN.match(text, i)
        i = m.end() if m else i + 1
        if (
            text[self._word : i] == "[["
            and (self._seg is None or not self._seg.words)
            and self._mode == "cmd"
            and (i >= self.n or text[i] in " \t\n")
        ):
            i = self._double_bracket(i)
        return i

    def _on_blank(self, i: int) -> int:
        if self._word >= 0:
            self._finish_word(i)
        m = _BLANKS.match(self.text, i)
        return m.end() if m else i + 1

    def _on_newline(self, i: int) -> int:
        self._end_segment(i, "")
        i += 1
        if self.pending_heredocs:
            i = self.read_heredoc_bodies(i)
        return i

    def _on_hash(self, i: int) -> int:
        if self._word >= 0:  # inside a word `#` is an ordinary character
            return self._on_plain(i)
        k = self.text.find("\n", i)
        k = self.n if k < 0 else k
        if self._seg is None:
            ln = self.line_at(i)
            self.emit(LexToken("COMMENT", ln, ln, self.text[i:k]))
        else:
            self._end_segment(i, "")  # a trailing comment is not part of the command text
        return k

    def _on_backslash(self, i: int) -> int:
        # `\\`-newline is a continuation: between words it is a blank, inside a word it joins the parts
        if self._word < 0 and self.text[i + 1 : i + 2] != "\n":
            self._word = i
        return i + 2

    def _on_single_quote(self, i: int) -> int:
        if self._word < 0:
            self._word = i
        return self.skip_single(i)

    def _on_double_quote(self, i: int) -> int:
        if self._word < 0:
            self._word = i
        return self.skip_double(i)

    def _on_backquote(self, i: int) -> int:
        if self._word < 0:
            self._word = i
        return self.skip_backtick(i)

    def _on_dollar(self, i: int) -> int:
        if self._word < 0:
            self._word = i
        return self.skip_dollar(i)

    def _on_semicolon(self, i: int) -> int:
        text = self.text
        if text.startswith(";;&", i) or text.startswith(";;", i) or text.startswith(";&", i):
            op = ";;&" if text.startswith(";;&", i) else (";;" if text.startswith(";;", i) else ";&")
            self._end_segment(i, "")
            if self.frames and self.frames[-1].kind == "case":
                ln = self.line_at(i)
                self.emit(LexToken("DSEMI", ln, ln, op))
            return i + len(op)
        self._end_segment(i, ";")
        return i + 1

    def _on_ampersand(self, i: int) -> int:
        text = self.text
        if text.startswith("&&", i):
            self._end_segment(i, "&&")
            return i + 2
        if text.startswith("&>", i):
            if self._word >= 0:
                self._finish_word(i)
            if self._seg is None:
                self._seg = self._new_segment(i)
            return self._redirection(i, self._seg)
        self._end_segment(i, "", background=True)
        return i + 1

    def _on_pipe(self, i: int) -> int:
        if self.text.startswith("||", i):
            self._end_segment(i, "||")
            return i + 2
        self._end_segment(i, "|")
        return i + (2 if self.text.startswith("|&", i) else 1)

    def _on_angle(self, i: int) -> int:
        """`<` or `>`: a redirection (with the fd or {var} word just before it), or <(...) / >(...)."""
        text = self.text
        if text[i + 1 : i + 2] == "(":
            # process substitution <(...) / >(...)
            if self._word < 0:
                self._word = i
            return self.skip_parens(i + 1)
        if self._seg is None:
            self._seg = self._new_segment(i if self._word < 0 else self._word)
        fd = ""
        if self._word >= 0:
            word = text[self._word : i]
            if _FD_PREFIX.match(word):
                fd = word
            else:
                self._finish_word(i)
                if self._seg is None:
                    self._seg = self._new_segment(i)
            self._word = -1
        return self._redirection(i, self._seg, fd)

    def _on_open_paren(self, i: int) -> int:
        """`(`: a subshell, `(( ... ))`, a for/select list, a function definition `name()`, or part of
        a word (array assignment a=(...), extglob @(...), a stray paren)."""
        seg = self._seg
        if self._word < 0 and (seg is None or (not seg.words and not seg.redirections)) and self._mode == "cmd":
            if self.text.startswith("((", i):
                # arithmetic command (( ... ))
                self._word = i
                return self.skip_parens(i)
            ln = self.line_at(i)
            self._seg = None
            self.emit(LexToken("LPAREN", ln, ln, "("))
            self._connector = ""
            return i + 1
        if self._mode == "header" and self._header_kind in ("for", "select") and self._word < 0:
            self._word = i
            return self.skip_parens(i)
        end = self._function_definition(i)
        if end >= 0:
            return end
        if self._word < 0:
            self._word = i
        return self.skip_parens(i)

    def _function_definition(self, i: int) -> int:
        """At the `(` of `name()` (the name is the current word or the command's only word): emit the
        function and return the offset after `()`; -1 when it is not one."""
        if self._mode != "cmd":
            return -1
        m = _NAME_PAREN.match(self.text, i)
        if m is None:
            return -1
        seg, word = self._seg, self._word
        if seg is not None and ((word >= 0 and not seg.words) or (word < 0 and len(seg.words) == 1)):
            name = self.text[word:i] if word >= 0 else seg.words[0]
            self._emit_func(name, seg.start if seg.words else word, m.end())
            self._seg = None
        elif seg is None and word >= 0:
            self._emit_func(self.text[word:i], word, m.end())
        else:
            return -1
        self._word = -1
        return m.end()

    def _on_close_paren(self, i: int) -> int:
        if self._word >= 0:
            self._finish_word(i)
        if any(f.kind == "subshell" for f in self.frames):
            self._end_segment(i, "")
            ln = self.line_at(i)
            self.emit(LexToken("RPAREN", ln, ln, ")"))
            self._mode = "tail"
            self._seg = Segment(i)
            return i + 1
        # stray `)`: keep it as a word character
        self._word = i
        return i + 1

    def _double_bracket(self, i: int) -> int:
        """After `[[`: skip to the matching `]]` word (operators inside are not shell operators)."""
        text = self.text
        j = i
        while j < self.n:
            c = text[j]
            if c == "'":
                j = self.skip_single(j)
            elif c == '"':
                j = self.skip_double(j)
            elif c == "\\":
                j += 2
            elif c == "$":
                j = self.skip_dollar(j)
            elif c == "`":
                j = self.skip_backtick(j)
            elif c == "]" and text.startswith("]]", j) and (j + 2 >= self.n or text[j + 2] in " \t\n;&|)"):
                return j + 2
            elif c == "\n":
                return j
            else:
                j += 1
        return j

    def _redirection(self, i: int, seg: Segment, fd: str = "") -> int:
        """i at the operator; appends `fd op target` to the segment and returns the offset after it."""
        text = self.text
        m = _REDIR_OP.match(text, i)
        assert m is not None  # the caller saw a redirection operator at i
        op = m.group()
        j = m.end()
        k = _BLANKS.match(text, j)
        if k:
            j = k.end()
        t0 = j
        # the target word
        while j < self.n:
            c = text[j]
            if c in " \t\n;&|<>()":
                break
            if c == "'":
                j = self.skip_single(j)
            elif c == '"':
                j = self.skip_double(j)
            elif c == "\\":
                j += 2
            elif c == "$":
                j = self.skip_dollar(j)
            elif c == "`":
                j = self.skip_backtick(j)
            else:
                j += 1
        target = text[t0:j]
        seg.redirections.append(f"{fd}{op}{target}")
        if op in ("<<", "<<-") and target:
            delim = target.replace("'", "").replace('"', "").replace("\\", "")
            quoted = delim != target
            self.pending_heredocs.append(Heredoc(delim, quoted, op == "<<-", self.line_at(i)))
            seg.heredocs.append(self.pending_heredocs[-1])
        return j

    def _case_pattern(self, i: int) -> int:
        """At a case pattern position: skip blanks/comments, then read `pattern)` or `esac`."""
        text, n = self.text, self.n
        while i < n:
            c = text[i]
            if c in " \t\n;":
                i += 1
                continue
            if c == "#":
                k = text.find("\n", i)
                i = n if k < 0 else k
                continue
            break
        if i >= n:
            return n
        if text.startswith("esac", i) and (i + 4 >= n or text[i + 4] in " \t\n;)&|"):
            ln = self.line_at(i)
            self.emit(LexToken("ESAC", ln, ln, "esac"))
            # skip the rest of the esac word; redirections after it are ignored
            j = i + 4
            k = text.find("\n", j)
            semi = text.find(";", j)
            if semi >= 0 and (k < 0 or semi < k):
                return semi + 1
            return n if k < 0 else k
        start = i
        if text[i] == "(":
            i += 1
        depth = 0
        while i < n:
            c = text[i]
            if c == "'":
                i = self.skip_single(i)
            elif c == '"':
                i = self.skip_double(i)
            elif c == "\\":
                i += 2
            elif c == "$":
                i = self.skip_dollar(i)
            elif c == "(":
                depth += 1
                i += 1
            elif c == ")":
                if depth == 0:
                    i += 1
                    break
                depth -= 1
                i += 1
            elif c == "\n":
                break
            else:
                i += 1
        ln = self.line_at(start)
        self.emit(LexToken("PATTERN", ln, ln, text[start:i].strip()))
        return i

    def _emit_header(self, seg: Segment, kind: str, start: int, end: int) -> None:
        ln = self.line_at(start)
        header = _join_continuations(self.text[start:end])
        if kind in ("for", "select"):
            self.emit(LexToken("LOOP", ln, self.line_at(max(start, end - 1)), header))
        elif kind == "case":
            self.emit(LexToken("CASE", ln, ln, header))
        elif kind == "function":
            name = seg.words[1] if len(seg.words) > 1 else ""
            self._emit_func(name, start, end)

    def _emit_func(self, name: str, start: int, end: int) -> None:
        ln = self.line_at(start)
        self.emit(LexToken("FUNC", ln, ln, self.text[start:end].strip() or name))


def _line_redirection_end(text: str, i: int, end: int) -> int:
    """i at `<` or `>` on a line ending at end: the offset after the redirection and its target as
    ShellLexer._redirection reads it, or -1 when the general scan must read it (process substitution, a
    target _LINE_WORD does not read, something other than a blank or an operator after it)."""
    if text[i + 1 : i + 2] == "(":
        return -1
    m = _REDIR_OP.match(text, i)
    if m is None:  # pragma: no cover (text[i] is `<` or `>`)
        return -1
    j = m.end()
    k = _BLANKS.match(text, j)
    if k:
        j = k.end()
    if j < end and text[j] not in " \t;&|<>()":
        w = _LINE_WORD.match(text, j, end)
        if w is None:
            return -1
        j = w.end()
    if j < end and text[j] not in " \t;&|":
        return -1
    return j


# What the line path (ShellLexer._fast_lines) does with a line is a pure function of the line's text (see
# _line_entry); scripts repeat their lines (module loads, exports, launch lines), so the entries of the lines
# seen are kept per process (bounded; long lines are not kept).
_SIMPLE, _CONTINUED, _KEYWORD, _OPS = "simple", "continued", "keyword", "ops"
_GENERAL, _COMMENT, _BLANK = "general", "comment", "blank"
# two generations: a line found in the older one moves to the current one, the older one is dropped when the
# current one is full (so the lines a repository repeats stay)
_LINES: dict[str, tuple] = {}
_OLD_LINES: dict[str, tuple] = {}
_LINES_LIMIT = 8192
_LINE_KEY_MAX = 400


def _line_miss(raw: str) -> tuple:
    """The entry of a line not in _LINES, from _OLD_LINES or _line_entry; kept in _LINES when short enough."""
    entry = _OLD_LINES.get(raw)
    if entry is None:
        entry = _line_entry(raw)
        if len(raw) > _LINE_KEY_MAX:
            return entry
    if len(_LINES) >= _LINES_LIMIT:
        _OLD_LINES.clear()
        _OLD_LINES.update(_LINES)
        _LINES.clear()
    _LINES[raw] = entry
    return entry


def _line_entry(whole: str) -> tuple:
    """What the line path does with a line (its whole text, or the rest of the line after an operator the
    general scan read): a 4-tuple (kind, a, b, indent), indent the offset of the line's first non-blank
    character:
      (_SIMPLE, words, text, indent)   a simple command: its words (a tuple), its text without trailing blanks
      (_CONTINUED, words, text, indent)  the same, continued on the next line (` \\` at the end; words and
                                       text before it)
      (_KEYWORD, type, word, indent)   a reserved word alone on its line (then, do, else, {, fi, done, esac, })
      (_OPS, actions, None, indent)    words, operators, reserved words, headers, definitions: the actions
                                       ShellLexer._line_ops runs (_line_actions)
      (_GENERAL, None, None, indent)   the general scan reads the line
      (_COMMENT, text, None, indent)   a comment
      (_BLANK, None, None, 0)          nothing but blanks
    """
    raw = whole.lstrip(" \t")
    indent = len(whole) - len(raw)
    if not raw:
        return (_BLANK, None, None, 0)
    if raw[0] == "#":
        return (_COMMENT, raw, None, indent)
    words = _simple_words(raw)
    if words is not None:
        first = words[0]
        if not (first in _SPECIAL_FIRST or first.startswith("[[")):
            return (_SIMPLE, tuple(words), raw.rstrip(" \t"), indent)
        if len(words) == 1 and (first in SIMPLE_KEYWORDS or first in CLOSERS):
            return (_KEYWORD, SIMPLE_KEYWORDS.get(first) or CLOSERS[first], first, indent)
    elif raw[-1] == "\\" and raw[-2:-1] in (" ", "\t"):
        # ` \\`-newline at the end: between words it is a blank (the command goes on on the next line)
        head = raw[:-1].rstrip(" \t")
        words = _simple_words(head) if head else None
        if words is not None and not (words[0] in _SPECIAL_FIRST or words[0].startswith("[[")):
            return (_CONTINUED, tuple(words), head, indent)
    found = _line_pieces(raw)
    actions = None if found is None else _line_actions(raw, *found)
    if actions is None:
        return (_GENERAL, None, None, indent)
    return (_OPS, actions, None, indent)


def _simple_words(raw: str) -> list[str] | None:
    """The words of a line (from a non-blank character) that is a simple command split at its blanks: no
    operator, redirection, escape, substitution or comment (see _LINE_SPECIAL), quotes of one kind only;
    None when it is not one."""
    if _LINE_SPECIAL.search(raw) or not raw.isascii() or " #" in raw or "\t#" in raw:
        return None
    if "${" in raw and _COMPLEX_BRACE.search(raw):
        return None
    if '"' in raw:
        if "'" in raw or '$"' in raw or raw.count('"') % 2:
            return None
        return _DQ_WORDS.findall(raw)
    if "'" in raw:
        if raw.count("'") % 2:
            return None
        return _SQ_WORDS.findall(raw)
    return raw.split()


def _line_pieces(text: str) -> tuple[tuple, int] | None:
    """The pieces of a line (its text from its first non-blank character) that the line path reads when it is
    made of words (_LINE_WORD), the operators `;` `&&` `||` `|` `&`, reserved words, `[[ ... ]]`,
    for/select/case headers, `name()` / `function name` definitions, redirections after a command's first
    word (ShellLexer._redirection reads them) and `;;` / `;&` / `;;&`: (pieces, stop), stop the offset where
    the general scan goes on (the end of the line; or after `;;` or a `case ... in` header: the patterns
    follow). None when the line has anything else (subshells, `!`, `&>`, `|&`, escaped newlines, comments,
    ...) or ends in an open case header (the general scan reads here-documents first).

    Pieces (kind, start, stop, extra): "w" a word (extra: its text), "o" an operator (extra: its text),
    "f" name(), "r" a redirection (at its operator, extra: its fd), "d" `;;` / `;&` / `;;&` (the end of a
    case item, extra: its text)."""
    word_match = _LINE_WORD.match
    pieces: list[tuple[str, int, int, str]] = []
    pos = 0
    end = stop_at = len(text)
    mode = ""  # "" (a command), "for" / "case" / "function" (a header), "tail" (after a closer)
    count = 0  # words of the command or header so far
    while True:
        while pos < end and (text[pos] == " " or text[pos] == "\t"):
            pos += 1
        if pos >= end:
            break
        c = text[pos]
        if c == ";" or c == "&" or c == "|":
            nxt = text[pos + 1 : pos + 2]
            if c == ";" and (nxt == ";" or nxt == "&"):
                # the end of a case item: the general scan reads the next pattern
                op = ";;&" if text.startswith(";;&", pos) else c + nxt
                pieces.append(("d", pos, pos + len(op), op))
                stop_at = pos + len(op)
                break
            if nxt == c:
                op = c + c
            elif nxt in (";", "&", ">") or (c == "|" and nxt == "&"):
                return None  # &> |& and the like: the general scan reads them
            else:
                op = c
            pieces.append(("o", pos, pos + len(op), op))
            pos += len(op)
            mode, count = "", 0
            continue
        if c == "(" and mode == "" and count == 1 and pieces[-1][0] == "w":
            # `name ()`: a function definition (the name was the command's only word)
            k = _NAME_PAREN.match(text, pos, end)
            if k is None:
                return None
            pieces[-1] = ("f", pieces[-1][1], k.end(), "")
            pos = k.end()
            count = 0
            continue
        if c == "#":
            return None
        if c == "<" or c == ">":
            # a redirection after the command's first word (or after a closer), with no fd word
            r = _line_redirection_end(text, pos, end)
            if r < 0 or not (mode == "tail" or (mode == "" and count)):
                return None
            pieces.append(("r", pos, r, ""))
            pos = r
            continue
        if mode == "" and count == 0 and text.startswith("[[", pos) and text[pos + 2 : pos + 3] in " \t":
            m = _DOUBLE_BRACKET.match(text, pos, end)
        else:
            m = word_match(text, pos, end)
        if m is None:
            return None
        stop = m.end()
        w = text[pos:stop]
        if stop < end and text[stop] not in " \t;&|":
            if (text[stop] == "<" or text[stop] == ">") and (mode == "tail" or (mode == "" and count)):
                # a redirection right after a word: an fd (2>&1), or the end of the word
                r = _line_redirection_end(text, stop, end)
                if r < 0:
                    return None
                if _FD_PREFIX.match(w):
                    pieces.append(("r", stop, r, w))
                else:
                    pieces.append(("w", pos, stop, w))
                    pieces.append(("r", stop, r, ""))
                    count += 1
                pos = r
                continue
            # `name()`: a function definition, when name is the first word of a command
            if text[stop] != "(" or mode or count or w in _SPECIAL_FIRST or w.startswith("[["):
                return None
            k = _NAME_PAREN.match(text, stop, end)
            if k is None:
                return None
            pieces.append(("f", pos, k.end(), ""))
            pos = k.end()
            continue
        pieces.append(("w", pos, stop, w))
        pos = stop
        if mode == "" and count == 0:
            if w == "!":
                return None
            if w in SIMPLE_KEYWORDS or w in OPENERS_THEN_CMD:
                continue  # the next word starts a command
            if w in CLOSERS:
                mode = "tail"
                continue
            if w in ("for", "select", "case", "function"):
                mode, count = ("for" if w == "select" else w), 1
                continue
        count += 1
        if mode == "case" and w == "in" and count >= 3:
            stop_at = stop  # the case patterns follow: the general scan reads them
            mode = ""
            break
        elif mode == "function" and count == 2:
            k = _NAME_PAREN.match(text, stop, end)
            if k is not None:
                pos = k.end()
            mode, count = "", 0
    if mode == "case":
        return None  # a case header open at the end of the line: the general scan reads here-documents first
    return tuple(pieces), stop_at


# The actions of a line the line path reads with operators (ShellLexer._line_ops runs them; offsets from the
# line's first non-blank character):
#   (_A_CMD, start, stop, words, redirections, background, text, connector)  a simple command; redirections:
#        ((offset, fd), ...) read by ShellLexer._redirection; connector None: the one before the line
#   (_A_EMIT, type, text)        a block token (reserved word, header, function definition)
#   (_A_CHECK, stop, connector)  after an operator that ends a case header: the general scan goes on at stop
#                                when the case block waits for its patterns
#   (_A_STOP, stop, connector)   the end of a `case ... in` header: the general scan reads the patterns
#   (_A_DSEMI, stop, op)         `;;` / `;&` / `;;&`: a DSEMI token in a case block, then the general scan
#   (_A_REDIRECT, offset, fd)    a redirection after a closer (`done < list`; only its here-document counts)
_A_CMD, _A_EMIT, _A_CHECK, _A_STOP, _A_DSEMI, _A_REDIRECT = "cmd", "emit", "check", "stop", "dsemi", "redirect"


def _line_actions(text: str, pieces: tuple, stop_at: int) -> tuple | None:
    """Compile the pieces of a line (_line_pieces) into the actions that emit its tokens as the general scan
    emits them. Everything but the connector before the line, the blocks open around it and the token
    waiting for a function body is known from the line's text; those are looked at when the actions run."""
    actions: list[tuple] = []
    end = len(text)
    seg: list | None = None  # the command being read: [start, words, redirections, connector]
    mode = "cmd"  # "cmd", "header" (for/select/case/function), "tail" (after a closer)
    kind = ""
    hstart = 0
    connector: str | None = None  # None: the connector before the line

    def close(seg: list, stop: int, background: bool) -> None:
        if mode == "header":
            actions.append(_header_action(text, seg, kind, hstart, stop))
        elif mode == "cmd" and seg[1]:
            body = text[seg[0] : stop].strip()
            actions.append((_A_CMD, seg[0], stop, tuple(seg[1]), tuple(seg[2]), background, body, seg[3]))
        else:  # pragma: no cover (a redirection comes after a word of the command)
            actions.extend([(_A_REDIRECT, at, fd) for at, fd in seg[2]])

    for what, start, stop, extra in pieces:
        if what == "w":
            if mode == "cmd" and seg is not None and seg[1]:
                seg[1].append(extra)  # the common case: a word after the first
                continue
        elif what == "r":
            assert seg is not None  # after a word of the command, or after a closer
            if mode == "tail":
                actions.append((_A_REDIRECT, start, extra))
            else:
                seg[2].append((start, extra))
            continue
        if what == "o" or what == "d":
            if seg is not None:
                close(seg, start, extra == "&")
            seg = None
            mode = "cmd"
            connector = _LINE_OPS[extra]
            if what == "d":
                actions.append((_A_DSEMI, stop, extra))
                return tuple(actions)
            if any(act[0] is _A_EMIT and act[1] == "CASE" for act in actions):
                # a case header ended by the operator (`case x; ...`) waits for its patterns (no other block
                # can: the general scan reads the patterns before the line path goes on)
                actions.append((_A_CHECK, stop, connector))
            continue
        if what == "f":
            name = text[start:stop]
            actions.append((_A_EMIT, "FUNC", name.strip() or name))
            seg = None
            continue
        w = extra
        if mode == "tail":
            continue
        if seg is None:
            seg = [start, [], [], connector]
        if mode == "header":
            seg[1].append(w)
            if kind == "case" and w == "in" and len(seg[1]) >= 3:
                actions.append(_header_action(text, seg, kind, hstart, stop))
                actions.append((_A_STOP, stop, connector))
                return tuple(actions)
            if kind == "function" and len(seg[1]) == 2:
                k = _NAME_PAREN.match(text, stop)
                actions.append((_A_EMIT, "FUNC", text[hstart : k.end() if k else stop].strip() or w))
                seg = None
                mode = "cmd"
            continue
        if not seg[1]:
            if w in SIMPLE_KEYWORDS or w in OPENERS_THEN_CMD:
                actions.append((_A_EMIT, SIMPLE_KEYWORDS.get(w) or OPENERS_THEN_CMD[w], w))
                seg = None
                connector = ""
                continue
            if w in CLOSERS:
                actions.append((_A_EMIT, CLOSERS[w], w))
                mode = "tail"
                continue
            if w in ("for", "select", "case", "function"):
                mode = "header"
                kind = w
                hstart = start
                seg[1].append(w)
                continue
        seg[1].append(w)
    if seg is not None:
        close(seg, end, False)
    if stop_at != end:  # pragma: no cover (the pieces end early at `;;` and `case ... in` only)
        return None
    return tuple(actions)


def _header_action(text: str, seg: list, kind: str, start: int, stop: int) -> tuple:
    """The token of a for/select/case/function header [start, stop) (ShellLexer._emit_header)."""
    header = text[start:stop].strip()
    if kind in ("for", "select"):
        return (_A_EMIT, "LOOP", header)
    if kind == "case":
        return (_A_EMIT, "CASE", header)
    return (_A_EMIT, "FUNC", header or (seg[1][1] if len(seg[1]) > 1 else ""))


_DELIMITER_LINES: dict = {}


def _delimiter_line(delimiter: str, strip_tabs: bool) -> re.Pattern:
    """The pattern of a here-document's closing line (a delimiter without newline), cached per process."""
    key = (delimiter, strip_tabs)
    pattern = _DELIMITER_LINES.get(key)
    if pattern is None:
        if len(_DELIMITER_LINES) >= 4096:
            _DELIMITER_LINES.clear()
        tabs = "\t*" if strip_tabs else ""
        pattern = _DELIMITER_LINES[key] = re.compile(f"^{tabs}{re.escape(delimiter)}$", re.MULTILINE)
    return pattern


# the method of ShellLexer that reads each special character (all others: `_on_plain`)
_DISPATCH = (
    (" \t", "_on_blank"),
    ("\n", "_on_newline"),
    ("#", "_on_hash"),
    ("\\", "_on_backslash"),
    ("'", "_on_single_quote"),
    ('"', "_on_double_quote"),
    ("`", "_on_backquote"),
    ("$", "_on_dollar"),
    (";", "_on_semicolon"),
    ("&", "_on_ampersand"),
    ("|", "_on_pipe"),
    ("<>", "_on_angle"),
    ("(", "_on_open_paren"),
    (")", "_on_close_paren"),
)
_HANDLERS = {c: getattr(ShellLexer, name) for chars, name in _DISPATCH for c in chars}
