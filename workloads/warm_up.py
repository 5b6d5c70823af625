"""The vLLM container's startup probe: a replica is started only once each engine answers a completion.

/health answers 200 while the engine still has kernels to compile, so the probe sends N one-token
completions at once, one per data-parallel engine as the API server spreads them, and succeeds when
each is answered with a finish_reason. An exec probe (httpGet cannot POST) runs this file's text with
the image's python3 (``python3 -c``): the standard library only. Arguments: the completions URL, the
served model's name, N. vLLM's API key, when set, is in the container's environment, which an exec
probe inherits.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def answered(url: str, model: str) -> bool:
    headers = {"Content-Type": "application/json"}
    if os.environ.get("VLLM_API_KEY"):
        headers["Authorization"] = "Bearer " + os.environ["VLLM_API_KEY"]
    body = json.dumps({"model": model, "prompt": "Hello", "max_tokens": 1}).encode()
    with urllib.request.urlopen(urllib.request.Request(url, body, headers)) as response:
        choices = json.load(response).get("choices") or [{}]
    return all(choice.get("finish_reason") for choice in choices)


def main(url: str, model: str, count: int) -> int:
    with ThreadPoolExecutor(count) as pool:
        return 0 if all(pool.map(lambda _: answered(url, model), range(count))) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
