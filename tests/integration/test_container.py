"""The image the Containerfile describes, built with podman and run: ``clean`` on the sample
list and ``serve`` with its health check, as the image's non-root user.

No image registry is reachable from these machines, so the base is made here from Debian's
packages (mmdebstrap: Python 3.11, its venv module, useradd) and imported into podman, and the
build installs from a folder of wheels made beforehand from requirements.lock, with no network.
A machine without podman or mmdebstrap fails this test: `.ci/run` installs them.

This machine's containers run under runc with open-file and process limits no higher than the
host's (the host's root cannot raise them, and crun refuses its cgroup layout); a machine of
one's own needs none of those flags.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLE_CSV

pytestmark = pytest.mark.integration

BASE_IMAGE = "localhost/listclean-test-base:bookworm"
IMAGE = "localhost/listclean:test"
# The base's packages: what the Containerfile asks of a base (python3 -m venv, useradd).
BASE_PACKAGES = "python3,python3-venv,passwd,ca-certificates"
RUN_FLAGS = ("--runtime", "runc", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096")
CONTEXT = ("Containerfile", ".containerignore", "pyproject.toml", "requirements.lock", "README.md")


def _run(*command: str | Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(map(str, command))}:\n{done.stdout}\n{done.stderr}"
    return done


def _podman(*args: str | Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return _run("podman", *args, timeout=timeout)


def _need(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        pytest.fail(f"{tool} is needed to build and run the image: .ci/run installs it (apt).")
    return found


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _need("podman")
    _need("mmdebstrap")
    work = tmp_path_factory.mktemp("image")
    if subprocess.run(["podman", "image", "exists", BASE_IMAGE], check=False).returncode != 0:
        base = work / "base.tar"
        _run("mmdebstrap", "--variant=minbase", f"--include={BASE_PACKAGES}", "bookworm", base)
        _podman("import", base, BASE_IMAGE)
    context = _context(work / "context")
    _podman(
        "build",
        *RUN_FLAGS,
        "--network",
        "none",  # everything comes from the wheels: the build reaches nothing
        "--format",
        "docker",  # keeps the HEALTHCHECK
        "--build-arg",
        f"BASE={BASE_IMAGE}",
        "--build-arg",
        "PIP_OPTIONS=--no-index --find-links /wheels",
        "-t",
        IMAGE,
        "-f",
        context / "Containerfile",
        context,
        timeout=1800,
    )
    yield IMAGE
    subprocess.run(["podman", "rmi", "-f", IMAGE], capture_output=True, check=False)


def _context(folder: Path) -> Path:
    """The build context: the files the Containerfile copies, and the wheels of everything it
    installs (the package's dependencies with its extras, and its build backend)."""
    folder.mkdir()
    for name in (*CONTEXT, "LICENSE"):
        shutil.copy(REPO / name, folder / name)
    shutil.copytree(
        REPO / "pipeline", folder / "pipeline", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(REPO / "deploy", folder / "deploy")
    wheels = folder / "deploy" / "wheels"
    requirements = ["-c", REPO / "requirements.lock", f"{REPO}[s3,postgres]", "setuptools>=77"]
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "-w", wheels, *requirements)
    for built in wheels.glob("listclean-*.whl"):
        built.unlink()  # the image builds the package from the context's source
    return folder


def test_the_image_cleans_a_list_as_its_non_root_user(image: str, tmp_path: Path) -> None:
    data, cache = tmp_path / "data", tmp_path / "cache"
    for folder in (data, cache):
        folder.mkdir()
        folder.chmod(0o777)  # the image's user (10001) writes here
    shutil.copy(SAMPLE_CSV, data / "list.csv")
    mounts = ("-v", f"{data}:/data", "-v", f"{cache}:/cache")
    _podman("run", "--rm", *RUN_FLAGS, "--network", "none", *mounts, image,
            "clean", "list.csv", "--sandbox", "--quiet")  # fmt: skip
    summary = json.loads((data / "list.clean.summary.json").read_text())
    assert summary["rows_in"] == 297 and summary["sandbox"] is True
    assert (data / "list.clean.parquet").stat().st_uid == 10001
    assert (cache / "sandbox-domains.sqlite").exists()  # the cache went to the volume
    who = _podman("run", "--rm", *RUN_FLAGS, "--entrypoint", "id", image, "-u")
    assert who.stdout.strip() == "10001"
    shown = _podman("run", "--rm", *RUN_FLAGS, "--network", "none", image)  # CMD: --help
    assert "clean" in shown.stdout and "serve" in shown.stdout


def test_the_image_serves_with_a_health_check(image: str, tmp_path: Path) -> None:
    port = _free_port()
    name = f"listclean-serve-{os.getpid()}"
    _podman(
        "run", "-d", "--name", name, *RUN_FLAGS,
        "--network", "host",  # the sandbox's loopback callers: the docs' curl, unlimited
        "-e", f"LISTCLEAN_HTTP_PORT={port}", "-e", "LISTCLEAN_HTTP_HOST=127.0.0.1",
        image, "serve", "--sandbox",
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        assert _wait_for(f"{base}/healthz") == 200
        _podman("healthcheck", "run", name)  # the image's own HEALTHCHECK passes
        answers = [_get(f"{base}/api/email?email=John.Doe@gmial.com") for _ in range(2)]
        assert [status for status, _ in answers] == [200, 200]
        assert json.loads(answers[1][1])["SUGGESTION"] == "John.Doe@gmail.com"
    finally:
        logs = subprocess.run(["podman", "logs", name], capture_output=True, text=True)
        subprocess.run(["podman", "rm", "-f", name], capture_output=True, check=False)
        print(logs.stdout[-2000:], logs.stderr[-2000:])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _wait_for(url: str, seconds: float = 90) -> int:
    deadline = time.monotonic() + seconds
    while True:
        try:
            return _get(url)[0]
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
