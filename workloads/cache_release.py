"""Creates the model cache's writable volume, and deletes it once its snapshot is ready.

The claim is made by a Job, not registered with Pulumi: an object Pulumi keeps
would be found gone by `pulumi refresh` after its release, and created again
(a new, empty disk) by the next `pulumi up`. ``claim`` creates it unless the
snapshot it is written for is already ready; ``release`` deletes it.

Runs in the claim and release Jobs, shipped in a ConfigMap (components/programs.py), with only the standard
library (the download image is a plain Python image). It speaks to the API
server as the Jobs' service account, which may create claims, delete that one
claim and read that one snapshot. A claim already there counts as created, one
already gone as released, so either Job can run again.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import urllib.error
import urllib.request
from pathlib import Path

ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def api_server() -> str:
    """The in-cluster API server, as every pod's environment names it."""
    return f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}"


def _call(url: str, method: str, token: str, context: ssl.SSLContext | None, body: bytes | None = None) -> dict[str, object]:
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json", "Content-Type": "application/json"}
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        answer: dict[str, object] = json.loads(response.read() or b"{}")
        return answer


def snapshot_ready(namespace: str, snapshot: str, *, api: str, token: str, context: ssl.SSLContext | None) -> bool:
    url = f"{api}/apis/snapshot.storage.k8s.io/v1/namespaces/{namespace}/volumesnapshots/{snapshot}"
    try:
        status = _call(url, "GET", token, context).get("status")
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return False
        raise
    return isinstance(status, dict) and status.get("readyToUse") is True


def claim(namespace: str, snapshot: str, manifest: str, *, api: str, token: str, context: ssl.SSLContext | None) -> str:
    """Creates the writable claim ``manifest`` (JSON) unless ``snapshot`` is ready; returns what happened."""
    name = json.loads(manifest)["metadata"]["name"]
    if snapshot_ready(namespace, snapshot, api=api, token=token, context=context):
        return f"{namespace}/{snapshot} is ready: {name} is not needed again"
    try:
        _call(f"{api}/api/v1/namespaces/{namespace}/persistentvolumeclaims", "POST", token, context, manifest.encode())
    except urllib.error.HTTPError as error:
        if error.code == 409:
            return f"{namespace}/{name} already exists"
        raise
    return f"created {namespace}/{name}"


def release(namespace: str, name: str, *, api: str, token: str, context: ssl.SSLContext | None) -> str:
    """Deletes the claim ``name``; returns what happened, for the Job's log."""
    try:
        _call(f"{api}/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}", "DELETE", token, context)
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return f"{namespace}/{name} was already released"
        raise
    return f"released {namespace}/{name}"


def main() -> None:
    step, namespace, *names = sys.argv[1:]
    token = (ACCOUNT / "token").read_text().strip()
    context = ssl.create_default_context(cafile=str(ACCOUNT / "ca.crt"))
    if step == "claim":
        print(claim(namespace, names[0], names[1], api=api_server(), token=token, context=context))
    else:
        print(release(namespace, names[0], api=api_server(), token=token, context=context))


if __name__ == "__main__":
    main()
