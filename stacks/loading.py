"""Reads the stack's configuration: the only place that touches ``pulumi.Config``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pulumi
from pydantic import ValidationError

from facts.naming import stack_labels
from stacks.problems import StackConfigError, describe
from stacks.settings import StackSettings, known_keys

# Config keys that hold credentials. They never enter the settings model, so
# they cannot leak into a plan, an output or a rendered file.
HF_TOKEN_KEY = "hfToken"
API_KEY_KEY = "apiKey"
SECRET_KEYS = (HF_TOKEN_KEY, API_KEY_KEY)


@dataclass(frozen=True)
class StackSecrets:
    hf_token: pulumi.Output[str] | None
    api_key: pulumi.Output[str] | None


@dataclass(frozen=True)
class Stack:
    name: str
    settings: StackSettings
    secrets: StackSecrets
    # Settings that pass but may be wrong, for `pulumi up` and the render to show.
    warnings: tuple[str, ...] = ()

    @property
    def labels(self) -> dict[str, str]:
        return stack_labels(self.name, self.settings.labels)


def _raw_config(namespace: str) -> dict[str, str]:
    # Every key, to spot a misspelled one: pulumi.Config reads only the keys it is asked for. The language
    # host hands the program its whole config in PULUMI_CONFIG, which this reads (the render does the same).
    every: dict[str, Any] = pulumi.runtime.get_config_env()
    prefix = f"{namespace}:"
    return {key.removeprefix(prefix): value for key, value in every.items() if key.startswith(prefix)}


def _parse(value: str) -> Any:
    # Structured config arrives as JSON text; scalars as plain strings, which
    # pydantic converts to the field's type.
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            # A plain string that starts like JSON: the field's own check names the key.
            return value
    return value


_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_NUMERIC_KEYS = {field.alias or name for name, field in StackSettings.model_fields.items() if field.annotation in (int, float)}


def _number(key: str, value: Any) -> Any:
    """A numeric setting as the stack file wrote it, so an error shows `2.5`, not the CLI's string '2.5'."""
    if key in _NUMERIC_KEYS and isinstance(value, str) and _NUMBER.match(value):
        return json.loads(value)
    return value


def parse_settings(raw: dict[str, str], namespace: str) -> StackSettings:
    """Validates raw config values (as Pulumi hands them over) into settings."""
    problems = [
        f"{namespace}:{key}: holds a credential in plain text; remove it and run `pulumi config set --secret {key} <value>`"
        for key in SECRET_KEYS
        if key in raw and not pulumi.runtime.is_config_secret(f"{namespace}:{key}")
    ]
    # Settings carry no secret-ness: a secret set there would reach a manifest in plain text.
    problems += [
        f"{namespace}:{key}: is set as a secret, but only {' and '.join(SECRET_KEYS)} are kept secret; "
        "keep credentials in those, or set this key without --secret"
        for key in raw
        if key not in SECRET_KEYS and pulumi.runtime.is_config_secret(f"{namespace}:{key}")
    ]
    values = {key: _number(key, _parse(value)) for key, value in raw.items() if key not in SECRET_KEYS}
    try:
        settings = StackSettings.model_validate(values)
    except ValidationError as error:
        raise StackConfigError(problems + describe(error, namespace, known_keys(), StackSettings)) from None
    if problems:
        raise StackConfigError(problems)
    return settings


def load() -> Stack:
    """The current stack's settings and secrets; raises before anything is registered."""
    namespace = pulumi.get_project()
    settings = parse_settings(_raw_config(namespace), namespace)
    config = pulumi.Config()
    secrets = StackSecrets(hf_token=config.get_secret(HF_TOKEN_KEY), api_key=config.get_secret(API_KEY_KEY))
    return Stack(name=pulumi.get_stack(), settings=settings, secrets=secrets, warnings=tuple(settings.warnings(namespace)))
