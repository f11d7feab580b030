"""The keys each query attends to, and the keys a layer's cache keeps: over the whole context before it, or, in a
sliding-window or chunked layer (specs.LocalAttentionSpec), only the nearby ones; and DeepSeek-V4's compressed
entries of the older context (specs.CompressedAttentionSpec). The compute model prices attention by the first
(compute.attention_flops, ops.layer_ops), serving's KV cache by the second (activations.kv_cache_bytes)."""

from __future__ import annotations

from dpcost.specs import LocalAttentionSpec

__all__ = ["bidirectional_keys", "cached_entries", "cached_keys", "causal_keys", "compressed_entries"]


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


def bidirectional_keys(seq_len: float, local: LocalAttentionSpec | None) -> float:
    """The keys an encoder's query attends to, on average over a sequence of T = seq_len: all T; in a sliding window
    of half-width w = size, those within w of it on either side, itself included (transformers'
    sliding_window_bidirectional_overlay: |i - j| <= w; ModernBERT's local_attention // 2): 1 + 2 S / T keys, where
    S, the sum over queries of min(i, w), is T (T - 1) / 2 for T <= w + 1, else w (w + 1) / 2 + (T - 1 - w) w."""
    if local is None:
        return seq_len
    w = local.size
    below = seq_len * (seq_len - 1) / 2 if seq_len <= w + 1 else w * (w + 1) / 2 + (seq_len - 1 - w) * w
    return 1 + 2 * below / seq_len


def cached_keys(seq_len: float, local: LocalAttentionSpec | None) -> float:
    """The keys a layer keeps for a sequence of seq_len, and that a new token reads: all of them, or at most the
    window or the chunk (transformers 5.24.0 cache_utils.py: DynamicSlidingWindowLayer holds min(seq_len, window)
    tokens, and serves chunked layers too)."""
    return seq_len if local is None else min(seq_len, local.size)


def compressed_entries(seq_len: float, rate: int, topk: int | None = None) -> float:
    """The compressed entries a query attends to, on average over a sequence of T = seq_len: query t (from 1) sees the
    floor(t / rate) windows of `rate` tokens closed before it (modeling_deepseek_v4.py, transformers 5.24.0: entry w
    is visible where w < (position + 1) // rate), all of them (heavily compressed attention) or at most the
    indexer's `topk` (compressed sparse attention). Summed in closed form: for T = q rate + r, the floor(t / rate)
    sum to rate q (q - 1) / 2 + q (r + 1); from t = topk x rate on, each query reads topk."""

    def floors(t: int) -> float:  # sum of floor(u / rate) for u = 1..t
        q, r = divmod(t, rate)
        return rate * q * (q - 1) / 2 + q * (r + 1)

    tokens = int(seq_len)
    if tokens <= 0:
        return 0.0
    if topk is None or tokens < topk * rate:
        return floors(tokens) / tokens
    capped_from = topk * rate  # floor(t / rate) reaches topk here
    return (floors(capped_from - 1) + topk * (tokens - capped_from + 1)) / tokens


def cached_entries(seq_len: float, rate: int) -> float:
    """The compressed entries a layer's cache holds after seq_len tokens, and that a new token can read:
    floor(seq_len / rate), one per closed window (DeepseekV4HCACache, DeepseekV4CSACache)."""
    return float(int(seq_len) // rate)
