"""`slurm2kf submit` against the real kube-apiserver (shared/kube-apiserver, started by ./test.sh).

Expected behaviour comes from the Kubernetes API conventions (create returns 201 and stores the
object; a server-side dry run validates and stores nothing; a second create of the same name is 409
AlreadyExists; generateName gets 5 random characters; server-side apply of an unchanged object
writes nothing, so resourceVersion stays) and from sbatch (`Submitted batch job N` per job, exit 0).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import time
from pathlib import Path

import pytest
import yaml

from kube_cluster import get_trainjob, list_trainjobs, new_namespace, unused_port, variant_kubeconfig

pytestmark = pytest.mark.cluster

FIX = Path(__file__).resolve().parent / "fixtures" / "convert"
RDZV = FIX / "torchrun" / "multinode_rdzv.sbatch"  # job-name llama-pretrain (line 2), --nodes=4 (line 3)
HETJOB = FIX / "findings" / "hetjob.sbatch"  # P414 error finding: sbatch runs it, Kubernetes cannot


def submit(cli, kube, *args, ns=None):
    return cli("submit", "--kubeconfig", kube.kubeconfig, "-n", ns or kube.ns, *args)


def test_create_stores_the_converted_trainjob_with_its_source_labels(cli, kube):
    ns = new_namespace(kube)
    r = submit(cli, kube, RDZV, ns=ns)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == f"Submitted TrainJob {ns}/llama-pretrain\n"
    # the script's warnings are shown, as convert shows them (module load -> P402)
    assert "warning P402" in r.stderr
    obj = get_trainjob(kube, ns, "llama-pretrain")
    assert obj is not None
    # what convert writes for the same script is what was stored (the server may only add defaults)
    conv = cli("convert", RDZV)
    emitted = yaml.safe_load(conv.stdout)
    assert obj["spec"]["trainer"] == emitted["spec"]["trainer"]
    assert obj["spec"]["runtimeRef"]["name"] == emitted["spec"]["runtimeRef"]["name"]
    assert obj["spec"]["trainer"]["numNodes"] == 4  # #SBATCH --nodes=4
    labels, ann = obj["metadata"]["labels"], obj["metadata"]["annotations"]
    digest = hashlib.sha256(RDZV.read_bytes()).hexdigest()
    assert labels["app.kubernetes.io/managed-by"] == "slurm2kf"
    assert labels["slurm2kf.io/source-hash"] == digest[:12]
    assert labels["slurm2kf.io/script"] == "multinode_rdzv.sbatch"
    assert ann["slurm2kf.io/source"] == os.path.abspath(RDZV)
    assert ann["slurm2kf.io/source-sha256"] == digest
    from translator import __version__

    assert ann["slurm2kf.io/version"] == __version__
    assert ann["slurm2kf.io/job-name"] == "llama-pretrain"  # the emitter's annotation is kept
    # the field manager is slurm2kf
    assert {m["manager"] for m in obj["metadata"]["managedFields"]} == {"slurm2kf"}


def test_dry_run_validates_and_stores_nothing(cli, kube):
    ns = new_namespace(kube)
    r = submit(cli, kube, "--dry-run", RDZV, ns=ns)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(f"Submitted TrainJob {ns}/llama-pretrain (dry run")
    assert get_trainjob(kube, ns, "llama-pretrain") is None


def test_duplicate_name_is_an_error_that_suggests_generate_name(cli, kube):
    ns = new_namespace(kube)
    assert submit(cli, kube, RDZV, ns=ns).exit_code == 0
    r = submit(cli, kube, RDZV, ns=ns)
    assert r.exit_code == 1
    assert r.stdout == ""
    assert f"error K906 TrainJob {ns}/llama-pretrain already exists" in r.stderr
    assert "--generate-name" in r.stderr
    assert len(list_trainjobs(kube, ns)) == 1


def test_generate_name_gives_each_submission_a_unique_name(cli, kube):
    ns = new_namespace(kube)
    names = []
    for _ in range(2):
        r = submit(cli, kube, "--generate-name", RDZV, ns=ns)
        assert r.exit_code == 0, r.stderr
        m = re.fullmatch(rf"Submitted TrainJob {ns}/(llama-pretrain-[a-z0-9]{{5}})\n", r.stdout)
        assert m, r.stdout
        names.append(m.group(1))
    assert names[0] != names[1]
    assert sorted(o["metadata"]["name"] for o in list_trainjobs(kube, ns)) == sorted(names)


def test_apply_is_idempotent_and_a_changed_trainer_hits_the_immutability_rule(cli, kube, tmp_path):
    ns = new_namespace(kube)
    r1 = submit(cli, kube, "--apply", RDZV, ns=ns)
    assert r1.exit_code == 0 and r1.stdout == f"Submitted TrainJob {ns}/llama-pretrain\n", r1.stderr
    rv1 = get_trainjob(kube, ns, "llama-pretrain")["metadata"]["resourceVersion"]
    r2 = submit(cli, kube, "--apply", RDZV, ns=ns)
    assert r2.exit_code == 0 and r2.stdout == f"Submitted TrainJob {ns}/llama-pretrain (unchanged)\n"
    assert get_trainjob(kube, ns, "llama-pretrain")["metadata"]["resourceVersion"] == rv1
    # spec.trainer carries the CRD transition rule `self == oldSelf` ("field is immutable"): another
    # image for the same name is rejected by that rule, mapped back to the script lines of the trainer
    r3 = submit(cli, kube, "--apply", "--image", "example.com/llm:2", RDZV, ns=ns)
    assert r3.exit_code == 1
    line = next(ln for ln in r3.stderr.splitlines() if " K907 " in ln)
    assert line.startswith(
        f"{RDZV}:3: error K907 TrainJob {ns}/llama-pretrain rejected by the server: "
        "spec.trainer: Invalid value: field is immutable"
    )
    assert "--generate-name" in line
    obj = get_trainjob(kube, ns, "llama-pretrain")
    assert obj["metadata"]["resourceVersion"] == rv1
    assert [m["operation"] for m in obj["metadata"]["managedFields"] if m["manager"] == "slurm2kf"] == ["Apply"]
    # --apply needs a fixed name
    r4 = submit(cli, kube, "--apply", "--generate-name", RDZV, ns=ns)
    assert r4.exit_code == 2


def test_sbatch_args_after_double_dash_and_yaml_input(cli, kube, tmp_path):
    ns = new_namespace(kube)
    # sbatch options after `--` win over #SBATCH lines, as on the sbatch command line
    r = cli("submit", "--kubeconfig", kube.kubeconfig, "-n", ns, str(RDZV), "--", "--nodes=2", "-J", "short-run")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == f"Submitted TrainJob {ns}/short-run\n"
    assert get_trainjob(kube, ns, "short-run")["spec"]["trainer"]["numNodes"] == 2
    # TrainJob YAML written by convert is sent as it is, its source annotation kept
    out = tmp_path / "job.yaml"
    assert cli("convert", RDZV, "-o", out).exit_code == 0
    r = submit(cli, kube, out, ns=ns)
    assert r.exit_code == 0, r.stderr
    obj = get_trainjob(kube, ns, "llama-pretrain")
    assert obj["metadata"]["annotations"]["slurm2kf.io/source"] == str(RDZV)  # as convert wrote it
    assert obj["metadata"]["labels"]["slurm2kf.io/script"] == "job.yaml"
    assert obj["metadata"]["labels"]["slurm2kf.io/source-hash"] == hashlib.sha256(out.read_bytes()).hexdigest()[:12]


def test_error_findings_refuse_the_script_unless_forced(cli, kube):
    ns = new_namespace(kube)
    r = submit(cli, kube, HETJOB, ns=ns)
    assert r.exit_code == 1
    assert "error P414" in r.stderr and "error K911" in r.stderr and "--force" in r.stderr
    assert r.stdout == ""
    assert list_trainjobs(kube, ns) == []
    r = submit(cli, kube, "--force", HETJOB, ns=ns)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == f"Submitted TrainJob {ns}/het\n"


def test_missing_namespace_is_named(cli, kube):
    r = submit(cli, kube, RDZV, ns="no-such-namespace-s2k")
    assert r.exit_code == 1
    assert 'error K905 namespace "no-such-namespace-s2k" does not exist' in r.stderr
    assert "Traceback" not in r.stderr


def test_forbidden_user_verb_resource_and_namespace_are_named(cli, kube):
    r = cli("submit", "--kubeconfig", kube.kubeconfig, "--context", "alice", "-n", kube.ns, RDZV)
    assert r.exit_code == 1
    line = next(ln for ln in r.stderr.splitlines() if "K904" in ln)
    # RBAC denies alice (no role bindings): user, verb, resource and namespace in one line
    assert 'user "alice"' in line and "create" in line
    assert "trainjobs.trainer.kubeflow.org" in line and f'namespace "{kube.ns}"' in line


def test_schema_error_from_the_server_names_field_message_and_script_lines(cli, kube, tmp_path):
    # 130 exported variables -> 130 env entries; the CRD allows at most 128 (maxItems: 128)
    lines = ["#!/bin/bash", "#SBATCH --job-name=many-env", "#SBATCH --nodes=1"]
    lines += [f"export VAR_{i}={i}" for i in range(130)]  # lines 4..133
    lines += ["python train.py"]
    script = tmp_path / "many.sbatch"
    script.write_text("\n".join(lines) + "\n")
    r = submit(cli, kube, script)
    assert r.exit_code == 1
    errs = [ln for ln in r.stderr.splitlines() if " K907 " in ln]
    assert len(errs) == 1
    assert errs[0].startswith(
        f"{script}:4: error K907 TrainJob {kube.ns}/many-env rejected by the server: "
        "spec.trainer.env: Too many: 130: must have at most 128 items"
    )
    assert "from script lines 4, 5, 6, 7, 8, 9, ...: 130 lines" in errs[0]
    assert get_trainjob(kube, kube.ns, "many-env") is None


def test_cel_rule_rejection_is_mapped_back_to_the_script_line(kube):
    """A TrainJob name that is a DNS subdomain but not an RFC 1035 label passes ObjectMeta validation
    and fails the CRD's root CEL rule `self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')`. The
    converter never makes such a name, so the plan's name is replaced to send one."""
    from translator.cluster.objects import items_from_plans
    from translator.cluster.submit import submit_one
    from translator.pipeline import convert

    conv = convert(str(RDZV))
    plan = dataclasses.replace(conv.plans[0], name="llama.pretrain")
    [item] = items_from_plans(str(RDZV), RDZV.read_bytes(), [plan])
    out = submit_one(kube.cluster, item, namespace=kube.ns)
    assert not out.ok and out.rejection.code == "K907"
    [cause] = out.rejection.causes
    assert cause.field == "metadata.name"
    assert "metadata.name must match RFC 1035 DNS label format" in cause.message
    assert cause.line == 2  # `#SBATCH --job-name=llama-pretrain`


def test_cel_rule_rejection_of_yaml_names_the_yaml_line(cli, kube, tmp_path):
    doc = tmp_path / "bad.yaml"
    doc.write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\n"
        "kind: TrainJob\n"
        "metadata:\n"
        "  name: bad-procs\n"
        "spec:\n"
        "  runtimeRef:\n"
        "    name: torch-distributed\n"
        "  trainer:\n"
        "    numProcPerNode: 0\n"
    )  # line 9; CRD CEL rule: self >= 1
    r = submit(cli, kube, "--dry-run", doc)
    assert r.exit_code == 1
    assert (
        f"{doc}:9: error K907 TrainJob {kube.ns}/bad-procs rejected by the server: "
        "spec.trainer.numProcPerNode: Invalid value: 0: numProcPerNode must be greater than or equal to 1" in r.stderr
    )


@pytest.mark.parametrize("case", ["refused", "wrong-ca", "bad-token"])
def test_transport_and_credential_errors_are_one_line_exit_2(cli, kube, tmp_path, case):
    import certifi  # a CA bundle that did not sign the test server's self-signed certificate

    if case == "refused":
        cfg = variant_kubeconfig(kube, tmp_path, server=f"https://127.0.0.1:{unused_port()}")
        code, words = "K901", "connection refused"
    elif case == "wrong-ca":
        cfg = variant_kubeconfig(kube, tmp_path, ca=certifi.where())
        code, words = "K902", "TLS verification"
    else:
        cfg = variant_kubeconfig(kube, tmp_path, token="not-a-valid-token")
        code, words = "K903", "token invalid or expired"
    t0 = time.monotonic()
    r = cli("submit", "--kubeconfig", cfg, RDZV)
    assert time.monotonic() - t0 < 10  # short timeouts, no retries
    assert r.exit_code == 2
    errs = [ln for ln in r.stderr.splitlines() if not re.search(r": (warning|info) [A-Z]\d{3} ", ln)]
    assert len(errs) == 1, r.stderr
    assert errs[0].startswith(f"slurm2kf submit: error {code} ") and words in errs[0]
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_kubeconfig_problems_are_one_line_exit_2(cli, kube, tmp_path):
    r = cli("submit", "--kubeconfig", tmp_path / "none.yaml", RDZV)
    assert r.exit_code == 2 and "error K900 kubeconfig" in r.stderr and "no such file" in r.stderr
    r = cli("submit", "--kubeconfig", kube.kubeconfig, "--context", "nope", RDZV)
    assert r.exit_code == 2 and "no context named 'nope'" in r.stderr and "kube-oracle" in r.stderr


def test_script_from_stdin_and_namespace_mismatch(cli, kube, tmp_path):
    ns = new_namespace(kube)
    r = cli("submit", "--kubeconfig", kube.kubeconfig, "-n", ns, "-", input=RDZV.read_text())
    assert r.exit_code == 0, r.stderr
    assert r.stdout == f"Submitted TrainJob {ns}/llama-pretrain\n"
    obj = get_trainjob(kube, ns, "llama-pretrain")
    assert obj["metadata"]["annotations"]["slurm2kf.io/source"] == "<stdin>"
    # a TrainJob YAML that names another namespace than -n: refused before sending (as kubectl does)
    doc = tmp_path / "other-ns.yaml"
    doc.write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: x\n"
        "  namespace: somewhere-else\nspec:\n  runtimeRef:\n    name: torch-distributed\n"
    )
    r = submit(cli, kube, doc, ns=ns)
    assert r.exit_code == 1 and "error K916" in r.stderr and "somewhere-else" in r.stderr
    # a YAML file with no TrainJob in it, and one with another kind next to a TrainJob
    cm = tmp_path / "cm.yaml"
    cm.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n")
    r = submit(cli, kube, cm, ns=ns)
    assert r.exit_code == 2 and "warning K915" in r.stderr and "error V703" in r.stderr


def test_server_warnings_are_shown(cli, kube, tmp_path):
    # the apiserver warns about a finalizer name without a domain (apimachinery ValidateFinalizerName
    # warnings since Kubernetes 1.28); the object is still accepted
    doc = tmp_path / "w.yaml"
    doc.write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: warn-me\n"
        "  finalizers: [foo]\nspec:\n  runtimeRef:\n    name: torch-distributed\n"
    )
    r = submit(cli, kube, "--dry-run", doc)
    assert r.exit_code == 0
    assert (
        f'{doc}: warning K917 TrainJob {kube.ns}/warn-me: the server warns: metadata.finalizers: "foo": '
        "prefer a domain-qualified finalizer name" in r.stderr
    )


def test_hostile_names_stay_one_path_segment(cli, kube, tmp_path):
    """A name or namespace with `/`, `..` or `?` from a file or the command line never reaches another
    URL: it is one percent-encoded path segment, and the server refuses it as a name."""
    ns = new_namespace(kube)
    doc = tmp_path / "evil.yaml"
    doc.write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n"
        "  name: '../../../../api/v1/namespaces/default/configmaps/x?dryRun=All'\n"
        "spec:\n  runtimeRef:\n    name: torch-distributed\n"
    )
    r = submit(cli, kube, "--apply", doc, ns=ns)
    assert r.exit_code == 1 and "Traceback" not in r.stderr
    assert list_trainjobs(kube, ns) == []
    r = cli("cancel", "--kubeconfig", kube.kubeconfig, "-n", ns, "-y", "..")
    assert r.exit_code == 1 and "Traceback" not in r.stderr
    r = cli("cancel", "--kubeconfig", kube.kubeconfig, "-n", "../default", "-y", "x")
    assert r.exit_code == 1 and "Traceback" not in r.stderr


def test_a_kind_list_file_submits_its_items(cli, kube, tmp_path):
    ns = new_namespace(kube)
    doc = tmp_path / "list.yaml"
    doc.write_text(
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: trainer.kubeflow.org/v1alpha1\n  kind: TrainJob\n  metadata: {name: one}\n"
        "  spec: {runtimeRef: {name: torch-distributed}}\n"
        "- apiVersion: trainer.kubeflow.org/v1alpha1\n  kind: TrainJob\n  metadata: {name: two}\n"
        "  spec: {runtimeRef: {name: torch-distributed}, trainer: {numProcPerNode: 0}}\n"
    )
    r = submit(cli, kube, doc, ns=ns)
    assert r.exit_code == 1
    assert r.stdout == f"Submitted TrainJob {ns}/one\n"
    # the second item's error points at its spec line inside the list (line 11)
    assert f"{doc}:11: error K907 TrainJob {ns}/two rejected by the server: spec.trainer.numProcPerNode" in r.stderr
