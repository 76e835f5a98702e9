"""The cluster package's pure parts (no server): K-code documentation, field mapping, states, labels."""

from __future__ import annotations

import datetime as dt
import re
import socket
from pathlib import Path

import pytest

from docs_text import doc_section

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    *(ROOT / "translator" / "cluster").glob("*.py"),
    *(
        ROOT / "translator" / "cli" / n
        for n in (
            "submit_cmd.py",
            "jobs_cmd.py",
            "cancel_cmd.py",
            "cluster_common.py",
            "validate_cmd.py",
            "migrate_cmd.py",
        )
    ),
]


def test_k_codes_are_documented_and_nothing_else():
    used = set()
    for p in SOURCES:
        used |= set(re.findall(r"\b(K9\d\d)\b", p.read_text(encoding="utf-8")))
    assert {"K900", "K901", "K902", "K903", "K904", "K905", "K906", "K907", "K911", "K912"} <= used
    documented = set(re.findall(r"^\|\s*(K9\d\d)\s*\|", doc_section("codes-K"), re.M))
    assert documented == used, (sorted(used - documented), sorted(documented - used))


def test_normalize_and_split_server_field_paths():
    from translator.cluster.errors import field_tuple, normalize_field

    # the apiserver writes list indexes and map keys in brackets
    assert normalize_field("spec.trainer.env[3].name") == "spec.trainer.env.name"
    assert (
        normalize_field("spec.trainer.resourcesPerNode.requests[nvidia.com/gpu]")
        == "spec.trainer.resourcesPerNode.nvidia.com/gpu"
    )
    assert normalize_field("spec.trainer.resourcesPerNode.limits.memory") == "spec.trainer.resourcesPerNode.memory"
    assert field_tuple("spec.trainer.env[3].name") == ("spec", "trainer", "env", 3, "name")
    assert field_tuple("spec.trainer.resourcesPerNode.requests[nvidia.com/gpu]") == (
        "spec",
        "trainer",
        "resourcesPerNode",
        "requests",
        "nvidia.com/gpu",
    )


def test_script_locator_uses_the_source_map():
    from translator.cluster.errors import script_locator
    from translator.plan.model import SourceMap

    loc = script_locator(
        [
            SourceMap("spec.trainer.numNodes", (3,), "mapped"),
            SourceMap("spec.trainer.resourcesPerNode.cpu", (5,), "mapped"),
            SourceMap("spec.trainer.resourcesPerNode.memory", (6,), "mapped"),
            SourceMap("spec.trainer.command", (9, 10), "mapped"),
            SourceMap("(body)", (12,), "dropped"),
        ]
    )
    assert loc("spec.trainer.numNodes") == (3, "from script line 3")
    assert loc("spec.trainer.resourcesPerNode.requests.memory")[0] == 6
    assert loc("spec.trainer.resourcesPerNode") == (5, "from script lines 5, 6: 2 lines")  # a parent
    assert loc("spec.trainer.args[0]") == (9, "from script lines 9, 10: 2 lines")  # args come with command
    assert loc("spec.trainer.image")[0] is None
    assert loc(None) == (None, "")


def _status(reason, message, causes=None, code=422):
    body = {"kind": "Status", "status": "Failure", "reason": reason, "message": message, "code": code}
    if causes is not None:
        body["details"] = {"causes": causes}
    return body


def test_rejections_of_each_status():
    from translator.cluster.client import HttpError
    from translator.cluster.errors import rejection

    cl = type("C", (), {"user": "bob", "context": "ctx", "server": "https://k:6443"})()
    r = rejection(
        HttpError(
            403,
            _status(
                "Forbidden",
                'trainjobs.trainer.kubeflow.org is forbidden: User "alice" '
                'cannot create resource "trainjobs" in API group "trainer.kubeflow.org" in '
                'the namespace "ml"',
                code=403,
            ),
        ),
        verb="create",
        namespace="ml",
        name="a",
        cluster=cl,
    )
    assert r.code == "K904" and 'user "alice"' in r.message and 'namespace "ml"' in r.message
    r = rejection(
        HttpError(409, _status("AlreadyExists", "exists", code=409)),
        verb="create",
        namespace="ml",
        name="a",
        cluster=cl,
    )
    assert r.code == "K906" and "--generate-name" in r.message
    # the noise cause the apiserver adds after schema errors is dropped when a real cause exists
    r = rejection(
        HttpError(
            422,
            _status(
                "Invalid",
                "x",
                [
                    {"field": "spec.trainer.env", "message": "Too many: 130: must have at most 128 items"},
                    {
                        "field": "<nil>",
                        "message": "Invalid value: null: some validation rules were not checked because the "
                        "object was invalid; correct the existing errors to complete validation",
                    },
                ],
            ),
        ),
        verb="create",
        namespace="ml",
        name="a",
        cluster=cl,
    )
    assert r.code == "K907" and [c.field for c in r.causes] == ["spec.trainer.env"]
    # a root CEL rule (field <nil>) points at the field its message names
    r = rejection(
        HttpError(
            422,
            _status(
                "Invalid",
                "x",
                [{"field": "<nil>", "message": "Invalid value: metadata.name must match RFC 1035 DNS label format"}],
            ),
        ),
        verb="create",
        namespace="ml",
        name="a.b",
        cluster=cl,
    )
    assert r.causes[0].field == "metadata.name"
    # strict decoding: 400 naming the unknown field
    r = rejection(
        HttpError(
            400,
            _status(
                "BadRequest",
                'TrainJob in version "v1alpha1" cannot be handled as a '
                'TrainJob: strict decoding error: unknown field "spec.trainer.bogus"',
                code=400,
            ),
        ),
        verb="create",
        namespace="ml",
        name="a",
        cluster=cl,
    )
    assert r.code == "K907" and r.causes[0].field == "spec.trainer.bogus"
    r = rejection(
        HttpError(
            404,
            _status("NotFound", 'namespaces "ml" not found', code=404)
            | {"details": {"name": "ml", "kind": "namespaces"}},
        ),
        verb="create",
        namespace="ml",
        name="a",
        cluster=cl,
    )
    assert r.code == "K905"
    r = rejection(
        HttpError(404, _status("NotFound", "the server could not find the requested resource", code=404)),
        verb="create",
        namespace="ml",
        name="a",
        cluster=cl,
    )
    assert r.code == "K910"
    r = rejection(
        HttpError(500, _status("InternalError", "boom", code=500)), verb="create", namespace="ml", name="a", cluster=cl
    )
    assert r.code == "K913"


def test_state_from_conditions_follows_the_trainer():
    from translator.cluster.jobs import state_of

    def c(t, s="True", reason="r"):
        return {"type": t, "status": s, "reason": reason}

    assert state_of({}) == ("PENDING", "")
    assert state_of({"status": {"conditions": [c("Created", reason="JobsCreationSucceeded")]}})[0] == "CREATED"
    assert (
        state_of({"status": {"conditions": [c("Created")], "jobsStatus": [{"name": "node", "active": 1}]}})[0]
        == "RUNNING"
    )
    assert state_of({"status": {"conditions": [c("Suspended"), c("Created")]}})[0] == "SUSPENDED"
    # resumed: Suspended=False (reason Resumed) no longer wins
    assert state_of({"status": {"conditions": [c("Suspended", "False", "Resumed"), c("Created")]}})[0] == "CREATED"
    assert (
        state_of({"status": {"conditions": [c("Created"), c("Complete", reason="AllJobsCompleted")]}})[0] == "COMPLETE"
    )
    assert state_of({"status": {"conditions": [c("Created"), c("Failed", reason="DeadlineExceeded")]}}) == (
        "FAILED",
        "DeadlineExceeded",
    )
    # Created=False (JobsBuildFailed) is not running
    assert state_of({"status": {"conditions": [c("Created", "False", "JobsBuildFailed")]}})[0] == "PENDING"


def test_age_like_kubectl():
    from translator.cluster.jobs import age_text

    now = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    assert age_text("2026-01-02T03:04:00Z", now) == "5s"
    assert age_text("2026-01-02T02:04:05Z", now) == "60m"
    assert age_text("2026-01-01T03:04:05Z", now) == "24h"
    assert age_text("2025-12-29T03:04:05Z", now) == "4d"
    assert age_text(None, now) == "?"


def test_label_values_are_valid_and_short():
    from translator.cluster.objects import label_value

    pat = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
    for name in ("train.sbatch", "run me (v2).sh", "_x_", "a" * 200 + ".sbatch", "ünïcode.sh", "...", ""):
        v = label_value(name)
        assert len(v) <= 63 and pat.match(v), (name, v)
    assert label_value("train.sbatch") == "train.sbatch"
    assert label_value("run me (v2).sh") == "run_me_v2_.sh"


def test_generate_name_base_leaves_room_for_the_suffix():
    from translator.cluster.submit import generate_name_base

    assert generate_name_base("train") == "train-"
    base = generate_name_base("a" * 63)
    assert len(base) == 58 and base.endswith("-")  # the apiserver keeps 58 and adds 5


def test_a_silent_server_is_a_timeout_line(tmp_path):
    """A server that accepts the connection and never answers: K909 after the (short) timeout."""
    from translator.cluster import ClusterError
    from translator.cluster.client import connect

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    cfg = tmp_path / "kc"
    cfg.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:%d', "
        "insecure-skip-tls-verify: true}\nusers:\n- {name: u, user: {token: t}}\ncontexts:\n"
        "- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n" % port
    )
    try:
        cluster = connect(str(cfg), timeout=(0.5, 0.5))
        with pytest.raises(ClusterError) as info:
            cluster.request("GET", "/readyz")
        assert info.value.code == "K909" and "did not answer within 0.5/0.5 s" in info.value.message
    finally:
        srv.close()


def test_server_warning_headers_are_read():
    from urllib3 import HTTPHeaderDict

    from translator.cluster.client import _warnings

    h = HTTPHeaderDict()
    h.add("Warning", '299 - "unknown field \\"spec.foo\\""')
    h.add("Warning", '299 - "metadata.finalizers: \\"x\\": prefer a domain-qualified finalizer name"')
    # RFC 7234: warn-code SP warn-agent SP quoted-string (backslash escapes, RFC 7230)
    assert _warnings(h) == [
        'unknown field "spec.foo"',
        'metadata.finalizers: "x": prefer a domain-qualified finalizer name',
    ]


@pytest.mark.parametrize(
    "text, words",
    [
        ("a: [\n", "cannot be read"),
        (
            "apiVersion: v1\nkind: Config\ncontexts:\n- {name: x, context: {cluster: nope, user: nope}}\n"
            "current-context: x\n",
            "nope",
        ),
        (
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\nusers:\n"
            "- {name: u, user: {exec: {command: no-such-credential-plugin, apiVersion: "
            "client.authentication.k8s.io/v1beta1}}}\ncontexts:\n- {name: x, context: {cluster: c, user: u}}\n"
            "current-context: x\n",
            "no-such-credential-plugin",
        ),
        ("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n", "current-context"),
    ],
)
def test_unusable_kubeconfigs_are_one_k900_line(cli, tmp_path, text, words):
    kc = tmp_path / "kubeconfig"
    kc.write_text(text)
    r = cli("jobs", "--kubeconfig", kc)
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"slurm2kf jobs: error K900 kubeconfig {kc}")
    assert words in r.stderr and "Traceback" not in r.stderr
