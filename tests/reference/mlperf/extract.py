#!/usr/bin/env python3
"""Extract per-system step times and launch settings for MLPerf Training benchmark families from bare git
mirrors of mlcommons/training_results_vX.Y.  Stdlib only.  Usage:

    python3 extract.py llama31 V50_GIT_DIR V51_GIT_DIR > llama31-training.csv
    python3 extract.py gpt3 V30_GIT_DIR V31_GIT_DIR V40_GIT_DIR V41_GIT_DIR > gpt3-training.csv

llama31: llama31_405b / llama31_8b of v5.0 and v5.1, every submitter.  gpt3: GPT-3 175B of v3.0, v3.1, v4.0 and
v4.1, submitters with NVIDIA GPUs (Google TPU and Intel Gaudi directories are skipped).
"""

import contextlib
import csv
import io
import json
import os
import re
import statistics
import subprocess
import sys

HEADER_LLAMA31 = """\
MLPerf Training llama31_405b / llama31_8b: per-system optimizer-step times and launch settings (one row per results
directory). Sources: github.com/mlcommons/training_results_v5.0 @ {v50};
github.com/mlcommons/training_results_v5.1 @ {v51}.
step_time_s: per result_N.txt take all per-step tracked_stats.train_step_time values (custom_callbacks; the per-block
  averages logged by mlperf_common's callback are skipped), drop the first two logged values, take the median; then
  the median over files. step_time_min_s/max_s = min/max of the per-file medians; steps_counted = total steps used.
  8b logs sample one step every N steps.
MLPerf train_step_time is the wall time of ONE optimizer step, i.e. one global batch (global_batch sequences of
  seq_len tokens).
gpu/nodes/gpus_per_node: <submitter>/systems/<system>.json; global_batch/seq_len: log; config_file: config_*.sh
  matching GPUs, log GBS and gradient_accumulation_steps (tie-break in notes); tp..cross_entropy: effective env of
  that config after following every `source` (later assignments win). dp = GPUs/(tp*pp*cp). vp = INTERLEAVED_PIPELINE
  (1 if unset/null). precision nvfp4 = FP4 configs (fp8_recipe then holds FP4_RECIPE); cuda_graph full =
  FULL_CUDA_GRAPH=1, mcore = MCORE_CUDA_GRAPH only.
  Logs without per-step train_step_time (AMD/ROCm submissions) have empty step-time cells. notes: paths relative to
  the mirror, how the config was chosen (log ':::DLPAL' DGXSYSTEM, README-<system>.md, names), and disagreements
  with the log.
  sequence_parallel and cross_entropy: SEQ_PARALLEL, CROSS_ENTROPY_LOSS_FUSION and CE_FUSION_IMPL, unset taking
  conf/custom.yaml's defaults (True, True, 'native'); cross_entropy 'unfused' where the fusion is off. bucket_size:
  BUCKET_SIZE, else conf/custom.yaml's default: Megatron-Core's DDP bucket_size, parameters per gradient bucket
  (pretrain.py passes it to DistributedDataParallelConfig). nvls: 'off' where NCCL_NVLS_ENABLE=0, else 'on'. A
  results
  directory whose files are byte for byte another's (a later round resubmitting them) says 'duplicate of' in its
  notes: one measurement.
Regenerate: python3 extract.py llama31 <v5.0 git dir> <v5.1 git dir>"""
HEADER_GPT3 = """\
MLPerf Training gpt3 (GPT-3 175B pretraining from a checkpoint): per-system optimizer-step times and launch settings
(one row per results directory of a submitter with NVIDIA GPUs; Google TPU and Intel Gaudi directories are skipped).
Sources: github.com/mlcommons/training_results_v3.0 @ {v30}; _v3.1 @ {v31}; _v4.0 @ {v40}; _v4.1 @ {v41}.
step_time_s: per result file take the per-step tracked_stats values ('train_step_timing' in v3.0/v3.1 logs,
  'train_step_timing in s' in v4.x logs: PyTorch Lightning's per-step timer, one value per optimizer step), drop the
  first two logged values, take the median; then the median over files. step_time_min_s/max_s = min/max of the
  per-file medians; steps_counted = total steps used. One step = one global batch (global_batch sequences of seq_len
  tokens).
  NVIDIA's v4.0 logs (and their v4.1 resubmission) print no per-step values, only the timed blocks between
  evaluations: there step time = (block_stop time_ms - block_start time_ms) / steps in the block, steps = the block's
  epoch_count (tokens) / (max_sequence_length x global_batch_size), a whole number in every block (9, 10 or 11);
  the first two blocks of each file dropped, median per file, median over files; steps_counted = steps in the blocks
  used. A block also holds the gaps between steps: on the 42 v3.1-v4.1 files that print both, the block-derived
  median exceeds the per-step one by 0.05-1.6% at 8-96 nodes, 1.1-3.7% at 192-1344 nodes (steps of 1-5 s) and 9% on
  Oracle's 384-node run, so these rows' step times are biased high by about that much (their notes say so).
Config columns as in llama31-training.csv: gpu/nodes/gpus_per_node from <submitter>/systems/<system>.json;
  global_batch/seq_len from the log; config_file: config_*.sh matching GPUs, log GBS (MINIBS x DP) and
  gradient_accumulation_steps, or the log's ':::DLPAL' DGXSYSTEM (tie-breaks in notes); where no config's MINIBS x DP
  gives the log GBS, the config with the GPUs and micro_batch x DP x log GA = log GBS (the run overrode MINIBS:
  NVIDIA's v3.1 and v4.0 eos_n64); one config copied into several dirs (Oracle's) is one. The remaining columns from
  the effective env of that config after following every `source` (later assignments win; `if [[ "$X" == "v" ]]`
  string tests are evaluated, other if-blocks skipped). A variable the config leaves unset takes the implementation's
  default (run_and_time.sh `: "${{VAR:=default}}"`, else conf/*.yaml `${{oc.env:VAR,default}}`); notes list those used.
  dp = GPUs/(tp*pp); cp = 1 (no context parallelism in these releases). vp = INTERLEAVED_PIPELINE (default 12 in
  conf/custom.yaml; 1 if 0/null). precision fp8 = FP8=True; fp8_recipe 'delayed' = Transformer Engine delayed scaling
  (the only FP8 recipe of these NeMo releases; every config sources config_fp8.sh: FP8_HYBRID=True, i.e. E4M3
  forward / E5M2 backward, amax history 1024, algo max; notes flag any other). fp8_attention: no FP8 attention
  switch exists (no). tp_overlap = TP_COMM_OVERLAP (userbuffers); fp8_param_gather = FP8_PARAMS; cuda_graph layer =
  LAYER_CUDA_GRAPH (NeMo enable_cuda_graph: per-transformer-layer graphs). recompute: ACT_CKPT_GRANULARITY/
  METHOD/NUM_LAYERS, 'none' when the granularity is null (v3.0 config_common.sh sets null; later conf/custom.yaml
  defaults to null). dist_optimizer = USE_DIST_OPTIMIZER (run_and_time.sh default True). sequence_parallel =
  SEQ_PARALLEL (default True). cross_entropy: 'native' = CROSS_ENTROPY_LOSS_FUSION True (Megatron-Core's fused
  vocab-parallel cross-entropy; v4.1 conf/custom.yaml, default True); 'unfused' where the fusion is off or the
  implementation has no such switch (v3.0-v4.0 code, so also v4.1's eos-dfw_n1452 resubmission and Oracle's, whose
  model-config dump has no cross_entropy_loss_fusion: NeMo's unfused vocab-parallel cross-entropy). Oracle submitted
  no conf/: its unset values come from its logs' model-config dump (notes say '(log)'). bucket_size: empty (these
  runs' Apex distributed_fused_adam buckets by bucket_cap_mb, not Megatron-Core's DDP bucket_size). nvls: 'off' where
  NCCL_NVLS_ENABLE=0, else 'on'.
num_layers,hidden,heads,ffn_hidden: NUM_LAYERS, HIDDEN_SIZE, NUM_ATTENTION_HEADS, FFN_HIDDEN_SIZE of the effective
  env, else their conf/custom.yaml defaults (96, 12288, 96, 4 x hidden); v3.0 sets them in config_common.sh (its
  conf/megatron_gpt_config.yaml says the same). vocab: the padded vocabulary the embedding and output layer are built
  with, Megatron/NeMo's rule: the tokenizer's 50257 entries rounded up to a multiple of make_vocab_size_divisible_by
  x tp (make_vocab_size_divisible_by: 128 in v3.0 conf/megatron_gpt_config.yaml; NeMo's default 128 later, as the
  model-config dumps of smc's v4.0 and Oracle's v4.1 logs print). The tokenizer (c4_en_301_5Mexp2_spm.model) is not
  in the submissions; 50257 is the vocabulary size of the MLPerf reference (mlcommons/training
  large_language_model/megatron-lm/README.md), and maxtext's gpt3-175b.yml in Google's v4.0 submission builds
  50304 = 50257 rounded up to 128. tp 4 -> 50688, tp 8 -> 51200.
A results directory whose files are byte for byte another's (a later round resubmitting them, or a submitter's
  -ac-power/-dc-power copies) says 'duplicate of' in its notes: one measurement. 'apart from the :::SYSJSON lines'
  means only the echoed systems JSON lines differ.
Regenerate: python3 extract.py gpt3 <v3.0 git dir> <v3.1 git dir> <v4.0 git dir> <v4.1 git dir>"""
COLS = [
    "round",
    "submitter",
    "system",
    "benchmark",
    "gpu",
    "gpus",
    "nodes",
    "gpus_per_node",
    "config_file",
    "tp",
    "pp",
    "vp",
    "cp",
    "dp",
    "micro_batch",
    "global_batch",
    "seq_len",
    "precision",
    "fp8_recipe",
    "fp8_attention",
    "tp_overlap",
    "fp8_param_gather",
    "cuda_graph",
    "asym_pp_embed",
    "asym_pp_loss",
    "recompute",
    "dist_optimizer",
    "sequence_parallel",
    "cross_entropy",
    "bucket_size",
    "nvls",
    "step_time_s",
    "step_time_min_s",
    "step_time_max_s",
    "result_files",
    "steps_counted",
    "notes",
]
GPU_TOKENS = ("GB300", "GB200", "B300", "B200", "H200", "H100", "MI355X", "MI350X", "MI325X")
# AMD (non-NeMo) configs use other variable names
ALIASES = {
    "TP": "TENSOR_MODEL_PARALLEL",
    "PP": "PIPELINE_MODEL_PARALLEL",
    "CP": "CONTEXT_PARALLEL",
    "MBS": "MICRO_BATCH_SIZE",
    "NNODES": "DGXNNODES",
    "GPUS_PER_NODE": "DGXNGPU",
}
GPT3_COLS = ["num_layers", "hidden", "heads", "ffn_hidden", "vocab"]
GPT3_TOKENIZER_VOCAB = 50257  # MLPerf reference (mlcommons/training large_language_model/megatron-lm/README.md)
NVIDIA_GPUS = ("GB300", "GB200", "B300", "B200", "H200", "H100")
FAMILIES = {
    "llama31": dict(
        rounds=("v5.0", "v5.1"),
        benches=("llama31_405b", "llama31_8b"),
        header=HEADER_LLAMA31,
        cols=COLS,
        step_keys=("train_step_time",),
        result_re=r"result_\d+\.txt$",
    ),
    "gpt3": dict(
        rounds=("v3.0", "v3.1", "v4.0", "v4.1"),
        benches=("gpt3",),
        header=HEADER_GPT3,
        cols=COLS + GPT3_COLS,
        # v3.x logs print 'train_step_timing', v4.x 'train_step_timing in s' (both per step, in seconds)
        step_keys=("train_step_timing", "train_step_timing in s"),
        result_re=r"result_[\w-]+\.txt$",  # smc's v4.0 files are result_<job>-<stamp>_<n>.txt
    ),
}


class Repo:
    def __init__(self, gitdir):
        self.gitdir = gitdir
        self.head = self.git("rev-parse", "HEAD").strip()
        self.files = self.git("ls-tree", "-r", "--name-only", "HEAD").split("\n")
        self._cache = {}

    def git(self, *args):
        return subprocess.run(
            ["git", "--git-dir=" + self.gitdir, *args], capture_output=True, text=True, errors="replace", check=True
        ).stdout

    def show(self, path):
        if path not in self._cache:
            self._cache[path] = self.git("show", "HEAD:" + path)
        return self._cache[path]


def mllog(text):
    for line in text.splitlines():
        i = line.find(":::MLLOG ")
        if i >= 0:
            with contextlib.suppress(ValueError):
                yield json.loads(line[i + 9 :])


LOG_KEYS = ("fp4", "fp8", "fp8_recipe", "fp8_dot_product_attention", "cuda_graph_scope")
# gpt3: the older NeMo prints its model config as yaml ('  0:       fp8: true')
YAML_LOG_KEYS = (
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "virtual_pipeline_model_parallel_size",
    "micro_batch_size",
    "num_layers",
    "hidden_size",
    "ffn_hidden_size",
    "num_attention_heads",
    "make_vocab_size_divisible_by",
    "sequence_parallel",
    "fp8",
    "fp8_hybrid",
    "fp8_params",
    "ub_tp_comm_overlap",
    "enable_cuda_graph",
    "activations_checkpoint_granularity",
    "cross_entropy_loss_fusion",
)


def log_evidence(text, yaml_keys=()):
    """DGXSYSTEM echoed by run.sub (':::DLPAL ... <DGXSYSTEM>') and a few fields of the
    NeMo model-config dump, when the submitter kept the full stdout."""
    ev = {}
    m = re.search(r"^:::DLPAL .* '?([\w.+-]+?)'?\s*$", text, re.M)
    if m:
        ev["DGXSYSTEM"] = m.group(1)
    for k in LOG_KEYS:
        m = re.search(rf"^(?:\s*\d+:)?\s+{k}=([^,\n]+),\s*$", text, re.M)
        if m:
            ev[k] = m.group(1).strip("'")
    for k in yaml_keys:
        m = re.search(rf"^(?:\s*\d+:)?\s+{k}: (\S+)\s*$", text, re.M)
        if m:
            ev["yaml:" + k] = m.group(1)
    return ev


def parse_result(text, step_keys=("train_step_time",)):
    """Per-step step-time values (the per-block averages that mlperf_common's logging
    callback also emits as tracked_stats are skipped), run metadata, and the timed blocks
    as (block_stop - block_start in ms, epoch_count of the block)."""
    times, meta, blocks, start = [], {}, [], None
    for e in mllog(text):
        k, v, md = e.get("key"), e.get("value"), e.get("metadata") or {}
        key = next((s for s in step_keys if s in v), None) if k == "tracked_stats" and isinstance(v, dict) else None
        if key:
            if "step" in md and "mlperf_common" not in str(md.get("file", "")):
                times.append(float(v[key]))
        elif k == "block_start":
            start = e.get("time_ms")
        elif k == "block_stop" and start is not None:
            blocks.append((e.get("time_ms") - start, md.get("epoch_count")))
            start = None
        elif k in ("global_batch_size", "gradient_accumulation_steps", "max_sequence_length", "submission_platform"):
            meta.setdefault(k, v)
    return times, meta, blocks


# ---- minimal bash evaluator for config_*.sh (export/assign/source; if-blocks skipped) ----
def expand(s, env):
    def sub(m):
        name, op, default = m.group(1) or m.group(4), m.group(2), m.group(3)
        val = env.get(name, "")
        if op in (":-", ":=") and val == "":
            val = expand(default or "", env)
            if op == ":=":
                env[name] = val
        return val

    return re.sub(r"\$\{(\w+)(?:(:[-=])([^}]*))?\}|\$(\w+)", sub, s)


def split_comment(line):
    q = None
    for i, c in enumerate(line):
        if c in "'\"" and q in (None, c):
            q = None if q else c
        elif c == "#" and q is None and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


# `if [[ "${X:-}" == "v31" ]]; then`: a string test the evaluator can decide; any other condition skips the block
STRING_TEST = re.compile(r"(?:el)?if\s+\[\[?\s+\"?([^\"\s]+)\"?\s+(==|=|!=)\s+\"?([^\"\s]*)\"?\s+\]\]?\s*;\s*then$")


def string_test(line, env):
    m = STRING_TEST.match(line)
    if not m:
        return None
    return (expand(m.group(1), env) == expand(m.group(3), env)) == (m.group(2) != "!=")


def run_config(repo, path, env, sourced, bench_root):
    blocks = []  # per open if/case/for/while: [decidable, this branch runs, a branch ran]
    for raw in repo.show(path).splitlines():
        line = split_comment(raw).strip()
        if not line:
            continue
        if re.match(r"(if|case|for|while)\b", line):
            ok = all(b[1] for b in blocks) and string_test(line, env)
            blocks.append([ok is not None, bool(ok), bool(ok)])
            continue
        if re.match(r"elif\b", line) and blocks:
            b, ok = blocks[-1], string_test(line, env)
            b[0] = b[0] and ok is not None
            b[1] = b[0] and not b[2] and ok
            b[2] = b[2] or b[1]
            continue
        if re.match(r"else\b", line) and blocks:
            b = blocks[-1]
            b[1], b[2] = b[0] and not b[2], True
            continue
        if re.match(r"(fi|esac|done)\b", line):
            if blocks:
                blocks.pop()
            continue
        if not all(b[1] for b in blocks):
            continue
        m = re.match(r"(?:source|\.)\s+.*?([\w.+-]+\.sh)\W*$", line)
        if m:
            name = m.group(1)
            if name == "config_mounts.sh":
                continue
            target = resolve_source(repo, os.path.dirname(path), name, bench_root)
            sourced.append(target or ("MISSING:" + name))
            if target:
                run_config(repo, target, env, sourced, bench_root)
            continue
        m = re.match(r":\s+\"?\$\{(\w+):=([^}]*)\}\"?", line)
        if m:
            if not env.get(m.group(1)):
                env[m.group(1)] = expand(m.group(2), env).strip("\"'")
            continue
        m = re.match(r"(?:export\s+)?(\w+)=(.*)$", line)
        if m:
            val = m.group(2).strip().rstrip(";").strip()
            if val.startswith("$(") or val.startswith("$(("):
                continue  # command substitution / arithmetic: not needed here
            if len(val) >= 2 and val[0] == val[-1] and val[0] in "'\"":
                val = val[1:-1]
            env[m.group(1)] = expand(val, env)


def resolve_source(repo, d, name, bench_root):
    """Same directory first; else the nearest file of that name elsewhere in the benchmark tree."""
    if os.path.join(d, name) in repo.file_set:
        return os.path.join(d, name)
    bench = bench_root.split("/")[-1]
    cands = [
        f
        for f in repo.files
        if os.path.basename(f) == name and (f.startswith(bench_root + "/") or f"/benchmarks/{bench}/" in f)
    ]
    cands.sort(
        key=lambda f: (
            not f.startswith(bench_root + "/"),
            not f.startswith("NVIDIA/"),
            not d.startswith(os.path.dirname(f)),
            len(f),
        )
    )
    return cands[0] if cands else None


def truthy(v):
    return str(v).strip().lower() in ("1", "true", "yes", "on")


def yn(v):
    return "yes" if truthy(v) else "no"


def gpu_of(s):
    s = s.upper()
    return next((t for t in GPU_TOKENS if t in s), "")


def effective(repo, cfg, bench_root):
    env, sourced = {}, []
    run_config(repo, cfg, env, sourced, bench_root)
    for a, b in ALIASES.items():
        if a in env and b not in env:
            env[b] = env[a]
    env.setdefault("DGXNGPU", "8")  # default of trainer.devices in the NeMo custom.yaml
    env["_sourced"] = sourced
    return env


def ints(env, *names):
    out = []
    for n in names:
        v = env.get(n, "")
        out.append(int(v) if re.fullmatch(r"\d+", str(v)) else None)
    return out


def system_json(repo, sub, system):
    try:
        return json.loads(repo.show(f"{sub}/systems/{system}.json"))
    except Exception:
        return {}


def block_step_times(blocks, meta):
    """Step times from the timed blocks of a log without per-step values: (block_stop - block_start) / steps in the
    block, steps = epoch_count (tokens) / (max_sequence_length x global_batch_size). None unless every block holds a
    whole number of steps (ambiguous otherwise)."""
    per_step = int(meta.get("max_sequence_length", 0) or 0) * int(meta.get("global_batch_size", 0) or 0)
    if not per_step or not blocks or any(not n or n % per_step for _, n in blocks):
        return None
    return [(ms / 1000 / (n // per_step), n // per_step) for ms, n in blocks]


def nvls_setting(e):
    """'off' where the config sets NCCL_NVLS_ENABLE=0, else 'on' (NCCL's default where the system has it)."""
    return "off" if e.get("NCCL_NVLS_ENABLE", "").strip() == "0" else "on"


def custom_default(repo, cfg, name, sourced=()):
    """The default conf/custom.yaml gives env var `name` (`oc.env:NAME,default`), else '': the one beside the config,
    else beside the shared files it sources (a submitter's configs that source another folder's)."""
    dirs = [os.path.dirname(cfg), *(os.path.dirname(s) for s in sourced if not s.startswith("MISSING:"))]
    for y in dict.fromkeys(f"{d}/conf/custom.yaml" for d in dirs):
        found = re.search(rf"oc\.env:{name},(\w+)", repo.show(y)) if y in repo.file_set else None
        if found:
            return found.group(1)
    return ""


def llama31_columns(repo, cfg, e, sysj, ev, row, notes):
    """Precision, overlap, CUDA-graph, recompute and fusion columns of a llama31 row (NeMo 25.x env names)."""
    if truthy(e.get("FP4")):
        prec, recipe = "nvfp4", e.get("FP4_RECIPE", "nvfp4")
    elif truthy(e.get("FP8")):
        prec, recipe = "fp8", e.get("FP8_RECIPE", "")
        if not recipe:
            y = f"{os.path.dirname(cfg)}/conf/custom.yaml"
            mm = re.search(r"oc\.env:FP8_RECIPE,(\w+)", repo.show(y)) if y in repo.file_set else None
            recipe = mm.group(1) if mm else ""
            notes.append(f"FP8_RECIPE unset; '{recipe}' is the conf/custom.yaml default" if mm else "FP8_RECIPE unset")
    elif "FP8" in sysj.get("sw_notes", "").upper() or truthy(e.get("FP8_PARAMS")):
        prec, recipe = "fp8", ""
        notes.append("no FP8 switch in config; fp8 per systems JSON sw_notes / FP8_PARAMS")
    else:
        prec, recipe = "bf16", ""
    full, mcore = truthy(e.get("FULL_CUDA_GRAPH")), truthy(e.get("MCORE_CUDA_GRAPH"))
    rec = [
        f"{k}={e[k]}"
        for k in sorted(e)
        if k != "_sourced" and re.search(r"RECOMPUTE|ACTIVATIONS_CHECKPOINT|ACT_CKPT", k)
    ]
    vp = e.get("INTERLEAVED_PIPELINE", "")
    row.update(
        vp=vp if re.fullmatch(r"\d+", vp) else 1,
        precision=prec,
        fp8_recipe=recipe,
        fp8_attention=yn(e.get("FP8_DPA")) if prec != "bf16" else "no",
        tp_overlap=yn(e.get("TP_COMM_OVERLAP")),
        fp8_param_gather=yn(e.get("FP8_PARAM_GATHER") or e.get("FP8_PARAMS")),
        cuda_graph="full" if full else "mcore" if mcore else "none",
        asym_pp_embed=yn(e.get("ASYM_PP_EMBED")),
        asym_pp_loss=yn(e.get("ASYM_PP_LOSS")),
        recompute=" ".join(rec) or "none",
        dist_optimizer=yn(e.get("USE_DIST_OPTIMIZER", "True")),
        # conf/custom.yaml's defaults: sequence_parallel SEQ_PARALLEL True, cross_entropy_loss_fusion
        # CROSS_ENTROPY_LOSS_FUSION True, cross_entropy_fusion_impl CE_FUSION_IMPL 'native'
        sequence_parallel=yn(e.get("SEQ_PARALLEL", "True")),
        cross_entropy=e.get("CE_FUSION_IMPL", "native")
        if truthy(e.get("CROSS_ENTROPY_LOSS_FUSION", "True"))
        else "unfused",
        bucket_size=e.get("BUCKET_SIZE") or custom_default(repo, cfg, "BUCKET_SIZE", e["_sourced"]),
        nvls=nvls_setting(e),
    )
    chk = []
    if "fp4" in ev and (ev["fp4"] not in ("None", "False")) != (prec == "nvfp4"):
        chk.append(f"fp4={ev['fp4']}")
    if "fp8" in ev and prec == "fp8" and ev["fp8"] in ("None", "False"):
        chk.append(f"fp8={ev['fp8']}")
    if "cuda_graph_scope" in ev and (ev["cuda_graph_scope"] == "full_iteration") != full:
        chk.append(f"cuda_graph_scope={ev['cuda_graph_scope']}")
    if "fp8_dot_product_attention" in ev and truthy(ev["fp8_dot_product_attention"]) != (row["fp8_attention"] == "yes"):
        chk.append(f"fp8_dot_product_attention={ev['fp8_dot_product_attention']}")
    if chk:
        notes.append("log model-config dump disagrees with config: " + ", ".join(chk))
    if "USE_DIST_OPTIMIZER" not in e:
        notes.append("USE_DIST_OPTIMIZER unset (NeMo conf default True)")


def impl_defaults(repo, impl):
    """What the implementation next to a config does with an env var the config leaves unset:
    {VAR: (default, file)} from run_and_time.sh's `: "${VAR:=default}"` (evaluated first, so it wins) and
    conf/*.yaml's ${oc.env:VAR,default}; plus {yaml key: (literal, file)} for the model-shape keys a yaml
    sets outright (v3.0's conf/megatron_gpt_config.yaml)."""
    d = {}
    rt = f"{impl}/run_and_time.sh"
    if rt in repo.file_set:
        for m in re.finditer(r'^:\s+"?\$\{(\w+):=([^}]*)\}', repo.show(rt), re.M):
            d.setdefault(m.group(1), (m.group(2).strip("\"'"), "run_and_time.sh"))
    for f in sorted(f for f in repo.files if f.startswith(impl + "/conf/") and f.endswith(".yaml")):
        text, rel = repo.show(f), f[len(impl) + 1 :]
        for m in re.finditer(r"oc\.env:(\w+),([^{}]*)\}", text):
            d.setdefault(m.group(1), (m.group(2).strip().strip("\"'"), rel))
        for m in re.finditer(
            r"^\s+(num_layers|hidden_size|num_attention_heads|make_vocab_size_divisible_by): (\d+)", text, re.M
        ):
            d.setdefault("yaml:" + m.group(1), (m.group(2), rel))
    return d


DUMP_KEY = {  # gpt3 env var -> key of the NeMo model-config dump
    "INTERLEAVED_PIPELINE": "virtual_pipeline_model_parallel_size",
    "NUM_LAYERS": "num_layers",
    "HIDDEN_SIZE": "hidden_size",
    "FFN_HIDDEN_SIZE": "ffn_hidden_size",
    "NUM_ATTENTION_HEADS": "num_attention_heads",
    "SEQ_PARALLEL": "sequence_parallel",
    "FP8": "fp8",
    "FP8_HYBRID": "fp8_hybrid",
    "FP8_PARAMS": "fp8_params",
    "TP_COMM_OVERLAP": "ub_tp_comm_overlap",
    "LAYER_CUDA_GRAPH": "enable_cuda_graph",
    "ACT_CKPT_GRANULARITY": "activations_checkpoint_granularity",
    "CROSS_ENTROPY_LOSS_FUSION": "cross_entropy_loss_fusion",
}


def gpt3_columns(repo, cfg, e, ev, row, notes):
    """Columns of a gpt3 row: the NeMo 23.x-24.x env names, with the implementation's defaults for unset ones."""
    dflt, used, from_log = impl_defaults(repo, os.path.dirname(cfg)), [], set()
    if not any(f.startswith(os.path.dirname(cfg) + "/conf/") for f in repo.files):
        notes.append("no conf/*.yaml next to the config: unset values from the log's model-config dump")

    def get(name, fallback=""):
        """env, else the implementation's default, else the log's model-config dump, else `fallback` (a setting
        the release does not have)."""
        if e.get(name, "") != "":
            return e[name]
        v, src = dflt.get(name, (None, ""))
        if v is None and "yaml:" + DUMP_KEY.get(name, "-") in ev:
            v, src = ev["yaml:" + DUMP_KEY[name]], "log"
            from_log.add(DUMP_KEY[name])
        if v is None:
            return fallback
        if not name.startswith(("NUM_", "HIDDEN", "FFN")):
            used.append(f"{name}={v} ({src})")
        return v

    vp = get("INTERLEAVED_PIPELINE")
    fp8 = truthy(get("FP8"))
    fmt = [get("FP8_HYBRID"), get("FP8_AMAX_HISTORY"), get("FP8_AMAX_ALGO")] if fp8 else []
    if fp8 and (not truthy(fmt[0]) or fmt[1:] != ["1024", "max"]):
        notes.append(f"FP8_HYBRID={fmt[0]}, FP8_AMAX_HISTORY={fmt[1]}, FP8_AMAX_ALGO={fmt[2]}")
    gran = get("ACT_CKPT_GRANULARITY")
    recompute = "none"
    if gran.lower() not in ("", "null", "none"):
        recompute = " ".join(
            f"{k}={get(k)}" for k in ("ACT_CKPT_GRANULARITY", "ACT_CKPT_METHOD", "ACT_CKPT_NUM_LAYERS")
        )
    ce = "native" if truthy(get("CROSS_ENTROPY_LOSS_FUSION", "False")) else "unfused"
    layers = get("NUM_LAYERS") or dflt.get("yaml:num_layers", ("",))[0]
    hidden = get("HIDDEN_SIZE") or dflt.get("yaml:hidden_size", ("",))[0]
    heads = get("NUM_ATTENTION_HEADS") or dflt.get("yaml:num_attention_heads", ("",))[0]
    ffn = get("FFN_HIDDEN_SIZE")
    if not ffn.isdigit() and hidden.isdigit():
        ffn = str(4 * int(hidden))  # conf: ${multiply:4, ${.hidden_size}}
    # make_vocab_size_divisible_by: the yaml's (v3.0), else the log dump's, else NeMo's default 128
    vocab_div = ev.get("yaml:make_vocab_size_divisible_by", "128")
    div = int(dflt.get("yaml:make_vocab_size_divisible_by", (vocab_div,))[0]) * row["tp"]
    row.update(
        vp=int(vp) if vp.isdigit() and vp != "0" else 1,
        precision="fp8" if fp8 else "bf16",
        fp8_recipe="delayed" if fp8 else "",
        fp8_attention="no",
        tp_overlap=yn(get("TP_COMM_OVERLAP", "False")),
        fp8_param_gather=yn(get("FP8_PARAMS", "False")),
        cuda_graph="layer" if truthy(get("LAYER_CUDA_GRAPH", "False")) else "none",
        asym_pp_embed="no",
        asym_pp_loss="no",
        recompute=recompute,
        dist_optimizer=yn(get("USE_DIST_OPTIMIZER", "True")),
        sequence_parallel=yn(get("SEQ_PARALLEL", "True")),
        cross_entropy=ce,
        nvls=nvls_setting(e),
        num_layers=layers,
        hidden=hidden,
        heads=heads,
        ffn_hidden=ffn,
        vocab=-(-GPT3_TOKENIZER_VOCAB // div) * div,
    )
    if used:
        notes.append("unset in the config, so: " + ", ".join(used))
    # the NeMo model-config dump (yaml) in logs that kept the full stdout
    dump = {
        "tensor_model_parallel_size": row["tp"],
        "pipeline_model_parallel_size": row["pp"],
        "virtual_pipeline_model_parallel_size": row["vp"],
        "micro_batch_size": row["micro_batch"],
        "num_layers": layers,
        "hidden_size": hidden,
        "ffn_hidden_size": ffn,
        "num_attention_heads": heads,
        "make_vocab_size_divisible_by": div // row["tp"],
        "sequence_parallel": row["sequence_parallel"] == "yes",
        "fp8": fp8,
        "fp8_params": row["fp8_param_gather"] == "yes",
        "ub_tp_comm_overlap": row["tp_overlap"] == "yes",
        "enable_cuda_graph": row["cuda_graph"] == "layer",
        "activations_checkpoint_granularity": "null" if recompute == "none" else gran,
        "cross_entropy_loss_fusion": ce == "native",
    }
    seen = [k for k in dump if "yaml:" + k in ev and k not in from_log]
    off = [f"{k}={ev['yaml:' + k]}" for k in seen if str(dump[k]).lower() != str(ev["yaml:" + k]).lower()]
    if off:
        notes.append("log model-config dump disagrees with config: " + ", ".join(off))
    elif seen:
        notes.append(f"log model-config dump agrees ({len(seen)} fields)")


def analyse(repo, fam, rnd, sub, system, bench, rdir, files):
    gpt3 = fam is FAMILIES["gpt3"]
    notes = [f"results={rdir}"]
    per_file, steps, meta, ev, block_steps = [], 0, {}, {}, set()
    for f in sorted(files):
        for k, v in log_evidence(repo.show(f), YAML_LOG_KEYS if gpt3 else ()).items():
            ev.setdefault(k, v)
        t, m, blocks = parse_result(repo.show(f), fam["step_keys"])
        for k, v in m.items():
            meta.setdefault(k, v)
        if len(t) > 2:
            per_file.append(statistics.median(t[2:]))
            steps += len(t) - 2
        elif gpt3 and len(blocks) > 2 and block_step_times(blocks, m):
            bt = block_step_times(blocks, m)[2:]  # the first two blocks dropped, as the first two steps are
            per_file.append(statistics.median(s for s, _ in bt))
            steps += sum(n for _, n in bt)
            block_steps |= {n for _, n in bt}
    sysj = system_json(repo, sub, system)
    accel = sysj.get("accelerator_model_name", "")
    gpu = gpu_of(accel)
    nodes, gpn = int(sysj.get("number_of_nodes", 0) or 0), int(sysj.get("accelerators_per_node", 0) or 0)
    gpus = nodes * gpn
    gbs = int(meta.get("global_batch_size", 0) or 0)
    ga = int(float(meta.get("gradient_accumulation_steps", 0) or 0))
    plat = str(meta.get("submission_platform", ""))
    if accel and not re.search(
        r"\((GB200|GB300|B200-SXM-180GB|B300-SXM-270GB)\)|^NVIDIA H[12]00-SXM5|^AMD Instinct", accel
    ):
        notes.append(f"accelerator_model_name='{accel}'")
    pg = gpu_of(plat)
    if pg and pg != gpu:
        notes.append(f"log submission_platform='{plat}' disagrees with systems JSON ({accel})")
    m = re.match(r"(\d+)x", plat)
    if m and int(m.group(1)) != nodes:
        notes.append(f"log submission_platform='{plat}' node count != systems JSON nodes {nodes}")

    # ---- config selection ----
    bench_root = f"{sub}/benchmarks/{bench}"

    def list_cfgs(root):
        return [
            f
            for f in repo.files
            if f.startswith(root + "/")
            and re.search(r"/config_[^/]*\.sh$", f)
            and "common" not in os.path.basename(f)
            and "mounts" not in os.path.basename(f)
        ]

    cfgs = list_cfgs(bench_root)
    alt = bench_root.replace("/llama31_", "/llama3_")
    if not cfgs and list_cfgs(alt):
        bench_root, cfgs = alt, list_cfgs(alt)
        notes.append(f"configs taken from misnamed dir {alt}/")
    envs = {c: effective(repo, c, bench_root) for c in cfgs}

    def fits(e, check_ga=True, gbs_from_ga=False):
        n, g, tp, pp, cp, mbs, mini = ints(
            e,
            "DGXNNODES",
            "DGXNGPU",
            "TENSOR_MODEL_PARALLEL",
            "PIPELINE_MODEL_PARALLEL",
            "CONTEXT_PARALLEL",
            "MICRO_BATCH_SIZE",
            "MINIBS",
        )
        cp = cp or 1
        if None in (n, g, tp, pp, mbs) or n * g != gpus or gpus % (tp * pp * cp):
            return False
        dp = gpus // (tp * pp * cp)
        gbs_cfg = mini * dp if mini else int(e.get("GBS", 0) or 0)
        if gbs_from_ga:
            return dp * mbs * ga == gbs
        return gbs_cfg == gbs and (not check_ga or dp * mbs * ga == gbs)

    match = [c for c, e in envs.items() if fits(e)]
    how = "GPUs/GBS/GA match"
    if not match:
        match = [c for c, e in envs.items() if fits(e, False)]
        if match:
            notes.append(f"no config reproduces log gradient_accumulation_steps={ga}; matched on GPUs/GBS only")
    if not match and gpt3:
        match = [c for c, e in envs.items() if fits(e, gbs_from_ga=True)]
        if match:
            how = "GPUs match, micro_batch x DP x log GA = log GBS"
            notes.append(f"no config's MINIBS x DP gives log GBS {gbs}: the run overrode MINIBS (to GBS/DP)")
    dgx = ev.get("DGXSYSTEM")
    if dgx:
        by_name = [c for c in (match or cfgs) if os.path.basename(c) == f"config_{dgx}.sh"]
        if by_name:
            match, how = by_name, f"log DGXSYSTEM={dgx}"
        else:
            notes.append(f"log DGXSYSTEM={dgx} has no config file of that name")
    readmes = [f for f in repo.files if f.startswith(bench_root + "/") and os.path.basename(f) == f"README-{system}.md"]
    named = {n for r in readmes for n in re.findall(r"config_[\w.+-]+?\.sh", repo.show(r))}
    if len(match) > 1 and any(os.path.basename(c) in named for c in match):
        match = [c for c in match if os.path.basename(c) in named]
        how += f" + named in {readmes[0]}"
    exact = [c for c in match if ints(envs[c], "DGXNNODES", "DGXNGPU") == [nodes, gpn]]
    if len(match) > 1 and exact and len(exact) < len(match):
        match, how = exact, how + " + nodes x GPUs-per-node"
    bare = re.sub(r"^\d+x", "", system)
    for sel, why in (
        (lambda c: bare in os.path.basename(c), "config file named after the system"),
        (lambda c: system.startswith(os.path.basename(os.path.dirname(c))), "config dir named after the system"),
    ):
        if len(match) > 1 and 0 < sum(map(sel, match)) < len(match):
            match, how = [c for c in match if sel(c)], how + " + " + why
    if len(match) > 1 and "fp4" in ev:
        log_fp4 = ev["fp4"] not in ("None", "False")
        same = [c for c in match if truthy(envs[c].get("FP4")) == log_fp4]
        if 0 < len(same) < len(match):
            match, how = same, how + f" + log model config fp4={ev['fp4']}"
    if len(match) > 1 and 0 < sum(gpu_of(os.path.basename(c)) == gpu for c in match) < len(match):
        match = [c for c in match if gpu_of(os.path.basename(c)) == gpu]
        how += f" + {gpu} in config name"
    if len(match) > 1 and all(
        {k: v for k, v in envs[c].items() if k != "_sourced"}
        == {k: v for k, v in envs[match[0]].items() if k != "_sourced"}
        for c in match
    ):
        notes.append(f"{len(match)} identical copies: {'|'.join(match)}")
        match = sorted(match)[:1]
    if len(match) > 1:
        non_fp4 = [c for c in match if not truthy(envs[c].get("FP4"))] or match
        cfg_cell = "ambiguous: " + "|".join(os.path.basename(c) for c in match)
        cfg = sorted(non_fp4, key=len)[0]
        notes.append(f"ambiguous config ({how}): candidates {'|'.join(match)}; settings taken from {cfg}")
    elif match:
        cfg = match[0]
        cfg_cell = os.path.basename(cfg)
        notes.append(f"config={cfg} ({how})")
    else:
        cfg, cfg_cell = None, ""
        notes.append(
            "no config_*.sh in the submission matches GPUs/GBS/GA"
            if cfgs
            else f"no {bench} configs in {sub}/benchmarks"
        )
    row = dict(
        round=rnd,
        submitter=sub,
        system=system,
        benchmark=bench,
        gpu=gpu,
        gpus=gpus,
        nodes=nodes,
        gpus_per_node=gpn,
        config_file=cfg_cell,
        global_batch=gbs,
        seq_len=meta.get("max_sequence_length", ""),
        result_files=len(files),
        steps_counted=steps,
    )
    if per_file:
        row.update(
            step_time_s=f"{statistics.median(per_file):.4g}",
            step_time_min_s=f"{min(per_file):.4g}",
            step_time_max_s=f"{max(per_file):.4g}",
        )
    else:
        notes.append("no per-step train_step_time in logs (only block throughput)")
    if block_steps:
        notes.append(
            "no per-step timing in logs: step time = block duration (block_stop - block_start) / steps in the block "
            f"(epoch_count / (seq_len x GBS) = {'|'.join(map(str, sorted(block_steps)))}), first two blocks dropped; "
            "biased high (the header says by how much)"
        )
    if cfg:
        e = envs[cfg]
        if any(s.startswith("MISSING:") for s in e["_sourced"]):
            notes.append("unresolved source: " + ",".join(s for s in e["_sourced"] if s.startswith("MISSING:")))
        far = [s for s in e["_sourced"] if not s.startswith("MISSING:") and os.path.dirname(s) != os.path.dirname(cfg)]
        if far:
            notes.append("sourced file absent next to config, used: " + ",".join(far))
        tp, pp, cp, mbs, mini, n, g = ints(
            e,
            "TENSOR_MODEL_PARALLEL",
            "PIPELINE_MODEL_PARALLEL",
            "CONTEXT_PARALLEL",
            "MICRO_BATCH_SIZE",
            "MINIBS",
            "DGXNNODES",
            "DGXNGPU",
        )
        cp = cp or 1
        dp = gpus // (tp * pp * cp)
        if tp * pp * cp * dp != gpus:
            notes.append(f"TPxPPxCPxDP != GPUs ({tp}x{pp}x{cp}x{dp} vs {gpus})")
        if mini and mini * dp != gbs:
            notes.append(f"MINIBS x DP = {mini * dp} != log GBS {gbs}")
        if (n, g) != (nodes, gpn):
            notes.append(f"config DGXNNODES x DGXNGPU = {n}x{g} vs systems JSON {nodes}x{gpn}")
        cg = gpu_of(os.path.basename(cfg))
        if cg and cg != gpu:
            notes.append(f"config name says {cg} but system is {gpu}")
        row.update(tp=tp, pp=pp, cp=cp, dp=dp, micro_batch=mbs)
        if gpt3:
            gpt3_columns(repo, cfg, e, ev, row, notes)
        else:
            llama31_columns(repo, cfg, e, sysj, ev, row, notes)
    row["notes"] = "; ".join(notes)
    return row


def strip_sysjson(text):
    return "".join(line for line in text.splitlines(True) if not line.startswith(":::SYSJSON"))


def main(family, gitdirs):
    fam = FAMILIES[family]
    rows, heads, seen, seen_text = [], [], {}, {}
    for rnd, gitdir in zip(fam["rounds"], gitdirs, strict=True):
        repo = Repo(gitdir)
        repo.file_set = set(repo.files)
        heads.append((rnd, repo.head))
        dirs = {}
        for f in repo.files:
            p = f.split("/")
            if len(p) == 5 and p[1] == "results" and p[3] in fam["benches"] and re.match(fam["result_re"], p[4]):
                dirs.setdefault((p[0], p[2], p[3]), []).append(f)
        for (sub, system, bench), files in sorted(dirs.items()):
            accel = system_json(repo, sub, system).get("accelerator_model_name", "")
            if family == "gpt3" and gpu_of(accel) not in NVIDIA_GPUS:
                continue  # TPU / Gaudi systems
            rdir = f"{sub}/results/{system}/{bench}"
            row = analyse(repo, fam, rnd, sub, system, bench, rdir, files)
            blobs = tuple(sorted(repo.git("ls-tree", "HEAD", *files).split()[2::4]))
            text = tuple(sorted(strip_sysjson(repo.show(f)) for f in files))
            if blobs in seen:  # a round resubmitting another's logs: one measurement, counted once
                row["notes"] = f"duplicate of {seen[blobs]}: the same result files, byte for byte; " + row["notes"]
            elif text in seen_text:
                row["notes"] = (
                    f"duplicate of {seen_text[text]}: the same result files apart from the :::SYSJSON lines; "
                    + row["notes"]
                )
            seen.setdefault(blobs, f"{rnd} {rdir}")
            seen_text.setdefault(text, f"{rnd} {rdir}")
            rows.append(row)
    out = io.StringIO()
    keys = {"v" + rnd[1:].replace(".", ""): head for rnd, head in heads}
    for line in fam["header"].format(**keys).splitlines():
        out.write("# " + line + "\n")
    w = csv.DictWriter(out, fam["cols"], lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: r.get(c, "") for c in fam["cols"]})
    sys.stdout.write(out.getvalue())


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in FAMILIES or len(sys.argv) != 2 + len(FAMILIES[sys.argv[1]]["rounds"]):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
