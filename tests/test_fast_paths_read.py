"""The fast paths of the reader give exactly what its general paths give (issue 13).

The shell lexer reads a simple command line, or a word, with one regular expression when it can
(`ShellLexer(fast=True)`, the default); `fast=False` runs the general character-class scan only. Both must
produce the same tokens, segments, here-documents, diagnostics and line numbers on any text, in particular
on the quotes, `$'...'`, backslashes, non-ASCII blanks and comments where the fast patterns stop.
"""

from __future__ import annotations

from hypothesis import given, strategies as st

import strategies as S

from translator.read.shell_lexer import ShellLexer

# fragments chosen to hit the borders of the fast patterns: every quote and expansion form, escapes at
# ends of words and lines, operators, reserved words, `#` inside and at the start of words, whitespace
# that is a blank for str.split but not for the shell, heredocs and blocks
_FRAGMENTS = [
    "echo",
    "export",
    "srun",
    "A=1",
    "x",
    "é",
    "[[",
    "]]",
    "[",
    "]",
    "!",
    "{",
    "}",
    "if",
    "then",
    "elif",
    "else",
    "fi",
    "for",
    "in",
    "do",
    "done",
    "while",
    "case",
    "esac",
    "function",
    "f()",
    "(",
    ")",
    "((",
    "))",
    " ",
    "  ",
    "\t",
    "\n",
    "\n",
    "\n",
    "\r",
    "\x0b",
    "\xa0",
    "\u2003",
    "#",
    "#c",
    "a#b",
    "'",
    "'a b'",
    "''",
    '"',
    '"a b"',
    '"$x"',
    '"${x}"',
    '"${x:-"y"}"',
    '"$(date)"',
    '"\\""',
    '"a\\\nb"',
    '"$"',
    "$",
    "$x",
    "${x}",
    "${x",
    "${a{b}}",
    "$'a\\'b'",
    "$'",
    '$"t"',
    "$(",
    "$(cmd)",
    "$((1+2))",
    "`date`",
    "`",
    "\\",
    "\\\n",
    "\\ ",
    "\\'",
    "\\$",
    ";",
    ";;",
    "&",
    "&&",
    "||",
    "|",
    "|&",
    ">",
    ">out",
    "2>&1",
    "<<EOF",
    "<<-'E'",
    "<<''",
    "<<E",
    "EOF",
    "E",
    "\tE",
    "&>log",
    "<(x)",
]


def _lex(text: str, fast: bool):
    lx = ShellLexer(text, 3, fast=fast).run()
    return lx.tokens, lx.diagnostics, lx.heredoc_lines, lx.max_depth


def _same(text: str) -> None:
    assert _lex(text, True) == _lex(text, False), repr(text)


@S.fuzz_settings(1000)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=40).map("".join))
def test_lexer_fast_paths_match_the_general_scan_on_fragments(text):
    _same(text)


@S.fuzz_settings(375)
@given(st.text(alphabet=" \t\n\\'\"$`{}()[]#;&|<>!=ax\xa0é", max_size=60))
def test_lexer_fast_paths_match_the_general_scan_on_any_text(text):
    _same(text)


def test_lexer_fast_paths_on_chosen_cases():
    for text in [
        "",
        "\n",
        "echo hi",
        "echo hi\n",
        "echo hi   \n\n",
        "  echo  a\tb  ",
        "echo a #c\n",
        "echo a#b\n",
        "echo 'a\nb' c\nls\n",
        'echo "a\\\nb"\nls\n',
        "echo a\\\nb\n",
        "echo a \\\n b\n",
        "cat <<EOF; echo x\nbody\nEOF\necho after\n",
        "cat <<EOF\nbody\nEOF",
        "cat <<E\nE",
        "cat <<E\n",
        "cat <<E",
        "cat <<E\nxE\n E\nE \nE\nafter\n",
        "cat <<-E\n\t\tE\nafter\n",
        "cat <<''\nx\n\nafter\n",
        "cat <<''\nx\n",
        "cat <<'a.*b'\naxxb\na.*b\n",
        "cat <<A <<-B\na\nA\n\tb\n\tB\nx\n",
        "then\nfi\n{\n}\ndone\nesac\nelse\ndo\n",
        "case x in\na) if y; then\nz\nfi\n;;\nb) echo\nesac\n",
        "[[ -n $x ]] && echo y\n",
        "[[x y\n",
        "! true\n",
        "{ echo; }\n",
        "f() { echo; }\n",
        "f () { echo; }\nf\n",
        "function g { echo; }\n",
        "case $x in a) echo a ;; *) echo b ;; esac\n",
        "for i in 1 2; do echo $i; done\n",
        "if true; then echo; elif false; then :; else :; fi\n",
        "echo \xa0x\u2003y\r\n",
        "echo ${x\n",
        'echo "unterminated\n',
        "echo 'unterminated\n",
        "echo $\n",
        "echo \\",
        "x" * 5000 + " " + "'y'" * 500 + "\n",
        "echo " + "a b " * 2000 + "#\n",
        'echo "' + "a b " * 2000 + "\n",
    ]:
        _same(text)


# ---- read/classify.py: the kinds of argvs seen before come from a per-process table ----------------------

_ARGV_WORDS = st.sampled_from(
    ["python", "python3", "-m", "pip", "install", "srun", "torchrun", "conda", "run", "-n", "env", "A=1", "time"]
    + ["-u", "module", "load", "source", "bin/activate", "uv", "accelerate", "launch", "config", "x.py", "--", ""]
)


@S.fuzz_settings(375)
@given(st.lists(_ARGV_WORDS, max_size=8))
def test_classify_table_gives_what_classification_gives(argv):
    from translator.read.classify import _classify_argv, classify

    want = _classify_argv(list(argv))
    assert classify(argv) == want
    assert classify(list(argv)) == want  # now from the table


def test_classify_table_skips_long_argvs():
    from translator.read.classify import _KINDS, classify

    argv = ["srun", "python", "train.py"] + [f"--opt{i}" for i in range(40)]
    assert classify(argv) == "launch"
    assert tuple(argv) not in _KINDS


# ---- read/block_parser.py: a long run of statements splices its children in place -----------------------


def test_block_parser_long_sequences_keep_every_token_in_order():
    from translator.read.block_parser import parse

    types = ["CMD", "IF", "CMD", "THEN", "CMD", "FI"] * 300 + ["COMMENT"] * 50
    tree = parse(types)
    seen: list[int] = []

    def walk(node):
        for ch in node.children:
            if isinstance(ch, int):
                seen.append(ch)
            else:
                walk(ch)

    walk(tree)
    assert seen == list(range(len(types)))


# ---- slurm/kinds.py: accepted option values are parsed once per process ---------------------------------


@S.fuzz_settings(200)
@given(
    st.sampled_from(["count", "time", "mem", "nodes", "gres", "gpus", "signal", "mail_type", "exclusive", "string"]),
    st.sampled_from(["1", "4", "0", "-1", "1-2", "2:00:00", "1-00:00:00", "64G", "gpu:4", "gpu:a100:2", "B:USR1@120"])
    | st.text(alphabet="0123456789:-,gpuGMBALnoe@", max_size=10),
)
def test_parsed_value_table_gives_what_the_parser_gives(kind, value):
    from translator.slurm import values as V
    from translator.slurm.kinds import PARSERS, parse

    def run(f):
        try:
            return f()
        except V.InvalidValue as exc:
            return ("refused", str(exc))

    want = run(lambda: PARSERS[kind](value, "opt", lambda m: None))
    assert run(lambda: parse(kind, value, "opt", lambda m: None)) == want
    assert run(lambda: parse(kind, value, "opt", lambda m: None)) == want  # second time: from the table


def test_parsed_value_table_keeps_notes_and_refusals():
    import pytest

    from translator.slurm import values as V
    from translator.slurm.kinds import parse

    notes: list[str] = []
    for _ in range(2):
        parse("power", "bogus", "power", notes.append)
    assert len(notes) == 2  # reported each time
    for _ in range(2):
        with pytest.raises(V.InvalidValue):
            parse("count", "x", "nodes", notes.append)


@S.fuzz_settings(125)
@given(st.text(alphabet="a\nb \t\r", max_size=40))
def test_newline_offsets(text):
    from translator.read.shell_lexer import _newline_offsets

    assert _newline_offsets(text) == [i for i, c in enumerate(text) if c == "\n"]


# ---- read/body.py: block trees and plans are kept per token-type sequence ------------------------------------------


def test_block_tree_table_gives_each_script_its_own_statements():
    from translator.read import body, read_script

    a = "#!/bin/bash\nif true; then\n  echo a\nfi\nfor i in 1 2; do\n  srun x $i\ndone\n"
    b = "#!/bin/bash\nif false; then\n  A=1 python t.py\nfi\nwhile read l; do\n  export B=$l\ndone\n"
    first = [read_script(t.encode(), "s.sbatch").body for t in (a, b, a)]
    body._TREES.clear()
    body._PLANS.clear()
    again = [read_script(t.encode(), "s.sbatch").body for t in (b, a)]
    assert first[0] == first[2] == again[1]
    assert first[1] == again[0]
    assert first[0] != first[1]


# ---- read/shell_lexer.py: whole lines with operators, $(...), [[ ]], headers and function definitions -----

_LINE_FRAGMENTS = [
    "echo",
    "x",
    "A=$(hostname)",
    '"$x"',
    '"${x:-a}"',
    "${x}",
    "$(date +%s)",
    '"[$(date +%H:%M:%S)] $*"',
    '$(scontrol show hostnames "$L" | head -n 1)',
    "$((N * 4))",
    "$((a) + 1)",
    "$( (x) )",
    "$(a #b)",
    "$(a 'b)')",
    '$(a "$(b)")',
    "$(cat <<E",
    "`d`",
    "$'a\\'b'",
    "\\x",
    "[[",
    "]]",
    "]]]",
    "[",
    "]",
    "-n",
    "==",
    "'a;b'",
    '"a|b"',
    "if",
    "elif",
    "then",
    "while",
    "until",
    "do",
    "else",
    "fi",
    "done",
    "esac",
    "for",
    "select",
    "in",
    "case",
    "function",
    "f()",
    "()",
    "(",
    ")",
    "{",
    "}",
    "!",
    "#c",
    ";",
    ";;",
    ";&",
    "&&",
    "||",
    "|",
    "|&",
    "&",
    "&>x",
    ">x",
    "2>&1",
    ">>log",
    "> $(f)",
    ">",
    "<",
    "{v}>x",
    "<<E",
    "<<-'E'",
    "<<<x",
    "E",
    "\tE",
    "<(x)",
    ";;&",
    "a)",
    "\n",
    "é",
]


@S.fuzz_settings(750)
@given(st.lists(st.tuples(st.sampled_from(_LINE_FRAGMENTS), st.sampled_from([" ", " ", "", "\t", "\n"])), max_size=24))
def test_lexer_line_fast_path_matches_the_general_scan(parts):
    _same("".join(f + sep for f, sep in parts))


def test_lexer_line_fast_path_on_chosen_cases():
    for text in [
        "if [ $? -ne 0 ]; then\n  echo failed\nfi\n",
        'if [[ "$P" == "debug" ]]; then\n  x\nelif [[ -n "${R:-}" ]]; then\n  y\nfi\n',
        "[[ a && b ]] || echo no\n",
        "[[ $x =~ ^(a|b)$ ]] && echo y\n",
        "[[ x ]]) y\n",
        "[[ x\n",
        "for seed in 98 37; do\n  srun t --seed $seed &\ndone\nwait\n",
        "select x in a b; do break; done\n",
        'case "${ID:-0}" in\n  0) C=a ;;\n  *) C=b ;;\nesac\n',
        "case x in a) echo ;; esac\n",
        "case x\nin\na) y;;\nesac\n",
        # an operator ending a case header at the end of its line: its connector reaches the next command
        "case &&\n() echo \n",
        "case x ||\n p) echo ;;\nesac\n",
        "a &&\ncase x in\np) echo\n;; esac\n",
        'log() {\n  echo "[$(date +%H:%M:%S)] $*"\n}\n',
        "log () { echo; }\n",
        "if() { echo; }\n",
        "function check_gpu {\n  nvidia-smi || exit 1\n}\n",
        "function f () { :; }\n",
        "function f() { :; }\n",
        "function\n",
        'head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n',
        "accelerate launch --num_processes $((SLURM_NNODES * 4)) train.py\n",
        'rm -rf "${TMPDIR:?}"/* || true\n',
        "a & b && c || d | e ; f\n",
        "a &| b\n",
        "then echo x; fi; done\n",
        "fi x y; echo z\n",
        "echo a; #c\n",
        "x=$(a 'b') y=\"$(c)\" z\n",
        "echo é; echo ü\n",
        "echo a\\ \n",
        'cat > "$RUN_DIR/a.yaml" <<EOF\nx: 1\nEOF\necho done\n',
        "cat > x <<'EOF' && echo y\n$z\nEOF\n",
        "pip install -q datasets>=2.14 2>&1 | tail -n 1\n",
        "python t.py >> log 2>&1 &\n",
        "done > log; echo x\n",
        "while read l; do\n  echo $l\ndone < list.txt\n",
        "case $x in\n  a) C=1 ;;\n  b) C=2 ;&\n  *) C=3 ;;&\nesac\n",
        "echo a ;; echo b\n",
        "cat>x\n",
        "2>x cmd\n",
        "cmd >(tee x)\n",
        "cmd > x<y\n",
    ]:
        _same(text)


# ---- read/shell_lexer.py: the per-process table of lines, whole lines as keys, continued commands ---------

# whole lines as scripts write them (and some that the line path must leave to the general scan), to be
# combined with indentation and repeated, so that the same text is read from the table in other contexts
_WHOLE_LINES = [
    "module load cuda/12.1",
    'export DATA_DIR="/scratch/$USER/x-$SLURM_JOB_ID"',
    "export A='b c'",
    "echo hi   ",
    "srun torchrun \\",
    "--nnodes 2 --nproc_per_node 4 \\",
    '--rdzv_endpoint "$head_ip:29500" \\',
    "train.py --config c.yaml",
    "a\t\\",
    "a\\",
    "a \\\\",
    "\\",
    " \\",
    "if [ -z x ]; then",
    "then",
    "fi",
    "done",
    "do",
    "else",
    "{",
    "}",
    "f() {",
    "function g {",
    "for s in 1 2; do",
    "case $x in",
    "a) echo a ;;",
    "esac",
    "cd /x || exit 1",
    "cat <<E",
    "cat > f <<'E' && echo x",
    "E",
    "# c \\",
    "#",
    "",
    "   ",
    "echo é \\",
    "echo \"a b\" 'c d'",
    'log "$(date)" \\',
]


@S.fuzz_settings(500)
@given(st.lists(st.tuples(st.sampled_from(["", "  ", "\t", "    "]), st.sampled_from(_WHOLE_LINES)), max_size=16))
def test_lexer_line_table_matches_the_general_scan(lines):
    text = "\n".join(indent + line for indent, line in lines)
    _same(text)
    _same(text + "\n")
    _same(text + "\n" + text)  # the same lines again, from the table, in another context


def test_lexer_line_table_on_chosen_cases():
    from translator.read import shell_lexer

    cases = [
        "srun torchrun \\\n    --nnodes 2 \\\n    train.py --a b\necho done\n",
        "srun torchrun \\\n    --nnodes 2 \\\n    train.py --a b",
        "srun \\\n\\\n x\n",
        "srun \\\n\n x\n",
        "srun \\\n# c\n x\n",
        "srun \\\nthen\n",
        "srun \\\nif x; then\n",
        "srun \\",
        "srun \\\n",
        "a \\\n  b\t\\\n\tc  \n",
        "a\\\nb\n",
        "a \\\\\nb\n",
        "a \\\n b; c\n",
        "cat <<E; a \\\nb\nbody\nE\n",
        "f() \\\n{ echo; }\n",
        "f()\nsrun \\\n x\n",
        "echo x; srun \\\n x\n",
        "x=1 \\\n y=2\n",
        "case $x in\n  a) srun \\\n  b ;;\nesac\n",
        "then\n  echo a\nfi\n  then\n",
        "  echo a   \necho a   \n\techo a\n",
        "f() {\n  echo a\n}\nf() {\n  echo a\n}\n",
        "#!/bin/bash\n# c\n\n  # c\n",
        "case x; a) echo ;; esac\n",
        "case x y; echo; a) b;; esac\n",
        "if a; then case x; b) c;; esac; fi\n",
        "a; b \\\n c\n",
        "a && b \\\n  c \\\n  d\n",
        "case x; echo\n",
        "case x y; echo z\na) b;;\nesac\n",
    ]
    for text in cases:
        _same(text)
    # and again with a table so small that it turns over all the time
    saved = shell_lexer._LINES_LIMIT
    shell_lexer._LINES_LIMIT = 2
    try:
        for text in cases:
            _same(text)
            _same(text)
    finally:
        shell_lexer._LINES_LIMIT = saved


def test_lexer_line_table_is_bounded_and_skips_long_lines():
    from translator.read import shell_lexer

    long_line = "echo " + "x" * (shell_lexer._LINE_KEY_MAX + 10)
    ShellLexer(long_line + "\n", 1).run()
    assert long_line not in shell_lexer._LINES and long_line not in shell_lexer._OLD_LINES
    for i in range(2 * shell_lexer._LINES_LIMIT + 10):
        shell_lexer._line_miss(f"echo {i}")
    assert len(shell_lexer._LINES) <= shell_lexer._LINES_LIMIT
    assert len(shell_lexer._OLD_LINES) <= shell_lexer._LINES_LIMIT
    # a line of the older half moves back to the current one when it is seen again
    old = next(iter(shell_lexer._OLD_LINES))
    assert shell_lexer._line_miss(old) == shell_lexer._line_entry(old)
    assert old in shell_lexer._LINES


# ---- read/body.py: top-level statements parsed one at a time, commands' words and kinds kept per process -----

_BLOCK_FRAGMENTS = [
    "if true; then\n",
    "elif x; then\n",
    "else\n",
    "fi\n",
    "for i in 1 2; do\n",
    "while read l; do\n",
    "done\n",
    "case $x in\n",
    "a) echo a ;;\n",
    "*) echo b\n",
    ";;\n",
    "esac\n",
    "f() {\n",
    "function g {\n",
    "function h\n",
    "# c\n",
    "{\n",
    "}\n",
    "(\n",
    ")\n",
    "echo x\n",
    "A=1\n",
    "export B=2\n",
    "srun python t.py\n",
    "cat <<E\nbody\nE\n",
    "then\n",
    "do\n",
]


def _whole_tree_statements(text: str):
    """The statements as one parse of the whole token stream gives them (the reference)."""
    from translator.read import body
    from translator.read.block_parser import parse

    lines = text.split("\n")
    tokens = ShellLexer("\n".join(lines), 1).run().tokens
    runs = body._compress_runs(tokens)
    try:
        return body._build(parse(tuple(t.type for t in runs)), runs, lines)
    except Exception as exc:
        return type(exc)


def _per_statement(text: str):
    from translator.read import body

    lines = text.split("\n")
    tokens = ShellLexer("\n".join(lines), 1).run().tokens
    try:
        return body._build_blocks(body._compress_runs(tokens), lines)
    except Exception as exc:
        return type(exc)


@S.fuzz_settings(375)
@given(st.lists(st.sampled_from(_BLOCK_FRAGMENTS), max_size=30).map("".join))
def test_blocks_parsed_per_statement_match_one_whole_parse(text):
    assert _per_statement(text) == _whole_tree_statements(text)


def _one_pass(text: str):
    from translator.read import body

    lines = text.split("\n")
    tokens = ShellLexer("\n".join(lines), 1).run().tokens
    try:
        return body._statements(tokens, lines)
    except Exception as exc:
        return type(exc)


@S.fuzz_settings(375)
@given(st.lists(st.sampled_from(_BLOCK_FRAGMENTS + _LINE_FRAGMENTS), max_size=30).map("".join))
def test_blocks_built_from_plans_match_the_trees(text):
    from translator.read import body

    body._PLANS.clear()
    want = _per_statement(text)
    assert _one_pass(text) == want  # plans worked out
    assert _one_pass(text) == want  # plans from the table


def test_blocks_parsed_per_statement_on_chosen_cases():
    for text in [
        "",
        "echo a\n",
        "if a; then\nb\nfi\necho c\nfor i in 1; do\nx\ndone\n",
        "f() {\n  echo\n}\nf\n",
        "f()\n# c\n{\n  echo\n}\n",  # a comment between the name and the body: not a sentence (fallback)
        "function g {\n  if x; then\n    case y in\n      a) z ;;\n    esac\n  fi\n}\n",
        "( cd x; make )\n{ a; b; }\n",
        "}\necho a\n",
        "f()\necho a\n",
        "for i in 1; do\n",
        "select x in a b; do\n  echo $x\ndone\nuntil a; do\n  b\ndone\n",
        "case x in\n  a) if b; then\n    c\n  elif d; then\n    e\n  else\n    f\n  fi ;;\nesac\n",
    ]:
        assert _per_statement(text) == _whole_tree_statements(text), text
        assert _one_pass(text) == _per_statement(text), text


def _clear_recipes():
    from translator.read import body

    for table in (body._PLAIN, body._REDIRECTED, body._HEREDOC):
        table.clear()


def test_command_table_gives_what_building_gives():
    from translator.read import body, read_script
    from translator.read.words import make_word

    text = (
        "#!/bin/bash\nsrun python t.py\nexport A=1\nexport A=1 >log\nexport A=1\nA=2 srun python t.py\n"
        "declare -x B=1\nlocal C\nsrun python t.py &\n"
    )
    _clear_recipes()
    first = read_script(text.encode(), "s").body
    second = read_script(text.encode(), "s").body  # from the tables
    _clear_recipes()
    assert first == second == read_script(text.encode(), "s").body
    assert [type(s).__name__ for s in first][:4] == ["Command", "Assignment", "Command", "Assignment"]
    assert type(body._PLAIN[("srun", "python", "t.py")]) is tuple  # the common case: (words, kind)
    assert body._PLAIN[("export", "A=1")] == [("A", make_word("1"), True)]  # Assignments only
    assert ("export", "A=1") in body._REDIRECTED  # `export A=1 >log` is a Command: another table
    assert isinstance(body._PLAIN[("A=2", "srun", "python", "t.py")], body._Steps)  # a prefix


@S.fuzz_settings(150)
@given(
    st.sampled_from(["export", "declare", "declare -x", "typeset -x", "readonly", "local", "export -n"]),
    st.lists(st.sampled_from(["A=1", "B=$x", "C", "-x", "+x", "D[1]=2", "E+=3", "=z", "F='a b'"]), max_size=4),
    st.sampled_from(["", "P=1 ", ">log ", "X=2 Y=3 "]),
)
def test_declaration_table_gives_what_building_gives(prog, args, before):
    from translator.read import read_script

    text = f"#!/bin/bash\n{before}{prog} {' '.join(args)}\n"
    lower = "#!/bin/bash\n\n\n" + text[12:]  # the same command two lines lower
    _clear_recipes()
    want = read_script(lower.encode(), "s").body
    _clear_recipes()
    read_script(text.encode(), "s")
    assert read_script(lower.encode(), "s").body == want  # from the tables


def _reference_statements(seg):
    """What body._command_from_segment gave before its recipes (issue 13, second pass), without its tables:
    the reference for the recipes."""
    from translator.read import ast
    from translator.read.classify import classify
    from translator.read.words import make_assignment, make_word

    words = seg.words
    line = seg.line
    prefix = []
    i = 0
    while i < len(words):
        a = make_assignment(words[i], line, False) if "=" in words[i] else None
        if a is None:
            break
        prefix.append(a)
        i += 1
    rest = words[i:]
    if not rest and not seg.redirections:
        return list(prefix)
    word_objs = tuple(make_word(w) for w in rest)
    argv = [w.value for w in word_objs]
    prog = argv[0] if argv else ""

    def command(kind, with_prefix):
        return ast.Command(
            line,
            seg.end_line,
            seg.text,
            word_objs,
            kind,
            tuple(prefix) if with_prefix else (),
            seg.background,
            seg.connector,
            tuple(seg.redirections),
        )

    if prog in ("export", "declare", "typeset", "readonly", "local") and not seg.redirections and not seg.heredocs:
        exported = prog == "export" or (
            prog in ("declare", "typeset")
            and any(a.startswith("-") and "x" in a and not a.startswith("+") for a in argv[1:])
        )
        out = list(prefix)
        leftovers = False
        for raw in rest[1:]:
            if raw.startswith("-") or raw.startswith("+"):
                leftovers = leftovers or prog == "export"
                continue
            a = make_assignment(raw, line, exported)
            if a is not None:
                out.append(a)
            elif prog == "export":
                leftovers = True
        assigned = any(isinstance(s, ast.Assignment) for s in out[len(prefix) :])
        if prog == "export" and (leftovers or len(rest) == 1):
            out.append(command(ast.EXPORT, False))
        elif prog != "export" and not assigned:
            out.append(command(ast.OTHER, True))
        return out
    return [command(classify(argv) if argv else ast.OTHER, True)]


_SEGMENT_WORDS = [
    "export",
    "declare",
    "typeset",
    "readonly",
    "local",
    "'export'",
    "e\\xport",
    "srun",
    "python",
    "-m",
    "torch.distributed.run",
    "module",
    "load",
    "source",
    "activate",
    "cd",
    "A=1",
    "B+=2",
    "C[1]=3",
    "D=",
    "=x",
    "1A=2",
    "E='a b'",
    'F="$x"',
    "G=$'\\t'",
    "H=é",
    "-x",
    "+x",
    "-fx",
    "$'a\\nb'",
    '"$VAR"',
    "*.py",
    "~/x",
    "{a,b}",
    "x\\ y",
    "",
    "é",
]


@S.fuzz_settings(300)
@given(
    st.lists(st.sampled_from(_SEGMENT_WORDS), max_size=6),
    st.sampled_from([[], [">log"], ["2>&1", ">>o"]]),
    st.booleans(),
    st.sampled_from(["", ";", "&&", "|"]),
    st.booleans(),
)
def test_recipes_give_what_the_reference_gives(words, redirections, heredoc, connector, background):
    from translator.read import body
    from translator.read.shell_lexer import Heredoc, Segment

    def segment(line):
        return Segment(
            0,
            10,
            list(words),
            list(redirections),
            [Heredoc("EOF", False, False, line, "x\n", line + 1, line + 2)] if heredoc else [],
            connector,
            background,
            line,
            line + 1,
            " ".join(words + redirections),
        )

    _clear_recipes()
    want = _reference_statements(segment(3))
    assert body._command_from_segment(segment(3)) == want  # worked out
    assert body._command_from_segment(segment(3)) == want  # from the table
    assert body._command_from_segment(segment(9)) == _reference_statements(segment(9))  # elsewhere
    flat = body._flat_fallback([body.LexToken("CMD", 3, 4, "t", segment(3))])
    if heredoc:
        assert [s for s in flat if s.__class__.__name__ != "Block"] == [
            s for s in want if s.__class__.__name__ != "Command"
        ]
    else:
        assert flat == want  # the inline common case of _add_run


@S.fuzz_settings(200)
@given(st.lists(st.sampled_from(["A=1", "x", "B+=2", "C[1]=3", "=x", "1A=2", "D=", "E='a b'", 'F="$x"']), max_size=5))
def test_assignment_table_gives_what_parsing_gives(words):
    from translator.read import words as W

    for raw in words:
        want = W.split_assignment(raw)
        for _ in range(2):
            a = W.make_assignment(raw, 7, True)
            assert (a is None) == (want is None)
            if a is not None:
                assert (a.name, a.value, a.line, a.exported) == (want[0], W.make_word(want[1]), 7, True)


def test_directive_table_gives_what_tokenizing_gives():
    from translator.read import header

    lines = [
        "#!/bin/bash",
        "#SBATCH --nodes=2 --gres=gpu:4",
        "#SBATCH -J 'a b' # c",
        "#SBATCH :bad",
        "#SBATCH hetjob",
        '#SBATCH --x="unterminated',
        "#SBATCH --nodes=2 --gres=gpu:4",
        "echo",
    ]
    header._TOKENIZED.clear()
    header._PLAIN_LINES.clear()
    first = header.read_header(lines)
    again = header.read_header(lines)  # from the table
    assert [d.words for d in first.directives] == [d.words for d in again.directives]
    assert first.diagnostics == again.diagnostics and first.sbatch_refuses == again.sbatch_refuses
    assert first.hetjob_separators == again.hetjob_separators == [5]
    assert first.directives[0].words == tuple(header.tokenize_directive(" --nodes=2 --gres=gpu:4").words)
