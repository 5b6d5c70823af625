"""Reads the schema of google-beta, which pulumi-gcp bridges, for every GCP resource the program registers.

Usage: ``python dev/provider_schema.py <terraform-provider-google-beta checkout> <commit>``
writes ``render/vendor/replacements/gcp.yaml`` (ForceNew fields: a change replaces the
resource), ``render/vendor/replacements/gcp-customize-diff.yaml`` (each resource's
``CustomizeDiff`` functions and the fields each can force new: a replacement decided
on the values, such as a subnet range that no longer holds the old one) and
``render/vendor/constraints/gcp.yaml`` (what the provider checks before
it calls the API: Required, MaxItems/MinItems, ExactlyOneOf, ConflictsWith,
RequiredWith, AtLeastOneOf and the validators of enums, ranges, patterns, RFC
3339 times and CIDR ranges).

The Go source is tokenized and its composite literals parsed: a resource's
schema map, nested ``Elem`` resources, and the package-level variables and
functions of the same files that a field names. What it cannot follow (a schema
built by a function of another file, a validator it does not know) is listed
under ``unfollowed`` rather than guessed. Field paths are Pulumi's: camelCase,
and a list field that is not MaxItems 1 pluralized, as the bridge names it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPOSITORY = "hashicorp/terraform-provider-google-beta"
ROOT = Path(__file__).resolve().parent.parent
IAM_MEMBER = ("google-beta/tpgiamresource/resource_iam_member.go", "IamMemberBaseSchema")
SERVICES = "google-beta/services"
# The Terraform plugin SDK's helpers that force new when a condition on the old and new value holds.
FORCE_NEW_IF_CHANGE = ("customdiff.ForceNewIfChange", "customdiff.ForceNewIfChangeExceptUnknown")
# Every gcp resource type the program registers: (file, function or variable holding its schema), merged in order.
RESOURCES: dict[str, list[tuple[str, str]]] = {
    "gcp:artifactregistry/repository:Repository": [
        (f"{SERVICES}/artifactregistry/resource_artifact_registry_repository.go", "ResourceArtifactRegistryRepository")
    ],
    "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": [
        IAM_MEMBER,
        (f"{SERVICES}/artifactregistry/iam_artifact_registry_repository.go", "ArtifactRegistryRepositoryIamSchema"),
    ],
    "gcp:compute/futureReservation:FutureReservation": [
        (f"{SERVICES}/compute/resource_compute_future_reservation.go", "ResourceComputeFutureReservation")
    ],
    "gcp:compute/network:Network": [(f"{SERVICES}/compute/resource_compute_network.go", "ResourceComputeNetwork")],
    "gcp:compute/router:Router": [(f"{SERVICES}/compute/resource_compute_router.go", "ResourceComputeRouter")],
    "gcp:compute/routerNat:RouterNat": [(f"{SERVICES}/compute/resource_compute_router_nat.go", "ResourceComputeRouterNat")],
    "gcp:compute/subnetwork:Subnetwork": [(f"{SERVICES}/compute/resource_compute_subnetwork.go", "ResourceComputeSubnetwork")],
    "gcp:container/cluster:Cluster": [(f"{SERVICES}/container/resource_container_cluster.go", "ResourceContainerCluster")],
    "gcp:monitoring/alertPolicy:AlertPolicy": [
        (f"{SERVICES}/monitoring/resource_monitoring_alert_policy.go", "ResourceMonitoringAlertPolicy")
    ],
    "gcp:monitoring/dashboard:Dashboard": [(f"{SERVICES}/monitoring/resource_monitoring_dashboard.go", "ResourceMonitoringDashboard")],
    "gcp:projects/iAMMember:IAMMember": [IAM_MEMBER, (f"{SERVICES}/resourcemanager/iam_project.go", "IamProjectSchema")],
    "gcp:projects/service:Service": [(f"{SERVICES}/resourcemanager/resource_google_project_service.go", "ResourceGoogleProjectService")],
    "gcp:serviceaccount/account:Account": [
        (f"{SERVICES}/resourcemanager/resource_google_service_account.go", "ResourceGoogleServiceAccount")
    ],
    "gcp:serviceaccount/iAMMember:IAMMember": [
        IAM_MEMBER,
        (f"{SERVICES}/resourcemanager/iam_service_account.go", "IamServiceAccountSchema"),
    ],
    "gcp:storage/bucket:Bucket": [(f"{SERVICES}/storage/resource_storage_bucket.go", "ResourceStorageBucket")],
    "gcp:storage/bucketIAMMember:BucketIAMMember": [
        IAM_MEMBER,
        (f"{SERVICES}/storage/iam_storage_bucket.go", "StorageBucketIamSchema"),
    ],
}
# verify.ValidateGCEName's pattern (google-beta/verify/validation.go).
GCE_NAME = r"^(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)$"
RELATIONS = {
    "ExactlyOneOf": "exactlyOneOf",
    "ConflictsWith": "conflictsWith",
    "RequiredWith": "requiredWith",
    "AtLeastOneOf": "atLeastOneOf",
}

# --- Go source as values -------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<space>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>"(?:\\.|[^"\\\n])*")|(?P<char>'(?:\\.|[^'\\])*')
    |(?P<num>\d+(?:\.\d+)?)|(?P<ident>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)|(?P<op>:=|\.\.\.|&&|\|\||[{}\[\]():,;&*=!<>+\-/.%|^])""",
    re.S | re.X,
)


@dataclass(frozen=True)
class Token:
    kind: str
    text: str


@dataclass
class Composite:
    """``Type{key: value, ...}``; ``type`` is empty for an elided type."""

    type: str
    elements: list[tuple[Any, Any]]

    def get(self, key: str) -> Any:
        return next((value for k, value in self.elements if isinstance(k, Ident) and k.name == key), None)


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Ident:
    name: str


@dataclass(frozen=True)
class Opaque:
    """An expression the tool keeps only as text (a closure, arithmetic)."""

    text: str


def tokenize(source: str) -> list[Token]:
    tokens: list[Token] = []
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup or "op"
        if kind not in ("space", "comment"):
            tokens.append(Token(kind, match.group()))
    return tokens


def _string(token: Token) -> str:
    if token.kind == "raw":
        return token.text[1:-1]
    return str(yaml.safe_load(token.text))  # a Go interpreted string reads as a YAML double-quoted one


_CLOSE = {"(": ")", "[": "]", "{": "}"}


def _skip_balanced(tokens: list[Token], i: int) -> int:
    """Index after the bracket group opening at ``i``."""
    depth = 0
    while i < len(tokens):
        text = tokens[i].text
        if tokens[i].kind == "op" and text in _CLOSE:
            depth += 1
        elif tokens[i].kind == "op" and text in _CLOSE.values():
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _type_text(tokens: list[Token], i: int) -> tuple[str, int]:
    """Reads a type literal before ``{``: ``[]string``, ``map[string]*schema.Schema``, ``schema.Resource``."""
    parts: list[str] = []
    while i < len(tokens) and tokens[i].text != "{":
        parts.append(tokens[i].text)
        i += 1
    return "".join(parts), i


def parse_expr(tokens: list[Token], i: int) -> tuple[Any, int]:
    """One expression from ``i`` up to a top-level ``,``, ``:`` or closing bracket."""
    start = i
    value, i = _primary(tokens, i)
    if i < len(tokens) and tokens[i].kind == "op" and tokens[i].text not in (",", ":", ")", "]", "}"):
        # An operator: keep the whole expression as text.
        while i < len(tokens) and tokens[i].text not in (",", ":", ")", "]", "}"):
            i = _skip_balanced(tokens, i) if tokens[i].text in _CLOSE else i + 1
        return Opaque(" ".join(t.text for t in tokens[start:i])), i
    return value, i


def _primary(tokens: list[Token], i: int) -> tuple[Any, int]:
    token = tokens[i]
    if token.text in ("&", "*"):
        return _primary(tokens, i + 1)
    if token.kind in ("str", "raw"):
        return _string(token), i + 1
    if token.kind == "num":
        return (float(token.text) if "." in token.text else int(token.text)), i + 1
    if token.text == "func":
        # A function literal: its signature, then its body.
        i = _skip_balanced(tokens, i + 1)
        while tokens[i].text != "{":
            i = _skip_balanced(tokens, i) if tokens[i].text in ("(", "[") else i + 1
        end = _skip_balanced(tokens, i)
        return Opaque("func(...) {...}"), end
    if token.text == "{":
        return _composite("", tokens, i)
    if token.text in ("[", "map") or (token.kind == "ident" and i + 1 < len(tokens) and tokens[i + 1].text == "{"):
        type_, j = _type_text(tokens, i)
        return _composite(type_, tokens, j)
    if token.kind == "ident":
        if i + 1 < len(tokens) and tokens[i + 1].text == "(":
            args, j = _list(tokens, i + 1, ")")
            return Call(token.text, tuple(args)), j
        return (token.text == "true" if token.text in ("true", "false") else Ident(token.text)), i + 1
    raise ValueError(f"cannot read Go from {token.text!r}")


def _list(tokens: list[Token], i: int, close: str) -> tuple[list[Any], int]:
    """Comma-separated expressions after the opening bracket at ``i``."""
    items: list[Any] = []
    i += 1
    while tokens[i].text != close:
        item, i = parse_expr(tokens, i)
        items.append(item)
        if tokens[i].text == ",":
            i += 1
    return items, i + 1


def _composite(type_: str, tokens: list[Token], i: int) -> tuple[Composite, int]:
    elements: list[tuple[Any, Any]] = []
    i += 1
    while tokens[i].text != "}":
        first, i = parse_expr(tokens, i)
        if tokens[i].text == ":":
            value, i = parse_expr(tokens, i + 1)
            elements.append((first, value))
        else:
            elements.append((None, first))
        if tokens[i].text == ",":
            i += 1
    return Composite(type_, elements), i + 1


SCHEMA_MAP = "map[string]*schema.Schema"


def declarations(source: str) -> dict[str, Any]:
    """Package-level ``var`` values and, for each function, the schema literal it returns."""
    tokens = tokenize(source)
    found: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.text == "var" and i + 1 < len(tokens):
            if tokens[i + 1].text == "(":
                i += 2
                while tokens[i].text != ")":
                    i = _var_spec(tokens, i, found)
                i += 1
            else:
                i = _var_spec(tokens, i + 1, found)
        elif token.text == "func":
            i += 1
            if tokens[i].text == "(":  # a method's receiver
                i = _skip_balanced(tokens, i)
            name = tokens[i].text
            while tokens[i].text != "{":
                i = _skip_balanced(tokens, i) if tokens[i].text in ("(", "[") else i + 1
            end = _skip_balanced(tokens, i)
            literal = _returned_schema(tokens, i, end)
            if literal is not None:
                found[name] = literal
            i = end
        else:
            i += 1
    return found


def _var_spec(tokens: list[Token], i: int, found: dict[str, Any]) -> int:
    name = tokens[i].text
    i += 1
    # Past an optional type, to ``=`` or to where the next declaration starts.
    while tokens[i].text not in ("=", ")", "var", "func", "type", "const"):
        i += 1
    if tokens[i].text != "=":
        return i  # a declaration without a value
    value, i = parse_expr(tokens, i + 1)
    found[name] = value
    return i + 1 if i < len(tokens) and tokens[i].text == ";" else i


def _returned_schema(tokens: list[Token], start: int, end: int) -> Any:
    """A resource's ``Schema:`` map, else the schema map, ``schema.Resource`` or ``schema.Schema`` a function returns."""
    # ``Schema:`` first: a resource's identity schema (``SchemaFunc``) may come before it.
    for before in (("Schema", ":"), ("return",)):
        for i in range(start + 2, end):
            if tuple(t.text for t in tokens[i - len(before) : i]) == before and _is_schema_map(tokens, i):
                return parse_expr(tokens, i)[0]
    for i in range(start, end - 2):
        if tokens[i].text == "return" and tokens[i + 1].text == "&" and tokens[i + 2].text in ("schema.Resource", "schema.Schema"):
            return parse_expr(tokens, i + 1)[0]
    return None


def _is_schema_map(tokens: list[Token], i: int) -> bool:
    return tokens[i].text == "map" and "".join(t.text for t in tokens[i : i + 6]) == SCHEMA_MAP


# --- Schema facts --------------------------------------------------------------------------------


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def plural(name: str) -> str:
    """The bridge's name for a list field that is not MaxItems 1."""
    if name.endswith("s"):
        return name
    if re.search(r"[^aeiou]y$", name):
        return name[:-1] + "ies"
    if re.search(r"(ch|sh|x|z)$", name):
        return name + "es"
    return name + "s"


@dataclass
class Schema:
    """Facts of one resource, by Pulumi field path."""

    force_new: list[str] = field(default_factory=list)
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    unfollowed: dict[str, str] = field(default_factory=dict)
    # Terraform path (``a.0.b``) to Pulumi path, for the relations' keys.
    tf_paths: dict[str, str] = field(default_factory=dict)
    # Terraform paths of list fields that are not MaxItems 1.
    lists: set[str] = field(default_factory=set)


def validator(expr: Any, scope: dict[str, Any]) -> dict[str, Any] | None:
    """What a ValidateFunc checks, as data; None when the tool does not know the function."""
    if isinstance(expr, Call) and expr.func in ("validation.ToDiagFunc", "verify.OrEmpty"):
        inner = validator(expr.args[0], scope)
        return None if inner is None else {**inner, "allowEmpty": True} if expr.func == "verify.OrEmpty" else inner
    name = expr.func if isinstance(expr, Call) else expr.name if isinstance(expr, Ident) else ""
    args = [_resolve(a, scope) for a in expr.args] if isinstance(expr, Call) else []
    if name in ("verify.ValidateEnum", "validation.StringInSlice") and isinstance(args[0], Composite):
        values = [v for _, v in args[0].elements]
        return {"enum": values, **({"ignoreCase": True} if len(args) > 1 and args[1] is True else {})}
    ranges = {
        "validation.IntBetween": (0, 1),
        "validation.FloatBetween": (0, 1),
        "validation.IntAtLeast": (0, None),
        "validation.FloatAtLeast": (0, None),
        "validation.IntAtMost": (None, 0),
    }
    if name in ranges:
        low, high = ranges[name]
        return {"range": {"min": None if low is None else args[low], "max": None if high is None else args[high]}}
    if name == "validation.StringLenBetween":
        return {"length": {"min": args[0], "max": args[1]}}
    if name == "validation.StringMatch" and isinstance(args[0], Call) and args[0].func == "regexp.MustCompile":
        return {"pattern": _resolve(args[0].args[0], scope)} if isinstance(_resolve(args[0].args[0], scope), str) else None
    if name == "verify.ValidateRegexp" and isinstance(args[0], str):
        return {"pattern": args[0]}
    if name == "verify.ValidateGCEName":
        return {"pattern": GCE_NAME}
    if name == "verify.ValidateRFC1035Name":
        return {"pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$", "length": {"min": args[0], "max": args[1]}}
    if name in ("verify.ValidateRFC3339Date", "validation.IsRFC3339Time"):
        return {"rfc3339": "date-time"}
    if name == "verify.ValidateRFC3339Time":
        return {"rfc3339": "HH:MM"}
    if name in ("verify.ValidateIpCidrRange", "validation.IsCIDR"):
        return {"cidr": {}}
    if name == "validation.IsCIDRNetwork":
        return {"cidr": {"network": True, "minPrefix": args[0], "maxPrefix": args[1]}}
    return None


def _resolve(expr: Any, scope: dict[str, Any]) -> Any:
    if isinstance(expr, Ident) and expr.name in scope:
        return scope[expr.name]
    return expr


def _text(expr: Any) -> str:
    if isinstance(expr, Call):
        return f"{expr.func}({', '.join(_text(a) for a in expr.args)})"
    if isinstance(expr, Ident):
        return expr.name
    if isinstance(expr, Composite):
        return f"{expr.type}{{...}}"
    if isinstance(expr, Opaque):
        return expr.text
    return repr(expr)


def _schema_map(expr: Any, scope: dict[str, Any]) -> Composite | None:
    expr = _resolve(expr, scope)
    if isinstance(expr, Call) and not expr.args:
        expr = scope.get(expr.func)
    if isinstance(expr, Composite) and expr.type == SCHEMA_MAP:
        return expr
    if isinstance(expr, Composite) and expr.type == "schema.Resource":
        return _schema_map(expr.get("Schema"), scope)
    return None


def read_fields(schema_map: Composite, scope: dict[str, Any], out: Schema, tf_prefix: str = "", prefix: str = "") -> None:
    for key, value in schema_map.elements:
        if not isinstance(key, str):
            out.unfollowed[prefix or "(root)"] = f"a schema key {_text(key)}"
            continue
        definition = _resolve(value, scope)
        if isinstance(definition, Call) and not definition.args and definition.func in scope:
            definition = scope[definition.func]
        if not (isinstance(definition, Composite) and definition.type in ("", "schema.Schema")):
            out.unfollowed[f"{prefix}{camel(key)}"] = f"its schema is {_text(value)} (not in this file)"
            continue
        _read_field(key, definition, scope, out, tf_prefix, prefix)


def _read_field(key: str, definition: Composite, scope: dict[str, Any], out: Schema, tf_prefix: str, prefix: str) -> None:
    kind = _text(definition.get("Type")).removeprefix("schema.Type").lower()
    max_items = definition.get("MaxItems")
    listed = kind in ("list", "set") and max_items != 1
    path = f"{prefix}{plural(camel(key)) if listed else camel(key)}"
    tf_path = f"{tf_prefix}{key}"
    out.tf_paths[tf_path] = path
    if listed:
        out.lists.add(tf_path)
    facts: dict[str, Any] = {}
    if definition.get("ForceNew") is True and path not in out.force_new:
        out.force_new.append(path)
    if definition.get("Required") is True:
        facts["required"] = True
    for go_name, name in (("MaxItems", "maxItems"), ("MinItems", "minItems")):
        count = _resolve(definition.get(go_name), scope)
        if isinstance(count, int) and listed:
            facts[name] = count
    for go_name, name in RELATIONS.items():
        keys = _resolve(definition.get(go_name), scope)
        if isinstance(keys, Composite):
            facts[name] = [v for _, v in keys.elements]
        elif keys is not None:
            out.unfollowed[path] = f"{go_name}: {_text(keys)}"
    for go_name in ("ValidateFunc", "ValidateDiagFunc"):
        check = definition.get(go_name)
        if check is not None:
            known = validator(check, scope)
            if known is None:
                out.unfollowed[path] = f"{go_name}: {_text(check)}"
            else:
                facts["validate"] = known
    elem = _resolve(definition.get("Elem"), scope)
    if isinstance(elem, Call) and not elem.args and elem.func in scope:
        elem = scope[elem.func]
    nested = _schema_map(elem, scope)
    if nested is not None:
        child_tf = f"{tf_path}.0." if kind in ("list", "set") else f"{tf_path}."
        read_fields(nested, scope, out, child_tf, f"{path}.")
    elif isinstance(elem, Composite) and elem.type in ("", "schema.Schema"):
        for go_name in ("ValidateFunc", "ValidateDiagFunc"):
            check = elem.get(go_name)
            if check is not None:
                known = validator(check, scope)
                if known is None:
                    out.unfollowed[f"{path}[]"] = f"{go_name}: {_text(check)}"
                else:
                    facts["items"] = known
    elif elem is not None:
        out.unfollowed[path] = f"Elem: {_text(elem)} (not in this file)"
    if facts:
        out.fields[path] = facts


def read_resource(sources: list[str], symbols: list[str]) -> Schema:
    out = Schema()
    for source, symbol in zip(sources, symbols, strict=True):
        scope = declarations(source)
        found = _schema_map(scope.get(symbol), scope)
        if found is None:
            raise LookupError(f"no schema found for {symbol}")
        read_fields(found, scope, out)
    for facts in out.fields.values():
        for name in RELATIONS.values():
            if name in facts:
                facts[name] = [_pulumi_key(k, out) for k in facts[name]]
    return out


def _pulumi_key(tf_key: str, schema: Schema) -> str:
    """A relation's Terraform key (``a.0.b``) as a Pulumi path: ``.0`` stays only after a real list (MaxItems 1 is an object)."""
    tf_path: list[str] = []
    pulumi = ""
    for part in tf_key.split("."):
        tf_path.append(part)
        if part.isdigit():
            if ".".join(tf_path[:-1]) in schema.lists:
                pulumi += f".{part}"
            tf_path[-1] = "0"
            continue
        pulumi = schema.tf_paths.get(".".join(tf_path), f"{pulumi}.{camel(part)}".lstrip("."))
    return pulumi


# --- CustomizeDiff: replacements decided on the values --------------------------------------------


def _function_span(tokens: list[Token], name: str) -> tuple[int, int] | None:
    """Token range of the body of top-level function ``name``."""
    for i, token in enumerate(tokens[:-1]):
        if token.text == "func" and tokens[i + 1].text == name:
            j = i + 2
            while tokens[j].text != "{":
                j = _skip_balanced(tokens, j) if tokens[j].text in ("(", "[") else j + 1
            return j, _skip_balanced(tokens, j)
    return None


def customize_diff(source: str, symbol: str) -> list[Any]:
    """The entries of a resource's ``CustomizeDiff`` (``customdiff.All`` unpacked); none for a bare schema."""
    tokens = tokenize(source)
    span = _function_span(tokens, symbol)
    if span is None:
        return []
    for i in range(*span):
        if tokens[i].text == "CustomizeDiff" and tokens[i + 1].text == ":":
            found = parse_expr(tokens, i + 2)[0]
            return list(found.args) if isinstance(found, Call) and found.func == "customdiff.All" else [found]
    return []


def forced_fields(sources: dict[str, str], name: str, seen: set[str] | None = None) -> list[str]:
    """Terraform keys a function passes to ``ForceNew``, through the functions of the same files it calls."""
    seen = seen if seen is not None else set()
    seen.add(name)
    forced: list[str] = []
    for source in sources.values():
        tokens = tokenize(source)
        span = _function_span(tokens, name)
        if span is None:
            continue
        for i in range(*span):
            text = tokens[i].text
            if text.endswith(".ForceNew") and tokens[i + 1].text == "(" and tokens[i + 2].kind == "str":
                forced.append(_string(tokens[i + 2]))
            elif tokens[i].kind == "ident" and tokens[i + 1].text == "(" and text not in seen and "." not in text:
                forced.extend(f for f in forced_fields(sources, text, seen) if f not in forced)
    return forced


def custom_diff_entries(entries: list[Any], sources: dict[str, str], schema: Schema) -> list[dict[str, Any]]:
    """Each ``CustomizeDiff`` entry by name, with the Pulumi fields it can force new."""
    found: list[dict[str, Any]] = []
    for entry in entries:
        if isinstance(entry, Call) and entry.func in FORCE_NEW_IF_CHANGE:
            key, condition = entry.args
            found.append({"call": entry.func, "field": _pulumi_key(key, schema), "condition": _text(condition)})
            continue
        name = entry.name if isinstance(entry, Ident) else entry.func if isinstance(entry, Call) else _text(entry)
        # A function of another package (tpgresource.X) is looked up in that package's files.
        package, _, function = name.rpartition(".")
        scope = {path: text for path, text in sources.items() if path.split("/")[-2] == package} if package else sources
        forced = forced_fields(scope, function)
        found.append({"function": name, **({"forcesNew": [_pulumi_key(k, schema) for k in forced]} if forced else {})})
    return found


def main(checkout: str, commit: str) -> None:
    def show(path: str) -> str:
        return subprocess.run(["git", "-C", checkout, "show", f"{commit}:{path}"], capture_output=True, text=True, check=True).stdout

    provenance = (
        f"# Generated by dev/provider_schema.py from {REPOSITORY} at {commit}\n"
        "# (MPL-2.0); facts only. pulumi-gcp bridges google-beta: see docs/provider.md for the version.\n"
    )
    replacements = ["# Fields whose change makes pulumi-gcp replace the resource (Terraform ForceNew).\n", provenance]
    constraints: dict[str, Any] = {}
    custom_diffs: dict[str, Any] = {}
    # CustomizeDiff helpers shared by every resource (tpgresource.X) are read from their package.
    shared_folder = "google-beta/tpgresource"
    listed = subprocess.run(
        ["git", "-C", checkout, "ls-tree", "--name-only", f"{commit}:{shared_folder}"], capture_output=True, text=True, check=True
    ).stdout.split()
    shared = {f"{shared_folder}/{name}": show(f"{shared_folder}/{name}") for name in listed if name.endswith(".go")}
    for token, parts in RESOURCES.items():
        schema = read_resource([show(path) for path, _ in parts], [symbol for _, symbol in parts])
        files = ", ".join(dict.fromkeys(path for path, _ in parts))
        replacements.append(f"{token}:  # {files}\n")
        replacements.extend(f"  - {path}\n" for path in schema.force_new)
        constraints[token] = {"source": files, "fields": schema.fields, "unfollowed": schema.unfollowed}
        own = {path: show(path) for path, _ in parts}
        entries = [entry for path, symbol in parts for entry in customize_diff(own[path], symbol)]
        custom_diffs[token] = {"source": files, "customizeDiff": custom_diff_entries(entries, {**own, **shared}, schema)}
    (ROOT / "render/vendor/replacements/gcp.yaml").write_text("".join(replacements))
    head = "# Each resource's CustomizeDiff functions; those that can force new name the fields (forcesNew, or field and condition).\n"
    body = yaml.safe_dump(custom_diffs, sort_keys=False, width=1000)
    (ROOT / "render/vendor/replacements/gcp-customize-diff.yaml").write_text(head + provenance + body)
    head = "# What google-beta checks of each resource's inputs before it calls the API, by Pulumi field path.\n"
    body = yaml.safe_dump({"repository": REPOSITORY, "commit": commit, "resources": constraints}, sort_keys=False, width=1000)
    (ROOT / "render/vendor/constraints").mkdir(exist_ok=True)
    (ROOT / "render/vendor/constraints/gcp.yaml").write_text(head + provenance + body)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
