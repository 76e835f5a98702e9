"""The review report's one-walk scan of a script (profile/usage.needs_scan, path_tops, variable_names) gives
what the site profile's scanners give (environment_items, script_texts, absolute_prefixes,
variable_prefixes), on generated real-sized scripts, the fixtures and hostile texts."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, strategies as st

import strategies as S

from translator.pipeline import ConvertSettings, convert
from translator.profile import usage
from translator.read import read_script
from translator.report import build

REPO = Path(__file__).resolve().parents[1]


def _environment_needs_reference(script, job, plans, profile=None, image_chosen: bool = False):
    """`build.environment_needs` as first written, over the profile scanners (one pass per scanner)."""
    modules: list[str] = []
    envs: list[str] = []
    for item in usage.environment_items(script):
        if image_chosen or build._env_covered(item.kind, item.name, profile):
            continue
        if item.kind == "module":
            modules.append(item.name)
        else:
            envs.append(f"{item.kind}:{item.name}")
    texts = usage.script_texts(script, job, "/")
    covered = set()
    for fs in getattr(profile, "filesystems", ()) or ():
        covered.add(fs.path if fs.path.startswith("$") else "/" + fs.path.strip("/").split("/")[0])
    mounts = build._mount_paths(plans)
    paths: list[str] = []
    for top, _t in usage.absolute_prefixes(texts):
        if top in usage.SYSTEM_DIRS or top in covered or any(m == top or m.startswith(top + "/") for m in mounts):
            continue
        paths.append(top)
    for var, _t in usage.variable_prefixes(texts, usage.assigned_names(script)):
        if var not in covered and var != "$HOME":
            paths.append(var)
    return tuple(dict.fromkeys(modules)), tuple(dict.fromkeys(envs)), tuple(sorted(set(paths)))


def _generated(n: int):
    return S.realistic_scripts(n)


def _fixtures():
    for p in sorted((REPO / "tests" / "fixtures").rglob("*.sbatch")):
        yield str(p.relative_to(REPO)), p.read_bytes()


HOSTILE = "\n".join(
    [
        "#!/bin/bash",
        "#SBATCH --output=/scratch/$USER/%j.out",
        "#SBATCH --chdir=$WORK/run",
        "module load cuda/12.1 'gcc/11'   ; ml python/3.10",
        "ml load a/1 -q b/2",
        "module swap x/1 y/2",
        "source activate /proj/envs/nlp",
        'conda activate -n "my env"',
        "source ~/venvs/x/bin/activate",
        "VAR=/data/x srun --container-image=/img/a.sqsh python $SCRATCH/train.py --cfg=${CFG_DIR}/a.yaml > /logs/o 2>&1",
        'apptainer exec -B /a:/b --nv /sif/c.sif python /opt/x.py "$HOME/y" ~/z',
        "/usr/bin/singularity run docker://x/y:z",
        "srun ./img.simg a\\ b.sif 'q\".sqsh' $'a\\tb/c' \"/x y/z\" /. /.. //double /tmp/x",
        "cat <<DOC > /cfg/a.yaml",
        "path: /fromdoc/x",
        "  $PROJECT/y",
        "DOC",
        "export PROJECT=/proj",
        "echo ${PROJECT}/a $SLURM_SUBMIT_DIR/b $PWD/c ${PET_X}/d",
        "f() { cp /in/a /out/b; }",
        "for i in 1 2; do python /loop/$i.py; done",
        'echo "é/≈" /café/x \x1f/sep',
        "",
    ]
).encode("utf-8")


def test_environment_needs_agrees_with_the_profile_scanners():
    settings = ConvertSettings()
    checked = 0
    for name, data in [*_generated(120), *_fixtures(), ("hostile.sbatch", HOSTILE)]:
        conv = convert(name, data=data, settings=settings)
        if conv.script is None:
            continue
        want = _environment_needs_reference(conv.script, conv.job, conv.plans)
        assert build.environment_needs(conv.script, conv.job, conv.plans) == want, name
        assert build.environment_needs(conv.script, conv.job, conv.plans, image_chosen=True) == (
            (),
            (),
            want[2],
        ), name
        items, _text = usage.needs_scan(conv.script, conv.job)
        assert items == usage.environment_items(conv.script), name
        checked += 1
    assert checked >= 120


def test_hostile_script_lists_what_it_uses():
    conv = convert("hostile.sbatch", data=HOSTILE)
    modules, envs, paths = build.environment_needs(conv.script, conv.job, conv.plans)
    assert "cuda/12.1" in modules and "python/3.10" in modules
    assert any(e.startswith("container:") for e in envs)
    assert {"/scratch", "/fromdoc", "/cfg", "$SCRATCH", "$CFG_DIR"} <= set(paths)
    assert "$PROJECT" not in paths and "/." not in paths and "/tmp" not in paths and "$PWD" not in paths


path_texts = st.one_of(
    st.text(alphabet="/$~{}aZ_9.-+ =:'\"(,@<>|;&)\n\t\r\x00é", max_size=40),
    st.sampled_from(("", "/", "//", "/.", "/..", "$A/", "${A}/", "x/y", "~/", "a=/b", "é/x", "\n/x\n", "$/", "$$A/")),
)


@S.fuzz_settings(300)
@given(st.lists(path_texts, max_size=6))
def test_joined_scan_patterns_agree_with_the_per_text_scanners(values):
    """`path_tops`/`variable_names` over the texts joined by newlines find what `absolute_prefixes` and
    `variable_prefixes` find text by text (as sets: the report sorts them)."""
    texts = [usage.Text(v, 1) for v in values]
    joined = "\n".join(values)
    assert usage.path_tops(joined) == {top for top, _t in usage.absolute_prefixes(texts)}
    want = {var[1:] for var, _t in usage.variable_prefixes(texts) if var != "$HOME"}
    assert usage.variable_names(joined) - {"HOME"} == want
    for v in values:  # the patterns with the literal first: the same matches as the originals
        assert usage._ABS_TOP.findall(v) == usage._ABS_PATH.findall(v)
        assert usage._VAR_NAME.findall(v) == usage._VAR_PREFIX.findall(v)


def test_needs_scan_holds_every_text_with_a_slash():
    script = read_script(HOSTILE, "h.sbatch")
    _items, joined = usage.needs_scan(script, None)
    for t in usage.script_texts(script, None, "/"):
        assert t.value in joined
