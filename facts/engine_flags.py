"""The ``vllm serve`` flags the program owns: one row each, read by the settings (which refuse them in
``serving.extraArgs``) and by the replicas (which write them, in this order).

A row names the flag, the setting that decides it, the engine value it is written from (None: the program
never writes it on the command line) and how that value is written (None: vLLM's default is left).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Writer = Callable[[Any], "str | None"]


@dataclass(frozen=True)
class EngineFlag:
    flag: str
    key: str
    """The setting to use instead, as a refusal names it."""
    value: str | None
    """The engine value the flag is written from (components/replicas.py builds them)."""
    write: Writer
    aliases: tuple[str, ...] = ()


def _value(flag: str) -> Writer:
    return lambda value: f"{flag}={value}"


def _unless_unset(flag: str) -> Writer:
    return lambda value: f"{flag}={value}" if value else None


def _unless_none(flag: str) -> Writer:
    return lambda value: None if value is None else f"{flag}={value}"


def _switch(flag: str) -> Writer:
    # Both switches below default on in vLLM 0.18.1: turning one off takes its --no- form.
    return lambda on: flag if on else f"--no-{flag[2:]}"


def _when_on(flag: str) -> Writer:
    return lambda on: flag if on else None


def _speculative(tokens: int) -> str | None:
    if not tokens:
        return None
    return "--speculative-config=" + json.dumps({"method": "mtp", "num_speculative_tokens": tokens}, separators=(",", ":"))


def _never(_: Any) -> str | None:
    return None


ENGINE_FLAGS = (
    # The model is vllm serve's positional argument; --model would name a second one.
    EngineFlag("--model", "model.id", None, _never),
    EngineFlag("--served-model-name", "model.servedName", "served_name", _value("--served-model-name")),
    EngineFlag("--host", "(always 0.0.0.0)", "host", _value("--host")),
    EngineFlag("--port", "serving.port", "port", _value("--port")),
    EngineFlag("--data-parallel-size", "serving.dataParallelSize", "data_parallel_size", _value("--data-parallel-size")),
    EngineFlag("--max-model-len", "serving.maxModelLen", "max_model_len", _value("--max-model-len")),
    EngineFlag("--max-num-batched-tokens", "serving.maxNumBatchedTokens", "max_num_batched_tokens", _value("--max-num-batched-tokens")),
    EngineFlag("--max-num-seqs", "serving.maxNumSeqs", "max_num_seqs", _value("--max-num-seqs")),
    EngineFlag("--kv-cache-dtype", "serving.kvCacheDtype", "kv_cache_dtype", _value("--kv-cache-dtype")),
    EngineFlag("--gpu-memory-utilization", "serving.gpuMemoryUtilization", "gpu_memory_utilization", _value("--gpu-memory-utilization")),
    EngineFlag("--enable-prefix-caching", "serving.enablePrefixCaching", "enable_prefix_caching", _switch("--enable-prefix-caching")),
    EngineFlag("--enable-chunked-prefill", "serving.enableChunkedPrefill", "enable_chunked_prefill", _switch("--enable-chunked-prefill")),
    EngineFlag("--attention-backend", "serving.attentionBackend", "attention_backend", _unless_unset("--attention-backend")),
    EngineFlag("-O", "serving.optimizationLevel", "optimization_level", lambda level: f"-O{level}", aliases=("--optimization-level",)),
    EngineFlag("--speculative-config", "serving.mtpTokens", "mtp_tokens", _speculative),
    EngineFlag("--mamba-cache-mode", "serving.mambaCacheMode", "mamba_cache_mode", _unless_unset("--mamba-cache-mode")),
    EngineFlag("--mamba-block-size", "serving.mambaBlockSize", "mamba_block_size", _unless_unset("--mamba-block-size")),
    # On SIGTERM vLLM stops taking requests and lets those in flight finish for this long.
    EngineFlag("--shutdown-timeout", "drain.shutdownTimeoutSeconds", "shutdown_timeout_seconds", _unless_none("--shutdown-timeout")),
    # vLLM reads the key from its environment; it never appears in the command line.
    EngineFlag("--api-key", "the apiKey secret (pulumi config set --secret apiKey)", None, _never),
)


def managed_flags() -> dict[str, str]:
    """Every spelling of a flag the program owns, and the setting to use instead."""
    return {name: row.key for row in ENGINE_FLAGS for name in (row.flag, *row.aliases)}


def written_flags(values: dict[str, Any]) -> list[str]:
    """The program's flags for the engine ``values`` (each row's ``value``), in the table's order."""
    return [arg for row in ENGINE_FLAGS if row.value is not None and (arg := row.write(values[row.value])) is not None]
