"""What a scheduled `clean` gives its operator: exit codes on bad results, warnings under --quiet,
JSON logs, progress lines in logs, the pre-flight's duration, the summary's order, run
metadata, --split and where the default output goes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline.cli import main
from pipeline.sandbox.dns_server import SandboxDNS
from pipeline.sandbox.files import SANDBOX_SETTINGS
from tests.conftest import SAMPLE_CSV

FAST = str(SANDBOX_SETTINGS)
# The sample list: 297 rows, of which the sandbox world makes 29 Invalid at the domain level.
ROWS = 297


def run(tmp: Path, *extra: str, source: Path = SAMPLE_CSV, output: str = "out.parquet") -> int:
    return main(
        [
            "clean",
            str(source),
            "-o",
            str(tmp / output),
            "--sandbox",
            "--config",
            FAST,
            "--cache-dir",
            str(tmp / "cache"),
            *extra,
        ]
    )


def summary_of(tmp: Path, stem: str = "out") -> dict[str, object]:
    loaded: dict[str, object] = json.loads((tmp / f"{stem}.summary.json").read_text())
    return loaded


def test_fail_on_invalid_exits_4_after_writing_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path, "--quiet", "--fail-on-invalid", "0.05") == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("listclean: error: "), err
    summary = summary_of(tmp_path)
    invalid = summary["verdicts"]["Invalid"]  # type: ignore[index]
    assert f"Invalid ({invalid:,})" in err[0] and "--fail-on-invalid 0.05" in err[0]
    for name in ("out.parquet", "out.rejects.csv", "out.summary.json", "out.report.html"):
        assert (tmp_path / name).is_file(), name
    assert pl.read_parquet(tmp_path / "out.parquet").height == ROWS


def test_a_share_not_crossed_exits_0(tmp_path: Path) -> None:
    assert run(tmp_path, "--quiet", "--fail-on-invalid", "0.5", "--fail-on-rejected", "0") == 0


def test_fail_on_rejected_counts_rejected_input_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "ragged.csv"
    source.write_text("name,email\nA,a@gmail.com\nB,b@gmail.com,extra\nC,c@gmail.com\n")
    assert run(tmp_path, "--quiet", "--fail-on-rejected", "0.2", source=source) == 4
    err = capsys.readouterr().err
    assert "33.3% of the 3 input rows are rejected (1)" in err
    assert run(tmp_path, "--quiet", "--fail-on-rejected", "0.5", source=source) == 0


@pytest.mark.parametrize("value", ["1.5", "-0.1", "half", "nan"])
def test_a_share_outside_0_to_1_is_a_usage_error(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        run(tmp_path, "--fail-on-invalid", value)
    assert exit_.value.code == 2
    assert "not a share between 0 and 1" in capsys.readouterr().err
    assert not (tmp_path / "out.parquet").exists()


def test_rejected_rows_are_a_warning_even_when_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "ragged.csv"
    source.write_text("name,email\nA,a@gmail.com\nB,b@gmail.com,extra\n")
    assert run(tmp_path, "--quiet", source=source) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("listclean: warning: 1 of 2 input rows were rejected (1: row has 3")
    assert line.endswith(f"they are in {tmp_path / 'out.rejects.csv'}.")


def test_json_logs_one_record_a_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "ragged.csv"
    source.write_text("name,email\nA,a@gmail.com\nB,b@gmail.com,extra\n")
    assert run(tmp_path, "--log-format", "json", "--fail-on-rejected", "0.1", source=source) == 4
    captured = capsys.readouterr()
    assert captured.out == ""  # the summary is a log record, not a table
    records = [json.loads(line) for line in captured.err.strip().splitlines()]
    events = [(r["level"], r["event"]) for r in records]
    assert events == [("warning", "rejected"), ("info", "summary"), ("error", "failed_check")]
    assert all(r["time"].endswith("Z") and r["message"] for r in records)
    summary = records[1]
    assert summary["rows_in"] == 2 and summary["rows_rejected"] == 1
    assert summary["files"]["output"] == str(tmp_path / "out.parquet")
    assert records[2]["exit_code"] == 4 and records[2]["check"] == "--fail-on-rejected"


def test_json_logs_carry_errors_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(tmp_path, "--log-format", "json", source=tmp_path / "missing.csv") == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    record = json.loads(line)
    assert record["level"] == "error" and record["exit_code"] == 2
    assert "missing.csv" in record["message"]


def test_progress_lines_in_a_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Standard error is not a terminal here: long stages write a line now and then, and the
    SMTP stage (seconds long in the sandbox: greylisting, a slow host) says how far it got."""
    monkeypatch.setenv("LISTCLEAN_RUN_PROGRESS_EVERY", "0.2")
    code = run(tmp_path, "--verify", "smtp", "--helo", "probe.example.net", "--log-format", "json")
    assert code == 0
    records = [json.loads(line) for line in capsys.readouterr().err.strip().splitlines()]
    (plan,) = [r for r in records if r["event"] == "preflight"]
    assert "The pacing settings make this take at least" in plan["message"]
    assert plan["pace"]["busiest"] and plan["pace"]["per_minute"] > 0
    smtp = [r for r in records if r["event"] == "progress" and r["stage"] == "SMTP"]
    assert len(smtp) >= 2, records
    assert all(r["total"] == plan["covered"] and r["unit"] == "address" for r in smtp)
    assert [r["done"] for r in smtp] == sorted(r["done"] for r in smtp)
    assert smtp[-1]["done"] == plan["covered"]  # the last line: the stage is done
    assert any("eta_seconds" in r for r in smtp[:-1])


def test_progress_lines_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LISTCLEAN_RUN_PROGRESS_EVERY", "0.2")
    assert run(tmp_path, "--verify", "smtp", "--helo", "probe.example.net") == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("listclean: progress: SMTP")]
    assert lines and " addresses (" in lines[0] and "/s" in lines[0]
    assert "done in" in lines[-1]


def test_no_progress_lines_when_quiet_or_switched_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LISTCLEAN_RUN_PROGRESS_EVERY", "0.2")
    assert run(tmp_path, "--verify", "smtp", "--helo", "probe.example.net", "--quiet") == 0
    assert "progress" not in capsys.readouterr().err
    monkeypatch.setenv("LISTCLEAN_RUN_PROGRESS_EVERY", "0")
    assert run(tmp_path, "--verify", "smtp", "--helo", "probe.example.net", output="b.parquet") == 0
    assert "progress" not in capsys.readouterr().err


def test_the_summary_leads_with_what_a_marketer_asks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path) == 0
    out = capsys.readouterr().out.splitlines()
    summary = summary_of(tmp_path)
    assert out[0].split()[:3] == ["unique", "addresses", f"{summary['distinct_addresses']:,}"]
    share = f"{summary['safe_to_send_share']:.1%}"
    assert out[1].split()[:4] == ["safe", "to", "send", f"{summary['safe_to_send']:,}"]
    assert share in out[1]
    order = [next(i for i, line in enumerate(out) if line.startswith(h)) for h in HEADINGS]
    assert order == sorted(order)
    files = out[out.index("files") + 1 :]
    for role in ("output", "rejects", "summary", "report"):
        assert any(line.split() == [role, summary["files"][role]] for line in files), role


HEADINGS = ("unique addresses", "VERDICT", "REASON", "DNS queries sent", "read as", "files")


def test_run_metadata_in_the_summary_and_the_parquet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A URL setting that carries credentials is recorded without them.
    monkeypatch.setenv("LISTCLEAN_STORAGE_ENDPOINT_URL", "http://user:s3cret@127.0.0.1:9/?k=v")
    assert run(tmp_path, "--quiet") == 0
    run_ = summary_of(tmp_path)["run"]
    assert isinstance(run_, dict)
    assert run_["input_sha256"] == hashlib.sha256(SAMPLE_CSV.read_bytes()).hexdigest()
    assert run_["input_hash_covers"] == "the bytes of the input file"
    assert run_["started_at"] <= run_["finished_at"]
    assert run_["version"] and run_["settings"]["run"]["memory"] > 0
    assert run_["settings"]["storage"]["endpoint_url"] == "http://127.0.0.1:9/"
    text = (tmp_path / "out.summary.json").read_text() + str(
        pq.read_metadata(tmp_path / "out.parquet").metadata
    )
    assert "s3cret" not in text
    meta = pq.read_metadata(tmp_path / "out.parquet").metadata
    recorded = json.loads(meta[b"listclean"])
    assert recorded["input_sha256"] == run_["input_sha256"]
    assert recorded["email_column"] == "Email Address" and recorded["email_column_rule"] == "name"
    assert recorded["settings"] == run_["settings"]


def test_the_hash_of_standard_input_says_what_it_covers(tmp_path: Path) -> None:
    data = SAMPLE_CSV.read_bytes()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pipeline", "clean", "-", "-o", str(tmp_path / "out.parquet")),
            *("--sandbox", "--config", FAST, "--cache-dir", str(tmp_path / "c"), "--quiet"),
        ],
        input=data,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    run_ = summary_of(tmp_path)["run"]
    assert isinstance(run_, dict)
    assert run_["input_sha256"] == hashlib.sha256(data).hexdigest()
    assert run_["input_hash_covers"] == "the bytes read from standard input"


def test_split_writes_each_verdict_beside_the_output(tmp_path: Path) -> None:
    assert run(tmp_path, "--quiet", "--split", output="out.csv") == 0
    full = pl.read_csv(tmp_path / "out.csv", infer_schema=False)
    parts = {v: pl.read_csv(tmp_path / f"out.{v}.csv", infer_schema=False) for v in PARTS}
    assert full.height == ROWS
    # One row per distinct address (its first), and every row without one: later duplicates
    # are only in the main output.
    firsts = full.filter(pl.col("DUPLICATE") == "false")
    assert firsts.height < ROWS
    assert sum(p.height for p in parts.values()) == firsts.height
    for role, verdict in PARTS.items():
        assert set(parts[role].get_column("VERDICT")) <= {verdict}
        assert parts[role].columns == full.columns
        expected = firsts.filter(pl.col("VERDICT") == verdict)
        assert parts[role].equals(expected)  # in input order
    assert summary_of(tmp_path)["files"]["valid"] == str(tmp_path / "out.valid.csv")  # type: ignore[index]


PARTS = {"valid": "Valid", "risky": "Risky", "invalid": "Invalid"}


def test_split_outputs_are_refused_when_they_would_overwrite_the_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "out.valid.csv"
    source.write_bytes(SAMPLE_CSV.read_bytes())
    assert run(tmp_path, "--quiet", "--split", source=source, output="out.csv") == 2
    assert "would overwrite the input" in capsys.readouterr().err
    assert source.read_bytes() == SAMPLE_CSV.read_bytes()


def test_the_default_output_goes_beside_the_input(tmp_path: Path, sample_dns: SandboxDNS) -> None:
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "list.csv").write_bytes(SAMPLE_CSV.read_bytes())
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    command = [sys.executable, "-m", "pipeline", "clean", str(lists / "list.csv"), "--quiet"]
    options = ["--resolver", sample_dns.address, "--config", FAST, "--cache-dir", str(tmp_path)]
    done = subprocess.run(
        command + options, cwd=elsewhere, capture_output=True, check=False, env=os.environ
    )
    assert done.returncode == 0, done.stderr
    assert (lists / "list.clean.parquet").is_file() and (lists / "list.clean.report.html").is_file()
    assert os.listdir(elsewhere) == []
    # Standard input has no folder: its output goes to the current directory.
    stdin = subprocess.run(
        [*command[:4], "-", "--quiet", *options],
        cwd=elsewhere,
        input=SAMPLE_CSV.read_bytes(),
        capture_output=True,
        check=False,
    )
    assert stdin.returncode == 0, stdin.stderr
    assert (elsewhere / "stdin.clean.parquet").is_file()
