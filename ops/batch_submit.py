"""``python -m ops.batch_submit FILE --bucket B --stack S``: check an OpenAI Batch API file whole, then upload it to the stack's bucket."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import google.cloud.storage as storage
from google.api_core.exceptions import PreconditionFailed
from google.auth.exceptions import DefaultCredentialsError

from ops.batch_file import check, max_model_len
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


def main(argv: list[str]) -> None:
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
