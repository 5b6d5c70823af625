"""``python -m ops.batch_submit``: a batch file uploaded under input/ of the stack's bucket, against a local emulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import google.cloud.storage as storage
import pytest
import requests
import yaml

from ops.batch_submit import main, submit

LINES = b'{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": {}}\n' * 1000


@pytest.fixture
def batch_file(tmp_path: Path) -> Path:
    path = tmp_path / "nightly.jsonl"
    path.write_bytes(LINES)
    return path


def test_the_file_is_uploaded_under_input_by_its_name_as_json_lines(bucket: storage.Bucket, batch_file: Path) -> None:
    assert submit(batch_file, bucket.name, None) == "input/nightly.jsonl"
    blob = bucket.get_blob("input/nightly.jsonl")
    assert blob is not None and blob.download_as_bytes() == LINES
    assert blob.content_type == "application/jsonl"


def test_a_name_given_replaces_the_files_own(bucket: storage.Bucket, batch_file: Path) -> None:
    assert submit(batch_file, bucket.name, "monday.jsonl", storage.Client()) == "input/monday.jsonl"
    assert [b.name for b in bucket.list_blobs()] == ["input/monday.jsonl"]


def test_the_command_prints_where_the_file_went(bucket: storage.Bucket, batch_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main([str(batch_file), "--bucket", bucket.name])
    main([str(batch_file), "--bucket", bucket.name, "--name", "second.jsonl"])
    assert capsys.readouterr().out.splitlines() == [f"gs://{bucket.name}/input/nightly.jsonl", f"gs://{bucket.name}/input/second.jsonl"]


@pytest.mark.parametrize(("args", "name"), [((), "nightly.jsonl"), (("--name", "again.jsonl"), "again.jsonl")])
def test_the_command_never_replaces_a_waiting_batch_and_says_why(
    bucket: storage.Bucket, batch_file: Path, args: tuple[str, ...], name: str
) -> None:
    bucket.blob(f"input/{name}").upload_from_string(b"waiting")
    with pytest.raises(SystemExit) as stopped:
        main([str(batch_file), "--bucket", bucket.name, *args])
    assert str(stopped.value) == (
        f"gs://{bucket.name}/input/{name} exists: a batch of that name is waiting or running; choose another --name"
    )
    assert bucket.blob(f"input/{name}").download_as_bytes() == b"waiting"


def test_the_command_needs_the_bucket(batch_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([str(batch_file)])
    assert stopped.value.code == 2 and "--bucket" in capsys.readouterr().err


class CountingSession(requests.Session):
    """The client's HTTP session, counting the bytes of each piece of an upload it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.uploads: list[int] = []

    def request(self, method: Any, url: Any, *args: Any, **kwargs: Any) -> requests.Response:
        if "/upload/" in str(url) and method == "PUT":
            self.uploads.append(len(kwargs["data"]))
        return super().request(method, url, *args, **kwargs)


def test_a_large_file_goes_up_in_pieces_of_16_mib(bucket: storage.Bucket, tmp_path: Path) -> None:
    mib = 2**20
    large = tmp_path / "large.jsonl"
    large.write_bytes(b"x" * (20 * mib))
    session = CountingSession()
    submit(large, bucket.name, None, storage.Client(_http=session))
    # A resumable upload of one 16 MiB piece and the 4 MiB left: never the whole file in one request.
    assert session.uploads == [16 * mib, 4 * mib]
    uploaded = bucket.get_blob("input/large.jsonl")
    assert uploaded is not None and uploaded.size == 20 * mib


def test_the_command_says_what_it_does_and_what_each_option_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    assert stopped.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert shown.startswith("usage: python -m ops.batch_submit [-h] --bucket BUCKET [--name NAME] file")
    assert "file Upload an OpenAI Batch API file to the stack's bucket. positional arguments:" in shown
    assert "--bucket BUCKET the stack's batch bucket (pulumi stack output batchBucket)" in shown
    assert "--name NAME object name under input/ (default: the file's name)" in shown


# --- --plan: what the file would take and cost, from the stack's own estimates; nothing uploaded.


def test_a_plan_needs_no_credentials_and_uploads_nothing(
    batch_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_client(*args: Any, **kwargs: Any) -> storage.Client:
        raise AssertionError("a plan must not reach Cloud Storage")

    monkeypatch.setattr(storage, "Client", no_client)
    main(["--plan", str(batch_file), "--stack", "batch"])
    out = capsys.readouterr().out
    assert out.startswith("batch plan: 1,000 lines of nightly.jsonl on stack batch")
    plan = yaml.safe_load(out.split("\n", 1)[1])
    assert plan["lines"] == 1000 and plan["replicas"] == 4
    assert set(plan["minutes"]) == {"wake", "serving", "idleTail", "wakeToZero"}
    assert plan["costUsd"]["total"] > 0


def test_a_plan_counts_the_files_requests_not_its_blank_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gaps.jsonl"
    path.write_bytes(LINES[: len(LINES) // 1000] * 3 + b"\n  \n")
    main(["--plan", str(path), "--stack", "batch"])
    assert yaml.safe_load(capsys.readouterr().out.split("\n", 1)[1])["lines"] == 3


def test_a_plan_for_a_stack_that_never_wakes_says_why(batch_file: Path) -> None:
    with pytest.raises(SystemExit, match=r"llm:autoscaling\.enabled"):
        main(["--plan", str(batch_file), "--stack", "dev"])
