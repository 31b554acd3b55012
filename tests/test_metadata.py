"""What a company needs to approve the package: a licence file, the licence and the people in
the metadata, where to read and report, and the marker that the package is typed (PEP 561)."""

from __future__ import annotations

import tomllib
from importlib import metadata

from tests.conftest import REPO

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_licence_is_an_osi_licence_with_its_text_at_the_top() -> None:
    assert PROJECT["license"] == "Apache-2.0" and PROJECT["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_the_metadata_names_people_places_and_classifiers() -> None:
    assert PROJECT["authors"] and all("email" in a for a in PROJECT["authors"])
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(PROJECT["urls"])
    assert "Typing :: Typed" in PROJECT["classifiers"]
    assert any(
        c.startswith("Programming Language :: Python :: 3.11") for c in PROJECT["classifiers"]
    )


def test_the_installed_package_says_the_same() -> None:
    installed = metadata.metadata("listclean")
    assert installed["License-Expression"] == "Apache-2.0"
    assert installed.get_all("Project-URL") and installed["Author-email"]


def test_the_package_is_marked_typed() -> None:
    assert (REPO / "pipeline" / "py.typed").exists()
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"pipeline" = ["py.typed"]' in pyproject
