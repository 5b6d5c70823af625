"""Reading the stack's configuration (stacks/loading.py) as the Pulumi CLI hands it over, without a render."""

from __future__ import annotations

import contextvars
import json
import logging
from typing import Any

import pulumi
import pytest

from render.sdk import Registration, run_program
from stacks.loading import Stack, _number, _parse, _raw_config, load, parse_settings
from stacks.problems import StackConfigError

PROJECT = {"project": "example-project"}


class _Engine(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, []


def loaded(config: dict[str, str], secret_keys: list[str], stack: str = "dev") -> tuple[Stack, dict[str, Any]]:
    """The stack `load` reads under the mock engine, and its secrets' values."""
    found: list[Stack] = []
    values: dict[str, Any] = {}

    def program() -> None:
        stack = load()
        found.append(stack)
        for name in ("hf_token", "api_key"):
            secret = getattr(stack.secrets, name)
            values[name] = None
            if secret is not None:
                secret.apply(lambda v, name=name: values.__setitem__(name, v))

    resources: list[Registration] = []
    contextvars.copy_context().run(
        run_program,
        program,
        project="llm",
        stack=stack,
        config=config,
        secret_keys=secret_keys,
        engine=_Engine(),
        resources=resources,
        invokes=[],
        logger=logging.getLogger("test-loading"),
    )
    (stack_read,) = found
    return stack_read, values


def in_context(function: Any, *args: Any, secret_keys: list[str] = ()) -> Any:  # type: ignore[assignment]
    """Runs ``function`` where the SDK holds ``secret_keys`` as secret, as the language host sets them."""

    def run() -> Any:
        pulumi.runtime.set_all_config({}, list(secret_keys))
        return function(*args)

    return contextvars.copy_context().run(run)


def test_load_reads_the_stacks_settings_secrets_and_warnings() -> None:
    config = {"llm:project": "example-project", "llm:nodes": "3", "llm:zone": "europe-west4-a", "llm:hfToken": "hf_x", "other:nodes": "9"}
    stack, secrets = loaded(config, ["llm:hfToken"], stack="team")
    assert (stack.name, stack.settings.nodes, stack.settings.zone) == ("team", 3, "europe-west4-a")
    assert secrets == {"hf_token": "hf_x", "api_key": None}
    assert len(stack.warnings) == 1 and stack.warnings[0].startswith("llm:zone: 'europe-west4-a' is not among the zones")
    assert stack.labels["stack"] == "team"


def test_load_reads_both_secrets_and_no_warning_for_a_known_zone() -> None:
    config = {"llm:project": "example-project", "llm:hfToken": "hf_x", "llm:apiKey": "key"}
    stack, secrets = loaded(config, ["llm:hfToken", "llm:apiKey"])
    assert secrets == {"hf_token": "hf_x", "api_key": "key"}
    assert (stack.name, stack.warnings) == ("dev", ())


def test_load_refuses_bad_settings_before_anything_registers() -> None:
    with pytest.raises(StackConfigError) as error:
        loaded({"llm:project": "example-project", "llm:nodes": "-1"}, [])
    assert error.value.problems == ["llm:nodes: -1 is out of range; use 0 (scaled to zero) up to 1000 A4 nodes"]


def test_the_raw_config_is_every_key_of_the_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"llm:nodes": "3", "llm:serving": '{"port": 8080}', "gcp:project": "p", "llmx:a": "b"}))
    assert _raw_config("llm") == {"nodes": "3", "serving": '{"port": 8080}'}


@pytest.mark.parametrize(
    ("text", "value"),
    [('{"port": 8080}', {"port": 8080}), ("[1, 2]", [1, 2]), ("[", "["), ("{not json", "{not json"), ("3", "3"), ("", ""), (3, 3)],
)
def test_structured_config_arrives_as_json_and_scalars_as_text(text: Any, value: Any) -> None:
    assert _parse(text) == value


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("nodes", "3", 3),
        ("nodes", "-1", -1),
        ("nodes", "2.5", 2.5),
        ("nodes", "1e3", "1e3"),
        ("nodes", "3x", "3x"),
        ("nodes", 3, 3),
        ("zone", "3", "3"),
    ],
)
def test_a_number_is_read_as_the_stack_file_wrote_it(key: str, text: Any, value: Any) -> None:
    assert _number(key, text) == value
    assert type(_number(key, text)) is type(value)


def test_a_fraction_for_a_count_is_shown_as_written() -> None:
    with pytest.raises(StackConfigError) as error:
        parse_settings({**PROJECT, "nodes": "2.5"}, "llm")
    assert error.value.problems == ["llm:nodes: 2.5 is not allowed: input should be a valid integer, got a number with a fractional part"]


def test_a_misspelt_key_gets_the_spelling_hint() -> None:
    with pytest.raises(StackConfigError) as error:
        parse_settings({**PROJECT, "node": "2"}, "llm")
    (found,) = error.value.problems
    assert found.startswith("llm:node: unknown key; did you mean 'nodes'? known keys: ")


def test_json_sections_are_read() -> None:
    settings = parse_settings({**PROJECT, "serving": '{"port": 8080}', "nodes": "2"}, "llm")
    assert (settings.serving.port, settings.nodes) == (8080, 2)


@pytest.mark.parametrize("key", ["hfToken", "apiKey"])
def test_a_credential_in_plain_text_is_refused(key: str) -> None:
    with pytest.raises(StackConfigError) as error:
        in_context(parse_settings, {**PROJECT, key: "x"}, "llm")
    assert error.value.problems == [
        f"llm:{key}: holds a credential in plain text; remove it and run `pulumi config set --secret {key} <value>`"
    ]


def test_secret_credentials_never_enter_the_settings() -> None:
    settings = in_context(parse_settings, {**PROJECT, "hfToken": "x", "apiKey": "y"}, "llm", secret_keys=["llm:hfToken", "llm:apiKey"])
    assert "hfToken" not in settings.model_dump(by_alias=True)


def test_another_key_set_as_a_secret_is_refused_with_the_settings_own_problems() -> None:
    with pytest.raises(StackConfigError) as error:
        in_context(parse_settings, {**PROJECT, "zone": "europe-west4-b", "nodes": "-1"}, "llm", secret_keys=["llm:zone", "other:zone"])
    assert error.value.problems == [
        "llm:zone: is set as a secret, but only hfToken and apiKey are kept secret; keep credentials in those, "
        "or set this key without --secret",
        "llm:nodes: -1 is out of range; use 0 (scaled to zero) up to 1000 A4 nodes",
    ]
