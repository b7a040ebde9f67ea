"""The Kubernetes manifests are valid Kubernetes objects and keep the jail's and the
network's promises.

No cluster runs here: each object is checked against the Kubernetes 1.37 API
schemas in strict mode (an unknown or misspelt field is an error), as
``kubectl apply --dry-run=server`` would on a cluster of that version; then the
properties deploy/kubernetes/README.md promises are checked on the objects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.helpers import REPO

FOLDER = REPO / "deploy" / "kubernetes"
VERSION = "1.37.0"


def _objects() -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in sorted(FOLDER.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc is not None:
                found.append((path, doc))
    return found


OBJECTS = _objects()


def _of_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for _, doc in OBJECTS if doc["kind"] == kind}


def _pod(workload: dict[str, Any]) -> dict[str, Any]:
    return workload["spec"]["template"]["spec"]


@pytest.mark.parametrize(
    "path, doc", OBJECTS, ids=[f"{p.name}:{d['kind']}:{d['metadata']['name']}" for p, d in OBJECTS]
)
def test_each_manifest_is_a_valid_kubernetes_object(path, doc):
    kubernetes_validate.validate(doc, VERSION, strict=True)


def test_a_misspelt_field_is_refused_by_the_check():
    worker = _of_kind("Deployment")["butler-worker"]
    broken = yaml.safe_load(yaml.safe_dump(worker))
    _pod(broken)["hostUser"] = False
    with pytest.raises(kubernetes_validate.ValidationError, match="hostUser"):
        kubernetes_validate.validate(broken, VERSION, strict=True)


def test_the_daemon_postgres_and_workers_are_all_there():
    assert set(_of_kind("StatefulSet")) == {"butler", "postgres"}
    assert "butler-worker" in _of_kind("Deployment")
    scaler = _of_kind("HorizontalPodAutoscaler")["butler-worker"]
    assert scaler["spec"]["scaleTargetRef"]["name"] == "butler-worker"


@pytest.mark.parametrize("name", ["butler", "butler-worker"])
def test_pods_that_run_runtimes_get_what_the_jail_needs_and_no_privilege(name):
    workload = {**_of_kind("StatefulSet"), **_of_kind("Deployment")}[name]
    pod = _pod(workload)
    assert pod["hostUsers"] is False  # a user namespace of its own
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "Localhost"
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"]["drop"] == ["ALL"]
        assert not context.get("privileged", False)


def test_all_is_denied_by_default_and_workers_reach_only_butler_postgres_dns_and_https():
    policies = _of_kind("NetworkPolicy")
    deny = policies["default-deny"]
    assert deny["spec"]["podSelector"] == {} and set(deny["spec"]["policyTypes"]) == {
        "Ingress",
        "Egress",
    }
    worker = policies["butler-worker"]["spec"]
    assert worker["ingress"] == []
    reached = set()
    for rule in worker["egress"]:
        for peer in rule["to"]:
            if "ipBlock" in peer:
                block = peer["ipBlock"]
                # outside the cluster only: private ranges, link-local (cloud metadata) refused
                assert {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"} <= set(
                    block["except"]
                )
                reached.add(("internet", tuple(p["port"] for p in rule["ports"])))
            else:
                labels = peer["podSelector"]["matchLabels"]
                reached.add((labels.get("app.kubernetes.io/name") or labels["k8s-app"], None))
    assert reached == {
        ("butler", None),
        ("postgres", None),
        ("kube-dns", None),
        ("internet", (443,)),
    }


def test_secrets_the_manifests_read_are_the_ones_the_readme_says_to_create():
    readme = (FOLDER / "README.md").read_text(encoding="utf-8")
    named = {
        ref["name"]
        for _, doc in OBJECTS
        for ref in _secret_refs(doc)  # every secretKeyRef anywhere in the object
    }
    assert named == {"butler-postgres", "butler-owner", "butler-model"}
    for secret in named:
        assert f"kubectl -n butler create secret generic {secret}" in readme
    # no secret's value in a file: a variable that names one takes it from a Secret
    for _, doc in OBJECTS:
        for variable in _env(doc):
            if any(word in variable["name"] for word in ("PASSWORD", "TOKEN", "KEY")):
                assert "secretKeyRef" in variable.get("valueFrom", {}), variable


def _env(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        found = list(node.get("env", [])) if isinstance(node.get("env"), list) else []
        return found + [v for value in node.values() for v in _env(value)]
    if isinstance(node, list):
        return [v for value in node for v in _env(value)]
    return []


def _secret_refs(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        found = [node["secretKeyRef"]] if "secretKeyRef" in node else []
        return found + [ref for value in node.values() for ref in _secret_refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _secret_refs(value)]
    return []
