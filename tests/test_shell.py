"""dpcost.training_configs.shell reads a launch script's commands as bash runs them: each case is run by bash itself,
with the launcher printing the words it is given, and the words must be the same."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from dpcost.training_configs.megatron import arguments
from dpcost.training_configs.shell import command_words

CONFIGS = Path(__file__).resolve().parents[1] / "examples" / "training-configs"

# Megatron-LM's examples/llama/train_llama3_8b_h100_fp8.sh (779c5b74), abridged: arrays, `+=` of another array,
# quoted two-word items spliced unquoted, positional defaults, and an if/else on them.
LLAMA3_FP8 = """\
TOKENIZER_ARG=${3:-"MOCK"} # Path to tokenizer model, or "MOCK"
GPUS_PER_NODE=8
NUM_NODES=1
WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))
DTYPE="fp8"
TRAINING_ARGS=(
    --micro-batch-size 1
    --bf16
)
DTYPE_ARGS=()
if [[ "$DTYPE" == "fp8" ]]; then
    DTYPE_ARGS+=(
        "--fp8-format hybrid"
        "--fp8-param-gather"
    )
fi
DDP_ARGS=(
    --use-distributed-optimizer
    --overlap-grad-reduce
)
TRAINING_ARGS+=("${DDP_ARGS[@]}")
DATA_ARGS_LIST=()
if [[ "$TOKENIZER_ARG" == "MOCK" ]] || [[ -z "$TOKENIZER_ARG" ]]; then
    DATA_ARGS_LIST+=(
        "--tokenizer-type NullTokenizer"
        "--vocab-size 128256"
    )
else
    DATA_ARGS_LIST+=("--tokenizer-type HuggingFaceTokenizer")
fi
torchrun --nproc_per_node $GPUS_PER_NODE --world $WORLD_SIZE pretrain_gpt.py \\
    ${TRAINING_ARGS[@]} \\
    ${DTYPE_ARGS[@]} \\
    ${DATA_ARGS_LIST[@]}
"""

# Megatron-LM's examples/megatron_fsdp/train_llama3_8b_fsdp_h100_fp8.sh (779c5b74), abridged: a default read from
# an unset variable, and an array that names itself as it grows.
FSDP = """\
SHARDING_STRATEGY=${SHARDING_STRATEGY:-"optim_grads_params"}
TRAINING_ARGS=(
    --micro-batch-size 1
    --bf16
)
TRAINING_ARGS=(
    "${TRAINING_ARGS[@]}"
    --use-megatron-fsdp
    --data-parallel-sharding-strategy ${SHARDING_STRATEGY}
)
export NAME=llama
torchrun pretrain_gpt.py "${TRAINING_ARGS[@]}" --name $NAME; echo done
"""

# Nested branches, elif, a test bash can answer that dpcost cannot (a file: absent here, so true), strings
# appended with +=, a default holding another expansion, assignments on one line, and a command whose environment
# is set before it (its words expanded first: NAME is still "old" in them).
BRANCHES = """\
MODE=small
EXTRA="--a 1"
EXTRA+=" --b 2"
if [[ "$MODE" == "large" ]]; then
    SIZE=64
elif [ "$MODE" = "small" ] && [[ -n "$EXTRA" ]]; then
    SIZE=8
    if [ ! -f /nonexistent/dpcost/file ]; then
        EXTRA="$EXTRA --c 3"
    fi
else
    SIZE=1
fi
LR=${LEARNING_RATE:-${DEFAULT_LR:-0.1}}
torchrun --size $SIZE --lr $LR $EXTRA
A=1 B="two words" NAME=old
	CUDA_DEVICE_MAX_CONNECTIONS=1 NAME=x torchrun --a $A --b "$B" --name $NAME
"""


def bash_words(script: str) -> list[list[str]]:
    """The words bash hands torchrun and echo, one list per call."""
    printing = '{ printf "%s\\n" "$@"; printf "\\x1e\\n"; }'
    prelude = f"torchrun() {printing}\necho() {printing}\n"
    done = subprocess.run(["bash", "-c", prelude + script], capture_output=True, text=True, check=True)
    calls = done.stdout.split("\x1e\n")
    return [call.splitlines() for call in calls[:-1]]


needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the reference")


@needs_bash
@pytest.mark.parametrize("script", [LLAMA3_FP8, FSDP, BRANCHES], ids=["llama3-fp8", "fsdp", "branches"])
def test_the_commands_words_are_those_bash_passes(script: str) -> None:
    ours = [words for words in command_words(script, "script.sh") if words and words[0] in ("torchrun", "echo")]
    assert [words[1:] for words in ours] == bash_words(script)


@needs_bash
def test_a_script_file_that_ends_in_a_backslash_gives_the_words_bash_passes(tmp_path: Path) -> None:
    """Megatron-LM's examples/t5/train_t5_220m_distributed.sh ends its launch with a backslash and no newline: bash,
    running the file, continues it into nothing (it had been refused: "No escaped character")."""
    script = "torchrun pretrain_t5.py \\\n    --load ckpt \\"
    path = tmp_path / "t5.sh"
    path.write_text('torchrun() { printf "%s\\n" "$@"; }\n' + script)
    done = subprocess.run(["bash", str(path)], capture_output=True, text=True, check=True)
    assert command_words(script, "t5.sh") == [["torchrun", *done.stdout.splitlines()]]


@needs_bash
def test_the_example_script_gives_the_arguments_bash_passes() -> None:
    """examples/training-configs/megatron-gpt3-175b.sh, run by bash with its five positional parameters given (dpcost
    leaves a parameter the script is not given as written, `$1`, where bash would drop the word)."""
    script = (CONFIGS / "megatron-gpt3-175b.sh").read_text()
    given = [f"P{n}" for n in range(1, 6)]
    ours = next(words for words in command_words(script, "gpt3.sh") if words[0] == "torchrun")
    ours = [given[int(w[1:]) - 1] if re.fullmatch(r"\$[1-5]", w) else w for w in ours]
    prelude = 'torchrun() { printf "%s\\n" "$@"; }\n'
    done = subprocess.run(["bash", "-c", prelude + script, "gpt3.sh", *given], capture_output=True, text=True)
    assert ours[1:] == done.stdout.splitlines()


def test_a_megatron_script_reads_its_appended_and_branch_arguments() -> None:
    """What the abridged llama3 script gives Megatron: the distributed optimizer and overlap it appends, FP8's
    format from a quoted two-word item, and the mock branch's tokenizer."""
    args = arguments(LLAMA3_FP8, "script.sh")
    assert args["--use-distributed-optimizer"] == [] and args["--overlap-grad-reduce"] == []
    assert args["--fp8-format"] == ["hybrid"]
    assert args["--tokenizer-type"] == ["NullTokenizer"] and args["--vocab-size"] == ["128256"]
    assert args["--nproc_per_node"] == ["8"] and args["--world"] == ["8", "pretrain_gpt.py"]


def test_an_unset_variable_is_left_as_written_and_a_power_is_not_computed() -> None:
    started = time.perf_counter()
    words = command_words("torchrun --tp $TP --n $((9**9**9**9)) --m $((2*(3+4)))", "s.sh")
    assert words == [["torchrun", "--tp", "$TP", "--n", "$((9**9**9**9))", "--m", "14"]]
    assert time.perf_counter() - started < 1.0


def test_a_script_whose_quotes_do_not_close_is_refused_naming_the_file() -> None:
    from dpcost.errors import InputError

    with pytest.raises(InputError, match=r"s\.sh"):
        command_words('torchrun --a "open', "s.sh")


def test_a_variable_that_doubles_itself_is_refused_not_followed() -> None:
    from dpcost.errors import InputError

    script = "A=x\n" + 'A="$A $A"\n' * 40 + "torchrun $A"
    started = time.perf_counter()
    with pytest.raises(InputError, match="grows beyond"):
        command_words(script, "s.sh")
    assert time.perf_counter() - started < 2.0


# A launch as Slurm jobs write it (BLOOM's tr11-176B-ml.slurm, Megatron-LM's
# examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh, abridged): the launch in a `bash -x -c` string under srun, a
# DeepSpeed config written by a here-document (its body lines are not commands; `\$` unescaped in it), a quoted
# `<<-` one left unexpanded, a batch script given to sbatch as a here-document, whose srun runs the launch, and a
# single-quoted `bash -c` string whose variables the shell it starts expands, a newline in one splitting no command
# there (bigscience's tr1-13B).
JOBS = """\
export LAUNCHER="torchrun --nproc_per_node 8"
ARGS=(--num-layers 4 --hidden-size "512")
export CMD="pretrain_gpt.py ${ARGS[@]}"
srun --mpi=pmix -l bash -x -c "$LAUNCHER --node_rank 0 $CMD"
STAGE=1
cat <<EOT > ds.json
{"stage": $STAGE, "escaped": "\\$STAGE"}
torchrun --not-a-command
EOT
cat > raw.json <<-'EOF'
\t{"stage": $STAGE}
\tEOF
sbatch <<EOF
#!/bin/bash
#SBATCH --nodes=2
srun bash -c "$LAUNCHER --nnodes \\$SLURM_NNODES $CMD"
EOF
export GPT="--num-layers 4
  --hidden-size 8"
srun --jobid=1 bash -c '$LAUNCHER --x 1 $GPT'
torchrun --after 1
"""


@needs_bash
def test_a_jobs_nested_launches_and_written_files_are_those_bash_runs(tmp_path: Path) -> None:
    """bash runs JOBS with srun running its command and sbatch standing in as bash reading the batch script from its
    input, in the environment sbatch(1) says `--nodes=2` sets: the launches' words and the files written are the
    same as dpcost reads them."""
    from dpcost.training_configs.shell import read_script

    printing = '{ printf "%s\\n" "$@"; printf "\\x1e\\n"; }'
    prelude = (
        f"torchrun() {printing}\n"
        'srun() { while [[ $1 == -* ]]; do shift; done; "$@"; }\n'
        "sbatch() { SLURM_JOB_NUM_NODES=2 SLURM_NNODES=2 bash -s; }\n"
        "export -f torchrun srun\n"
    )
    done = subprocess.run(["bash", "-c", prelude + JOBS], capture_output=True, text=True, check=True, cwd=tmp_path)
    theirs = [call.splitlines() for call in done.stdout.split("\x1e\n")[:-1]]
    script = read_script(JOBS, "job.sh")
    assert [words[1:] for words in script.commands if words[0] == "torchrun"] == theirs
    assert script.files == {name: (tmp_path / name).read_text() for name in ("ds.json", "raw.json")}


@pytest.mark.parametrize(
    ("directives", "nodes"),
    [
        ("#SBATCH --nodes=48", "48"),
        ("#SBATCH -N 4 --gres=gpu:8", "4"),
        ("#SBATCH -N4", "4"),
        ("#SBATCH --nodes 3          # a comment", "3"),
        ("#SBATCH --nodes=2-4", "$SLURM_NNODES"),  # a range: sbatch chooses the count
        ("set -e\n#SBATCH --nodes=8", "$SLURM_NNODES"),  # sbatch stops at the first command
    ],
)
def test_sbatch_directives_set_the_node_count_sbatch_sets(directives: str, nodes: str) -> None:
    """sbatch(1): directives are read up to the first line that is neither a comment nor blank, and the job's
    environment has SLURM_JOB_NUM_NODES (SLURM_NNODES for backwards compatibility) as --nodes/-N gives it."""
    script = f"#!/bin/bash\n{directives}\ntorchrun --nnodes $SLURM_NNODES --n $SLURM_JOB_NUM_NODES"
    torchrun = next(words for words in command_words(script, "job.slurm") if words[0] == "torchrun")
    assert torchrun[1:] == ["--nnodes", nodes, "--n", nodes.replace("NNODES", "JOB_NUM_NODES")]


@needs_bash
def test_an_escaped_blank_before_a_newline_in_a_launch_string_is_what_bash_reads() -> None:
    """bigscience's tr13e job keeps `--reset-progress \\    ` (a backslash, blanks, then the newline) inside its
    launch string: the shell `bash -c` starts reads an escaped blank, a word of one space, and ends the command at
    the newline. It had been refused ("No escaped character")."""
    script = 'export X="--a \\\\    \n  --b 1"\nbash -c "torchrun $X"\n'
    prelude = 'torchrun() { printf "%s\\n" "$@"; }\nexport -f torchrun\n'
    done = subprocess.run(["bash", "-c", prelude + script + "true"], capture_output=True, text=True, check=True)
    ours = next(words for words in command_words(script, "s.sh") if words[0] == "torchrun")
    assert ours[1:] == done.stdout.split("\n")[:-1]


NCCL_ENV = """\
export NCCL_NVLS_ENABLE=0
export NCCL_IB_HCA=mlx5_0,mlx5_1
torchrun --first 1
ALGO=Ring
NCCL_ALGO=$ALGO NCCL_PROTO="Simple" torchrun --second 1
export NCCL_NVLS_ENABLE=1
torchrun --third 1
NCCL_PROTO=LL bash -c 'torchrun --fourth 1'
torchrun --fifth 1
"""


@needs_bash
def test_each_command_runs_with_the_nccl_variables_bash_gives_it() -> None:
    """Exported, and given before a command's name for it alone (bash(1): ENVIRONMENT): what `env` shows each
    torchrun is what dpcost reads it runs with."""
    from dpcost.training_configs.shell import read_script

    prelude = "torchrun() { env | grep '^NCCL_' | sort; printf '\\x1e\\n'; }\nexport -f torchrun\n"
    done = subprocess.run(["bash", "-c", prelude + NCCL_ENV], capture_output=True, text=True, check=True)
    theirs = [dict(line.split("=", 1) for line in call.splitlines()) for call in done.stdout.split("\x1e\n")[:-1]]
    script = read_script(NCCL_ENV, "job.sh")
    ours = [env for words, env in zip(script.commands, script.nccl, strict=True) if words[0] == "torchrun"]
    assert ours == theirs
    assert ours[1] == {
        "NCCL_NVLS_ENABLE": "0",
        "NCCL_IB_HCA": "mlx5_0,mlx5_1",
        "NCCL_ALGO": "Ring",
        "NCCL_PROTO": "Simple",
    }
