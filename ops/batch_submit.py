"""``python -m ops.batch_submit FILE --bucket B --stack S``: check an OpenAI Batch API file whole, then upload it to the stack's bucket.

``python -m ops.batch_submit --plan FILE [--stack S]``: what sending it would take and cost, from the stack's
own estimates; nothing is uploaded and no credentials are needed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import google.cloud.storage as storage
import yaml
from google.api_core.exceptions import PreconditionFailed
from google.auth.exceptions import DefaultCredentialsError

from ops.batch_file import check, max_model_len, settings_of
from plan.batch_plan import BatchPlan
from plan.stack import plan_stack
from workloads.batch import layout

# Upload in 16 MiB pieces: a resumable upload, so the file is never read into memory whole.
UPLOAD_CHUNK_BYTES = 16 * 1024 * 1024
LOGIN = "gcloud auth application-default login"


def submit(file: Path, bucket: str, name: str | None, client: storage.Client | None = None) -> str:
    """Uploads a batch file under input/, streamed; returns the object's name."""
    object_name = layout.INPUT + (name or file.name)
    blob = (client or storage.Client()).bucket(bucket).blob(object_name, chunk_size=UPLOAD_CHUNK_BYTES)
    # Never replace an input already waiting or running under that name.
    blob.upload_from_filename(str(file), content_type="application/jsonl", if_generation_match=0)
    return object_name


def count_lines(file: Path) -> int:
    """The requests in a batch file: its lines that are not blank, read a line at a time."""
    with file.open("rb") as lines:
        return sum(1 for line in lines if line.strip())


def batch_plan(file: Path, stack: str) -> str:
    """The plan of ``file``'s lines on ``stack``, at the stack's workload and estimates, as the text the command prints."""
    settings = settings_of(stack)
    rendered = plan_stack(settings, stack).estimate.batch
    if rendered is None:
        raise SystemExit(f"stack {stack}: llm:autoscaling.enabled is not true, so no batch wakes it from zero and there is no batch plan")
    lines = count_lines(file)
    workload = settings.workload
    header = (
        f"batch plan: {lines:,} lines of {file.name} on stack {stack}, as its workload (llm:workload: {workload.input_tokens:,} "
        f"input and {workload.output_tokens:,} output tokens a line), from the wake to zero; nothing was uploaded\n"
    )
    return header + yaml.safe_dump(BatchPlan(lines, rendered.pace).as_output(), sort_keys=False, width=1000)


def plan_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m ops.batch_submit --plan", description="What a batch file would take and cost on the stack; uploads nothing."
    )
    parser.add_argument("--plan", type=Path, required=True, metavar="FILE", help="the batch file (OpenAI Batch API JSON lines)")
    parser.add_argument("--stack", default="batch", help="the stack that would run it: Pulumi.<stack>.yaml (default: batch)")
    args = parser.parse_args(argv)
    if not args.plan.is_file():
        raise SystemExit(f"--plan {args.plan}: no such file")
    print(batch_plan(args.plan, args.stack), end="")


def main(argv: list[str]) -> None:
    if "--plan" in argv:
        plan_main(argv)
        return
    parser = argparse.ArgumentParser(
        prog="python -m ops.batch_submit",
        description="Check an OpenAI Batch API file line by line, then upload it to the stack's bucket; a bad line uploads nothing.",
    )
    parser.add_argument("file", type=Path)
    parser.add_argument("--bucket", required=True, help="the stack's batch bucket (pulumi stack output batchBucket)")
    parser.add_argument("--stack", required=True, help="the stack that serves the batch: its Pulumi.<stack>.yaml gives maxModelLen")
    parser.add_argument("--name", help="object name under input/ (default: the file's name)")
    args = parser.parse_args(argv)
    problems = check(args.file, max_model_len(args.stack))
    if problems:
        raise SystemExit("\n".join([*problems, f"{args.file}: {len(problems)} bad line(s); nothing uploaded"]))
    try:
        print(f"gs://{args.bucket}/{submit(args.file, args.bucket, args.name)}")
    except DefaultCredentialsError:
        raise SystemExit(
            f"no Google credentials: Application Default Credentials are not set up here. Run `{LOGIN}`, then run this again "
            "(nothing was uploaded)"
        ) from None
    except PreconditionFailed:
        name = layout.INPUT + (args.name or args.file.name)
        raise SystemExit(f"gs://{args.bucket}/{name} exists: a batch of that name is waiting or running; choose another --name") from None


if __name__ == "__main__":
    main(sys.argv[1:])
