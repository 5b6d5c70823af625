"""``python -m ops.batch_submit``: a batch file uploaded under input/ of the stack's bucket, against a local emulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import google.auth
import google.cloud.storage as storage
import pytest
import requests
import yaml
from google.auth.exceptions import DefaultCredentialsError

from ops.batch_file import check, max_model_len, prompt_tokens
from ops.batch_submit import main, submit

LINES = b"".join(b'{"custom_id": "r%d", "method": "POST", "url": "/v1/chat/completions", "body": {}}\n' % i for i in range(1000))


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
    main([str(batch_file), "--bucket", bucket.name, "--stack", "batch"])
    main([str(batch_file), "--bucket", bucket.name, "--stack", "batch", "--name", "second.jsonl"])
    assert capsys.readouterr().out.splitlines() == [f"gs://{bucket.name}/input/nightly.jsonl", f"gs://{bucket.name}/input/second.jsonl"]


@pytest.mark.parametrize(("args", "name"), [((), "nightly.jsonl"), (("--name", "again.jsonl"), "again.jsonl")])
def test_the_command_never_replaces_a_waiting_batch_and_says_why(
    bucket: storage.Bucket, batch_file: Path, args: tuple[str, ...], name: str
) -> None:
    bucket.blob(f"input/{name}").upload_from_string(b"waiting")
    with pytest.raises(SystemExit) as stopped:
        main([str(batch_file), "--bucket", bucket.name, "--stack", "batch", *args])
    assert str(stopped.value) == (
        f"gs://{bucket.name}/input/{name} exists: a batch of that name is waiting or running; choose another --name"
    )
    assert bucket.blob(f"input/{name}").download_as_bytes() == b"waiting"


def test_the_command_needs_the_bucket(batch_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([str(batch_file)])
    assert stopped.value.code == 2 and "--bucket" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        main([str(batch_file), "--bucket", "b"])
    assert stopped.value.code == 2 and "--stack" in capsys.readouterr().err


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
    assert shown.startswith("usage: python -m ops.batch_submit [-h] --bucket BUCKET --stack STACK [--name NAME] file")
    assert "Check an OpenAI Batch API file line by line, then upload it to the stack's bucket; a bad line uploads nothing." in shown
    assert "--stack STACK the stack that serves the batch: its Pulumi.<stack>.yaml gives maxModelLen" in shown
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
    path.write_bytes(b"".join(LINES.splitlines(keepends=True)[:3]) + b"\n  \n")
    main(["--plan", str(path), "--stack", "batch"])
    assert yaml.safe_load(capsys.readouterr().out.split("\n", 1)[1])["lines"] == 3


def test_a_plan_for_a_stack_that_never_wakes_says_why(batch_file: Path) -> None:
    with pytest.raises(SystemExit, match=r"llm:autoscaling\.enabled"):
        main(["--plan", str(batch_file), "--stack", "dev"])


# --- the file is checked whole before anything goes up ----------------------------------------------


def request(custom_id: str, **body: Any) -> str:
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body})


def test_every_bad_line_is_reported_by_its_number_and_nothing_is_uploaded(bucket: storage.Bucket, tmp_path: Path) -> None:
    # With the role's 4 characters, 4,000 characters: about 1,000 tokens at 4 characters each.
    messages = [{"role": "user", "content": "x" * 3996}]
    text = "\n".join(
        [
            request("a", messages=[{"role": "user", "content": "hi"}], max_tokens=100),
            "{not json",
            "",  # a blank line is no request, as the runner reads it
            json.dumps({"custom_id": "c", "method": "POST", "url": "/v1/embeddings", "body": {}}),
            request("a", max_tokens=10),
            request("e", messages=messages, max_tokens=2000),
            request("f", max_tokens="many"),
            json.dumps({"method": "POST", "url": "/v1/completions", "body": {"prompt": "hi"}}),
            request("h", messages=messages, max_tokens=1560),
        ]
    )
    path = tmp_path / "mixed.jsonl"
    path.write_text(text + "\n")
    with pytest.raises(SystemExit) as stopped:
        main([str(path), "--bucket", bucket.name, "--stack", "batch"])
    report = str(stopped.value).splitlines()
    assert [line.split(":", 1)[0] for line in report[:-1]] == ["line 2", "line 4", "line 5", "line 6", "line 7", "line 8"]
    assert "url '/v1/embeddings' is not served by this stack's model (model.task generate)" in report[1]
    assert "custom_id 'a' was already used" in report[2]
    # The batch stack's serving.maxModelLen is the default 2,560: 1,000 of prompt leave 1,560 (line 9 fits exactly).
    assert report[3] == (
        "line 6: max_tokens 2000 and a prompt of about 1000 tokens exceed the stack's serving.maxModelLen 2560; vLLM refuses it. "
        "max_tokens: at most 1560"
    )
    assert report[4] == 'line 7: max_tokens must be a positive whole number, got "many"'
    assert "custom_id must be a non-empty string" in report[5]
    assert report[-1] == f"{path}: 6 bad line(s); nothing uploaded"
    assert list(bucket.list_blobs()) == []


def test_a_prompt_is_estimated_at_four_characters_a_token_and_token_ids_count_as_they_are() -> None:
    chat = {"messages": [{"role": "user", "content": [{"type": "text", "text": "x" * 398}]}]}
    # "user" and the text part's type count too: 4 + 4 + 398 characters.
    assert prompt_tokens("/v1/chat/completions", chat) == 102
    assert prompt_tokens("/v1/completions", {"prompt": list(range(700))}) == 700
    # Several prompts in one request are answered one by one: the longest must fit.
    assert prompt_tokens("/v1/completions", {"prompt": ["x" * 40, "x" * 400]}) == 100


def test_a_max_completion_tokens_is_held_to_the_same_room(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(request("a", messages=[{"role": "user", "content": "x" * 400}], max_completion_tokens=2500) + "\n")
    (problem,) = check(path, max_model_len("batch"))
    # "user" and 400 characters: 101 tokens.
    assert problem.startswith("line 1: max_completion_tokens 2500 and a prompt of about 101 tokens")
    assert check(path, 2601) == []


def test_an_unknown_stack_is_named_with_the_stacks_there(batch_file: Path) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([str(batch_file), "--bucket", "b", "--stack", "staging"])
    assert str(stopped.value).startswith("--stack staging: there is no Pulumi.staging.yaml; stacks here: batch, dev")


def test_without_application_default_credentials_it_says_how_to_log_in(
    batch_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # No emulator and no credentials on this machine: google.auth finds none, as on a laptop never logged in.
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)

    def no_credentials(*args: Any, **kwargs: Any) -> Any:
        raise DefaultCredentialsError("Your default credentials were not found.")  # type: ignore[no-untyped-call]

    monkeypatch.setattr(google.auth, "default", no_credentials)
    with pytest.raises(SystemExit) as stopped:
        main([str(batch_file), "--bucket", "b", "--stack", "batch"])
    message = str(stopped.value)
    assert "Application Default Credentials" in message and "`gcloud auth application-default login`" in message
    assert "nothing was uploaded" in message and "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("max_tokens", "problem"),
    [
        (1, None),
        (0, "line 1: max_tokens must be a positive whole number, got 0"),
        (True, "line 1: max_tokens must be a positive whole number, got true"),
        (2558, None),  # "user" and "hi", 6 characters: 2 tokens, 2,558 of room
        (
            2559,
            "line 1: max_tokens 2559 and a prompt of about 2 tokens exceed the stack's serving.maxModelLen 2560; vLLM refuses it. "
            "max_tokens: at most 2558",
        ),
    ],
)
def test_max_tokens_is_a_positive_number_within_the_room_the_prompt_leaves(tmp_path: Path, max_tokens: Any, problem: str | None) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(request("a", messages=[{"role": "user", "content": "hi"}], max_tokens=max_tokens) + "\n")
    assert check(path, 2560) == ([problem] if problem else [])


@pytest.mark.parametrize(("characters", "said"), [(4 * 2559, "at most 1"), (4 * 2560, "none: the prompt alone is too long")])
def test_a_prompt_that_leaves_no_room_says_so(tmp_path: Path, characters: int, said: str) -> None:
    path = tmp_path / "one.jsonl"
    line = {"custom_id": "a", "method": "POST", "url": "/v1/completions", "body": {"prompt": "x" * characters, "max_tokens": 2}}
    path.write_text(json.dumps(line) + "\n")
    (problem,) = check(path, 2560)
    assert problem.endswith(f"max_tokens: {said}")


def test_a_stack_file_that_does_not_validate_says_which_key(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: llm\n")
    (tmp_path / "Pulumi.broken.yaml").write_text("config:\n  llm:project: p\n  llm:nodes: -1\n")
    with pytest.raises(SystemExit) as stopped:
        max_model_len("broken", tmp_path)
    head, *problems = str(stopped.value).splitlines()
    assert head == "Pulumi.broken.yaml does not validate:"
    assert any(line.startswith("llm:nodes: -1") for line in problems), problems


def test_each_of_several_prompts_must_fit_and_token_ids_count_one_each() -> None:
    assert prompt_tokens("/v1/completions", {"prompt": [[1, 2, 3], list(range(10))]}) == 10
    assert prompt_tokens("/v1/completions", {"prompt": "x" * 9}) == 3
