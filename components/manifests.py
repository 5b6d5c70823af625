"""Registers a Kubernetes manifest, built as a plain dict, with the Kubernetes provider."""

from __future__ import annotations

from typing import Any

import pulumi


def type_token(api_version: str, kind: str) -> str:
    """``apps/v1`` + ``Deployment`` -> ``kubernetes:apps/v1:Deployment``; the core group is ``core``."""
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    return f"kubernetes:{group_version}:{kind}"


class Manifest(pulumi.CustomResource):
    """Any Kubernetes object, built kinds and custom ones alike.

    The provider picks how to create and await an object by its type token,
    the same token the typed classes use, so a Deployment registered here is
    awaited as a Deployment. Builders stay plain dicts that render and
    validate offline as they are. ``outputs`` names fields the cluster fills
    in (such as ``status``) to read back with ``output``.
    """

    def __init__(self, name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions, outputs: tuple[str, ...] = ()) -> None:
        props: dict[str, Any] = {**manifest, **dict.fromkeys(outputs)}
        super().__init__(type_token(manifest["apiVersion"], manifest["kind"]), name, props, opts)

    def output(self, field: str) -> pulumi.Output[Any]:
        value: pulumi.Output[Any] = getattr(self, field)
        return value


def guaranteed(amounts: dict[str, str]) -> dict[str, dict[str, str]]:
    """Container resources with requests equal to limits: the Guaranteed QoS class."""
    return {"requests": dict(amounts), "limits": dict(amounts)}


# A trigger failing this many polls in a row counts as 0 replicas (KEDA's fallback).
FALLBACK_FAILURES = 3


def scale_fallback() -> dict[str, int]:
    """KEDA's fallback: a trigger failing ``FALLBACK_FAILURES`` polls in a row counts as 0 replicas.

    Without one, KEDA keeps the replicas while any trigger errors and none is active (kedacore/keda
    v2.20.2 pkg/scaling/executor/scale_scaledobjects.go: "TriggerError"), so a persistent 403 on the
    bucket would keep A4 nodes billing. With ``replicas: 0`` the inactive, failing target goes to zero
    after its cooldown; the scaler-errors alert says that the trigger fails.
    """
    return {"failureThreshold": FALLBACK_FAILURES, "replicas": 0}
