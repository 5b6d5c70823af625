"""The vLLM container's startup probe: a replica is started only once each engine answers a request in full.

/health answers 200 while the engine still has kernels to compile, so the probe sends N requests at
once, one per data-parallel engine as the API server spreads them, and succeeds when each is answered:
a one-token completion with a finish_reason, or, for an embedding model (vLLM's pooling runner, which
refuses completions), an embedding of one input that is a vector of the model's length. An exec probe
(httpGet cannot POST) runs this file's text with the image's python3 (``python3 -c``): the standard
library only. Arguments: the completions or embeddings URL, the served model's name, N, and for an
embedding model the vector's length. vLLM's API key, when set, is in the container's environment,
which an exec probe inherits.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def posted(url: str, body: dict[str, Any]) -> dict[str, Any]:
    headers = {"Content-Type": "application/json"}
    if os.environ.get("VLLM_API_KEY"):
        headers["Authorization"] = "Bearer " + os.environ["VLLM_API_KEY"]
    with urllib.request.urlopen(urllib.request.Request(url, json.dumps(body).encode(), headers)) as response:
        answer: dict[str, Any] = json.load(response)
    return answer


def answered(url: str, model: str) -> bool:
    choices = posted(url, {"model": model, "prompt": "Hello", "max_tokens": 1}).get("choices") or [{}]
    return all(choice.get("finish_reason") for choice in choices)


def embedded(url: str, model: str, length: int) -> bool:
    data = posted(url, {"model": model, "input": "Hello"}).get("data") or [{}]
    return all(len(item.get("embedding") or []) == length for item in data)


def main(url: str, model: str, count: int, length: int | None = None) -> int:
    def ask(_: int) -> bool:
        return answered(url, model) if length is None else embedded(url, model, length)

    with ThreadPoolExecutor(count) as pool:
        return 0 if all(pool.map(ask, range(count))) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else None))
