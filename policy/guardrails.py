"""The rules of ``policy/rules.py`` as CrossGuard policies, all mandatory.

Building the list starts nothing: ``policy/__main__.py`` hands it to
``PolicyPack``, which serves it to the Pulumi CLI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pulumi
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from policy.rules import (
    ALLOW_OPEN_CONTROL_PLANE,
    ALLOW_PUBLIC_EXPOSURE,
    ALLOW_PUBLIC_NODES,
    PRODUCTION,
    RULES,
    UNKNOWN,
    Resource,
    Rule,
    StackFacts,
    compute_classes,
    switch,
)

PACK_NAME = "llm-serving-guardrails"
# The project's name in ../Pulumi.yaml: the namespace of its stack config keys.
CONFIG_NAMESPACE = "llm"


def plain(value: Any) -> Any:
    """The SDK's read-only proxies as plain dicts and lists, unknown values as ``UNKNOWN``.

    The proxies raise on reading a value the engine does not know yet (during a
    preview); a rule judges what is known instead of failing as a whole.
    """
    if isinstance(value, Mapping):
        return {str(key): _read(value, key) for key in value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_read(value, index) for index in range(len(value))]
    return value


def _read(container: Any, key: Any) -> Any:
    try:
        return plain(container[key])
    except UnknownValueError:
        return UNKNOWN


def stack_facts(pack_config: Mapping[str, Any], stack_config: Mapping[str, Any]) -> StackFacts:
    """The switches of the stack being checked, as a live policy pack sees them."""
    return StackFacts(
        allow_public_exposure=switch(ALLOW_PUBLIC_EXPOSURE.key, pack_config, stack_config, CONFIG_NAMESPACE),
        production=switch(PRODUCTION.key, pack_config, stack_config, CONFIG_NAMESPACE),
        allow_public_nodes=switch(ALLOW_PUBLIC_NODES.key, pack_config, stack_config, CONFIG_NAMESPACE),
        allow_open_control_plane=switch(ALLOW_OPEN_CONTROL_PLANE.key, pack_config, stack_config, CONFIG_NAMESPACE),
        # pulumi-policy unwraps secrets before a validation runs: no markers to judge.
        secrets_marked=False,
    )


def _stack_config() -> Mapping[str, Any]:
    # The CLI starts a policy pack with the stack's config in PULUMI_CONFIG, as it does a program.
    return pulumi.runtime.get_config_env()


def _schema(rule: Rule) -> PolicyConfigSchema | None:
    if not rule.switches:
        return None
    # No "default": the CLI would fill it in, and an unset key must fall back to the stack's own config.
    return PolicyConfigSchema(properties={s.key: {"type": "boolean", "description": s.description} for s in rule.switches})


def _resource_policy(rule: Rule) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        resource = Resource(type=args.resource_type, name=args.name, inputs=plain(args.props), urn=args.urn)
        for message in rule.check(resource, stack_facts(args.get_config(), _stack_config())):
            report_violation(message, None)

    return ResourceValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=_schema(rule),
    )


def _stack_policy(rule: Rule) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [Resource(type=r.resource_type, name=r.name, inputs=plain(r.props), urn=r.urn) for r in args.resources]
        facts = replace(stack_facts(args.get_config(), _stack_config()), compute_classes=compute_classes(resources))
        for resource in resources:
            for message in rule.check(resource, facts):
                report_violation(message, resource.urn)

    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=_schema(rule),
    )


def policies() -> list[Policy]:
    """One policy per rule; a rule that needs the whole stack is a stack policy."""
    return [_stack_policy(rule) if rule.needs_stack else _resource_policy(rule) for rule in RULES]
