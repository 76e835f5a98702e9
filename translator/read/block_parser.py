"""The block-structure parser: an LALR(1) driver over line-token types.

The tables come from grammars/sbatch.lark (translator/read/block_table.py, generated at build time
by tools/gen_block_table.py), so reading a script does not import or build a parser generator.
The trees are those Lark builds from the grammar: a `Node` per rule whose name does not start
with `_`, whose children are its sub-nodes and the indices of its tokens in the input, with the
children of `_rule`s and of the `x*` helper rules spliced into their parent.
"""

from __future__ import annotations

from collections.abc import Sequence

from translator.read.block_table import ACTIONS, END_STATE, RULES, START_STATE


class Node:
    """One tree node: `data` is the rule name, `children` sub-nodes and token indices (ints)."""

    __slots__ = ("data", "children")

    def __init__(self, data: str, children: list[Node | int]):
        self.data = data
        self.children = children

    def __eq__(self, other) -> bool:
        return isinstance(other, Node) and self.data == other.data and self.children == other.children

    def __repr__(self) -> str:
        return f"Node({self.data!r}, {self.children!r})"


class BlockSyntaxError(ValueError):
    """The token stream is not a sentence of the grammar (the shell lexer balances it, so a bug)."""

    def __init__(self, index: int, token_type: str):
        super().__init__(f"unexpected {token_type} at token {index}")
        self.index = index
        self.token_type = token_type


def parse(types: Sequence[str]) -> Node:
    """Parse a sequence of token types (CMD, IF, ...); token i appears in the tree as the int i."""
    states = [START_STATE]
    values: list = []
    end = len(types)
    i = 0
    while True:
        token = types[i] if i < end else "$END"
        action = ACTIONS[states[-1]].get(token)
        if action is None:
            raise BlockSyntaxError(i, token)
        if action >= 0:  # shift
            states.append(action)
            values.append(i)
            i += 1
            continue
        name, size, keep = RULES[-1 - action]  # reduce
        children: list
        if size:
            parts = values[-size:]
            del states[-size:]
            del values[-size:]
            # a spliced rule's children list is referenced by the value stack only: extend it in place
            # (copying it at each step made long `x*` sequences quadratic)
            first = parts[0]
            children = first if isinstance(first, list) else [first]
            for part in parts[1:]:
                if isinstance(part, list):
                    children.extend(part)
                else:
                    children.append(part)
        else:
            children = []
        states.append(ACTIONS[states[-1]][name])
        values.append(Node(name, children) if keep else children)
        if token == "$END" and states[-1] == END_STATE:
            return values[-1]
