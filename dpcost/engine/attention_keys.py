"""The keys each query attends to, and the keys a layer's cache keeps: over the whole context before it, or, in a
sliding-window or chunked layer (specs.LocalAttentionSpec), only the nearby ones. The compute model prices
attention by the first (compute.attention_flops, ops.layer_ops), serving's KV cache by the second
(activations.kv_cache_bytes)."""

from __future__ import annotations

from dpcost.specs import LocalAttentionSpec

__all__ = ["cached_keys", "causal_keys"]


def causal_keys(seq_len: float, local: LocalAttentionSpec | None) -> float:
    """The keys a query attends to under a causal mask, on average over a sequence of T = seq_len: T / 2 (the causal
    half FlashAttention-2 counts); in a window of W keys, (2 T W - W^2) / 2T once T > W (each query the last W);
    in chunks of c, each query the keys before it in its own chunk, (n c^2 + r^2) / 2T for T = n c + r."""
    if local is None or seq_len <= local.size:
        return seq_len / 2
    size = local.size
    if local.kind == "sliding":
        return size - size * size / (2 * seq_len)
    chunks, rest = divmod(seq_len, size)
    return (chunks * size * size + rest * rest) / (2 * seq_len)


def cached_keys(seq_len: float, local: LocalAttentionSpec | None) -> float:
    """The keys a layer keeps for a sequence of seq_len, and that a new token reads: all of them, or at most the
    window or the chunk (transformers 5.24.0 cache_utils.py: DynamicSlidingWindowLayer holds min(seq_len, window)
    tokens, and serves chunked layers too)."""
    return seq_len if local is None else min(seq_len, local.size)
