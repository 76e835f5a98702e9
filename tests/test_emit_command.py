"""The container command: pass-through without packages; bash -c wrapper that really installs then execs.

The wrapper is executed with the real bash against a fake `python3` that records its arguments, so
the tests see exactly which words pip would get and what the launcher receives.
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path


from kf_helpers import plan
from translator.emit.command import container_command

FAKE_PY = """#!/bin/sh
# fake python3: log each call (NUL-terminated words, then a \\001 record) and fail --user installs on request
for a in "$@"; do printf '%s\\000' "$a" >> "$LOG"; done
printf '\\001\\000' >> "$LOG"
if [ -n "$FAIL_USER" ]; then for a in "$@"; do [ "$a" = "--user" ] && exit 1; done; fi
exit 0
"""


def _run(command, args, tmp_path: Path, env_extra=None):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    py = bindir / "python3"
    py.write_text(FAKE_PY)
    py.chmod(py.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "pip.log"
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "LOG": str(log)}
    env.update(env_extra or {})
    # the container receives the words after the kubelet's $(VAR)/$$ expansion (escaped by the emitter)
    from translator.plan.kube import expand

    argv = [expand(w, env) for w in list(command) + list(args)]
    proc = subprocess.run(argv, capture_output=True, env=env, timeout=30)
    # bytes decoded by hand: text mode would turn a \r the launcher printed into \n
    proc.stdout = proc.stdout.decode("utf-8", "surrogateescape")
    proc.stderr = proc.stderr.decode("utf-8", "surrogateescape")
    calls = []
    if log.exists():
        cur = []
        for line in log.read_bytes().decode("utf-8", "surrogateescape").split("\x00")[:-1]:
            if line == "\x01":
                calls.append(cur)
                cur = []
            else:
                cur.append(line)
    return proc, calls


def test_no_packages_passes_command_through_unchanged():
    p = plan(command=("torchrun",), args=("--nproc-per-node", "8", "train.py", "--lr", "3e-4"))
    assert container_command(p) == (["torchrun"], ["--nproc-per-node", "8", "train.py", "--lr", "3e-4"])


def test_launcher_is_never_replaced_by_python():
    p = plan(command=("mpirun",), args=("--hostfile", "/etc/mpi/hostfile", "./a.out"), packages=("numpy",))
    command, args = container_command(p)
    assert command == ["bash", "-c"]
    # launcher and its arguments are positional parameters after $0, never inside the script
    assert args[1:] == ["slurm2kf", "mpirun", "--hostfile", "/etc/mpi/hostfile", "./a.out"]
    assert "mpirun" not in args[0]


def test_wrapper_installs_with_index_urls_then_execs_launcher(tmp_path):
    hostile = ["numpy==1.26", "transformers[torch]>=4", "evil; touch /tmp/pwned", "$(id)", "`id`", "a'b\"c"]
    p = plan(
        command=("printf",),
        args=("<%s>\n", "x y", "$(id)", "'q'"),
        packages=tuple(hostile),
        pip_index_urls=("https://pypi.org/simple", "https://idx.example/$(id)"),
    )
    command, args = container_command(p)
    from translator.plan.kube import expand

    # the script is escaped for the kubelet's $(NAME)/$$ expansion: run what the container receives
    args = [expand(args[0])] + args[1:]
    proc, calls = _run(command, args, tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the launcher got its arguments verbatim (no word splitting, no expansion)
    assert proc.stdout == "<x y>\n<$(id)>\n<'q'>\n"
    assert len(calls) == 1
    call = calls[0]
    assert call[:3] == ["-m", "pip", "install"]
    assert "--user" in call
    assert call[call.index("--index-url") + 1] == "https://pypi.org/simple"
    assert call[call.index("--extra-index-url") + 1] == "https://idx.example/$(id)"
    assert call[-len(hostile) :] == hostile  # each spec is exactly one pip argument
    assert not Path("/tmp/pwned").exists()


def test_wrapper_falls_back_to_system_install(tmp_path):
    p = plan(command=("echo",), args=("ran",), packages=("numpy",))
    proc, calls = _run(*container_command(p), tmp_path, env_extra={"FAIL_USER": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ran\n"
    assert len(calls) == 2 and "--user" in calls[0] and "--user" not in calls[1]
    assert calls[1][-1] == "numpy"


def test_requirements_file_spec_becomes_two_words(tmp_path):
    p = plan(command=("true",), args=(), packages=("-r requirements.txt", "torch"))
    proc, calls = _run(*container_command(p), tmp_path)
    assert proc.returncode == 0
    assert calls[0][-3:] == ["-r", "requirements.txt", "torch"]


def test_failed_install_stops_before_launch(tmp_path):
    p = plan(command=("echo",), args=("must-not-run",), packages=("numpy",))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    py = bindir / "python3"
    py.write_text("#!/bin/sh\nexit 1\n")
    py.chmod(0o755)
    proc = subprocess.run(
        [*container_command(p)[0], *container_command(p)[1]],
        capture_output=True,
        text=True,
        env={"PATH": f"{bindir}:/usr/bin:/bin"},
        timeout=30,
    )
    assert proc.returncode != 0
    assert "must-not-run" not in proc.stdout


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_word = st.text(st.characters(blacklist_characters="\x00\x01", blacklist_categories=("Cs",)), min_size=1, max_size=12)
_spec = _word.filter(
    lambda s: s.strip().partition(" ")[0] not in ("-r", "--requirement", "-c", "--constraint", "-e", "--editable")
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    packages=st.lists(_spec, min_size=1, max_size=3), urls=st.lists(_word, max_size=2), args=st.lists(_word, max_size=4)
)
def test_any_text_reaches_pip_and_the_launcher_verbatim(tmp_path, packages, urls, args):
    # a plan's args are already escaped for the kubelet (plan/build.py); packages and URLs are escaped by the emitter
    from translator.plan.kube import escape

    p = plan(
        command=("printf",),
        args=("<%s>", *map(escape, args)),
        packages=tuple(packages),
        pip_index_urls=tuple(urls),
    )
    proc, calls = _run(*container_command(p), tmp_path)
    (tmp_path / "pip.log").unlink(missing_ok=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "".join(f"<{a}>" for a in args) or (not args and proc.stdout == "<>")
    call = calls[0]
    assert call[-len(packages) :] == packages
    if urls:
        assert call[call.index("--index-url") + 1] == urls[0]
