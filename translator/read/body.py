"""The script body: line tokens (shell_lexer) -> block structure (grammars/sbatch.lark) -> ast.Statement.

The block structure is parsed by translator/read/block_parser.py with the grammar's LALR(1) tables,
generated at build time (tools/gen_block_table.py): nothing is built or cached at run time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections.abc import Sequence

from translator.diagnostics import Diagnostic, INFO, WARNING
from translator.read import ast
from translator.read.classify import classify
from translator.read.shell_lexer import LexToken, Segment, ShellLexer
from translator.read.words import _CACHE as _WORDS, assignment_parts, make_word
from translator.records import Record
from translator.tables import keep

R144_CSH_BODY = "R144"
R145_PARSER_FALLBACK = "R145"
R146_TOO_DEEP = "R146"

# Deeper nesting is flattened: real scripts nest a handful of levels, and consumers walk blocks recursively.
MAX_BLOCK_DEPTH = 100
# Here-documents that are job scripts are read as scripts, down to this many levels of scripts in scripts.
MAX_GENERATED_DEPTH = 3
_generated_depth = 0

_DECLARE_EXPORTING = {"declare", "typeset"}


@dataclass(init=False, repr=False, eq=False)
class ParsedBody(Record):
    statements: tuple[ast.Statement, ...] = ()
    diagnostics: list[Diagnostic] = field(default_factory=list)
    heredoc_lines: frozenset = frozenset()


# ---- AST building --------------------------------------------------------------------------------

# A simple command's statements depend on its raw words, on whether it has redirections and on whether it has
# here-documents, and otherwise only on its position and text (line, end_line, text, background, connector,
# redirections, which are copied in). `_recipe` works them out from the words once, in one of three forms:
#   a tuple (Word objects, kind): one Command with no `NAME=value` prefix (the common case);
#   a list of (NAME, Word, exported): Assignments only (`A=1`, `export A=1 B=2`);
#   a _Steps: anything else.
# `_add_recipe` makes the statements of a segment from its recipe. Recipes are immutable (their Words are
# shared) and the commands of a repository's scripts repeat, so they are kept per process by raw words, one
# table per (redirections, here-documents) case; bounded (16384 word lists of <= 32 words, 1 KB, each).
_PLAIN: dict[tuple[str, ...], object] = {}  # no redirection, no here-document
_REDIRECTED: dict[tuple[str, ...], object] = {}  # with redirections (here-documents or not)
_HEREDOC: dict[tuple[str, ...], object] = {}  # with here-documents only
_COMMANDS_LIMIT = 16384
_DECLARING = frozenset(("export", "declare", "typeset", "readonly", "local"))


class _Steps:
    """The general recipe: `prefix` is the (NAME, Word) of the `NAME=value` prefix words, made into Assignments
    (line of the segment, not exported) shared by the ops that use them; `ops` in order:
    (0, NAME, Word, exported): an Assignment; (1,): the prefix Assignments as statements;
    (2, words, kind, with_prefix): a Command (with the prefix Assignments, or none)."""

    __slots__ = ("prefix", "ops")

    def __init__(self, prefix: tuple[tuple[str, ast.Word], ...], ops: tuple[tuple, ...]):
        self.prefix = prefix
        self.ops = ops


def _recipe(words: tuple[str, ...], redirected: bool, heredoc: bool) -> object:
    """The recipe of a simple command from its raw words (see above): a pure function of its arguments."""
    prefix: list[tuple[str, ast.Word]] = []
    if words and "=" not in words[0]:
        rest = words  # the common case: no `NAME=value` prefix
    else:
        i = 0
        while i < len(words):
            parts = assignment_parts(words[i]) if "=" in words[i] else None
            if parts is None:
                break
            prefix.append(parts)
            i += 1
        rest = words[i:]
        if not rest and not redirected:
            return [(name, value, False) for name, value in prefix]
    known = _WORDS.get
    if rest and not redirected and not heredoc:
        prog = (known(rest[0]) or make_word(rest[0])).value
        if prog in _DECLARING:
            return _declaration(prog, prefix, rest)
    word_objs = tuple([known(w) or make_word(w) for w in rest])
    argv = [w.value for w in word_objs]
    kind = classify(argv) if argv else ast.OTHER
    if not prefix:
        return (word_objs, kind)
    return _Steps(tuple(prefix), ((2, word_objs, kind, True),))


def _declaration(prog: str, prefix: list[tuple[str, ast.Word]], rest: tuple[str, ...]) -> object:
    """The recipe of export/declare/typeset/readonly/local (`prog`, the value of rest[0]) with no redirection
    or here-document: its `NAME=value` words are assignments; the Words of the command itself are only made
    when it is a Command."""
    exported = prog == "export" or (
        prog in _DECLARE_EXPORTING
        and any(
            a.startswith("-") and "x" in a and not a.startswith("+")
            for a in [(_WORDS.get(w) or make_word(w)).value for w in rest[1:]]
        )
    )
    assigned: list[tuple[str, ast.Word, bool]] = []
    leftovers = False
    for raw in rest[1:]:
        if raw.startswith("-") or raw.startswith("+"):
            leftovers = leftovers or prog == "export"
            continue
        parts = assignment_parts(raw)
        if parts is not None:
            assigned.append((parts[0], parts[1], exported))
        elif prog == "export":
            leftovers = True
    command = None
    if prog == "export" and (leftovers or len(rest) == 1):
        command = (2, tuple([_WORDS.get(w) or make_word(w) for w in rest]), ast.EXPORT, False)
    elif prog != "export" and not assigned:
        command = (2, tuple([_WORDS.get(w) or make_word(w) for w in rest]), ast.OTHER, True)
    if command is None and not prefix:
        return assigned
    ops: list[tuple] = [(1,)] if prefix else []
    ops.extend([(0, name, value, exp) for name, value, exp in assigned])
    if command is not None:
        ops.append(command)
    return _Steps(tuple(prefix), tuple(ops))


def _add_command(seg: Segment, out: list) -> None:
    """Append the statements of a simple command (Command, or Assignment(s) for assignment-only lines and
    `export`) to out."""
    if seg.redirections:
        table = _REDIRECTED
    elif seg.heredocs:
        table = _HEREDOC
    else:
        table = _PLAIN
    key = tuple(seg.words)
    recipe = table.get(key)
    if recipe is None:
        recipe = _recipe(key, bool(seg.redirections), bool(seg.heredocs))
        if len(key) <= 32 and sum(map(len, key)) <= 1024:
            keep(table, key, recipe, _COMMANDS_LIMIT)
    _add_recipe(recipe, seg, out)


def _add_recipe(recipe, seg: Segment, out: list) -> None:
    """Append the statements a recipe gives for a segment to out."""
    line = seg.line
    if recipe.__class__ is tuple:
        out.append(
            ast.Command(
                line,
                seg.end_line,
                seg.text,
                recipe[0],
                recipe[1],
                (),
                seg.background,
                seg.connector,
                tuple(seg.redirections),
            )
        )
        return
    if recipe.__class__ is list:
        Assignment = ast.Assignment
        for name, value, exported in recipe:
            out.append(Assignment(line, name, value, exported))
        return
    prefix = tuple([ast.Assignment(line, name, value, False) for name, value in recipe.prefix])
    for op in recipe.ops:
        code = op[0]
        if code == 0:
            out.append(ast.Assignment(line, op[1], op[2], op[3]))
        elif code == 1:
            out.extend(prefix)
        else:
            out.append(
                ast.Command(
                    line,
                    seg.end_line,
                    seg.text,
                    op[1],
                    op[2],
                    prefix if op[3] else (),
                    seg.background,
                    seg.connector,
                    tuple(seg.redirections),
                )
            )


def _command_from_segment(seg: Segment) -> list[ast.Statement]:
    """A simple command -> Command, or Assignment(s) for assignment-only lines and `export`."""
    out: list[ast.Statement] = []
    _add_command(seg, out)
    return out


def _segment_statements(seg: Segment) -> list[ast.Statement]:
    stmts: list[ast.Statement] = []
    _add_command(seg, stmts)
    if not seg.heredocs:
        return stmts
    cmd = next((s for s in stmts if isinstance(s, ast.Command)), None)
    hd = seg.heredocs[0]
    generated = None
    global _generated_depth
    if hd.body.startswith("#!") and _generated_depth < MAX_GENERATED_DEPTH:
        from translator.read import read_script  # a job script written by this one (generator idiom)

        _generated_depth += 1
        try:
            generated = read_script(hd.body.encode("utf-8", "surrogatepass"), f"<here-document at line {hd.line}>")
        finally:
            _generated_depth -= 1
    block = ast.Block(
        "heredoc",
        seg.line,
        max(hd.end_line, seg.end_line),
        seg.text,
        (),
        hd.body,
        hd.delimiter,
        cmd,
        hd.body_start,
        generated,
    )
    kept: list[ast.Statement] = [s for s in stmts if not isinstance(s, ast.Command)]
    return kept + [block]


class _Builder:
    def __init__(self, tokens: Sequence[LexToken], lines: Sequence[str]):
        self.tokens = tokens
        self.lines = lines

    def tok(self, t) -> LexToken:
        return self.tokens[int(t)]

    def stmts(self, children) -> list[ast.Statement]:
        out: list[ast.Statement] = []
        for ch in children:
            if isinstance(ch, list):
                out.extend(ch)
            elif isinstance(ch, ast.Block):
                out.append(ch)
            else:
                tok = self.tokens[int(ch)]
                if isinstance(tok, _Run):
                    out.extend(_flat_fallback(tok.tokens))
                elif tok.type == "CMD":
                    assert tok.segment is not None  # the lexer gives every CMD token its segment
                    out.extend(_segment_statements(tok.segment))
                elif tok.type == "COMMENT":
                    out.append(ast.Comment(tok.line, tok.text))
        return out

    def header_text(self, tok: LexToken) -> str:
        if 0 < tok.line <= len(self.lines):
            return self.lines[tok.line - 1].strip()
        return tok.text

    def block(self, kind: str, children) -> ast.Block:
        first = self.tok(children[0]) if not isinstance(children[0], (list, ast.Block)) else None
        last_tok = None
        for ch in reversed(children):
            if not isinstance(ch, (list, ast.Block)) and self.tokens[int(ch)].type in (
                "FI",
                "DONE",
                "ESAC",
                "RBRACE",
                "RPAREN",
            ):
                last_tok = self.tokens[int(ch)]
                break
        inner = [
            c
            for c in children[1:]
            if isinstance(c, (list, ast.Block)) or self.tokens[int(c)].type in ("CMD", "COMMENT")
        ]
        stmts = self.stmts(inner)
        line = first.line if first else 0
        end = last_tok.end_line if last_tok else (stmts[-1].line if stmts else line)
        return ast.Block(kind, line, max(end, line), self.header_text(first) if first else "", tuple(stmts))


def _build(tree, tokens: Sequence[LexToken], lines: Sequence[str]) -> list[ast.Statement]:
    b = _Builder(tokens, lines)

    def conv(node):
        """Tree -> list of flat children for the parent (Blocks, token indices, lists)."""
        data = node.data
        kids = []
        for ch in node.children:
            if hasattr(ch, "data"):
                kids.append(conv(ch))
            else:
                kids.append(ch)
        if data == "if_block":
            return b.block("if", _flatten_parts(kids))
        if data in ("elif_part", "else_part", "case_item"):
            return kids
        if data == "loop_block":
            tok = b.tok(kids[0])
            word = tok.text.split()[0] if tok.text.split() else "for"
            kind = {"for": "for", "select": "for", "while": "while", "until": "until"}.get(word, "for")
            return b.block(kind, kids)
        if data == "case_block":
            return b.block("case", _flatten_parts(kids))
        if data == "group":
            return b.block("group", kids)
        if data == "subshell":
            return b.block("subshell", kids)
        if data == "func_def":
            ftok = b.tok(kids[0])
            body = [k for k in kids[1:] if isinstance(k, ast.Block)]
            inner = body[0] if body else None
            children = (inner,) if inner is not None else ()
            end = inner.end_line if inner is not None else ftok.line
            return ast.Block("function", ftok.line, end, b.header_text(ftok), children)
        return kids

    top = conv(tree)
    conv = None  # type: ignore[assignment]  # `conv` refers to itself through its closure: break that cycle
    return b.stmts(top)


def _flatten_parts(kids):
    out = []
    for k in kids:
        if isinstance(k, list):
            out.extend(k)
        else:
            out.append(k)
    return out


_SIMPLE_TYPES = frozenset(("CMD", "COMMENT"))


@dataclass(init=False, repr=False, eq=False)
class _Run(Record):
    """Consecutive simple statements, fed to the LALR parser as one CMD token."""

    tokens: list[LexToken]
    type: str = "CMD"

    def __init__(self, tokens: list[LexToken], type: str = "CMD"):
        self.tokens = tokens
        self.type = type

    @property
    def line(self) -> int:
        return self.tokens[0].line

    @property
    def end_line(self) -> int:
        return self.tokens[-1].end_line


def _compress_runs(tokens: Sequence[LexToken]) -> list:
    out: list = []
    run: list[LexToken] = []
    for t in tokens:
        if t.type in _SIMPLE_TYPES:
            run.append(t)
            continue
        if run:
            out.append(_Run(run))
            run = []
        out.append(t)
    if run:
        out.append(_Run(run))
    return out


def _flat_fallback(tokens: Sequence[LexToken]) -> list[ast.Statement]:
    """The statements of the CMD and COMMENT tokens (other tokens give none)."""
    out: list[ast.Statement] = []
    i = 0
    n = len(tokens)
    while i < n:
        i = _add_run(tokens, i, out) + 1  # skips the token that ends the run
    return out


def _add_run(tokens: Sequence[LexToken], i: int, out: list) -> int:
    """Append the statements of the run of CMD and COMMENT tokens from tokens[i] on to out; return the index
    of the first token after the run."""
    plain = _PLAIN
    Command = ast.Command
    Assignment = ast.Assignment
    append = out.append
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        kind = tok.type
        if kind == "CMD":
            seg = tok.segment
            if seg is None:
                pass
            elif not seg.redirections and not seg.heredocs:
                recipe = plain.get(tuple(seg.words))
                if recipe.__class__ is tuple:  # the common case, inline: one Command with no prefix
                    append(
                        Command(
                            seg.line,
                            seg.end_line,
                            seg.text,
                            recipe[0],
                            recipe[1],
                            (),
                            seg.background,
                            seg.connector,
                            (),
                        )
                    )
                elif recipe.__class__ is list:  # Assignments only
                    for name, value, exported in recipe:
                        append(Assignment(seg.line, name, value, exported))
                elif recipe is not None:
                    _add_recipe(recipe, seg, out)
                else:
                    _add_command(seg, out)
            elif seg.heredocs:
                out.extend(_segment_statements(seg))
            else:
                _add_command(seg, out)
        elif kind == "COMMENT":
            append(ast.Comment(tok.line, tok.text))
        else:
            return i
        i += 1
    return n


# Block trees by token-type sequence: the tree depends on the types only (tokens appear as their indices)
# and is only read, and scripts of a repository share their shapes. Per process, bounded (256 sequences
# of at most 128 types: a few MB at most).
_TREES: dict[tuple[str, ...], object] = {}
_TREES_LIMIT = 256


def _parse_blocks(types: tuple[str, ...]):
    tree = _TREES.get(types)
    if tree is None:
        from translator.read.block_parser import parse  # only scripts with blocks pay for it

        tree = parse(types)
        if len(types) <= 128:
            keep(_TREES, types, tree, _TREES_LIMIT)
    return tree


_OPENERS = frozenset(("IF", "LOOP", "CASE", "LBRACE", "LPAREN"))
_CLOSERS = frozenset(("FI", "DONE", "ESAC", "RBRACE", "RPAREN"))


def _build_blocks(runs: list, lines: Sequence[str]) -> list[ast.Statement]:
    """The statements of the token stream, one top-level statement at a time: the body is `_stmt*`, so its
    tree is the trees of its top-level statements side by side, and each compound statement is parsed (or
    found in _TREES) on its own, its tokens numbered from 0. A run of simple statements needs no parse.
    A stream that is not a sentence of the grammar raises as a whole parse would (some statement is not)."""
    out: list[ast.Statement] = []
    depth = 0
    start = 0
    func = False  # a FUNC at the top level, waiting for its compound command
    for k, t in enumerate(runs):
        kind = t.type
        if kind in _OPENERS:
            depth += 1
        elif kind in _CLOSERS:
            depth -= 1
        elif kind == "FUNC" and depth == 0:
            func = True
            continue
        if depth:
            continue
        if k == start and isinstance(t, _Run):
            out.extend(_flat_fallback(t.tokens))
        else:
            part = runs[start : k + 1]
            out.extend(_build(_parse_blocks(tuple([r.type for r in part])), part, lines))
        start = k + 1
        func = False
    if start < len(runs) or func:  # an unfinished statement: the parser says where
        part = runs[start:]
        out.extend(_build(_parse_blocks(tuple([r.type for r in part])), part, lines))
    return out


# ---- the fast path of the block structure ---------------------------------------------------------------
#
# `_statements` gives what `_build_blocks(_compress_runs(tokens), lines)` gives (tests/test_fast_paths_read.py
# checks it) in one pass over the tokens: a run of simple statements at the top level is built where it
# stands, and each compound statement is built from the plan of its token types (`_plan`: the parse tree,
# worked out once per type sequence into what `_build` does with it). A stream that is not a sentence of the
# grammar is handed to `_build_blocks`, which raises (or not) as it always did.

# Plans by token-type sequence (runs of simple tokens are one "CMD"), per process, bounded like _TREES.
# A plan is a list of items: an int (a run of simple tokens, or a token that gives no statement) or a block:
# ("B", kind, first, last, inner) with kind None for a loop (its kind is in its first token's text), first the
# opening token, last the closing one (or None), inner the items inside; or ("F", name token, block or None).
_PLANS: dict[tuple[str, ...], list] = {}
_STATEMENT_TYPES = frozenset(("CMD", "COMMENT"))
_LOOP_KINDS = {"for": "for", "select": "for", "while": "while", "until": "until"}


def _plan(types: tuple[str, ...]) -> list:
    plan = _PLANS.get(types)
    if plan is None:
        from translator.read.block_parser import parse  # only scripts with blocks pay for it

        top = _compile(parse(types), types)
        assert isinstance(top, list)  # the start rule gives a list
        plan = [c for c in top if c.__class__ is not int or types[c] in _STATEMENT_TYPES]
        if len(types) <= 128:
            keep(_PLANS, types, plan, _TREES_LIMIT)
    return plan


def _compile(node, types: tuple[str, ...]):
    """What _build's `conv` gives for a node, with blocks as plans (see _PLANS)."""
    data = node.data
    kids = [ch if ch.__class__ is int else _compile(ch, types) for ch in node.children]
    if data == "if_block":
        return _block_plan("if", _flatten_parts(kids), types)
    if data in ("elif_part", "else_part", "case_item"):
        return kids
    if data == "loop_block":
        return _block_plan(None, kids, types)
    if data == "case_block":
        return _block_plan("case", _flatten_parts(kids), types)
    if data == "group" or data == "subshell":
        return _block_plan(data, kids, types)
    if data == "func_def":
        body = [k for k in kids[1:] if k.__class__ is tuple]
        return ("F", kids[0], body[0] if body else None)
    return kids


def _block_plan(kind: str | None, children: list, types: tuple[str, ...]) -> tuple:
    """What _Builder.block does with the children, as a plan (a child list never gets here: the grammar only
    has elif_part, else_part and case_item inside the blocks that flatten them)."""
    first = children[0] if children[0].__class__ is int else None
    last = next((c for c in reversed(children) if c.__class__ is int and types[c] in _CLOSERS), None)
    inner = [c for c in children[1:] if c.__class__ is not int or types[c] in _STATEMENT_TYPES]
    assert not any(c.__class__ is list for c in inner)
    return ("B", kind, first, last, inner)


def _add_planned(plan: list, tokens: Sequence[LexToken], items: list[int], lines: Sequence[str], out: list) -> None:
    """Append the statements of a compound statement to out: `items` are the offsets in `tokens` of the
    elements its plan numbers (a run of simple tokens: its first token)."""
    for c in plan:
        if c.__class__ is int:
            _add_run(tokens, items[c], out)
        else:
            out.append(_planned_block(c, tokens, items, lines))


def _planned_block(plan: tuple, tokens: Sequence[LexToken], items: list[int], lines: Sequence[str]) -> ast.Block:
    if plan[0] == "F":
        ftok = tokens[items[plan[1]]]
        inner = _planned_block(plan[2], tokens, items, lines) if plan[2] is not None else None
        return ast.Block(
            "function",
            ftok.line,
            inner.end_line if inner is not None else ftok.line,
            _header_text(ftok, lines),
            (inner,) if inner is not None else (),
        )
    _, kind, first, last, inner_plan = plan
    stmts: list[ast.Statement] = []
    for c in inner_plan:
        if c.__class__ is int:
            _add_run(tokens, items[c], stmts)
        else:
            stmts.append(_planned_block(c, tokens, items, lines))
    if first is None:
        line = 0
        text = ""
    else:
        ftok = tokens[items[first]]
        line = ftok.line
        text = _header_text(ftok, lines)
        if kind is None:
            words = ftok.text.split()
            kind = _LOOP_KINDS.get(words[0], "for") if words else "for"
    end = tokens[items[last]].end_line if last is not None else (stmts[-1].line if stmts else line)
    return ast.Block(kind or "for", line, max(end, line), text, tuple(stmts))


def _header_text(tok: LexToken, lines: Sequence[str]) -> str:
    if 0 < tok.line <= len(lines):
        return lines[tok.line - 1].strip()
    return tok.text


def _statements(tokens: Sequence[LexToken], lines: Sequence[str]) -> list[ast.Statement]:
    """The statements of the token stream (see above)."""
    out: list[ast.Statement] = []
    simple = _SIMPLE_TYPES
    n = len(tokens)
    i = _add_run(tokens, 0, out)  # the simple statements at the top level are built where they stand
    while i < n:
        # a compound statement: the offsets of its elements (a run of simple tokens is one) and their types,
        # up to where the depth is 0 again (after a FUNC at depth 0: to the end of the compound that follows)
        items: list[int] = []
        types: list[str] = []
        depth = 0
        j = i
        done = False
        while j < n:
            kind = tokens[j].type
            items.append(j)
            j += 1
            if kind in simple:
                while j < n and tokens[j].type in simple:
                    j += 1
                types.append("CMD")
                if depth == 0:  # not a sentence (e.g. FUNC then a command)
                    return _build_blocks(_compress_runs(tokens), lines)
                continue
            types.append(kind)
            if kind in _OPENERS:
                depth += 1
            elif kind in _CLOSERS:
                depth -= 1
            elif kind == "FUNC" and depth == 0:
                continue
            if depth == 0:
                done = True
                break
        if not done:  # an unfinished statement
            return _build_blocks(_compress_runs(tokens), lines)
        _add_planned(_plan(tuple(types)), tokens, items, lines, out)
        i = _add_run(tokens, j, out)
    return out


def _csh_statements(lines: Sequence[str], start: int) -> list[ast.Statement]:
    """csh/tcsh: one opaque command per logical line (`\\` continuations joined), classified by program.

    `setenv NAME value` becomes an exported Assignment and `set NAME = value` a plain one.
    """
    out: list[ast.Statement] = []
    number = start
    total = len(lines)
    while number <= total:
        first = number
        text = lines[number - 1]
        while text.endswith("\\") and number < total:
            number += 1
            text = text[:-1] + " " + lines[number - 1]
        number += 1
        stripped = text.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            out.append(ast.Comment(first, stripped))
            continue
        for part in stripped.split(";"):
            raw = [w for w in re.split(r"[ \t]+", part) if w]  # csh blanks: space and tab only
            if not raw:
                continue
            if raw[0] == "setenv" and len(raw) >= 2:
                out.append(ast.Assignment(first, raw[1], make_word(" ".join(raw[2:])), True))
                continue
            if raw[0] == "set" and len(raw) >= 2 and "=" in part:
                name, _, value = part.strip()[3:].partition("=")
                out.append(ast.Assignment(first, name.strip(), make_word(value.strip()), False))
                continue
            words = tuple(make_word(w) for w in raw)
            out.append(ast.Command(first, number - 1, part.strip(), words, classify([w.value for w in words])))
    return out


def parse_body(lines: Sequence[str], start: int, shell: str = "bash") -> ParsedBody:
    """Parse lines[start-1:] (start is 1-based: the first command line). Never raises."""
    text = "\n".join(lines[start - 1 :])
    diags: list[Diagnostic] = []
    if shell in ("csh", "tcsh"):
        diags.append(
            Diagnostic(
                INFO,
                R144_CSH_BODY,
                f"{shell} script: the header is read exactly as sbatch reads it, the body "
                "is modelled loosely (csh syntax is not bash)",
                start,
            )
        )
    if shell in ("csh", "tcsh"):
        return ParsedBody(tuple(_csh_statements(lines, start)), diags, frozenset())
    lexer = ShellLexer(text, start).run()
    diags.extend(lexer.diagnostics)
    tokens = lexer.tokens
    statements: list[ast.Statement]
    if lexer.max_depth > MAX_BLOCK_DEPTH:
        diags.append(
            Diagnostic(
                WARNING,
                R146_TOO_DEEP,
                f"blocks are nested {lexer.max_depth} levels deep (more than "
                f"{MAX_BLOCK_DEPTH}); the commands are listed without their blocks",
                start,
            )
        )
        return ParsedBody(tuple(_flat_fallback(tokens)), diags, frozenset(lexer.heredoc_lines))
    try:
        statements = _statements(tokens, lines)
    except Exception as exc:  # the lexer balances the stream, so this is a safety net only
        diags.append(
            Diagnostic(
                WARNING,
                R145_PARSER_FALLBACK,
                f"block structure not recognised ({type(exc).__name__}); commands are listed without their blocks",
                start,
            )
        )
        statements = _flat_fallback(tokens)
    return ParsedBody(tuple(statements), diags, frozenset(lexer.heredoc_lines))
