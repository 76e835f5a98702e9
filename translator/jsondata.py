"""Typed access to parsed YAML/JSON documents, where any value may be of any type.

``as_dict(doc.get("spec"))`` reads as the code always meant it: the mapping when it is one, else an empty
one (a new ``{}`` each call), so the checks that follow need no ``isinstance`` of their own.
"""

from __future__ import annotations

from typing import Any


def as_dict(value: object) -> dict[str, Any]:
    """``value`` itself when it is a dict, else a new empty dict."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """``value`` itself when it is a list, else a new empty list."""
    return value if isinstance(value, list) else []
