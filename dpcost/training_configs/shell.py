"""A launch script's command words as bash would pass them, as far as a training launch script needs.

Launch scripts (Megatron-LM's examples/*/train_*.sh, NeMo's and cluster wrappers) build their arguments in shell
variables before one `torchrun` line. Read in order, as bash runs them (bash(1): Parameters, Arrays, Compound
Commands):
- assignments, with `export`, `local`, `declare` or `readonly` before them: a word (`TP=8`), a quoted string over
  several lines (`GPT_ARGS="..."`), an array (`ARGS=( ... )`), and `+=`, which appends to an array or a string; a
  value may name the variable itself (`ARGS=( "${ARGS[@]}" --more )`);
- expansions: `$NAME`, `${NAME}`, `${NAME[@]}` (an array's elements: quoted, `"${ARGS[@]}"`, one word each;
  unquoted, split into words, as `${ARGS[@]}` splits an element `"--fp8-format hybrid"`), `${NAME:-word}` and
  `${NAME-word}` (the word where the variable is unset or, with the colon, empty; positional parameters are never
  set), and `$(( ... ))` of integers;
  a variable the script never sets is left as written (`$TP`), for the reader to refuse where it matters;
  single-quoted text is not expanded (the shell a `bash -c '...'` starts expands it), and `\\$` is a plain dollar;
- a backslash that ends the file continues into nothing, and one before blanks and a newline escapes a blank (bash
  reading a file);
- `if`/`elif`/`else`/`fi`: the branch whose `[[ ... ]]` or `[ ... ]` tests hold (`==`, `=`, `!=`, `-z`, `-n`, `!`,
  joined by `||` and `&&`), or the first one whose tests cannot be told (a file test, a command), as the script's
  own default path;
- every other statement is a command, its words after expansion and quote removal (shlex, POSIX);
- a command's here-document (`<<EOT` ... `EOT`, `<<-` and a quoted delimiter too) is its input, not commands: its
  body, expanded unless the delimiter is quoted, is kept as the file `cat` or `tee` writes it to (`cat <<EOT >
  $config_json`, as Megatron-DeepSpeed scripts write their DeepSpeed config);
- `bash -c STRING` (or `sh -c`, options before `-c` too, anywhere in a command: `srun ... bash -x -c "$CMD"`) runs
  STRING's commands too, in the same variables, each kept with the command that ran it (`Script.launchers`: the
  srun that starts the ranks); so does a here-document given to `sbatch`, `bash` or `sh` with no script named,
  which is the script it runs (`sbatch <<EOF`: the batch script, its directives read too);
- an sbatch script's directives (`#SBATCH`, up to the first command) set what sbatch sets in the job's environment
  (sbatch(1), OUTPUT ENVIRONMENT VARIABLES): SLURM_JOB_NUM_NODES and SLURM_NNODES from `--nodes`/`-N`,
  SLURM_NTASKS_PER_NODE from `--ntasks-per-node` and SLURM_GPUS_PER_NODE from `--gpus-per-node`, each given as
  one count (a range of node counts sets none).
Loops run their bodies once; functions are read where they are defined; command substitution `$(...)` is not run.
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath

from dpcost.errors import InputError
from dpcost.frozen import frozen

__all__ = ["SHELLS", "Script", "command_words", "read_script", "slurm_options"]

_ASSIGNMENT = re.compile(r"(?:(?:export|local|readonly|declare(?:\s+-\w+)*)\s+)?([A-Za-z_]\w*)(\+?)=(.*)", re.DOTALL)
_NAME = r"[A-Za-z_]\w*"
_WORD_ASSIGNMENT = rf"({_NAME})=(\"[^\"]*\"|'[^']*'|[^\s\"'(]\S*|)"  # NAME=word, the word maybe quoted
_PREFIX = re.compile(rf"(?:{_WORD_ASSIGNMENT}\s+)+")  # assignments before a command: its environment only
_BRACED = re.compile(r"\$\{([^{}]*)\}")  # innermost first: a default may hold another expansion
_QUOTED_ARRAY = re.compile(r'"\$\{([A-Za-z_]\w*)\[@\]\}"')  # "${ARGS[@]}": one word per element
_PLAIN = re.compile(r"\$([A-Za-z_]\w*)")
_ARITHMETIC = re.compile(r"\$\(\(([\d\s+\-*/%()]*)\)\)")
_OPEN = ("then", "do", "else", "{")  # keywords that may start a statement before its first command
MAX_CHARS = 1 << 16  # a variable or a command longer than this is no launch script's (`A="$A $A"` doubles it)
_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_][\w.]*)\2")  # <<EOT, <<-EOT, <<'EOT', << "EOT"
SHELLS = ("bash", "sh")  # the shells whose `-c STRING` and here-document scripts are read
_ESCAPED_DOLLAR = "\0"  # `\$` while the text around it is expanded
_NESTED = 5  # how deep scripts run by `bash -c` strings and here-documents are followed
# sbatch's options and the variable each sets in the job's environment (sbatch(1), OUTPUT ENVIRONMENT VARIABLES)
_SBATCH_SETS = {
    "--nodes": ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"),
    "--ntasks-per-node": ("SLURM_NTASKS_PER_NODE",),
    "--gpus-per-node": ("SLURM_GPUS_PER_NODE",),
}


@frozen
class Script:
    """What a launch script runs: each command's words in order, the command whose `bash -c` string ran each ([]
    for none), the files its here-documents write, the job environment its #SBATCH directives set, and NCCL's
    variables (NCCL_*) each command runs with."""

    commands: list[list[str]]
    launchers: list[list[str]]
    files: dict[str, str]
    slurm: dict[str, str]
    nccl: list[dict[str, str]]


def read_script(text: str, where: str) -> Script:
    """The script's commands and written files (module docstring); `where` names the file in errors."""
    shell = _Shell(where)
    shell.script(text, directives=True)
    slurm = {name: shell.scalars[name] for names in _SBATCH_SETS.values() for name in names if name in shell.scalars}
    return Script(shell.commands, shell.launchers, shell.files, slurm, shell.nccl)


def command_words(text: str, where: str) -> list[list[str]]:
    """The words of each command the script runs, in order (read_script)."""
    return read_script(text, where).commands


def _heredoc(text: str) -> re.Match[str] | None:
    """A here-document's operator outside quotes and comments (not a here-string, `<<<`)."""
    quote = ""
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            return None
        elif c == "<" and text.startswith("<<", i) and not text.startswith("<<<", i) and text[i - 1 : i] != "<":
            found = _HEREDOC.match(text, i)
            if found is not None:
                return found
    return None


def _here_documents(text: str) -> tuple[list[str], list[tuple[str, bool] | None]]:
    """The script's lines with each here-document's body blanked, and the bodies in order, each with whether bash
    expands it (an unquoted delimiter); None for an operator whose delimiter line never comes (no body is read)."""
    lines = text.splitlines()
    bodies: list[tuple[str, bool] | None] = []
    i = 0
    while i < len(lines):
        found = _heredoc(lines[i])
        i += 1
        if found is None:
            continue
        tabs, quoted, delimiter = found.groups()
        ends = (j for j in range(i, len(lines)) if (lines[j].lstrip("\t") if tabs else lines[j]) == delimiter)
        end = next(ends, None)
        if end is None:
            bodies.append(None)
            continue
        bodies.append(("".join(line.lstrip("\t") if tabs else line for line in (f"{x}\n" for x in lines[i:end])),
                       not quoted))  # fmt: skip
        lines[i : end + 1] = [""] * (end + 1 - i)
        i = end + 1
    return lines, bodies


def _sbatch_environment(lines: list[str]) -> dict[str, str]:
    """The variables an sbatch script's directives set (_SBATCH_SETS), read as sbatch reads them: `#SBATCH` lines
    until the first line that is neither blank nor a comment (sbatch(1))."""
    found: dict[str, str] = {}
    for line in lines:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        if not stripped.startswith("#SBATCH"):
            continue
        try:
            words = shlex.split(stripped[len("#SBATCH") :], comments=True)
        except ValueError:
            continue
        for name, value in slurm_options(words):
            if name in _SBATCH_SETS and value.isdigit():
                found.update(dict.fromkeys(_SBATCH_SETS[name], value))
    return found


def slurm_options(words: list[str]) -> list[tuple[str, str]]:
    """Slurm's options in `words` (sbatch's directives, srun's command line), in order, each word with the value
    after it: `--nodes=4`, `--nodes 4`, `-N 4` and `-N4` alike, -N and -n under their long names (--nodes,
    --ntasks: sbatch(1), srun(1)); `-n8`'s count only where it is digits."""
    out = []
    for k, word in enumerate(words):
        name, eq, value = word.partition("=")
        if not eq and len(name) > 2 and (name[:2] == "-N" or (name[:2] == "-n" and name[2:].isdigit())):
            name, value = name[:2], name[2:]
        elif not eq:
            value = words[k + 1] if k + 1 < len(words) else ""
        out.append(({"-N": "--nodes", "-n": "--ntasks"}.get(name, name), value))
    return out


def _joined(text: str) -> str:
    """Comments dropped (a `#` at a word's start: not `$#` or `a#b`) and continued lines joined; a backslash that
    ends the script continues into nothing, as bash reads it."""
    lines = [re.sub(r"(^|\s)#.*$", "", line) for line in text.splitlines()]
    return re.sub(r"\\\r?\n|\\$", " ", "\n".join(lines))


def _statements(text: str) -> list[str]:
    """The script cut at newlines and `;` outside quotes and parentheses (an array or `$(...)` over lines)."""
    out: list[str] = []
    current: list[str] = []
    depth, quote, i = 0, "", 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"' and i + 1 < len(text):
                current.append(text[i : i + 2])
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif c in "\n;" and depth == 0:
            out.append(_trimmed("".join(current)))
            current = []
            i += 1
            continue
        current.append(c)
        i += 1
    out.append(_trimmed("".join(current)))
    return [s for s in out if s]


def _trimmed(statement: str) -> str:
    """A statement without the blanks around it, but for a blank a backslash escapes (`--flag \\ ` before a newline
    inside a string: a word of one space, as bash reads it)."""
    trimmed = statement.strip()
    escaped = trimmed.endswith("\\") and (len(trimmed) - len(trimmed.rstrip("\\"))) % 2 == 1
    return trimmed + " " if escaped and statement.rstrip() != statement else trimmed


class _Shell:
    """The variables so far, the branches being taken, and the commands run."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.scalars: dict[str, str] = {}
        self.arrays: dict[str, list[str]] = {}
        self.branches: list[list[bool]] = []  # per open `if`: [this branch is taken, some branch was taken]
        self.commands: list[list[str]] = []
        self.launchers: list[list[str]] = []  # per command, the command whose `bash -c` string ran it
        self.nccl: list[dict[str, str]] = []  # per command, the NCCL_* variables it runs with
        self.launcher: list[str] = []  # the command whose string is being read
        self.files: dict[str, str] = {}  # what here-documents write, by the path as the script names it
        self.depth = 0  # scripts being read, the file's own and those it runs

    def script(self, text: str, directives: bool) -> None:
        """Run a script's statements: the file's, or one it runs (`bash -c`, a here-document); `directives`: read its
        #SBATCH lines (a batch script's). Its branches are its own."""
        if self.depth >= _NESTED:
            return
        self.depth += 1
        outer, self.branches = self.branches, []
        lines, bodies = _here_documents(text)
        if directives:
            self.scalars.update(_sbatch_environment(lines))
        for statement in _statements(_joined("\n".join(lines))):
            self.run(statement, bodies.pop(0) if bodies and _heredoc(statement) else None)
        self.branches = outer
        self.depth -= 1

    def running(self) -> bool:
        return all(taken for taken, _ in self.branches)

    def run(self, statement: str, body: tuple[str, bool] | None = None) -> None:
        first, rest = [*statement.split(None, 1), ""][:2]
        if first in ("if", "elif"):
            self.branch(first, rest)
        elif first == "else":
            self.otherwise()
            if rest.strip():
                self.run(rest.strip(), body)
        elif first == "fi":
            if self.branches:
                self.branches.pop()
        elif first in _OPEN:
            if rest.strip():
                self.run(rest.strip(), body)
        elif first in ("done", "esac", "}") or not self.running():
            return
        elif (prefix := _PREFIX.match(statement)) is not None:
            command = statement[prefix.end() :]
            if _ASSIGNMENT.fullmatch(command):  # `A=1 B=2`: every one an assignment
                for word in re.finditer(_WORD_ASSIGNMENT, prefix.group(0)):
                    self.run(word.group(0))
                self.run(command)
            else:  # `NCCL_DEBUG=INFO torchrun ...`: the command's environment, expanded after its words (bash)
                own = {m.group(1): m.group(2) for m in re.finditer(_WORD_ASSIGNMENT, prefix.group(0))}
                self.command(
                    command, body, {k: " ".join(self.words(v)) for k, v in own.items() if k.startswith("NCCL_")}
                )
        elif (assignment := _ASSIGNMENT.fullmatch(statement)) is not None:
            self.assign(*assignment.groups())
        else:
            self.command(statement, body)

    def command(self, statement: str, body: tuple[str, bool] | None, own: dict[str, str] | None = None) -> None:
        """A command: its words, the NCCL variables it runs with (the script's, and `own`, those set before its name
        for it alone), the file its here-document writes or the script it is, and the commands a `bash -c` string
        runs."""
        operator = _heredoc(statement)
        if operator is not None:  # a redirection, not a word
            statement = statement[: operator.start()] + statement[operator.end() :]
        words = self.words(statement)
        self.commands.append(words)
        self.launchers.append(self.launcher)
        self.nccl.append({**{k: v for k, v in self.scalars.items() if k.startswith("NCCL_")}, **(own or {})})
        name = PurePosixPath(words[0]).name if words else ""
        if body is not None and len(body[0]) <= MAX_CHARS:  # a longer one is no launch's: left unread
            text = self.expand(body[0], escaped="$", quotes=False) if body[1] else body[0]
            target = _written_file(words) if name in ("cat", "tee") else None
            if target is not None:
                self.files[target] = text
            elif name in ("sbatch", *SHELLS) and all(word.startswith("-") for word in words[1:]):
                self.started(text, name == "sbatch", own or {})
        for k, word in enumerate(words):
            string = _shell_string(words, k) if PurePosixPath(word).name in SHELLS else None
            if string is not None:
                outer, self.launcher = self.launcher, words
                self.started(string, False, own or {})
                self.launcher = outer
                break

    def started(self, text: str, directives: bool, own: dict[str, str]) -> None:
        """A script a command starts (its here-document, its `bash -c` string), run with the variables given for that
        command alone (`own`) in its environment, as bash passes them to the process it starts."""
        saved = {name: self.scalars.get(name) for name in own}
        self.scalars.update(own)
        self.script(text, directives)
        for name, value in saved.items():
            if value is None:
                self.scalars.pop(name, None)
            else:
                self.scalars[name] = value

    def branch(self, keyword: str, condition: str) -> None:
        if keyword == "if":
            outer = self.running()
            take = outer and self.test(condition) is not False
            self.branches.append([take, take or not outer])
            return
        if not self.branches:
            return
        frame = self.branches[-1]
        outer = all(taken for taken, _ in self.branches[:-1])
        take = outer and not frame[1] and self.test(condition) is not False
        frame[0], frame[1] = take, frame[1] or take

    def otherwise(self) -> None:
        if self.branches:
            frame = self.branches[-1]
            frame[0], frame[1] = not frame[1], True

    def assign(self, name: str, append: str, value: str) -> None:
        value = value.strip()
        if value.startswith("(") and value.endswith(")"):
            elements = self.words(value[1:-1])
            base = (self.arrays.get(name) or ([self.scalars[name]] if name in self.scalars else [])) if append else []
            self.arrays[name] = base + elements
            self.scalars.pop(name, None)
            return
        text = " ".join(self.words(value))
        if name in self.arrays and append:
            self.arrays[name] = [*self.arrays[name], text]
            return
        self.scalars[name] = self.scalars.get(name, "") + text if append else text
        self.arrays.pop(name, None)

    def words(self, text: str) -> list[str]:
        """`text` expanded, split into words and unquoted (an escaped `\\$` a plain `$`, as bash removes the escape
        unquoted and in double quotes)."""
        expanded = self.expand(text, escaped=_ESCAPED_DOLLAR)
        if len(expanded) > MAX_CHARS:
            raise InputError(self.where, f"a variable or command grows beyond {MAX_CHARS:,} characters")
        try:
            return [word.replace(_ESCAPED_DOLLAR, "$") for word in shlex.split(expanded)]
        except ValueError as exc:
            raise InputError(self.where, f"cannot split the script into arguments ({exc})") from None

    def expand(self, text: str, escaped: str = "\\$", quotes: bool = True) -> str:
        """`text` with its variables and arithmetic expanded, but not inside single quotes (`quotes`: a command's
        words; a here-document's body has none), as bash leaves `bash -c '$LAUNCHER $CMD'` for the shell it starts.
        An escaped `\\$` is not expanded, and is written back as `escaped` (a here-document's body unescapes it to
        `$`, as bash does)."""
        pieces = _single_quoted(text) if quotes else [(text, True)]
        return "".join(self._expanded(piece, escaped) if live else piece for piece, live in pieces)

    def _expanded(self, text: str, escaped: str) -> str:
        text = _QUOTED_ARRAY.sub(self._elements, text.replace("\\$", _ESCAPED_DOLLAR))
        for _ in range(8):  # innermost expansions first, then those that held them
            if len(text) > MAX_CHARS:
                break
            expanded = _BRACED.sub(self._braced, text)
            expanded = _PLAIN.sub(lambda m: self.value(m.group(1), m.group(0)), expanded)
            expanded = _ARITHMETIC.sub(_arithmetic, expanded)
            if expanded == text:
                break
            text = expanded
        return text.replace(_ESCAPED_DOLLAR, escaped)

    def _elements(self, match: re.Match[str]) -> str:
        name = match.group(1)
        if name in self.arrays:
            return " ".join(shlex.quote(element) for element in self.arrays[name])
        return shlex.quote(self.scalars[name]) if name in self.scalars else match.group(0)

    def _braced(self, match: re.Match[str]) -> str:
        inner = match.group(1)
        found = re.fullmatch(r"([A-Za-z_]\w*|\d+)(\[[@*]\])?(?:(:?)-(.*))?", inner, re.DOTALL)
        if found is None:
            return match.group(0)
        name, _, colon, default = found.groups()
        if default is not None:
            unset = name not in self.scalars and name not in self.arrays
            empty = not self.value(name, "")
            return default if unset or (colon and empty) else self.value(name, "")
        return self.value(name, match.group(0))

    def value(self, name: str, unset: str) -> str:
        if name in self.arrays:
            return " ".join(self.arrays[name])
        return self.scalars.get(name, unset)

    def test(self, condition: str) -> bool | None:
        """A condition's truth, None where it cannot be told: tests joined by || and &&, left to right."""
        parts = re.split(r"\s*(\|\||&&)\s*", condition.strip())
        result = self.one_test(parts[0])
        for operator, part in zip(parts[1::2], parts[2::2], strict=True):
            other = self.one_test(part)
            if operator == "||":
                result = True if result is True or other is True else (None if None in (result, other) else False)
            else:
                result = False if result is False or other is False else (None if None in (result, other) else True)
        return result

    def one_test(self, text: str) -> bool | None:
        found = re.fullmatch(r"\[\[(.*)\]\]|\[(.*)\]", text.strip(), re.DOTALL)
        if found is None:
            return None
        try:
            words = shlex.split(self.expand(found.group(1) or found.group(2) or ""))
        except ValueError:
            return None
        negate = bool(words) and words[0] == "!"
        words = words[1:] if negate else words
        if any("$" in w for w in words):
            return None
        result: bool | None = None
        if len(words) == 3 and words[1] in ("==", "=", "!="):
            result = (words[0] == words[2]) == (words[1] != "!=")
        elif len(words) == 2 and words[0] in ("-z", "-n"):
            result = (words[1] == "") == (words[0] == "-z")
        elif len(words) == 1:
            result = words[0] != ""
        return None if result is None else result != negate


def _single_quoted(text: str) -> list[tuple[str, bool]]:
    """`text` cut into (piece, expanded): a single-quoted piece outside double quotes is not expanded (bash(1):
    QUOTING); a backslash escapes the character after it outside single quotes."""
    pieces: list[tuple[str, bool]] = []
    start, i, double = 0, 0, False
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            double = not double
        elif c == "'" and not double:
            end = text.find("'", i + 1)
            if end < 0:
                break
            pieces += [(text[start:i], True), (text[i : end + 1], False)]
            start = i = end + 1
            continue
        i += 1
    return [*pieces, (text[start:], True)]


def _shell_string(words: list[str], k: int) -> str | None:
    """The string `bash -c STRING` runs, the shell at words[k] and its options before it (`-x -c`, `-lc`)."""
    for j in range(k + 1, len(words) - 1):
        if not words[j].startswith("-"):
            return None
        if re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", words[j]):
            return words[j + 1]
    return None


def _written_file(words: list[str]) -> str | None:
    """The file `cat > FILE` (or `>>`, or `>FILE`) or `tee FILE` writes, None where it names none."""
    for k, word in enumerate(words[1:], 1):
        if word in (">", ">>") and k + 1 < len(words):
            return words[k + 1]
        if word.startswith(">") and word.lstrip(">"):
            return word.lstrip(">")
    if PurePosixPath(words[0]).name == "tee":
        return next((w for w in words[1:] if not w.startswith("-")), None)
    return None


def _arithmetic(match: re.Match[str]) -> str:
    """`$(( ... ))` of integers, + - * / % and parentheses (bash's integer division); left as written where it is
    not one (a power, an expression too long to be a launch script's)."""
    expression = match.group(1)
    if "**" in expression or len(expression) > 200:
        return match.group(0)
    try:  # _ARITHMETIC admits digits, spaces, + - * / % and parentheses only: nothing else for eval to reach
        return str(int(eval(expression.replace("/", "//"), {"__builtins__": {}}, {})))
    except (SyntaxError, ZeroDivisionError, TypeError, ValueError, MemoryError, RecursionError):
        return match.group(0)
