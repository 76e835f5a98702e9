"""Secrets in the environment: never copied in clear text into the TrainJob YAML or the SDK code.

A variable is a secret by its name (`HF_TOKEN`, `WANDB_API_KEY`, `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`,
`*_TOKEN`, `*_KEY`, `*SECRET*`, `*PASSWORD*`, `*PASSWD*`, `*CREDENTIAL*`) or by the shape of its value
(Hugging Face `hf_…`, GitHub `ghp_…`/`github_pat_…`, OpenAI-style `sk-…`, AWS `AKIA…`, Slack `xox…-`, a
long hex or base64 string). Its value becomes a key of one Secret per job (`<trainjob>-env`, key = the
variable name); every trainer pod reads it through `valueFrom.secretKeyRef`, which SDK 0.5 can only
express as a RuntimePatch container env (CustomTrainerContainer's env is a plain dict), so both outputs
carry it there. A finding names the Secret and key to create.
"""

from __future__ import annotations

import re
from translator.tables import keep

_NAME = re.compile(
    r"(^|_)(TOKEN|SECRET|SECRETS|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|APIKEY|API_KEY|KEY|"
    r"PRIVATE_KEY|ACCESS_KEY|AUTH)($|_)|SECRET|PASSWORD|PASSWD"
)
_NOT_SECRET_NAME = re.compile(r"^(KEY_?PATH|.*_(FILE|PATH|DIR|ID|NAME|URL|HOST|PORT|TYPE|LEN|LENGTH|SIZE))$")
_SHAPES = (
    re.compile(r"hf_[A-Za-z0-9]{20,}"),  # Hugging Face user access token
    re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"),  # GitHub tokens
    re.compile(r"sk-[A-Za-z0-9_-]{20,}"),  # OpenAI / Anthropic style API keys
    re.compile(r"AKIA[0-9A-Z]{16}"),  # AWS access key id
    re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack tokens
    re.compile(r"^[0-9a-fA-F]{32,}$"),  # long hex (W&B API keys are 40 hex digits)
    re.compile(r"^(?=.*[0-9])(?=.*[a-z])(?=.*[A-Z])[A-Za-z0-9+/_-]{40,}={0,2}$"),  # long base64
)


# Every match of _SHAPES[:5] starts with one of these: a text without any has no embedded token.
_TOKEN_START = re.compile(r"hf_|gh[pousr]_|github_pat_|sk-|AKIA|xox[abposr]-")
# A match of each of _SHAPES[:5] holds one of these texts: a shape whose texts are absent is not scanned for
# (a few substring searches cost less than one scan by _TOKEN_START, whose first characters are common).
_SHAPE_HINTS = (("hf_",), ("gh", "github_pat_"), ("sk-",), ("AKIA",), ("xox",))
_GATED_SHAPES = tuple(zip(_SHAPE_HINTS, _SHAPES[:5]))
# The two whole-value shapes need at least this many characters.
_WHOLE_MIN = 32


_MEMO: dict = {}  # (name, value) -> answer: the same exports recur across the scripts of a repository
_MEMO_SIZE = 16384


def looks_secret(name: str, value: str) -> str | None:
    """Why `name=value` is treated as a secret ("by name"/"by shape"), or None."""
    if len(value) + len(name) > 200:  # long ones are rarely repeated: not worth keeping
        return _looks_secret(name, value)
    key = (name, value)
    if key in _MEMO:
        return _MEMO[key]
    answer = keep(_MEMO, key, _looks_secret(name, value), _MEMO_SIZE)
    return answer


def literal_secrets(assignments) -> tuple:
    """((assignment, why), ...) for the literal ones among `assignments` (translator.read.ast.Assignment)
    whose name or value says secret: looks_secret for each, its memo read here (a script has tens of
    assignments, most of them seen in earlier scripts)."""
    memo_get = _MEMO.get
    out = []
    for a in assignments:
        word = a.value
        if word.literal:
            why = memo_get((a.name, word.value), _UNKNOWN)
            if why is _UNKNOWN:
                why = looks_secret(a.name, word.value)
            if why:
                out.append((a, why))
    return tuple(out)


_UNKNOWN = object()


def _looks_secret(name: str, value: str) -> str | None:
    v = value.strip()
    if not v:
        return None
    if len(v) >= _WHOLE_MIN or _TOKEN_START.search(v):
        for shape in _SHAPES:
            if shape.search(v):
                return "its value has the shape of a token or key"
    if _secret_name(name):
        if v.startswith(("/", "~", "./", "../", "$")) or v.lower() in ("true", "false", "none", "null"):
            return None  # a path to a key file, or a switch: not the secret itself
        return "its name says it holds a secret"
    return None


_NAME_MEMO: dict[str, bool] = {}  # variable names repeat across scripts: the two regexes run once per name


def _secret_name(name: str) -> bool:
    """Whether the variable name says it holds a secret."""
    known = _NAME_MEMO.get(name)
    if known is None:
        upper = name.upper()
        known = bool(_NAME.search(upper)) and not _NOT_SECRET_NAME.match(upper)
        if len(_NAME_MEMO) < 16384 and len(name) <= 100:
            _NAME_MEMO[name] = known
    return known


def secret_name(trainjob_name: str) -> str:
    """The Secret holding the job's secret variables (a DNS subdomain: the TrainJob name is an RFC 1035 label)."""
    return f"{trainjob_name}-env"


def has_token_start(text: str) -> bool:
    """False when `text` cannot hold an embedded token (embedded_tokens(text) is then empty)."""
    return _TOKEN_START.search(text) is not None


def has_token(text: str) -> bool:
    """Whether `text` holds an embedded token: False exactly when embedded_tokens(text) is empty (a start
    alone is not enough: `--task-prolog` holds `sk-`)."""
    for hints, shape in _GATED_SHAPES:
        for hint in hints:
            if hint in text:
                if shape.search(text):
                    return True
                break
    return False


def embedded_tokens(text: str):
    """Substrings of `text` with the unmistakable shape of a token (hf_…, ghp_…, sk-…, AKIA…, xox…)."""
    out: list[str] = []
    for hints, shape in _GATED_SHAPES:
        if not any(hint in text for hint in hints):  # the common case: not even the start of a token
            continue
        for m in shape.finditer(text):
            if m.group(0) not in out:
                out.append(m.group(0))
    return out
