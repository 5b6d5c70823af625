"""Validates rendered Kubernetes objects against real schemas, offline.

Core kinds: the Kubernetes OpenAPI schema of the cluster's minor version, in
strict mode (``kubernetes-validate``). Custom kinds: the upstream CRDs vendored
in ``render/vendor/schemas/crds`` (see its PROVENANCE.md), also strict, then their CEL rules.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import jsonschema
import kubernetes_validate

from facts.data_files import read_yaml
from render.chart import chart_objects
from render.crd_rules import declared_rules, violations, why_unchecked
from render.engine import Render
from render.files import manifests

SCHEMAS = Path(__file__).resolve().parent / "vendor" / "schemas"

# kubernetes-validate reads and parses its multi-megabyte definitions file for
# every object; the files never change, so parse each once per process.
kubernetes_validate.utils.schema_contents = cache(kubernetes_validate.utils.schema_contents)


def _strict(schema: Any) -> Any:
    """An OpenAPI v3 CRD schema as JSON Schema that rejects unknown fields."""
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: _strict(value) for key, value in schema.items() if not key.startswith("x-kubernetes-")}
    if schema.get("x-kubernetes-int-or-string"):
        converted.pop("type", None)
        converted["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.get("nullable"):
        converted.pop("nullable")
        if "type" in converted:
            converted["type"] = [converted["type"], "null"]
    if "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        converted.setdefault("additionalProperties", False)
    if "required" in schema:
        # The API server fills defaulted fields before it checks required ones.
        defaulted = {name for name, prop in schema.get("properties", {}).items() if "default" in prop}
        converted["required"] = [name for name in schema["required"] if name not in defaulted]
    return converted


class CustomResource(NamedTuple):
    crd: str
    schema: dict[str, Any]
    """The CRD's ``openAPIV3Schema``, with its CEL rules."""
    json_schema: dict[str, Any]


@cache
def custom_resources() -> dict[tuple[str, str], CustomResource]:
    """``(apiVersion, kind)`` -> its schemas, from every vendored CRD."""
    table: dict[tuple[str, str], CustomResource] = {}
    for path in sorted((SCHEMAS / "crds").glob("*.yaml")):
        crd = read_yaml(path)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            json_schema = _strict(schema)
            # metadata is checked by the API server, not by the CRD.
            json_schema["properties"]["metadata"] = {"type": "object"}
            table[(f"{group}/{version['name']}", kind)] = CustomResource(
                f"{crd['metadata']['name']}/{version['name']}", schema, json_schema
            )
    return table


def unchecked_rules() -> list[str]:
    """The vendored CRDs' CEL rules that cannot be checked offline, each with where it is and why."""
    return sorted(
        f"{resource.crd} {path}: {rule['rule']!r} {reason}"
        for resource in custom_resources().values()
        for path, rule in declared_rules(resource.schema)
        if (reason := why_unchecked(rule["rule"]))
    )


class ManifestError(ValueError):
    pass


def validate(manifest: dict[str, Any], kubernetes_version: str) -> str:
    """Raises ``ManifestError`` naming the object and the failing field; returns how it was checked."""
    api_version, kind = manifest.get("apiVersion", ""), manifest.get("kind", "")
    name = f"{kind}/{manifest.get('metadata', {}).get('name', '?')}"
    resource = custom_resources().get((api_version, kind))
    if resource is not None:
        errors = sorted(jsonschema.Draft7Validator(resource.json_schema).iter_errors(manifest), key=lambda e: list(e.absolute_path))
        if errors:
            first = errors[0]
            where = ".".join(str(p) for p in first.absolute_path) or "(root)"
            raise ManifestError(f"{name}: {where}: {first.message} (vendored CRD {api_version})")
        broken = violations(resource.schema, manifest)
        if broken:
            first_rule = broken[0]
            raise ManifestError(f"{name}: {first_rule.path}: {first_rule.message} (CEL rule {first_rule.rule!r} of CRD {resource.crd})")
        return f"CRD {api_version}"
    try:
        kubernetes_validate.validate(manifest, kubernetes_version, strict=True)
    except kubernetes_validate.ValidationError as error:
        where = ".".join(str(p) for p in error.path) or "(root)"
        raise ManifestError(f"{name}: {where}: {error.message} (Kubernetes {kubernetes_version})") from None
    except kubernetes_validate.SchemaNotFoundError:
        raise ManifestError(f"{name}: no schema for {api_version} {kind}: vendor its CRD into render/vendor/schemas/crds") from None
    return f"Kubernetes {kubernetes_version}"


def kubernetes_version(render: Render) -> str:
    """The schema version to validate against: the cluster's minimum control-plane version."""
    return str(render.one("gcp:container/cluster:Cluster").inputs["minMasterVersion"])


def validate_render(render: Render) -> list[str]:
    """Validates every Kubernetes object of a render, its charts' included; returns how each was checked."""
    version = kubernetes_version(render)
    checks = [validate(manifest, version) for manifest in manifests(render)]
    for item in chart_objects(render):
        try:
            checks.append(validate(item.manifest, version))
        except ManifestError as error:
            raise ManifestError(f"{error} (rendered by {item.source})") from None
    return checks
