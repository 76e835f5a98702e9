"""NERSC's Shifter SPANK plugin options, read as the plugin reads them (issue 21.4).

Sources for the expected values (hand-derived, not the code's output):
- the plugin's option table (NERSC/shifter wlm_integration/slurm/wrapper.c): `--image` and `--volume` take
  a value, `--ccm` none; a repeated `--volume` is appended with `;` (shifterSpank.c
  shifterSpank_process_option_volume); an empty value makes the option callback fail, so sbatch exits;
- image descriptors (ImageData.c parse_ImageDescriptor): `TYPE:TAG` when TYPE is one of docker, custom,
  id, local; otherwise the whole text is a tag of the site's defaultImageType (`docker`, as Shifter's
  docs recommend and NERSC configures: `shifter --image=ubuntu:14.04`);
- user volumes (VolumeMap.c validateVolumeMap_userRequest): `from:to[:flags]`, a container path is
  required, and it may not be under /etc, /var, /opt/udiImage nor be /opt;
- modules (shifter docs, "Shifter Modules": `shifter --image=<image> --module=cvmfs`; NERSC's gpu and
  mpich modules inject the host's CUDA driver / Cray MPICH libraries).
The Slurm oracle of this suite has no plugstack, so it refuses these options: accepting them is the
documented exception (docs/inspect.md, O226).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from translator.pipeline import ConvertSettings, convert

HEAD = "#!/bin/bash\n#SBATCH --job-name=nersc\n"


def conv(text, **settings):
    return convert("job.sbatch", data=text.encode(), settings=ConvertSettings(**settings))


def codes(c):
    return [f.code for f in c.findings]


def diag_codes(c):
    return [d.code for d in c.job.diagnostics]


def test_image_option_with_srun_shifter_converts_with_that_image_and_no_refusal(tmp_path):
    # The case: the job's image is nersc/pytorch:ngc-23.07-v0 (docker type stripped); `srun shifter
    # python train.py` on 1 node x 1 task runs python train.py once in that image.
    text = HEAD + "#SBATCH -N 1\n#SBATCH --image=docker:nersc/pytorch:ngc-23.07-v0\nsrun shifter python train.py\n"
    c = conv(text)
    assert c.job.sbatch_accepts is True
    assert "O206" not in diag_codes(c) and "O226" in diag_codes(c) and "P401" not in codes(c)
    p = c.plans[0]
    assert p.image == "nersc/pytorch:ngc-23.07-v0"
    assert (p.command, p.args) == (("python",), ("train.py",))
    script = tmp_path / "job.sbatch"
    script.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "translator", "convert", str(script)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "image: nersc/pytorch:ngc-23.07-v0" in proc.stdout and "refuse" not in proc.stderr


def test_inspect_accepts_shifter_options(tmp_path):
    script = tmp_path / "job.sbatch"
    script.write_text(HEAD + "#SBATCH --image=docker:ubuntu:22.04\n#SBATCH --ccm\nsrun shifter hostname\n")
    proc = subprocess.run(
        [sys.executable, "-m", "translator", "inspect", str(script)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and "would ACCEPT" in proc.stdout


@pytest.mark.parametrize(
    "directive, image",
    [
        ("--image=docker:ubuntu:22.04", "ubuntu:22.04"),
        ("--image=docker:nersc/pytorch:24.06.01", "nersc/pytorch:24.06.01"),
        # no known type before the first `:`: the default type docker, the whole text is the tag
        ("--image=ubuntu:22.04", "ubuntu:22.04"),
        ("--image registry.nersc.gov/m1/train:1.0", "registry.nersc.gov/m1/train:1.0"),
    ],
)
def test_image_descriptor_becomes_the_trainjob_image(directive, image):
    c = conv(HEAD + f"#SBATCH {directive}\nsrun shifter python t.py\n")
    assert c.job.sbatch_accepts and c.plans[0].image == image
    assert "L322" in codes(c) and "L310" not in codes(c)


@pytest.mark.parametrize("descriptor", ["id:5c8fa1b6e9", "local:/global/common/img"])
def test_gateway_and_local_images_cannot_be_pulled(descriptor):
    # `id:` names an image by the gateway's hash, `local:` a directory of the site: no registry image
    c = conv(HEAD + f"#SBATCH --image={descriptor}\nsrun shifter python t.py\n")
    assert c.job.sbatch_accepts
    (f,) = [f for f in c.findings if f.code == "L310"]
    assert f.severity == "error" and descriptor in f.message


def test_command_line_image_overrides_the_job_image():
    c = conv(HEAD + "#SBATCH --image=docker:a/b:1\nsrun shifter --image=docker:c/d:2 python t.py\n")
    assert c.plans[0].image == "c/d:2"


def test_every_volume_is_a_volume_finding():
    # two --volume options are appended (`;`); each entry host:container -> one L323 item, as pyxis mounts
    c = conv(
        HEAD + "#SBATCH --image=docker:a/b:1\n#SBATCH --volume=/pscratch/u/data:/data:ro\n"
        '#SBATCH --volume="/global/cfs/m1:/cfs;/dvs_ro/x:/x"\nsrun shifter python t.py\n'
    )
    (f,) = [f for f in c.findings if f.code == "L323"]
    assert "/pscratch/u/data -> /data" in f.message
    assert "/global/cfs/m1 -> /cfs" in f.message and "/dvs_ro/x -> /x" in f.message


def test_modules_become_a_finding_of_what_the_pod_needs():
    c = conv(HEAD + "#SBATCH --image=docker:a/b:1\n#SBATCH --module=gpu,cvmfs\nsrun shifter python t.py\n")
    assert c.job.sbatch_accepts
    (f,) = [f for f in c.findings if f.code == "L358"]
    assert f.severity == "warning" and "`gpu`" in f.message and "`cvmfs`" in f.message
    assert "GPU" in f.message and "/cvmfs" in f.message
    c = conv(HEAD + "#SBATCH --image=docker:a/b:1\nsrun shifter --module=mpich python t.py\n")
    assert any(f.code == "L358" and "`mpich`" in f.message for f in c.findings)


@pytest.mark.parametrize(
    "directive",
    [
        "--volume=/data",  # no container path
        "--volume=/x:/etc/x",  # under /etc
        "--volume=/x:/opt",  # /opt itself
        "--volume=/x:/y:bogus",  # unknown flag
        "--image=",  # empty
    ],
)
def test_values_the_plugin_refuses_make_sbatch_refuse(directive):
    c = conv(HEAD + f"#SBATCH --image=docker:a/b:1\n#SBATCH {directive}\nsrun shifter python t.py\n")
    assert c.job.sbatch_accepts is False
    assert "O227" in diag_codes(c) and "P401" in codes(c)


@pytest.mark.parametrize("directive", ["--volume=/x:/y:ro", "--volume=/tmp:/tmp:perNodeCache=size=10G"])
def test_valid_volume_flags_are_accepted(directive):
    c = conv(HEAD + f"#SBATCH --image=docker:a/b:1\n#SBATCH {directive}\nsrun shifter python t.py\n")
    assert c.job.sbatch_accepts is True and "O227" not in diag_codes(c)


def test_pyxis_options_stay_refused_by_plain_sbatch():
    # only Shifter is the exception: pyxis options keep O206 and sbatch_accepts false (the oracle's answer)
    c = conv(HEAD + "#SBATCH --container-image=nvcr.io#nvidia/pytorch:24.01-py3\nsrun python t.py\n")
    assert c.job.sbatch_accepts is False and "O206" in diag_codes(c) and "O226" not in diag_codes(c)
