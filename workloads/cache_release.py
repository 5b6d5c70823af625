"""Deletes the model cache's writable volume once its snapshot is ready: the disk then goes with it.

Runs in the release Job as ``python3 -c`` with only the standard library (the
download image is a plain Python image). It speaks to the API server as the
Job's service account, which may delete that one claim and nothing else. A
claim already gone counts as released, so the Job can run again.
"""

from __future__ import annotations

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


def release(namespace: str, claim: str, *, api: str, token: str, context: ssl.SSLContext | None) -> str:
    """Deletes ``claim``; returns what happened, for the Job's log."""
    request = urllib.request.Request(
        f"{api}/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim}",
        method="DELETE",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return f"released {namespace}/{claim} (HTTP {response.status})"
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return f"{namespace}/{claim} was already released"
        raise


def main() -> None:
    namespace, claim = sys.argv[1], sys.argv[2]
    token = (ACCOUNT / "token").read_text().strip()
    context = ssl.create_default_context(cafile=str(ACCOUNT / "ca.crt"))
    print(release(namespace, claim, api=api_server(), token=token, context=context))


if __name__ == "__main__":
    main()
