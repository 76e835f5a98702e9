"""What the kubelet does to a container's env, command and args before the process starts.

Facts emulated (Kubernetes core/v1, kubelet):

* ``$(VAR_NAME)`` expansion, as ``third_party/forked/golang/expansion/expand.go`` (kubernetes/kubernetes)
  does it: a ``$`` followed by ``(`` starts a reference that runs to the FIRST ``)``; the text in
  between is looked up and replaced when defined, and copied verbatim (``$(NAME)``) when not; ``$$``
  becomes ``$``; ``$`` followed by any other character is kept with that character; an unterminated
  ``$(`` is kept as ``$(`` and scanning goes on after the ``(``; a ``$`` that is the last character
  is kept.  Nothing is expanded recursively (a substituted value is not scanned again).
* Env resolution order (kubelet ``makeEnvironmentVariables``; documented in "Define Dependent
  Environment Variables", kubernetes.io/docs/tasks/inject-data-application/
  define-interdependent-environment-variables/): entries are resolved in list order and a value may
  only reference entries defined EARLIER in the list (``UNCHANGED_REFERENCE`` in that page stays
  ``$(PROTOCOL)://172.17.0.1:80`` because ``PROTOCOL`` comes after it).  ``valueFrom`` entries
  (fieldRef, secretKeyRef, ...) are not expanded but are visible to later entries.  A name listed
  twice keeps the later value (the kubelet builds a map).
* ``command`` and ``args`` are expanded against the container's full, final env
  (``ExpandContainerCommandAndArgs``); the core/v1 ``Container.command`` doc: "Variable references
  $(VAR_NAME) are expanded using the container's environment. If a variable cannot be resolved, the
  reference in the input string will be unchanged. Double $$ are reduced to a single $".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

Lookup = Mapping[str, str] | Callable[[str], str | None]


def _lookup_fn(env_lookup: Lookup) -> Callable[[str], str | None]:
    if callable(env_lookup):
        return env_lookup
    return lambda name: env_lookup.get(name)


def expand(text: str, env_lookup: Lookup) -> str:
    """``text`` after the kubelet's ``$(VAR)`` expansion; ``env_lookup`` is a mapping or a function
    returning the value of a defined variable and ``None`` for an undefined one."""
    lookup = _lookup_fn(env_lookup)
    if "$" not in text:
        return text
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    n = len(text)
    while cursor < n:
        if text[cursor] == "$" and cursor + 1 < n:
            out.append(text[checkpoint:cursor])
            nxt = text[cursor + 1]
            if nxt == "$":  # escaped operator: `$$` -> `$`
                out.append("$")
                advance = 1
            elif nxt == "(":
                close = text.find(")", cursor + 2)
                if close == -1:  # incomplete reference: `$(` kept, go on after `(`
                    out.append("$(")
                    advance = 1
                else:
                    name = text[cursor + 2 : close]
                    value = lookup(name)
                    out.append(value if value is not None else "$(" + name + ")")
                    advance = close - cursor
            else:  # `$x`: not a reference, both kept
                out.append("$" + nxt)
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)


def resolve_env(entries: Iterable[tuple[str, str, bool]]) -> list[tuple[str, str]]:
    """Resolve a container env list in order, as the kubelet does.

    ``entries`` are ``(name, text, is_literal)``: ``is_literal`` True for a ``value`` (expanded
    against the entries before it), False for an already resolved ``valueFrom`` (taken verbatim).
    Returns ``(name, final_value)`` in list order; a repeated name appears once, at its first
    position, with its last value (what the process sees).
    """
    seen: dict[str, str] = {}
    order: list[str] = []
    for name, text, is_literal in entries:
        value = expand(text, seen) if is_literal else text
        if name not in seen:
            order.append(name)
        seen[name] = value
    return [(name, seen[name]) for name in order]


def expand_argv(argv: Sequence[str], env: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """Container command + args after expansion against the container's final env."""
    table = dict(env)
    return tuple(expand(word, table) for word in argv)
