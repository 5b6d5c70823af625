"""What `pulumi up` waits for after creating or updating each Kubernetes object.

pulumi-kubernetes (``provider/pkg/await/awaiters.go`` and
``provider/pkg/metadata/overrides.go``, main at 94977969) awaits the kinds it
has an awaiter for, any object that names a ``pulumi.com/waitFor`` condition,
and nothing else (custom resources included) unless ``PULUMI_K8S_AWAIT_ALL``
is set; ``pulumi.com/skipAwait`` turns every wait off. Its default timeout is
10 minutes; ``customTimeouts`` or ``pulumi.com/timeoutSeconds`` change it.
"""

from __future__ import annotations

from typing import Any

DEFAULT_TIMEOUT = "10m"
AWAITERS = {
    "Deployment": "rollout complete: every replica updated and available",
    "StatefulSet": "rollout complete: every replica updated and ready",
    "DaemonSet": "rollout complete on every node",
    "Job": "completion (fails on the Job's Failed condition)",
    "Pod": "Ready",
    "PersistentVolumeClaim": "Bound (WaitForFirstConsumer: Pending until a pod uses it)",
    "PersistentVolume": "Available or Bound",
    "Service": "no endpoint left not ready (selector Services)",
    "Ingress": "a load balancer address",
    "Secret": "exists",
    "ServiceAccount": "exists",
}


def awaits(manifest: dict[str, Any], custom_timeouts: dict[str, str] | None = None) -> str:
    """One line: what is awaited and for how long, on create and, where it differs, on update."""
    annotations = (manifest.get("metadata") or {}).get("annotations") or {}
    if str(annotations.get("pulumi.com/skipAwait", "")).lower() == "true":
        return "nothing (skipAwait)"
    timeout = (custom_timeouts or {}).get("create")
    if not timeout and "pulumi.com/timeoutSeconds" in annotations:
        timeout = f"{int(annotations['pulumi.com/timeoutSeconds']) // 60}m"
    wait_for = annotations.get("pulumi.com/waitFor")
    what = f"until {wait_for}" if wait_for else AWAITERS.get(str(manifest.get("kind")))
    if what is None:
        return "nothing (no awaiter for this kind)"
    replace = ", replaced if left unready" if str(annotations.get("pulumi.com/replaceUnready", "")).lower() == "true" else ""
    update = (custom_timeouts or {}).get("update")
    on_update = f" ({update} on update)" if update and update != (timeout or DEFAULT_TIMEOUT) else ""
    return f"{what}, up to {timeout or DEFAULT_TIMEOUT}{on_update}{replace}"
