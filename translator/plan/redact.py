"""One redaction for every output: a secret the TrainJob YAML hides is never printed in clear elsewhere.

The plan (translator/plan/build.py, `_secrets`) moves secret values into a Secret; the same values must
not reach the reports (Markdown, HTML, JSON: the script's lines, the findings, the simulation), the output
of `simulate` (its table, `-v`, `--json`), the findings and diagnostics the tool prints, or the comments
of the YAML and the Python file. So every output goes through `redact` with the script's secret values:

* `script_secrets(script)`: every literal secret value of a script, found as the plan finds them
  (translator/plan/secrets.py): assignments whose name or value says secret, values of secret options
  (`--password X`), the `--env NAME=VALUE` items of container wrappers, tokens inside any word;
* `redact(text, values)`: each value (4 characters or more: a shorter substring cannot be hidden
  without hiding unrelated text) becomes `<secret>`, and so does any text with the unmistakable shape of
  a token (`hf_…`, `ghp_…`, a JWT, a Slack webhook, …) and the password of any URL
  (`postgres://u:<secret>@host`), whatever the values;
* `redact_data(obj, values)`: the same over the strings of a record (dataclasses, tuples, lists, dicts:
  a simulate Verdict, a report's ScriptReport), which is rebuilt only where a string changed.
"""

from __future__ import annotations

import copy
import dataclasses
import re

from translator.plan import secrets

MARK = "<secret>"
_SECRET_REF = re.compile(r"<secret [^<>\s/]+/[^<>\s]+>")  # kubeflow_pods' placeholder for a secretKeyRef
MIN_LENGTH = 4  # shorter values are not hidden (a substring that short occurs in unrelated text)


def script_secrets(script) -> frozenset[str]:
    """The literal secret values of a translator.read.ast.Script (empty for None)."""
    if script is None:
        return frozenset()
    from translator.plan.env import body_lists

    commands, assignments = body_lists(script.body)
    values: set[str] = set()
    for a, _ in secrets.literal_secrets(assignments):
        # (a variable holding a URL with a password is hidden whole: the job's Secret holds it whole, and
        # simulate compares the Slurm side's value with the Kubeflow side's `<secret …>`)
        values.add(a.value.value.strip())
    for cmd in commands:
        words = [w.value for w in cmd.words]
        values.update(v for _, v in secrets.option_secrets(words))
        for i, w in enumerate(words[:-1]):
            if w in ("--env", "-e", "--env=") or w.startswith(("--env=", "-e=")):
                item = w.split("=", 1)[1] if w.startswith(("--env=", "-e=")) else words[i + 1]
                for name, value in secrets.wrapper_env_items(item):
                    if value is not None and secrets.looks_secret(name, value):
                        values.add(value)
    text = getattr(script, "text", "") or ""
    if secrets.has_token_start(text):
        values.update(secrets.embedded_tokens(text))
    return frozenset(v for v in values if len(v) >= MIN_LENGTH)


def needs_redaction(text: str, values) -> bool:
    """Whether anything derived from `text` (a script) can hold a secret `redact` hides: False when the
    script has no secret value and no token-shaped text or URL password."""
    return bool(values) or secrets.has_token(text) or ("@" in text and secrets.URL_CREDENTIALS.search(text) is not None)


def path_secrets(*paths) -> frozenset[str]:
    """script_secrets of the scripts at `paths` (a path that cannot be read as a script adds nothing)."""
    from translator.read import ReadError, read_file

    out: set[str] = set()
    for path in paths:
        if not path or path == "-":
            continue
        try:
            out |= script_secrets(read_file(path))
        except (ReadError, OSError, ValueError):
            continue
    return frozenset(out)


def redact(text: str, values=()) -> str:
    """`text` with each secret value, each token-shaped substring and each URL password replaced by
    `<secret>`."""
    if not text:
        return text
    for v in sorted((v for v in values if len(v) >= MIN_LENGTH and v in text), key=len, reverse=True):
        text = text.replace(v, MARK)
    if "<secret " in text:  # simulate's Kubeflow side: a value read from a Secret key
        text = _SECRET_REF.sub(MARK, text)
    if secrets.has_token_start(text):
        for token in secrets.embedded_tokens(text):
            text = text.replace(token, MARK)
        if "@" in text:
            text = secrets.URL_CREDENTIALS.sub(_hide_password, text)
    return text


def _hide_password(m) -> str:
    password = m.group(2)
    if password.startswith(("$", "`")) or password == MARK:
        return m.group(0)
    return m.group(1) + MARK + m.group(3)


def redact_data(obj, values=()):
    """`obj` with `redact` applied to every string inside it (the same object when nothing changed)."""
    if isinstance(obj, str):
        return redact(obj, values)
    if isinstance(obj, (tuple, list)):
        items = [redact_data(x, values) for x in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        return type(obj)(items) if type(obj) in (tuple, list) else obj.__class__(*items)
    if isinstance(obj, (set, frozenset)):
        members = {redact_data(x, values) for x in obj}
        return obj if members == obj else type(obj)(members)
    if isinstance(obj, dict):
        out = {redact_data(k, values): redact_data(v, values) for k, v in obj.items()}
        same = len(out) == len(obj) and all(k in obj and obj[k] is v for k, v in out.items())
        return obj if same else out
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changed = {}
        for f in dataclasses.fields(obj):
            old = getattr(obj, f.name)
            new = redact_data(old, values)
            if new is not old:
                changed[f.name] = new
        if not changed:
            return obj
        new_obj = copy.copy(obj)
        for name, value in changed.items():
            object.__setattr__(new_obj, name, value)
        return new_obj
    return obj
