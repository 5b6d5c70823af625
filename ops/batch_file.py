"""A batch file checked whole before it is uploaded: an upload wakes paid nodes, so a line that would fail is found here.

Each line is read as the runner reads it (``workloads/batch/lines.py``: JSON, a
``custom_id`` used once, ``method``, a ``url`` the runner sends to, ``body``), and its
``max_tokens`` (or ``max_completion_tokens``) must fit in the stack's
``serving.maxModelLen`` beside the prompt: vLLM refuses a request whose prompt and
``max_tokens`` exceed the model length.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from render.engine import stack_config, stack_settings
from render.neighbours import neighbours
from stacks.problems import describe
from stacks.settings import StackSettings, known_keys
from workloads.batch import lines

# A prompt's tokens, estimated from its characters: about 4 characters a token in English text (OpenAI, "What are
# tokens and how to count them?", https://help.openai.com/en/articles/4936856). The model's tokenizer is not at hand
# on a laptop; the estimate catches a max_tokens that cannot fit, vLLM still decides on the exact count.
CHARACTERS_PER_TOKEN = 4
ROOT = Path(__file__).resolve().parent.parent


def settings_of(stack: str, root: Path = ROOT) -> StackSettings:
    """The stack's settings (render.engine.stack_settings), or the command's exit naming the stacks there or the keys at fault."""
    try:
        return stack_settings(stack, root)
    except FileNotFoundError:
        raise SystemExit(f"--stack {stack}: there is no Pulumi.{stack}.yaml; stacks here: {', '.join(neighbours(root))}") from None
    except ValidationError as error:
        project = stack_config(stack, root)[0]
        raise SystemExit("\n".join([f"Pulumi.{stack}.yaml does not validate:", *describe(error, project, known_keys())])) from None


def max_model_len(stack: str, root: Path = ROOT) -> int:
    """The stack's ``serving.maxModelLen``."""
    return settings_of(stack, root).serving.max_model_len


def _texts(value: Any) -> Iterator[str]:
    """Every string inside a prompt or a message list: contents, text parts, names."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)


def _tokens(prompt: Any) -> int:
    """One prompt's tokens, estimated: token ids count as they are, text by its characters."""
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return len(prompt)
    return math.ceil(sum(len(text) for text in _texts(prompt)) / CHARACTERS_PER_TOKEN)


def prompt_tokens(url: str, body: dict[str, Any]) -> int:
    """The prompt's tokens, estimated: a chat's messages, or a completion's prompt."""
    if url == "/v1/chat/completions":
        return _tokens(body.get("messages"))
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and not all(isinstance(t, int) for t in prompt):
        # Several prompts in one request: each is answered on its own, the longest must fit.
        return max(_tokens(one) for one in prompt)
    return _tokens(prompt)


def _fits(number: int, request: lines.Request, model_len: int) -> str | None:
    """What is wrong with the request's output budget, if anything."""
    key = "max_completion_tokens" if "max_completion_tokens" in request.body else "max_tokens"
    wanted = request.body.get(key)
    if wanted is None:
        return None
    if not isinstance(wanted, int) or isinstance(wanted, bool) or wanted < 1:
        return f"line {number}: {key} must be a positive whole number, got {json.dumps(wanted)}"
    prompt = prompt_tokens(request.url, request.body)
    if prompt + wanted > model_len:
        room = model_len - prompt
        allowed = f"at most {room}" if room > 0 else "none: the prompt alone is too long"
        return (
            f"line {number}: {key} {wanted} and a prompt of about {prompt} tokens exceed the stack's serving.maxModelLen "
            f"{model_len}; vLLM refuses it. {key}: {allowed}"
        )
    return None


def check(file: Path, model_len: int) -> list[str]:
    """Every bad line of a batch file, by its number (blank lines are no request); empty when it may go up."""
    problems: list[str] = []
    seen: set[str] = set()
    with file.open("rb") as lines_of_file:
        for number, raw in enumerate(lines_of_file, 1):
            if not raw.strip():
                continue
            line = lines.parse(number, raw, seen)
            problem = line.message if isinstance(line, lines.BadLine) else _fits(number, line, model_len)
            if problem:
                problems.append(problem)
    return problems
