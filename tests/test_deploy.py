"""The container recipe and its examples say what the docs say they do (the image itself is
built and run by tests/integration/test_container.py, under `make integration`)."""

from __future__ import annotations

import ast
import re

import yaml

from tests.conftest import REPO

RECIPE = (REPO / "Containerfile").read_text()
DEPLOY = REPO / "deploy"


def test_the_base_is_a_build_argument_defaulting_to_public_python_slim() -> None:
    assert re.search(r"^ARG BASE=docker\.io/library/python:3\.1\d-slim$", RECIPE, re.M)
    assert RECIPE.count("FROM ${BASE}") == 2


def test_the_image_runs_as_a_user_with_a_cache_volume_and_a_health_check() -> None:
    assert re.search(r"^USER 10001:10001$", RECIPE, re.M)
    assert 'VOLUME ["/cache"]' in RECIPE and "LISTCLEAN_CACHE_DIR=/cache" in RECIPE
    assert re.search(r"^HEALTHCHECK .*\n.*/healthz", RECIPE, re.M)
    assert 'ENTRYPOINT ["listclean"]' in RECIPE


def test_the_recipe_copies_only_what_the_context_has() -> None:
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", RECIPE, re.M):
        for name in source.split():
            assert (REPO / name).exists(), name


def test_the_cronjob_keeps_its_cache_and_no_service_links() -> None:
    documents = list(yaml.safe_load_all((DEPLOY / "kubernetes-cronjob.yaml").read_text()))
    job = next(d for d in documents if d["kind"] == "CronJob")
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["enableServiceLinks"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    claim = pod["volumes"][0]["persistentVolumeClaim"]["claimName"]
    assert any(
        d["kind"] == "PersistentVolumeClaim" and d["metadata"]["name"] == claim for d in documents
    )
    assert pod["containers"][0]["volumeMounts"][0]["mountPath"] == "/cache"


def test_the_scheduler_examples_are_python_that_runs_the_image() -> None:
    for name in ("airflow_dag.py", "dagster_assets.py"):
        source = (DEPLOY / name).read_text()
        ast.parse(source, name)
        assert "listclean:latest" in source and "/cache" in source
