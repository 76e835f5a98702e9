"""Shell body parsing (placeholder: filled in next)."""
from dataclasses import dataclass, field


@dataclass
class ParsedBody:
    statements: tuple = ()
    diagnostics: list = field(default_factory=list)
    heredoc_lines: frozenset = frozenset()


def parse_body(lines, start, shell):
    return ParsedBody()
