"""The GEMM libraries' workspaces (dpcost/engine/workspaces.py, docs/sources/gpu-memory.md): sizes as PyTorch's
CublasHandlePool.cpp and Transformer Engine's gemm.py set them, and where an estimate counts them."""

from __future__ import annotations

from dpcost import Options, estimate, load_model, load_topology
from dpcost.engine.workspaces import te_workspace_bytes, torch_cublas_workspace_bytes, training_workspace_bytes


def test_sizes_as_the_libraries_set_them() -> None:
    """PyTorch: 32 MiB on Hopper and (since pull request 175344) Blackwell, else ":4096:2:16:8" = 4096 KiB x 2 +
    16 KiB x 8; TE: 32 MiB + 1 KiB from compute capability 9, else 4 MiB."""
    assert torch_cublas_workspace_bytes("hopper") == torch_cublas_workspace_bytes("blackwell") == 33_554_432
    assert torch_cublas_workspace_bytes("ampere") == 8_519_680
    assert te_workspace_bytes("hopper") == te_workspace_bytes("blackwell") == 33_555_456
    assert te_workspace_bytes("ampere") == 4_194_304


def test_training_holds_two_cublas_workspaces_and_te_its_own() -> None:
    """The forward's thread and autograd's backward thread each reserve a cuBLAS handle; Megatron-LM's layers run
    in TE, whose Userbuffers take 3 workspaces more."""
    assert training_workspace_bytes("hopper", transformer_engine=False) == 2 * 33_554_432
    assert training_workspace_bytes("hopper", transformer_engine=True) == 2 * 33_554_432 + 33_555_456
    assert training_workspace_bytes("ampere", True, userbuffers=True) == 2 * 8_519_680 + 4 * 4_194_304


def test_grouped_gemms_hold_one_te_workspace_per_compute_stream() -> None:
    """TE's get_cublas_workspace(grouped_gemm=True) allocates one workspace on each of tex.get_num_cublas_streams()
    = 4 compute streams (multi_stream.cpp): an MoE's experts as TEGroupedMLP (--moe-grouped-gemm). Megatron-LM's
    functional tests show it in what stays allocated after the step: MoE tests with the flag hold about 150 MB more
    than those without on H100 and GB200 (4 x 33.6 MB), 17 MB on A100 (4 x 4.2 MB)."""
    assert training_workspace_bytes("hopper", True, grouped_gemm=True) == 2 * 33_554_432 + 5 * 33_555_456
    assert training_workspace_bytes("ampere", True, grouped_gemm=True) == 2 * 8_519_680 + 5 * 4_194_304


def _buffers(framework: str, topology: str, **layout: int) -> int:
    report = estimate(
        load_model("llama-8b"),
        load_topology(topology),
        Options(dp=8, framework=framework, zero=0 if framework == "fsdp" else 1, recompute="full", **layout),
    )
    return next(s.buffers_bytes for s in report.memory.stages if s.stage == report.setup.zero_stage)


def test_an_estimate_counts_them_in_its_buffers() -> None:
    """FSDP's NO_SHARD reduces per unit in place (no buckets): its buffers are the two cuBLAS workspaces alone;
    Megatron's buckets are views of its gradient buffer: TE's workspace beside them, and TE's placeholder weight
    gradients (layout_memory.dummy_wgrad_bytes: Llama 3 8B's QKV 6,144 x 4,096, output projection 4,096^2, fc1 28,672
    x 4,096 and fc2 4,096 x 14,336, and the output layer's 128,256 x 4,096, 2 bytes each, 1,486,880,768 unsplit,
    half at TP 2); a Megatron layout the same."""
    assert _buffers("fsdp", "dgx-h100") == 2 * 33_554_432
    assert _buffers("megatron", "dgx-h100") == 2 * 33_554_432 + 33_555_456 + 1_486_880_768
    assert _buffers("megatron", "dgx-a100", tp=2) == 2 * 8_519_680 + 4_194_304 + 1_486_880_768 // 2


def test_cublas_workspace_config_sets_pytorch_s_workspaces() -> None:
    """CUBLAS_WORKSPACE_CONFIG's :SIZE:COUNT pairs sum to each workspace, SIZE in KiB (parseChosenWorkspaceSize):
    :4096:8, which Megatron's --deterministic-mode sets (determinism.py), is 32 MiB on every GPU, and the unset
    A100 default :4096:2:16:8 is 8.125 MiB. An A100 estimate's two workspaces grow by 2 x (32 - 8.125) MiB."""
    assert torch_cublas_workspace_bytes("ampere", ":4096:8") == 32 * 2**20
    assert torch_cublas_workspace_bytes("hopper", ":4096:2:16:8") == torch_cublas_workspace_bytes("ampere")
    assert _buffers("fsdp", "dgx-a100") == 2 * 8_519_680
    given = estimate(
        load_model("llama-8b"),
        load_topology("dgx-a100"),
        Options(dp=8, framework="fsdp", zero=0, recompute="full", cublas_workspace_config=":4096:8"),
    )
    assert next(s.buffers_bytes for s in given.memory.stages if s.stage == 0) == 2 * 32 * 2**20


def test_a_cublas_workspace_config_pytorch_cannot_read_is_refused() -> None:
    from conftest import run_cli

    code, out, err = run_cli("estimate", "-m", "llama-8b", "--dp", "8", "--cublas-workspace-config", "4096:8")
    assert code == 2 and not out
    assert err.count("\n") == 1 and "--cublas-workspace-config" in err and ":SIZE:COUNT" in err
