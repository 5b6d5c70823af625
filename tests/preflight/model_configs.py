"""A hand-written config.json of an architecture the model catalogue (facts/data/models/) lacks: a Qwen3-MoE.

Its keys and values are shaped like Qwen/Qwen3-30B-A3B's published config.json; only what the miniature reads is kept.
"""

from __future__ import annotations

from typing import Any

# A Qwen3-MoE (Qwen/Qwen3-30B-A3B's shape): every layer sparse, 128 experts, 8 per token.
QWEN3_MOE: dict[str, Any] = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "norm_topk_prob": True,
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "max_position_embeddings": 40960,
    "vocab_size": 151936,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "torch_dtype": "bfloat16",
}
