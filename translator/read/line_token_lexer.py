"""The Lark lexer that feeds pre-lexed line tokens (shell_lexer.LexToken) to the LALR parser.

A module-level class so that Lark can pickle a reference to it in its grammar cache.
"""
from lark.lexer import Lexer, Token


class LineTokenLexer(Lexer):
    """Each token's value is its index in the input list (cheap to create, resolved by the builder)."""

    def __init__(self, lexer_conf):  # Lark API
        pass

    def lex(self, data):
        for index, tok in enumerate(data):
            yield Token(tok.type, str(index))
