"""The body parser is built once per process and its LALR tables are cached on disk (safely)."""
from __future__ import annotations

import os
import subprocess
import sys

from translator.read import body


def test_parser_is_built_once_per_process():
    assert body.get_parser() is body.get_parser()


def _fresh_parser(monkeypatch, cache_home):
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    monkeypatch.setattr(body, "_PARSER", None)
    return body.get_parser()


def test_grammar_cache_is_written_to_the_user_cache_dir_and_reused(tmp_path, monkeypatch):
    parser = _fresh_parser(monkeypatch, tmp_path)
    cache = tmp_path / "slurm2kf" / "sbatch-grammar.lark.cache"
    assert cache.is_file() and cache.stat().st_size > 1000          # the pickled parse tables, not a stub
    assert (cache.parent.stat().st_mode & 0o077) == 0
    # a new process loads the tables from the cache and parses with them
    code = ("import os; from translator.read import body; p = body.get_parser(); "
            "from translator.read import read_script; "
            "s = read_script(b'#!/bin/bash\\nif x; then\\n srun a\\nfi\\n', 'j'); print(s.body[0].kind)")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "if"
    assert parser is not None


def test_unwritable_or_foreign_cache_dir_falls_back(tmp_path, monkeypatch):
    monkeypatch.setattr(body.tempfile, "gettempdir", lambda: "/proc/no-such-dir")
    parser = _fresh_parser(monkeypatch, "/proc/no-such-dir")
    assert parser is not None
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)                      # a directory others can write to is never used for the pickle
    assert body._private_dir(str(shared)) is False
    monkeypatch.setattr(body, "_PARSER", None)
