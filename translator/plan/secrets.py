"""Secrets in the environment: never copied in clear text into the TrainJob YAML or the SDK code.

A variable is a secret by its name (`HF_TOKEN`, `WANDB_API_KEY`, `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`,
`DB_PASS`, `DB_PWD`, `*_TOKEN`, `*_KEY`, `*SECRET*`, `*PASSWORD*`, `*PASSWD*`, `*CREDENTIAL*`; never `PWD`,
the working directory) or by the shape of its value (Hugging Face `hf_…`, GitHub `ghp_…`/`github_pat_…`,
OpenAI-style `sk-…`, AWS `AKIA…`, Slack `xox…-` and webhooks `hooks.slack.com/services/…`, GitLab `glpat-…`,
Google `AIza…`, npm `npm_…`, Stripe `sk_live_…`, JWTs `eyJ….eyJ….…`, a URL carrying a password
`scheme://user:PASSWORD@host`, a long hex or base64 string). A value that is a path or a file name
(`/home/u/build3`, `$SCRATCH/run`, `ckpt/model.ckpt`, a long run name made of words) or a URL without
credentials is never a secret, whatever its name.

Its value becomes a key of one Secret per job (`<trainjob>-env`, key = the variable name); every trainer
pod reads it through `valueFrom.secretKeyRef`, which SDK 0.5 can only express as a RuntimePatch container
env (CustomTrainerContainer's env is a plain dict), so both outputs carry it there. A finding names the
Secret and key to create. Values given to a secret option of the command (`--password X`, `--api-key X`,
`--token X`, `--secret X`) and tokens inside command words go to the same Secret under a generated key,
and the command refers to them as `$(NAME)`, which the kubelet expands from the container env.

translator/plan/redact.py hides the same values in every text output (reports, simulate, logs).
"""

from __future__ import annotations

import re
from translator.tables import keep

_NAME = re.compile(
    r"(^|_)(TOKEN|SECRET|SECRETS|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|APIKEY|API_KEY|KEY|"
    r"PRIVATE_KEY|ACCESS_KEY|AUTH)($|_)|SECRET|PASSWORD|PASSWD|(^|_)PASS$|_PWD$"
)
_NOT_SECRET_NAME = re.compile(
    r"^(KEY_?PATH|(MAX|MIN|NUM|N)_.*|.*_(FILE|PATH|DIR|ID|NAME|URL|HOST|PORT|TYPE|LEN|LENGTH|SIZE|LIMIT|COUNT|"
    r"NUM|MAX|MIN|FORMAT|MODE|ALGO|ALGORITHM))$"
)
# Names whose long hex value is a digest, not a key (a git commit, a checksum).
_DIGEST_NAME = re.compile(r"SHA|COMMIT|HASH|CHECKSUM|MD5|DIGEST|REV|UUID|GIT")

# Tokens recognised inside any text: (hint texts, one of which every match holds; pattern). A pattern with
# a group named `tok` gives that group as the token (the password of a URL), else the whole match.
_EMBEDDED = (
    (("hf_",), re.compile(r"hf_[A-Za-z0-9]{20,}")),  # Hugging Face user access token
    (("gh", "github_pat_"), re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}")),  # GitHub tokens
    (("sk-",), re.compile(r"sk-[A-Za-z0-9_-]{20,}")),  # OpenAI / Anthropic style API keys
    (("AKIA",), re.compile(r"AKIA[0-9A-Z]{16}")),  # AWS access key id
    (("xox",), re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}")),  # Slack tokens
    (("hooks.slack.com",), re.compile(r"https?://hooks\.slack\.com/services/[A-Za-z0-9/_-]{8,}")),  # webhook
    (("glpat-",), re.compile(r"glpat-[A-Za-z0-9_-]{20,}")),  # GitLab personal access token
    (("AIza",), re.compile(r"AIza[0-9A-Za-z_-]{35}")),  # Google API key
    (("npm_",), re.compile(r"npm_[A-Za-z0-9]{36}")),  # npm access token
    (("_live_", "_test_"), re.compile(r"[rs]k_(?:live|test)_[0-9A-Za-z]{16,}")),  # Stripe keys
    (("eyJ",), re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),  # JWT
    # scheme://user:PASSWORD@host: the password (a `$` reference is the shell's, not a literal)
    (("://",), re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@'\"$]*:(?P<tok>[^\s/@'\"$]{4,})@")),
)
# Every match of _EMBEDDED starts with one of these (a URL: holds `://`): a text without any holds no token.
_TOKEN_START = re.compile(
    r"hf_|gh[pousr]_|github_pat_|sk-|AKIA|xox[abposr]-|hooks\.slack\.com|glpat-|AIza|npm_|_live_|_test_|eyJ|://"
)
# A URL with credentials, whatever the password's length: what redact() hides in any text.
URL_CREDENTIALS = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s/:@'\"]*:)([^\s/@'\"]+)(@)")
_HEX = re.compile(r"[0-9a-fA-F]{32,}")
_BASE64 = re.compile(r"(?=.*[0-9])(?=.*[a-z])(?=.*[A-Z])[A-Za-z0-9+/_-]{40,}={0,2}")
# Runs of lower-case letters: a long value made of words (a path, a run name) is not a random key.
_WORDS = re.compile(r"[a-z]{4,}|[A-Z][a-z]{3,}")
_FILE_LIKE = re.compile(
    r"\.(ckpt|pt|pth|bin|safetensors|h5|pkl|npz|npy|json|ya?ml|toml|ini|cfg|conf|txt|csv|log|sh|py|pem|crt|key|"
    r"pub|p12|pfx|gpg|asc|env|sif|sqsh|tar|gz|zip|out|err)$|^id_(rsa|dsa|ecdsa|ed25519)$",
    re.IGNORECASE,
)
_SWITCH = frozenset(("true", "false", "none", "null", "yes", "no", "on", "off", "0", "1"))

# Options whose value is a secret (`--password X`, `--api-key=X`), names compared lower-case with `-`
# read as `_`. `--password-file`, `--token-path` and the like name files: not listed.
SECRET_OPTIONS = frozenset(
    (
        "password",
        "passwd",
        "pass",
        "api_key",
        "apikey",
        "token",
        "secret",
        "secret_key",
        "access_key",
        "hf_token",
        "hub_token",
        "auth_token",
        "access_token",
        "api_token",
        "bearer_token",
        "github_token",
        "wandb_key",
        "wandb_api_key",
        "openai_api_key",
        "aws_secret_access_key",
        "db_password",
    )
)

URL_PASSWORD = "its value is a URL carrying a password"
_WHOLE_MIN = 32  # the two whole-value shapes need at least this many characters

_MEMO: dict = {}  # (name, value) -> answer: the same exports recur across the scripts of a repository
_MEMO_SIZE = 16384


def looks_secret(name: str, value: str) -> str | None:
    """Why `name=value` is treated as a secret (a short reason), or None."""
    if len(value) + len(name) > 200:  # long ones are rarely repeated: not worth keeping
        return _looks_secret(name, value)
    key = (name, value)
    if key in _MEMO:
        return _MEMO[key]
    return keep(_MEMO, key, _looks_secret(name, value), _MEMO_SIZE)


def literal_secrets(assignments) -> tuple:
    """((assignment, why), ...) for the literal ones among `assignments` (translator.read.ast.Assignment)
    whose name or value says secret."""
    out = []
    for a in assignments:
        word = a.value
        if word.literal:
            why = looks_secret(a.name, word.value)
            if why:
                out.append((a, why))
    return tuple(out)


def pathlike(value: str) -> bool:
    """Whether `value` names a file or a place (a path, a file name, a URL without credentials, a value
    made of words): what a secret's value never is."""
    v = value.strip()
    if v.startswith(("/", "~", "./", "../", "$", "file:")) or _FILE_LIKE.search(v):
        return True
    if "://" in v:
        return not _url_password(v) and not has_token(v)
    return "/" in v and _worded(v)


def _worded(v: str) -> bool:
    """At least 30% of `v` is in words of 4+ letters (`runs/Llama2Finetune/exp12`, a run name): a
    random key has few such runs."""
    return sum(len(m) for m in _WORDS.findall(v)) * 10 >= len(v) * 3


def _url_password(v: str) -> str | None:
    """The literal password of a URL with credentials in `v` (`postgres://u:PASSWORD@host`), or None."""
    for m in URL_CREDENTIALS.finditer(v):
        if not m.group(2).startswith(("$", "`")):
            return m.group(2)
    return None


def _looks_secret(name: str, value: str) -> str | None:
    v = value.strip()
    if not v:
        return None
    if _url_password(v):
        return URL_PASSWORD
    if has_token(v):
        return "its value has the shape of a token or key"
    if pathlike(v):
        return None
    upper = name.upper()
    if len(v) >= _WHOLE_MIN:
        if _HEX.fullmatch(v) and not _DIGEST_NAME.search(upper):
            return "its value has the shape of a token or key"
        if _BASE64.fullmatch(v) and not _worded(v):
            return "its value has the shape of a token or key"
    if _secret_name(name) and v.lower() not in _SWITCH:
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
    """Whether `text` holds an embedded token: False exactly when embedded_tokens(text) is empty."""
    if _TOKEN_START.search(text) is None:  # the common case: not even the start of a token
        return False
    for hints, shape in _EMBEDDED:
        if any(hint in text for hint in hints) and shape.search(text):
            return True
    return False


def embedded_tokens(text: str) -> list[str]:
    """Substrings of `text` with the unmistakable shape of a token (hf_…, ghp_…, sk-…, AKIA…, xox…, a
    Slack webhook, a JWT, the password of a URL), each once, in the order of the shapes."""
    out: list[str] = []
    if _TOKEN_START.search(text) is None:  # the common case: not even the start of a token
        return out
    for hints, shape in _EMBEDDED:
        if not any(hint in text for hint in hints):
            continue
        for m in shape.finditer(text):
            tok = m.group("tok") if "tok" in shape.groupindex else m.group(0)
            if tok not in out:
                out.append(tok)
    return out


def option_name(word: str) -> str | None:
    """The secret option a command word is (`--password`, `--api-key=…`, lower-case with `_`), or None."""
    if not word.startswith("--"):
        return None
    name = word[2:].split("=", 1)[0].lower().replace("-", "_")
    return name if name in SECRET_OPTIONS else None


def secret_option_value(value: str) -> bool:
    """Whether the value given to a secret option is the secret itself (not a `$VAR`, a file or a switch).
    Values shorter than 4 characters are left (a substring that short cannot be hidden safely)."""
    v = value.strip()
    return len(v) >= 4 and not v.startswith(("$", "-", "`")) and v.lower() not in _SWITCH and not pathlike(v)


def option_secrets(words) -> list[tuple[int, str]]:
    """(index, value) of each literal secret given to a secret option in `words`: `--password X` (the
    value is the next word) or `--password=X` (inside the word)."""
    out = []
    for i, w in enumerate(words):
        if option_name(w) is None:
            continue
        if "=" in w:
            value = w.split("=", 1)[1]
            if secret_option_value(value):
                out.append((i, value))
        elif i + 1 < len(words) and secret_option_value(words[i + 1]):
            out.append((i + 1, words[i + 1]))
    return out


def wrapper_env_items(value: str) -> list[tuple[str, str | None]]:
    """The `NAME=VALUE` items of a container wrapper's `--env` value (Apptainer and Shifter take a
    comma-separated list, podman one item); an item without `=` passes the host's value: (NAME, None)."""
    out: list[tuple[str, str | None]] = []
    for item in value.split(","):
        name, eq, val = item.partition("=")
        if name and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            out.append((name, val if eq else None))
    return out
