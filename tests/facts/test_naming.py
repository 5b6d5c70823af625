"""The program's derived names and labels, on hand-made inputs: what each name holds, and when a bucket name is hashed."""

from __future__ import annotations

import re

import pytest

from facts.naming import (
    BUCKET_NAME_LENGTH,
    batch_bucket_name,
    cache_names,
    compile_cache_bucket,
    selector_labels,
    stack_labels,
)


def test_stack_labels_carry_the_programs_labels_then_the_stacks_own() -> None:
    assert stack_labels("dev", {"team": "ml"}) == {"app": "llm-serving", "managed-by": "pulumi", "stack": "dev", "team": "ml"}


@pytest.mark.parametrize(
    ("stack", "value"),
    [("Prod.EU", "prod-eu"), ("a_b-c9", "a_b-c9"), ("x" * 70, "x" * 63), ("ÄB", "-b")],
)
def test_a_stack_name_becomes_a_label_value(stack: str, value: str) -> None:
    assert stack_labels(stack, {})["stack"] == value


def test_the_replica_pods_are_picked_by_name_and_stack() -> None:
    assert selector_labels("prod") == {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": "prod"}


def test_every_cache_object_derives_from_the_cache_id() -> None:
    names = cache_names("qwen3-8b-0a1b")
    assert names.writer == "model-cache-qwen3-8b-0a1b-writer"
    assert names.claim == "model-cache-qwen3-8b-0a1b-claim"
    assert names.download == "model-download-qwen3-8b-0a1b"
    assert names.snapshot == names.reader == "model-cache-qwen3-8b-0a1b"
    assert names.release == "model-cache-qwen3-8b-0a1b-release"


def hashed(name: str, project: str, middle: str, tail: str) -> str:
    """The 8 hex characters a hashed name holds between ``project-middle`` and ``tail``."""
    found = re.fullmatch(re.escape(f"{project}-{middle}") + "([0-9a-f]{8})" + re.escape(tail), name)
    assert found, name
    return found.group(1)


def test_a_compile_cache_bucket_is_readable_when_it_fits() -> None:
    assert compile_cache_bucket("example-project", "llm") == "example-project-llm-compile-cache"
    # 63 characters exactly still fit.
    cluster = "c" * (BUCKET_NAME_LENGTH - len("p--compile-cache"))
    assert compile_cache_bucket("p", cluster) == f"p-{cluster}-compile-cache"


@pytest.mark.parametrize("cluster", ["c" * (BUCKET_NAME_LENGTH - len("p--compile-cache") + 1), "my-google-cluster"])
def test_a_compile_cache_bucket_too_long_or_holding_google_is_hashed(cluster: str) -> None:
    name = compile_cache_bucket("p", cluster)
    digest = hashed(name, "p", "compile-cache-", "")
    assert digest != hashed(compile_cache_bucket("p", cluster + "x"), "p", "compile-cache-", "")
    assert compile_cache_bucket("p", cluster) == name


def test_a_batch_bucket_is_readable_when_it_fits() -> None:
    assert batch_bucket_name("example-project", "prod-2") == "example-project-prod-2-batch"
    stack = "s" * (BUCKET_NAME_LENGTH - len("p--batch"))
    assert batch_bucket_name("p", stack) == f"p-{stack}-batch"


@pytest.mark.parametrize("stack", ["s" * (BUCKET_NAME_LENGTH - len("p--batch") + 1), "Prod", "eu.prod", "my_stack", "googly"])
def test_a_batch_bucket_too_long_not_plain_or_holding_google_is_hashed(stack: str) -> None:
    name = batch_bucket_name("p", stack)
    assert hashed(name, "p", "", "-batch") != hashed(batch_bucket_name("p", stack + "x"), "p", "", "-batch")
    assert len(name) <= BUCKET_NAME_LENGTH
