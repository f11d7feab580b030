#!/usr/bin/env python3
"""Extract the measured peak memory of Megatron-LM's functional test cases into a CSV.

Reads NVIDIA/Megatron-LM's ``tests/functional_tests/test_cases/{gpt,moe,mixtral}/*/``
(``model_config.yaml`` and every ``golden_values_*.json`` that records
``mem-max-allocated-bytes``) and the CI recipes under ``tests/test_utils/recipes/`` (world size),
and writes one row per (test case, golden file). Standard library only.

Usage:
    python3 extract_megatron_functional.py PATH [--rev HEAD] [--out FILE]

PATH is a Megatron-LM git directory (bare mirror or ``.git``) or a checkout. With a git
directory (or a checkout that has one), every file is read from the commit ``--rev``
(default HEAD) and the history is used for the notes (which commit's run measured each golden
file's values, former case names, MODEL_ARGS changed since then) and for the world size of cases
no current recipe runs. A plain directory without git
gives the same configuration columns but no history notes and an empty ``commit`` column.

The defaults written for absent flags were checked by hand against
megatron/training/arguments.py, megatron/training/argument_utils.py,
megatron/core/model_parallel_config.py, megatron/core/transformer/transformer_config.py and
pretrain_gpt.py at commit VERIFIED_COMMIT only; at any other commit the output's header says so.
"""

import argparse
import csv
import io
import json
import os
import re
import shlex
import statistics
import subprocess
import sys

VERIFIED_COMMIT = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
GATHERED = "2026-12-05"
FAMILIES = ("gpt", "moe", "mixtral")
TEST_CASES = "tests/functional_tests/test_cases"
RECIPES = "tests/test_utils/recipes"
OLD_RECIPES = ("tests/functional_tests/jet_recipes", "tests/test_utils/jet_recipes")
MEM_MAX = "mem-max-allocated-bytes"
MEM_CUR = "mem-allocated-bytes"

COLUMNS = [
    "case",
    "golden_file",
    "hardware",
    "commit",
    "nodes",
    "gpus_per_node",
    "num_layers",
    "hidden_size",
    "ffn_hidden_size",
    "num_attention_heads",
    "group_query_attention",
    "num_query_groups",
    "kv_channels",
    "seq_length",
    "max_position_embeddings",
    "position_embedding_type",
    "swiglu",
    "normalization",
    "untie_embeddings_and_output_weights",
    "vocab_size_or_tokenizer",
    "make_vocab_size_divisible_by",
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "num_layers_per_virtual_pipeline_stage_or_vpp",
    "context_parallel_size",
    "expert_model_parallel_size",
    "expert_tensor_parallel_size",
    "num_experts",
    "moe_router_topk",
    "moe_ffn_hidden_size",
    "moe_shared_expert_intermediate_size",
    "moe_layer_freq",
    "moe_token_dispatcher_type",
    "moe_grouped_gemm",
    "sequence_parallel",
    "use_distributed_optimizer",
    "overlap_grad_reduce",
    "overlap_param_gather",
    "micro_batch_size",
    "global_batch_size",
    "precision",
    "fp8",
    "recompute_granularity",
    "recompute_method",
    "recompute_num_layers",
    "recompute_modules",
    "transformer_impl",
    "attention_backend",
    "use_flash_attn",
    "use_mcore_models",
    "ckpt_or_other_relevant_flags",
    "mem_max_allocated_bytes_median",
    "mem_max_allocated_bytes_last",
    "mem_allocated_bytes_median",
    "steps_recorded",
    "model_args",
    "notes",
]

# Flags that have their own column.
COVERED = {
    "--num-layers",
    "--hidden-size",
    "--ffn-hidden-size",
    "--num-attention-heads",
    "--group-query-attention",
    "--num-query-groups",
    "--kv-channels",
    "--seq-length",
    "--max-position-embeddings",
    "--position-embedding-type",
    "--swiglu",
    "--normalization",
    "--untie-embeddings-and-output-weights",
    "--tokenizer-type",
    "--vocab-file",
    "--merge-file",
    "--tokenizer-model",
    "--vocab-size",
    "--make-vocab-size-divisible-by",
    "--tensor-model-parallel-size",
    "--pipeline-model-parallel-size",
    "--num-layers-per-virtual-pipeline-stage",
    "--num-virtual-stages-per-pipeline-rank",
    "--context-parallel-size",
    "--expert-model-parallel-size",
    "--expert-tensor-parallel-size",
    "--num-experts",
    "--moe-router-topk",
    "--moe-ffn-hidden-size",
    "--moe-shared-expert-intermediate-size",
    "--moe-layer-freq",
    "--moe-token-dispatcher-type",
    "--moe-grouped-gemm",
    "--sequence-parallel",
    "--use-distributed-optimizer",
    "--overlap-grad-reduce",
    "--overlap-param-gather",
    "--micro-batch-size",
    "--global-batch-size",
    "--bf16",
    "--fp16",
    "--fp8-format",
    "--fp8-recipe",
    "--recompute-granularity",
    "--recompute-method",
    "--recompute-num-layers",
    "--recompute-modules",
    "--transformer-impl",
    "--attention-backend",
    "--use-flash-attn",
    "--use-mcore-models",
}

# Flags left out of ckpt_or_other_relevant_flags: they do not change what the GPU holds
# (optimizer hyper-parameters, schedules, dropout/init values, data and output paths, logging,
# evaluation cadence, router loss settings, seeds, timeouts, rope numerics).
IRRELEVANT = {
    "--adam-beta1",
    "--adam-beta2",
    "--adam-eps",
    "--attention-dropout",
    "--hidden-dropout",
    "--clip-grad",
    "--weight-decay",
    "--init-method-std",
    "--lr",
    "--min-lr",
    "--lr-decay-iters",
    "--lr-decay-samples",
    "--lr-decay-style",
    "--lr-warmup-fraction",
    "--lr-warmup-init",
    "--lr-warmup-samples",
    "--lr-warmup-iters",
    "--decoupled-lr",
    "--decoupled-min-lr",
    "--data-cache-path",
    "--data-path",
    "--split",
    "--num-workers",
    "--no-mmap-bin-files",
    "--fim-data",
    "--fim-rate",
    "--fim-spm-rate",
    "--mock-data",
    "--logging-level",
    "--tensorboard-dir",
    "--timing-log-level",
    "--log-interval",
    "--log-memory-to-tensorboard",
    "--log-num-zeros-in-grad",
    "--log-params-norm",
    "--log-throughput",
    "--log-timers-to-tensorboard",
    "--log-validation-ppl-to-tensorboard",
    "--wandb-entity",
    "--wandb-exp-name",
    "--wandb-project",
    "--wandb-save-dir",
    "--eval-interval",
    "--eval-iters",
    "--eval-global-batch-size",
    "--exit-duration-in-mins",
    "--exit-interval",
    "--distributed-backend",
    "--distributed-timeout-minutes",
    "--save",
    "--load",
    "--seed",
    "--train-iters",
    "--train-samples",
    "--rotary-base",
    "--rotary-percent",
    "--rotary-scaling-factor",
    "--rotary-interleaved",
    "--mscale",
    "--mscale-all-dim",
    "--norm-epsilon",
    "--apply-layernorm-1p",
    "--apply-query-key-layer-scaling",
    "--moe-aux-loss-coeff",
    "--moe-router-load-balancing-type",
    "--moe-router-bias-update-rate",
    "--moe-router-enable-expert-bias",
    "--moe-router-group-topk",
    "--moe-router-num-groups",
    "--moe-router-pre-softmax",
    "--moe-router-score-function",
    "--moe-router-topk-scaling-factor",
    "--mtp-loss-scaling-factor",
    "--override-opt_param-scheduler",
    "--use-checkpoint-opt_param-scheduler",
    "--dist-ckpt-strictness",
    "--muon-momentum",
    "--muon-scale-mode",
    "--muon-extra-scale-factor",
    "--manual-gc-interval",
    "--check-weight-hash-across-dp-replicas-interval",
    "--rerun-mode",
    "--verify-integrity",
    "--save-retain-interval",
    "--no-check-for-nan-in-loss-and-grad",
    "--export-kd-cfg",
    "--tp-comm-overlap-cfg",
}


# MODEL_ARGS changes that do not make a measured run's configuration differ from today's in
# what the GPU holds during training steps: paths (same files moved), and checkpoint/timing
# plumbing (listed in notes, not flagged as drift).
PATH_FLAGS = {
    "--data-path",
    "--vocab-file",
    "--merge-file",
    "--tokenizer-model",
    "--load",
    "--save",
    "--data-cache-path",
    "--tensorboard-dir",
}
CKPT_INFRA = {
    "--async-save",
    "--use-persistent-ckpt-worker",
    "--dist-ckpt-optim-fully-reshardable",
    "--dist-ckpt-save-pre-mcore-014",
    "--verify-integrity",
    "--ckpt-assume-constant-structure",
    "--async-ckpt-use-cpu-shm",
    "--async-strategy",
    "--save-interval",
    "--no-ckpt-fully-parallel-save",
    "--ckpt-fully-parallel-save",
    "--ckpt-fully-parallel-load",
    "--ckpt-format",
    "--disable-gloo-process-groups",
    "--timing-log-level",
    "--auto-detect-ckpt-format",
}


# --------------------------------------------------------------------------------------------
# Reading the repository
# --------------------------------------------------------------------------------------------
class Source:
    """Files of one commit of a git directory, or of a plain directory."""

    def __init__(self, path, rev):
        self.path = os.path.abspath(path)
        self.git_dir = None
        for cand in (self.path, os.path.join(self.path, ".git")):
            if os.path.exists(os.path.join(cand, "HEAD")) and os.path.isdir(os.path.join(cand, "objects")):
                self.git_dir = cand
                break
        self._batch = None
        if self.git_dir:
            self.commit = self._git("rev-parse", rev + "^{commit}").strip()
            self.date = self._git("show", "-s", "--format=%cI", self.commit).strip()
            self._files = self._git("ls-tree", "-r", "--name-only", self.commit, "--", TEST_CASES, RECIPES).splitlines()
        else:
            self.commit, self.date = "", ""
            self._files = []
            for top in (TEST_CASES, RECIPES):
                for root, _dirs, files in os.walk(os.path.join(self.path, top)):
                    for f in files:
                        self._files.append(os.path.relpath(os.path.join(root, f), self.path))
            self._files.sort()

    def _git(self, *args):
        return subprocess.run(
            ["git", "--git-dir", self.git_dir, *list(args)], check=True, capture_output=True, text=True
        ).stdout

    def files(self, prefix):
        return [f for f in self._files if f.startswith(prefix + "/")]

    def read(self, path, commit=None):
        """Text of path at commit (default: the commit read), or None."""
        if not self.git_dir:
            try:
                with open(os.path.join(self.path, path), encoding="utf-8") as fh:
                    return fh.read()
            except OSError:
                return None
        if self._batch is None:
            self._batch = subprocess.Popen(
                ["git", "--git-dir", self.git_dir, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
        self._batch.stdin.write((f"{commit or self.commit}:{path}\n").encode())
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().decode().split()
        if len(header) < 3 or header[1] != "blob":
            return None
        data = self._batch.stdout.read(int(header[2]))
        self._batch.stdout.read(1)
        return data.decode("utf-8", errors="replace")

    def history(self, paths):
        """[(commit, date, [(status, old, new)])], newest first, renames detected."""
        if not self.git_dir:
            return []
        out = self._git("log", "--format=@@%H %cs", "-M", "--name-status", self.commit, "--", *paths)
        commits = []
        for line in out.splitlines():
            if line.startswith("@@"):
                h, d = line[2:].split()
                commits.append((h, d, []))
            elif line.strip() and commits:
                parts = line.split("\t")
                if parts[0].startswith(("R", "C")):
                    commits[-1][2].append((parts[0], parts[1], parts[2]))
                else:
                    commits[-1][2].append((parts[0], parts[1], parts[1]))
        return commits

    def recipe_history(self, names, path_ok):
        """{name: (commit, date, file, [entries])}: the newest commit at which a recipe file
        accepted by path_ok(file) runs the case (an entry that is not commented out)."""
        found = {}
        if not self.git_dir or not names:
            return found
        paths = [RECIPES, *list(OLD_RECIPES)]
        log = self._git("log", "--format=%H %cs", self.commit, "--", *paths).split()
        left = set(names)
        for i in range(0, len(log), 2):
            if not left:
                break
            c, d = log[i], log[i + 1]
            args = ["grep", "-w", "-F", "-l"]
            for n in sorted(left):
                args += ["-e", n]
            try:
                out = self._git(*([*args, c, "--", *paths]))
            except subprocess.CalledProcessError:
                continue
            for ln in out.splitlines():
                f = ln.split(":", 1)[1]
                if not path_ok(f):
                    continue
                for e in parse_recipe(self.read(f, c) or ""):
                    if e["name"] in left and not e["commented"]:
                        e["file"] = f
                        found.setdefault(e["name"], (c, d, f, []))
                        if found[e["name"]][2] == f:
                            found[e["name"]][3].append(e)
            left -= set(found)
        return found


# --------------------------------------------------------------------------------------------
# A small YAML reader (the subset model_config.yaml files use): block mappings and sequences,
# flow sequences, plain/quoted/multi-line scalars, block scalars, anchors, aliases, merge keys.
# Scalars are kept as the raw text (numbers are not converted, so '1e-4' stays '1e-4').
# --------------------------------------------------------------------------------------------
class FlowList(list):
    pass


def _strip_comment(line):
    out, quote = [], None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'" and (i == 0 or line[i - 1] in " \t:[,"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            break
        out.append(ch)
    return "".join(out).rstrip()


def _unquote(s):
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        return s[1:-1]
    return s


def _flow(s):
    inner = s.strip()[1:-1]
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch in "[("
        depth -= ch in "])"
        cur += ch
    if cur.strip():
        items.append(cur)
    return FlowList(_unquote(i) for i in items if i.strip())


def _key_split(text):
    """('key', 'rest') if text is 'key: rest' / 'key:' else None."""
    if text[:1] in "\"'":
        q = text[0]
        end = text.find(q, 1)
        if end > 0 and text[end + 1 : end + 2] == ":" and text[end + 2 : end + 3] in ("", " "):
            return text[1:end], text[end + 2 :].strip()
        return None
    m = re.match(r"^([^\s\[\]{}#][^:]*?|<<):(?:\s+(.*))?$", text)
    if not m:
        return None
    return m.group(1).strip(), (m.group(2) or "").strip()


def parse_yaml(text):
    raw = text.splitlines()
    lines = []  # (indent, content, raw_line)
    for ln in raw:
        c = _strip_comment(ln)
        if not c.strip():
            lines.append(None)
            continue
        lines.append((len(c) - len(c.lstrip(" ")), c.strip(), ln))
    anchors = {}

    def next_idx(i):
        while i < len(lines) and lines[i] is None:
            i += 1
        return i

    def scalar(rest, i, indent):
        """Value text after 'key:' at line i-1; returns (value, next line)."""
        anchor = None
        m = re.match(r"^&(\S+)\s*(.*)$", rest)
        if m:
            anchor, rest = m.group(1), m.group(2)
        if rest.startswith("*"):
            val = anchors[rest[1:].strip()]
        elif rest[:1] in ("|", ">"):
            # block scalar: take raw lines more indented than the key
            buf, j = [], i
            while j < len(raw):
                ln = raw[j]
                if ln.strip() and len(ln) - len(ln.lstrip(" ")) <= indent:
                    break
                buf.append(ln)
                j += 1
            strip = min((len(b) - len(b.lstrip(" ")) for b in buf if b.strip()), default=0)
            val = "\n".join(b[strip:] for b in buf).rstrip("\n")
            if rest[0] == ">":
                val = " ".join(v.strip() for v in val.splitlines())
            i = j
        elif rest.startswith("["):
            val = _flow(rest)
        elif rest:
            val = _unquote(rest)
            # plain multi-line continuation
            j = next_idx(i)
            while (
                j < len(lines)
                and lines[j][0] > indent
                and not lines[j][1].startswith("- ")
                and _key_split(lines[j][1]) is None
            ):
                val += " " + lines[j][1]
                j = next_idx(j + 1)
            i = j
        else:
            j = next_idx(i)
            if j < len(lines) and (lines[j][0] > indent or (lines[j][0] == indent and lines[j][1].startswith("- "))):
                if _key_split(lines[j][1]) is None and not lines[j][1].startswith("- "):
                    # plain scalar on the following line(s)
                    val = lines[j][1]
                    k = next_idx(j + 1)
                    while (
                        k < len(lines)
                        and lines[k][0] > indent
                        and _key_split(lines[k][1]) is None
                        and not lines[k][1].startswith("- ")
                    ):
                        val += " " + lines[k][1]
                        k = next_idx(k + 1)
                    val, i = _unquote(val), k
                else:
                    val, i = block(j, lines[j][0])
            else:
                val = None
        if anchor:
            anchors[anchor] = val
        return val, i

    def block(i, indent):
        i = next_idx(i)
        if i < len(lines) and lines[i][1].startswith("- "):
            seq = []
            while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
                item = lines[i][1][2:].strip()
                ks = _key_split(item)
                if ks:  # mapping inside a sequence item
                    sub_indent = indent + 2
                    fake = (sub_indent, item, lines[i][2])
                    lines[i] = fake
                    val, i = block(i, sub_indent)
                    seq.append(val)
                else:
                    val, i = scalar(item, i + 1, indent)
                    seq.append(val)
                i = next_idx(i)
            return seq, i
        mapping = {}
        while i < len(lines) and lines[i][0] == indent:
            ks = _key_split(lines[i][1])
            if ks is None:
                raise ValueError(f"cannot parse YAML line: {lines[i][2]!r}")
            key, rest = ks
            val, i = scalar(rest, i + 1, indent)
            if key == "<<":
                for k, v in val.items():
                    mapping.setdefault(k, v)
            else:
                mapping[key] = val
            i = next_idx(i)
        return mapping, i

    start = next_idx(0)
    if start >= len(lines):
        return {}
    doc, _ = block(start, lines[start][0])
    return doc


# --------------------------------------------------------------------------------------------
# Recipes: line based, so that commented-out entries are seen too.
# --------------------------------------------------------------------------------------------
def parse_recipe(text):
    spec, entries = {}, []
    section = None
    cur = None  # current test entry
    for ln in text.splitlines():
        if re.match(r"^\S", ln):
            section = ln.split(":")[0].strip()
            continue
        if section == "spec":
            m = re.match(r"^  ([A-Za-z_]+):\s*(.*)$", ln)
            if m:
                spec[m.group(1)] = _unquote(_strip_comment(m.group(2)))
            continue
        if section != "products":
            continue
        m = re.match(r"^\s*(#\s*)?-\s*test_case:\s*\[(.*)\]", ln)
        if m:
            cur = {
                "names": [n.strip() for n in m.group(2).split(",") if n.strip()],
                "commented": bool(m.group(1)),
                "products": [],
            }
            entries.append(cur)
            continue
        if cur is None:
            continue
        is_comment = ln.lstrip().startswith("#")
        if cur["commented"] and not is_comment:
            cur = None if ln.strip() else cur
            continue
        if not cur["commented"] and is_comment:
            continue
        body = ln.lstrip().lstrip("#").rstrip() if is_comment else ln.rstrip()
        mm = re.match(r"^\s*(-\s+)?([A-Za-z_]+):\s*(.*)$", body)
        if not mm:
            continue
        key, val = mm.group(2), _strip_comment(mm.group(3))
        if key == "products":
            continue
        if mm.group(1) or not cur["products"]:
            cur["products"].append({})
        vals = [v.strip() for v in val.strip("[]").split(",")] if val.startswith("[") else [val]
        cur["products"][-1][key] = vals
    out = []
    for e in entries:
        for p in e["products"] or [{}]:
            for env in p.get("environment", [spec.get("environment", "")]):
                for plat in p.get("platforms", [spec.get("platforms", "")]):
                    for name in e["names"]:
                        out.append(
                            {
                                "name": name,
                                "commented": e["commented"],
                                "environment": env,
                                "platform": plat,
                                "model": spec.get("model", ""),
                                "nodes": (p.get("nodes") or [spec.get("nodes", "")])[0],
                                "gpus": (p.get("gpus") or [spec.get("gpus", "")])[0],
                            }
                        )
    return out


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------
def sval(v):
    """A MODEL_ARGS value as it reaches the command line."""
    if isinstance(v, list):
        return " ".join(sval(x) for x in v)
    return "" if v is None else str(v).strip()


def command_line(args):
    """MODEL_ARGS as pretrain_gpt.py receives them: a true flag bare, a false one left out, the rest flag and
    value, each shell-quoted."""
    words = []
    for key, value in args.items():
        text = sval(value)
        if text.lower() == "true":
            words.append(key)
        elif text.lower() != "false":
            values = value if isinstance(value, list) else [value] if text else []
            words += [key] + [shlex.quote(sval(v)) for v in values]
    return " ".join(words)


def is_true(args, key):
    return key in args and sval(args[key]).lower() == "true"


def num(x):
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def fmt_num(x):
    if x is None:
        return ""
    if float(x).is_integer():
        return str(int(x))
    return repr(float(x))


def metric_values(golden, key):
    m = golden.get(key)
    if not isinstance(m, dict):
        return None
    vals = m.get("values", {})
    pts = []
    for step, v in vals.items():
        if isinstance(v, (int, float)) and v == v and v not in (float("inf"), float("-inf")):
            pts.append((int(step), float(v)))
    pts.sort()
    return pts, len(vals), m


def layout_stages(layout):
    s = layout.replace(",", "")
    for pat in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        s = re.sub(pat, lambda x: x.group(1) * int(x.group(2)), s)
    return len(s.split("|"))


def hardware_of(env_plat):
    plat = env_plat.split("_", 1)[1] if "_" in env_plat else ""
    if "gb200" in plat:
        return "GB200", plat
    if "h100" in plat:
        return "H100", plat
    if "a100" in plat:
        return "A100", plat
    return "", plat


# --------------------------------------------------------------------------------------------
# Main extraction
# --------------------------------------------------------------------------------------------
def hw_dir_ok(hw):
    """Which recipe files can hold a case run on this hardware (current and past layouts)."""
    if hw == "GB200":
        return lambda f: f.startswith(RECIPES + "/gb200/") or (f.count("/") == RECIPES.count("/") + 1 and "gb200" in f)
    return lambda f: (
        f.startswith(RECIPES + "/h100/")
        or f.startswith(OLD_RECIPES)
        or (f.count("/") == RECIPES.count("/") + 1 and "gb200" not in f)
    )


def build_rows(src):
    # Recipes at the commit.
    by_case = {}
    for f in src.files(RECIPES):
        if f.endswith((".yaml", ".yml")):
            for e in parse_recipe(src.read(f) or ""):
                e["file"] = f
                by_case.setdefault((e["model"], e["name"]), []).append(e)

    # History of the test cases; renames are followed by hand below.
    hist = src.history([TEST_CASES + "/" + f for f in FAMILIES])

    def versions(path):
        """[(commit, date, path at commit)] of every content change of path, newest first,
        and the former paths it was renamed from."""
        cur, out, former = path, [], []
        for h, d, changes in hist:
            for status, old, new in changes:
                if new != cur:
                    continue
                if status.startswith("R"):
                    former.append(old)
                    if status[1:] != "100":
                        out.append((h, d, new))
                    cur = old
                elif status.startswith(("M", "A")):
                    out.append((h, d, cur))
                break
        return out, former

    def all_series(text):
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        out = {}
        for m, v in data.items():
            if not isinstance(v, dict):
                continue
            vals = v.get("values") or {}
            if isinstance(vals, list):  # older format: a list from start_step every step_interval
                start, every = v.get("start_step", 0), v.get("step_interval", 1) or 1
                vals = {str(start + i * every): x for i, x in enumerate(vals)}
            out[m] = dict(vals) if isinstance(vals, dict) else {}
        return out

    def new_data(newer, older):
        """True if the newer golden holds data the older did not: a metric or step it lacked,
        or a different value at a step both hold. Dropping entries or renaming is not."""
        if older is None:
            return True
        for m, vals in newer.items():
            if m not in older:
                return True
            for step, v in vals.items():
                if step not in older[m] or older[m][step] != v:
                    return True
        return False

    def measured_at(path):
        """(commit, date, path) of the newest commit that brought new measured data into the
        golden file (later commits only renamed it or dropped entries), and former paths."""
        vers, former = versions(path)
        if not vers:
            return None, former
        texts = [all_series(src.read(p, h) or "") for h, _d, p in vers]
        for k in range(len(vers)):
            if texts[k] is None:
                continue
            older = texts[k + 1] if k + 1 < len(vers) else None
            if new_data(texts[k], older):
                return vers[k], former
        return vers[-1], former

    skipped, prepared = [], []
    case_dirs = {}
    for f in src.files(TEST_CASES):
        parts = f.split("/")
        if len(parts) != 6 or parts[3] not in FAMILIES:
            continue
        case_dirs.setdefault((parts[3], parts[4]), []).append(parts[5])

    other = {}
    for f in src.files(TEST_CASES):
        parts = f.split("/")
        if (
            len(parts) == 6
            and parts[3] not in FAMILIES
            and parts[5].startswith("golden_values")
            and MEM_MAX in (src.read(f) or "")
        ):
            other.setdefault(parts[3], set()).add(parts[4])
    for fam in sorted(other):
        skipped.append(
            f"family {fam}/ not read: only gpt/, moe/ and mixtral/ are ({len(other[fam])} case(s) with memory golden"
            " values)"
        )

    for (fam, case), names in sorted(case_dirs.items()):
        goldens = sorted(n for n in names if n.startswith("golden_values") and n.endswith(".json"))
        mem_goldens = []
        for g in goldens:
            path = "/".join([TEST_CASES, fam, case, g])
            text = src.read(path) or ""
            try:
                data = json.loads(text)
            except ValueError:
                skipped.append(
                    "{}/{}/{} ({})".format(fam, case, g, "empty file" if not text.strip() else "not valid JSON")
                )
                continue
            if isinstance(data, dict) and MEM_MAX in data:
                mem_goldens.append((g, data))
        if not mem_goldens:
            continue
        cfg = parse_yaml(src.read("/".join([TEST_CASES, fam, case, "model_config.yaml"])) or "")
        mode = sval(cfg.get("MODE")) or "pretraining"
        if mode != "pretraining":
            skipped.append(f"{fam}/{case}: MODE {mode}, {len(mem_goldens)} golden file(s) with memory")
            continue
        for g, data in mem_goldens:
            env_plat = g[len("golden_values_") : -len(".json")]
            second = env_plat.endswith("_2nd")
            if second:
                env_plat = env_plat[:-4]
            origin, former = measured_at("/".join([TEST_CASES, fam, case, g]))
            former_dirs = []
            for p in former:
                d = p.rsplit("/", 2)[-2]
                if d != case and d not in former_dirs:
                    former_dirs.append(d)
            hw, hw_note = hardware_of(env_plat)[0], ""
            if not hw:
                for d in former_dirs:
                    m = re.search(r"dgx_?(a100|h100|gb200|b200)", d)
                    if m:
                        hw = m.group(1).upper()
                        hw_note = f"hardware from former case name {d}"
                        break
            prepared.append(
                dict(
                    fam=fam,
                    case=case,
                    cfg=cfg,
                    golden=g,
                    data=data,
                    env_plat=env_plat,
                    second=second,
                    origin=origin,
                    former_dirs=former_dirs,
                    hw=hw,
                    hw_note=hw_note,
                )
            )

    # World size from the recipes at the commit; cases no current recipe runs on that hardware
    # are looked up in the recipes' history.
    for p in prepared:
        p["ws"] = world_size_now(p, by_case)
    hist_ws = {}
    for cls in ("GB200", "other"):
        need = sorted({p["case"] for p in prepared if p["ws"] is None and (p["hw"] == "GB200") == (cls == "GB200")})
        found = src.recipe_history(need, hw_dir_ok("GB200" if cls == "GB200" else ""))
        for name, val in found.items():
            hist_ws[(cls, name)] = val
    rows = []
    for p in prepared:
        if p["ws"] is None:
            p["ws"] = world_size_fallback(p, hist_ws, by_case)
        rows.append(make_row(src, p))
    return rows, skipped


def _pick(cands, how):
    sizes = sorted({(e["nodes"], e["gpus"]) for e in cands})
    files = sorted({e["file"][len(RECIPES) + 1 :] if e["file"].startswith(RECIPES) else e["file"] for e in cands})
    if len(sizes) == 1:
        n, gp = sizes[0]
        return n, gp, "world size: {} {}".format(", ".join(files), how)
    return "", "", "world size ambiguous: {} give {}".format(", ".join(files), sizes)


def world_size_now(p, by_case):
    """(nodes, gpus_per_node, note) from the recipes at the commit, or None."""
    cfg = p["cfg"]
    if sval(cfg.get("TEST_TYPE")) == "checkpoint-consistency":
        gpn = sval(((cfg.get("MODEL_ENV_VARS") or {}).get("MODEL_ARGS") or {}).get("GPUS_PER_NODE"))
        return (
            "1",
            gpn,
            (
                f"world size: MODEL_ENV_VARS.MODEL_ARGS.GPUS_PER_NODE={gpn} (checkpoint-"
                "consistency test: the run_ci_test.sh loop runs MODEL_ARGS first; the "
                "golden holds that first run)"
            ),
        )
    if sval(cfg.get("TEST_TYPE")) == "release":
        return (
            "",
            "",
            (
                "world size unknown: release test, run from NVIDIA's internal "
                "convergence-test recipes; none in this repository"
            ),
        )
    env, _, plat = p["env_plat"].partition("_")
    ok = hw_dir_ok(p["hw"])
    entries = by_case.get((p["fam"], p["case"]), [])
    exact = [e for e in entries if not e["commented"] and e["environment"] == env and e["platform"] == plat]
    if exact:
        return _pick(exact, "spec nodes x gpus (the recipe runs this environment and platform)")
    same_hw = [e for e in entries if not e["commented"] and ok(e["file"])]
    if same_hw:
        runs = "/".join(sorted({e["environment"] + "_" + e["platform"] for e in same_hw}))
        return _pick(
            same_hw,
            "spec nodes x gpus (the recipe runs the case as {}, not as this "
            "golden file's {}: assumed the same world size)".format(runs, p["env_plat"]),
        )
    commented = [e for e in entries if e["commented"] and ok(e["file"])]
    if commented:
        return _pick(commented, "spec nodes x gpus (the case is commented out there)")
    return None


def world_size_fallback(p, hist_ws, by_case):
    cls = "GB200" if p["hw"] == "GB200" else "other"
    if (cls, p["case"]) in hist_ws:
        c, d, _f, entries = hist_ws[(cls, p["case"])]
        n, gp, note = _pick(entries, "spec nodes x gpus")
        return n, gp, note + f" at {c[:10]} ({d}), the newest commit whose recipes ran the case"
    for d in p["former_dirs"]:
        m = re.search(r"_(\d+)N(\d+)G(?:_|$)", d)
        if m:
            return (
                m.group(1),
                m.group(2),
                (
                    f"world size: the 'NxG' suffix of former case name {d} (no recipe names the case "
                    "now or in its history under its current name)"
                ),
            )
    if p["hw"] == "GB200":
        fname = "gb200/{}{}.yaml".format(p["fam"], "-1node" if p["case"].endswith("_1node") else "")
    else:
        fname = "h100/{}.yaml".format(p["fam"])
    specs = [e for (m, _n), es in by_case.items() for e in es if e["file"] == RECIPES + "/" + fname]
    sizes = sorted({(e["nodes"], e["gpus"]) for e in specs})
    if len(sizes) == 1:
        return (
            sizes[0][0],
            sizes[0][1],
            (
                "world size ASSUMED: no recipe names the case now or in its history; recorded the "
                f"spec default of {fname}"
            ),
        )
    return "", "", "world size unknown: no recipe names the case now or in its history"


def make_row(src, p):
    fam, case, cfg, golden_name, data = p["fam"], p["case"], p["cfg"], p["golden"], p["data"]
    notes = []
    hw = p["hw"]
    test_type = sval(cfg.get("TEST_TYPE"))
    if p["hw_note"]:
        notes.append(p["hw_note"])
    elif not hw:
        notes.append("golden file names no platform; hardware unknown")

    # Which MODEL_ARGS block produced this golden file.
    key = "MODEL_ARGS"
    if p["second"]:
        if "MODEL_ARGS_2" in cfg:
            key = "MODEL_ARGS_2"
        if test_type == "ckpt-resume":
            notes.append(
                "second run of a ckpt-resume test: resumes from the checkpoint the first "
                "run saved at train-iters/2; peak counted from that process's start"
            )
        else:
            notes.append(f"second run of a {test_type} test: loads the frozen checkpoint")
    elif test_type == "frozen-resume":
        notes.append("first run of a frozen-resume test (no checkpoint loaded)")
    elif test_type == "ckpt-resume":
        notes.append("first run of a ckpt-resume test (no checkpoint loaded; saves one)")
    elif test_type == "release":
        notes.append(
            "release (convergence) test: runs over several job windows resumed from "
            "checkpoints (each a new process, so the peak restarts); golden = every 5th "
            "step merged over all its TensorBoard files (--is-convergence-test)"
        )
    args = cfg.get(key) or {}

    nodes, gpn, ws_note = p["ws"]
    notes.append(ws_note)

    origin = p["origin"]
    if origin:
        h, d, path_at = origin
        n = f"values measured by the run committed {d} ({h[:10]})"
        if p["former_dirs"]:
            n += "; former case name(s): {}".format(", ".join(p["former_dirs"]))
        notes.append(n)
        old_text = src.read(path_at.rsplit("/", 1)[0] + "/model_config.yaml", h)
        if old_text is None:
            notes.append("model_config.yaml absent at that commit; not compared")
        else:
            try:
                old_args = parse_yaml(old_text).get(key) or {}
            except ValueError as exc:
                old_args = None
                notes.append(f"model_config.yaml at that commit not parsed ({exc})")
            if old_args is not None:
                diff, changed = diff_args(old_args, args)
                if diff:
                    notes.append("MODEL_ARGS then vs now: " + diff)
                drift = sorted(k for k in changed if k not in PATH_FLAGS | CKPT_INFRA | IRRELEVANT)
                if drift:
                    notes.append(
                        "CONFIG DRIFT: flags that can change memory differ between the "
                        "measured run's model_config.yaml and this commit's: " + ", ".join(drift)
                    )

    row = {c: "" for c in COLUMNS}
    row.update(
        {
            "case": fam + "/" + case,
            "golden_file": golden_name,
            "hardware": hw,
            "commit": src.commit,
            "nodes": nodes,
            "gpus_per_node": gpn,
        }
    )
    fill_config(row, args, notes)
    row["model_args"] = command_line(args)

    # Memory.
    pts, total, meta = metric_values(data, MEM_MAX)
    vals = [v for _, v in pts]
    if vals:
        row["mem_max_allocated_bytes_median"] = fmt_num(statistics.median(vals))
        row["mem_max_allocated_bytes_last"] = fmt_num(pts[-1][1])
        notes.append(f"mem steps {pts[0][0]}-{pts[-1][0]}, interval {meta.get('step_interval', '')}")
    row["steps_recorded"] = str(len(vals))
    if total != len(vals):
        notes.append(f"{total - len(vals)} of {total} mem-max values are not numbers, left out")
    cur = metric_values(data, MEM_CUR)
    if cur and cur[0]:
        row["mem_allocated_bytes_median"] = fmt_num(statistics.median(v for _, v in cur[0]))
    if MEM_MAX in [sval(m) for m in (cfg.get("METRICS") or [])]:
        notes.append("mem-max is a checked metric here (rtol 0.05 per step)")
    row["notes"] = "; ".join(n for n in notes if n)
    return row


def _path_delta(a, b):
    """The differing middle of two paths, cut at '/' boundaries: 'x/the_pile/y' vs
    'x/common_pile/y' gives ('.../the_pile/...', '.../common_pile/...')."""
    pa, pb = a.split("/"), b.split("/")
    i = 0
    while i < min(len(pa), len(pb)) - 1 and pa[i] == pb[i]:
        i += 1
    j = 0
    while j < min(len(pa), len(pb)) - i and pa[-1 - j] == pb[-1 - j]:
        j += 1
    mid_a = "/".join(pa[i : len(pa) - j]) or "(nothing)"
    mid_b = "/".join(pb[i : len(pb) - j]) or "(nothing)"
    pre = ".../" if i else ""
    suf = "/..." if j else ""
    return pre + mid_a + suf, pre + mid_b + suf


def diff_args(old, new):
    out, changed = [], []
    for k in sorted(set(old) | set(new)):
        if k not in new:
            out.append("-" + k)
        elif k not in old:
            out.append("+" + k)
        elif sval(old[k]) != sval(new[k]):
            a, b = sval(old[k]), sval(new[k])
            if k in PATH_FLAGS:
                a, b = _path_delta(a, b)
            out.append(f"{k} {a}->{b}")
        else:
            continue
        changed.append(k)
    return ", ".join(out), changed


def fill_config(row, a, notes):
    g = lambda k, d="": sval(a[k]) if k in a else d  # noqa: E731
    tf = lambda k: "true" if is_true(a, k) else "false"  # noqa: E731

    hidden, heads = num(g("--hidden-size")), num(g("--num-attention-heads"))
    swiglu = is_true(a, "--swiglu")
    row["num_layers"] = g("--num-layers")
    row["hidden_size"] = g("--hidden-size")
    row["num_attention_heads"] = g("--num-attention-heads")
    ffn = g("--ffn-hidden-size")
    if not ffn and hidden:
        ffn = str(int((4 * hidden * 2 / 3) / 64) * 64 if swiglu else 4 * hidden)
    row["ffn_hidden_size"] = ffn
    gqa = is_true(a, "--group-query-attention")
    row["group_query_attention"] = "true" if gqa else "false"
    if gqa:
        row["num_query_groups"] = g("--num-query-groups", "1")
    else:
        row["num_query_groups"] = g("--num-attention-heads")
        if "--num-query-groups" in a:
            notes.append("--num-query-groups {} ignored: no --group-query-attention".format(g("--num-query-groups")))
    kv = g("--kv-channels")
    if not kv and hidden and heads:
        kv = str(hidden // heads)
    row["kv_channels"] = kv
    row["seq_length"] = g("--seq-length")
    row["max_position_embeddings"] = g("--max-position-embeddings")
    row["position_embedding_type"] = g("--position-embedding-type", "learned_absolute")
    row["swiglu"] = "true" if swiglu else "false"
    row["normalization"] = g("--normalization", "LayerNorm")
    row["untie_embeddings_and_output_weights"] = tf("--untie-embeddings-and-output-weights")

    tok = g("--tokenizer-type")
    parts = [tok if tok else "GPT2BPETokenizer (pretrain_gpt.py default)"]
    for k in ("--vocab-size", "--vocab-file", "--merge-file", "--tokenizer-model"):
        if k in a:
            parts.append(f"{k[2:]}={g(k)}")
    row["vocab_size_or_tokenizer"] = "; ".join(parts)
    row["make_vocab_size_divisible_by"] = g("--make-vocab-size-divisible-by", "128")

    tp = num(g("--tensor-model-parallel-size", "1"))
    pp = num(g("--pipeline-model-parallel-size", "1"))
    row["tensor_model_parallel_size"] = str(tp)
    row["pipeline_model_parallel_size"] = str(pp)
    if "--num-layers-per-virtual-pipeline-stage" in a:
        row["num_layers_per_virtual_pipeline_stage_or_vpp"] = "layers_per_virtual_stage=" + g(
            "--num-layers-per-virtual-pipeline-stage"
        )
    elif "--num-virtual-stages-per-pipeline-rank" in a:
        row["num_layers_per_virtual_pipeline_stage_or_vpp"] = "vpp=" + g("--num-virtual-stages-per-pipeline-rank")
    elif "--pipeline-model-parallel-layout" in a and pp:
        stages = layout_stages(g("--pipeline-model-parallel-layout"))
        vpp = stages // pp
        row["num_layers_per_virtual_pipeline_stage_or_vpp"] = f"vpp={vpp} (from --pipeline-model-parallel-layout)"
    row["context_parallel_size"] = g("--context-parallel-size", "1")
    row["expert_model_parallel_size"] = g("--expert-model-parallel-size", "1")

    moe = "--num-experts" in a and g("--num-experts") not in ("", "0")
    if "--expert-tensor-parallel-size" in a:
        row["expert_tensor_parallel_size"] = g("--expert-tensor-parallel-size")
        if not moe:
            notes.append("--expert-tensor-parallel-size set but no experts (dense model)")
    elif moe:
        row["expert_tensor_parallel_size"] = str(tp)
    if moe:
        row["num_experts"] = g("--num-experts")
        row["moe_router_topk"] = g("--moe-router-topk", "2")
        row["moe_ffn_hidden_size"] = g("--moe-ffn-hidden-size", ffn)
        row["moe_shared_expert_intermediate_size"] = g("--moe-shared-expert-intermediate-size")
        row["moe_layer_freq"] = g("--moe-layer-freq", "1")
        row["moe_token_dispatcher_type"] = g("--moe-token-dispatcher-type", "allgather")
        row["moe_grouped_gemm"] = tf("--moe-grouped-gemm")
    elif "--expert-model-parallel-size" in a and g("--expert-model-parallel-size") != "1":
        notes.append("--expert-model-parallel-size set but no experts")

    sp = is_true(a, "--sequence-parallel")
    if sp and tp == 1:
        notes.append("--sequence-parallel given but TP=1: validate_args turns it off")
        sp = False
    row["sequence_parallel"] = "true" if sp else "false"

    dist = is_true(a, "--use-distributed-optimizer")
    mfsdp = is_true(a, "--use-megatron-fsdp")
    optimizer = g("--optimizer", "adam")
    if mfsdp and g("--megatron-fsdp-version", "1") == "1" and not dist:
        notes.append("Megatron-FSDP v1 turns on the distributed optimizer")
        dist = True
    if optimizer not in ("adam", "sgd"):
        if dist or optimizer == "dist_muon":
            row["use_distributed_optimizer"] = "layer-wise"
            notes.append(
                f"optimizer {optimizer} with --use-distributed-optimizer: validate_args switches "
                "to the layer-wise distributed optimizer"
            )
        else:
            row["use_distributed_optimizer"] = "false"
    else:
        row["use_distributed_optimizer"] = "true" if dist else "false"
    row["overlap_grad_reduce"] = tf("--overlap-grad-reduce")
    row["overlap_param_gather"] = tf("--overlap-param-gather")
    row["micro_batch_size"] = g("--micro-batch-size")
    row["global_batch_size"] = g("--global-batch-size")
    if "--step-batch-size-schedule" in a:
        notes.append("global batch follows --step-batch-size-schedule {}".format(g("--step-batch-size-schedule")))
    row["precision"] = "bf16" if is_true(a, "--bf16") else "fp16" if is_true(a, "--fp16") else "fp32"
    if "--fp8-format" in a:
        row["fp8"] = "{}/{}".format(g("--fp8-format"), g("--fp8-recipe", "delayed"))
    gran = g("--recompute-granularity")
    row["recompute_granularity"] = gran
    row["recompute_method"] = g("--recompute-method")
    row["recompute_num_layers"] = g("--recompute-num-layers")
    if gran == "selective":
        row["recompute_modules"] = g("--recompute-modules", "core_attn")
        if row["recompute_num_layers"]:
            notes.append("--recompute-num-layers has no effect with selective recompute")
    elif "--recompute-modules" in a:
        row["recompute_modules"] = g("--recompute-modules")
        notes.append("--recompute-modules given without selective granularity")
    if not gran and row["recompute_num_layers"]:
        notes.append("--recompute-num-layers given without --recompute-granularity (no recompute)")
    row["transformer_impl"] = g("--transformer-impl", "transformer_engine")
    row["attention_backend"] = g("--attention-backend", "auto")
    row["use_flash_attn"] = tf("--use-flash-attn")
    row["use_mcore_models"] = tf("--use-mcore-models")
    if is_true(a, "--multi-latent-attention"):
        notes.append(
            "multi-latent attention (num_query_groups/kv_channels not used by MLA; "
            "see q/kv-lora-rank and head dims in flags)"
        )

    other = []
    for k in a:
        if k in COVERED or k in IRRELEVANT or not k.startswith("--"):
            continue
        v = sval(a[k])
        other.append(k if v.lower() == "true" else f"{k}={v}")
    row["ckpt_or_other_relevant_flags"] = "; ".join(other)


def header_lines(src, rows, skipped):
    n_cases = len({r["case"] for r in rows})
    warn = ""
    if src.commit != VERIFIED_COMMIT:
        warn = (
            "# WARNING: the defaults and line numbers below were checked at {} only; this "
            "file was read at {}.\n".format(VERIFIED_COMMIT, src.commit or "a plain directory")
        )
    text = """\
# Gathered {gathered}: Megatron-LM functional-test peak memory per GPU. No constant in dpcost is set or tuned from it;
# its first comparison found that dpcost's Megatron reader ignored the attention flags, fixed from Megatron's source
# (megatron-functional-peaks.md, "How dpcost was set beside it"), so it is in sample for that reading.
# Source: github.com/NVIDIA/Megatron-LM, commit {commit} (committed {date}):
#   tests/functional_tests/test_cases/{{gpt,moe,mixtral}}/<case>/model_config.yaml (MODEL_ARGS; MODEL_ARGS_2 for a
#   _2nd file when present) and golden_values_<environment>_<platform>[_2nd].json; world size from the CI recipes
#   tests/test_utils/recipes/{{h100,gb200}}/*.yaml (spec nodes x gpus) at the same commit, else their git history.
# Rows: {n_rows}, one per (case, golden file holding "mem-max-allocated-bytes"); {n_cases} cases; pretraining only.
# Regenerate: python3 extract_megatron_functional.py <Megatron-LM git dir>   (standard library only; same bytes out)
{warn}#
# WHAT THE NUMBER IS. megatron/training/training.py at this commit, training_log(), lines 3436-3445:
#   if args.log_memory_to_tensorboard: mem_stats = torch.cuda.memory_stats()
#     writer.add_scalar("mem-allocated-bytes", mem_stats["allocated_bytes.all.current"], iteration)
#     writer.add_scalar("mem-max-allocated-bytes", mem_stats["allocated_bytes.all.peak"], iteration)
#   = torch.cuda.max_memory_allocated(): PyTorch caching-allocator bytes of the current device only (no CUDA context,
#   NCCL buffers, or reserved-but-free cache). Megatron never resets the peak in training (no reset_peak_memory_stats
#   under megatron/), so it is the peak since the process started, checkpoint load/save included.
# REPORTING RANK. That block sits under 'if writer and (iteration % args.tensorboard_log_interval == 0):' (training.py
#   line 3376), and the TensorBoard writer is created on one rank only, megatron/training/global_vars.py lines 240-241:
#   "if hasattr(args, 'tensorboard_dir') and args.tensorboard_dir and args.rank == (args.world_size - 1):".
#   So every value is the LAST global rank's GPU (world_size-1): last pipeline stage (output layer + loss when PP>1),
#   last TP/CP/DP/EP index. It is not a max over ranks.
# The golden JSON is that TensorBoard scalar read back by tests/functional_tests/python_test_utils/
#   get_test_results_from_tensorboard_logs.py (float32 in TensorBoard: ~7 significant digits) for one run: every
#   repeat of run_ci_test.sh rewrites the JSON, so the CI job leaves the last repeat's; every step (every 5th for
#   release tests). _2nd files are the resumed second run of a resume test (a new process, so a new peak).
# REDUCTION. mem_max_allocated_bytes_median = median over the golden file's recorded steps (non-numeric 'nan' entries
#   left out; steps_recorded counts the numeric ones); _last = value at the last recorded step;
#   mem_allocated_bytes_median = median of the 'mem-allocated-bytes' (current, after the step) series.
#
# CONFIGURATION COLUMNS hold what Megatron runs with for the model_config.yaml AT THIS COMMIT. Absent flags are filled
#   with Megatron's default at this commit: ffn_hidden_size 4*hidden, swiglu int(4*hidden*2/3/64)*64 [arguments.py
#   1320-1329]; kv_channels hidden//heads [1331-1333]; num_query_groups = heads unless --group-query-attention (then
#   --num-query-groups, argparse default 1) [argument_utils.py 330-333]; position_embedding_type learned_absolute
#   [arguments.py 2397]; make_vocab_size_divisible_by 128 [2441]; tokenizer GPT2BPETokenizer [pretrain_gpt.py 527];
#   normalization LayerNorm [transformer_config.py 256]; TP/PP/CP/EP 1 [model_parallel_config.py 55/83/100/127];
#   MoE rows only (empty for dense): expert_tensor_parallel_size = TP [arguments.py 587-588], moe_router_topk 2
#   [transformer_config.py 760], moe_ffn_hidden_size = ffn_hidden_size [arguments.py 1650-1651], moe_layer_freq 1
#   [3520], dispatcher allgather [transformer_config.py 891], grouped gemm false [850]; fp8 recipe 'delayed' when only
#   --fp8-format is set [594] (fp8 column = format/recipe); recompute_modules core_attn when granularity is selective
#   [1940-1941]; transformer_impl transformer_engine [1314]; attention_backend auto = Transformer Engine picks [151];
#   boolean flags false; precision bf16/fp16 from --bf16/--fp16, else fp32 params.
# Where validate_args overrides a flag the column holds the result and notes say so: --sequence-parallel with TP=1 ->
#   false [arguments.py 1434-1439]; Megatron-FSDP v1 -> distributed optimizer [1118-1135]; muon (any non-Adam/SGD
#   optimizer) with --use-distributed-optimizer -> 'layer-wise' distributed optimizer [1726-1737].
# use_mcore_models is the flag as written: deprecated and ignored at this commit [arguments.py 2949-2952]; all cases
#   build Megatron-Core models. num_layers_per_virtual_pipeline_stage_or_vpp: 'layers_per_virtual_stage=N' or 'vpp=N'.
# ckpt_or_other_relevant_flags: every other MODEL_ARGS flag except optimizer hyper-parameters, LR schedules, data and
#   output paths, logging, eval cadence, router-loss settings and rope numerics; '--flag' = true, '--flag=value'.
# WORLD SIZE = nodes x gpus_per_node; notes say which recipe gave it and whether it had to be assumed. A100/H100 recipes
#   run 8 GPUs per node (_run_training.sh GPUS_PER_NODE default 8), GB200 recipes 4 (export GPUS_PER_NODE={{gpus}}).
# MEASURED vs READ. Golden files are not re-measured on every change: notes give 'values measured by the run committed
#   <date> (<hash>)' (newest commit that brought new data into the file; renames and pure deletions skipped),
#   'MODEL_ARGS then vs now' (diff of model_config.yaml at that commit vs this one), and 'CONFIG DRIFT: ...' when a
#   flag that can change memory differs (path moves and checkpoint/timing plumbing are listed but not called drift).
# Filter words in notes: 'ASSUMED', 'unknown', 'CONFIG DRIFT', 'second run', 'release', 'layer-wise',
#   'hardware unknown'.
""".format(
        gathered=GATHERED,
        commit=src.commit or "(plain directory)",
        date=src.date or "?",
        n_rows=len(rows),
        n_cases=n_cases,
        warn=warn,
    )
    for s in skipped:
        text += f"# not included: {s}\n"
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="Megatron-LM git directory or checkout")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument(
        "--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "megatron-functional-peaks.csv")
    )
    ns = ap.parse_args(argv)
    src = Source(ns.path, ns.rev)
    rows, skipped = build_rows(src)
    rows.sort(key=lambda r: (r["case"], r["golden_file"]))
    buf = io.StringIO()
    buf.write(header_lines(src, rows, skipped))
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    with open(ns.out, "w", encoding="utf-8", newline="") as fh:
        fh.write(buf.getvalue())
    print(f"wrote {len(rows)} rows ({len({r['case'] for r in rows})} cases) to {ns.out}")


if __name__ == "__main__":
    sys.exit(main())
