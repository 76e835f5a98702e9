"""Plan building blocks: names, quantities, kubelet escaping, arrays, pip lines, env rules, runtimes."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given, settings, strategies as st

from translator.pipeline import ConvertSettings, convert
from translator import naming
from translator.plan import kube, resources, runtimes
from translator.plan.build import array_indices

RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def plan_of(text: str, **kw):
    conv = convert("job.sbatch", data=text.encode(), settings=ConvertSettings(**kw))
    return conv.plans


@pytest.mark.parametrize(
    "name, expected",
    [
        ("train", "train"),
        ("llama-7b-pretrain", "llama-7b-pretrain"),
        ("LLM_Pretrain", "llm-pretrain-" + hashlib.sha256(b"LLM_Pretrain").hexdigest()[:6]),
        ("7b run", "b-run-" + hashlib.sha256(b"7b run").hexdigest()[:6]),
        ("---", "slurm-job-" + hashlib.sha256(b"---").hexdigest()[:6]),
    ],
)
def test_trainjob_names(name, expected):
    assert naming.trainjob_name(name) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120), st.one_of(st.just(""), st.integers(0, 4000000).map(str)))
def test_trainjob_names_are_always_valid_and_deterministic(name, suffix):
    out = naming.trainjob_name(name, suffix)
    assert len(out) <= 63 and RFC1035.match(out), out
    assert out == naming.trainjob_name(name, suffix)
    if suffix:
        assert out.endswith("-" + suffix)


def test_distinct_names_that_sanitize_alike_stay_distinct():
    assert naming.trainjob_name("Train_A") != naming.trainjob_name("train-a")
    long = "x" * 80
    assert naming.trainjob_name(long) != naming.trainjob_name(long + "y")


@pytest.mark.parametrize("mib, q", [(1024, "1Gi"), (262144, "256Gi"), (1536, "1536Mi"), (1, "1Mi"), (1048576, "1Ti")])
def test_mib_quantities(mib, q):
    assert resources.mib_quantity(mib) == q


@settings(max_examples=500)
@given(st.text(alphabet="$()ab_X{} ", max_size=30))
def test_kubelet_escaping_round_trips(text):
    env = {"X": "EXPANDED", "ab": "EXPANDED", "a": "EXPANDED", "b": "EXPANDED"}
    assert kube.expand(kube.escape(text), env) == text


def test_kubelet_escaping_leaves_shell_substitutions_readable():
    assert kube.escape("$(hostname -s) $((1+2)) ${X}") == "$(hostname -s) $((1+2)) ${X}"
    assert kube.escape("$(hostname)") == "$$(hostname)", "an identifier could name a container variable"
    assert kube.escape("$(PET_NNODES) pid $$") == "$$(PET_NNODES) pid $$$$"
    assert kube.escape("$($$)") == "$$($$$$)"


# The kubelet's expand.go looks at the single byte after a `$`; for any byte but `$` and `(` it writes
# `$` + string(byte), i.e. the rune with that byte's number: `$é` (bytes 24 C3 A9) comes out as
# `$Ã` + a stray A9 byte. A `$` before a non-ASCII character must therefore be written `$$`.
def test_kubelet_mangles_dollar_before_non_ascii_and_escaping_prevents_it():
    assert kube.expand("$é") != "$é"
    assert kube.expand("$é").startswith("$\u00c3")
    assert kube.escape("$é") == "$$é"
    assert kube.escape("cost: 5$€ and $日本") == "cost: 5$$€ and $$日本"
    assert kube.escape("$a $1 $- $") == "$a $1 $- $", "a `$` before other ASCII, or at the end, is copied as is"
    assert kube.escape("é$(é)") == "é$(é)", "inside an unresolvable $(…) the kubelet copies bytes verbatim"


@settings(max_examples=500)
@given(st.text(alphabet="$()ab_X{} é€\U0001f600\x80", max_size=30))
def test_kubelet_escaping_round_trips_non_ascii(text):
    # container env names are identifiers (and Kubernetes never allows non-ASCII ones)
    env = {"X": "EXPANDED", "ab": "EXPANDED", "a": "EXPANDED", "b": "EXPANDED"}
    assert kube.expand(kube.escape(text), env) == text


@pytest.mark.parametrize(
    "spec, out",
    [("0-3", [0, 1, 2, 3]), ("1,3,5", [1, 3, 5]), ("0-15:4", [0, 4, 8, 12]), ("2-2", [2]), ("5-1", None), ("x", None)],
)
def test_array_indices(spec, out):
    assert array_indices(spec) == out


def test_pip_lines_become_packages_and_index_urls():
    [p] = plan_of(
        "#!/bin/bash\npip install -U 'torch==2.3.*' -r reqs.txt --extra-index-url https://x.example/simple "
        "--user -q\npython -m pip install --index-url https://mirror.example/simple wandb\n"
        "python train.py\n"
    )
    assert p.packages == ("torch==2.3.*", "-r reqs.txt", "wandb")
    assert p.pip_index_urls == ("https://mirror.example/simple", "https://x.example/simple")
    assert p.pip_extra_args == ("-U",)


def test_re_exported_variable_takes_its_last_value_and_place():
    # bash: the environment the launch sees holds each name once, with the value of the last export;
    # the TrainJob env lists it where that last export stands (the plan's order is the script's order)
    [p] = plan_of("#!/bin/bash\nexport A=1\nexport B=2\nexport A=3\nexport C=4\npython t.py\n")
    assert [(e.name, e.value) for e in p.env] == [("B", "2"), ("A", "3"), ("C", "4")]


def test_many_pip_lines_keep_first_occurrence_order():
    body = "".join(f"pip install pkg{i % 300}==1.{i % 300}\n" for i in range(900))
    [p] = plan_of("#!/bin/bash\n" + body + "python train.py\n")
    assert p.packages == tuple(f"pkg{i}==1.{i}" for i in range(300))


def test_env_rules():
    [p] = plan_of(
        "#!/bin/bash\n#SBATCH --gpus-per-node=2\nexport A=1\nexport PET_NNODES=4\n"
        "export OMPI_MCA_btl=tcp\nexport MASTER_PORT=1234\nexport SLURM_CPU_BIND=none\n"
        "export B=$(hostname)\nexport C='$(X) $$'\nA=2\nexport A=3\npython t.py\nexport LATE=1\n"
    )
    env = {e.name: e.value for e in p.env}
    assert env == {"A": "3", "C": "$$(X) $$$$"}
    found = {f.code for f in p.findings}
    assert {"P420", "P421", "P422"} <= found


def test_image_is_always_set_and_overridable():
    for body, image in (
        ("python t.py\n", runtimes.SHIPPED["torch-distributed"].image),
        ("#SBATCH -N2\nmpirun ./a\n", runtimes.SHIPPED["deepspeed-distributed"].image),
    ):
        [p] = plan_of("#!/bin/bash\n" + body)
        assert p.image == image
        [p] = plan_of("#!/bin/bash\n" + body, image="registry.example/me/img:1")
        assert p.image == "registry.example/me/img:1"


def test_runtime_override_and_unknown_runtime():
    [p] = plan_of("#!/bin/bash\n#SBATCH -N2 --ntasks-per-node=4\nmpirun ./a\n", runtime="mlx-distributed")
    assert p.runtime == "mlx-distributed" and p.image == runtimes.SHIPPED["mlx-distributed"].image
    [p] = plan_of("#!/bin/bash\npython t.py\n", runtime="site-torch")
    assert p.runtime == "site-torch" and p.image and "P425" in {f.code for f in p.findings}
    [p] = plan_of("#!/bin/bash\npython t.py\n", runtime="torchtune-llama3.2-1b")
    assert not p.can_run


def test_gpu_forms_and_custom_resource_name():
    for header, n in (
        ("--gres=gpu:4", "4"),
        ("--gres=gpu:a100:2", "2"),
        ("--gpus-per-node=8", "8"),
        ("-N2 --gpus=8", "4"),
        ("--ntasks-per-node=2 --gpus-per-task=2", "4"),
    ):
        [p] = plan_of(f"#!/bin/bash\n#SBATCH {header}\npython t.py\n", gpu_resource="amd.com/gpu")
        assert dict(p.resources_per_node)["amd.com/gpu"] == n, header


def test_memory_forms():
    [p] = plan_of("#!/bin/bash\n#SBATCH --ntasks-per-node=4 -c 2 --mem-per-cpu=1G\npython t.py\n")
    assert dict(p.resources_per_node) == {"cpu": "8", "memory": "8Gi"}
    [p] = plan_of("#!/bin/bash\n#SBATCH --gpus-per-node=2 --mem-per-gpu=40G\npython t.py\n")
    assert dict(p.resources_per_node)["memory"] == "80Gi"
    [p] = plan_of("#!/bin/bash\n#SBATCH --mem=0\npython t.py\n")
    assert "memory" not in dict(p.resources_per_node) and "P417" in {f.code for f in p.findings}


def test_deadline_and_source_map():
    [p] = plan_of("#!/bin/bash\n#SBATCH --time=1:30:00\n#SBATCH -N 2\nsrun torchrun --nproc_per_node 2 t.py\n")
    assert p.active_deadline_seconds == 5400
    smap = {(s.field, s.status): s.lines for s in p.source_map}
    assert smap[("spec.activeDeadlineSeconds", "mapped")] == (2,)
    assert smap[("spec.trainer.numNodes", "mapped")] == (3,)
    assert smap[("spec.trainer.command", "mapped")] == (4,)


def test_sbatch_refusal_is_an_error_finding():
    [p] = plan_of("#SBATCH -N 2\npython t.py\n")  # no shebang: sbatch refuses
    assert not p.can_run and "P401" in {f.code for f in p.findings}


def test_launch_line_variables_follow_the_env_rules():
    [p] = plan_of(
        "#!/bin/bash\n#SBATCH -N 2\nexport A=1\nA=2 PET_NODE_RANK=0 SLURM_CPU_BIND=none B='$(X)' "
        "srun torchrun --nproc_per_node 2 t.py\n"
    )
    assert {e.name: e.value for e in p.env} == {"A": "2", "B": "$$(X)"}
    assert {"P420", "P421"} <= {f.code for f in p.findings}


def test_launch_on_fewer_nodes_than_allocated():
    [p] = plan_of("#!/bin/bash\n#SBATCH -N 4\nsrun -N 2 --ntasks-per-node=1 torchrun --nproc_per_node 2 t.py\n")
    assert p.num_nodes == 2 and "P443" in {f.code for f in p.findings}


def test_launch_output_piped_to_tee():
    [p] = plan_of("#!/bin/bash\n#SBATCH -N 2\nsrun torchrun --nproc_per_node 2 t.py 2>&1 | tee train.log\n")
    assert p.launcher == "torchrun"
    tee = [f for f in p.findings if "tee" in f.message]
    assert tee and tee[0].severity == "info"
