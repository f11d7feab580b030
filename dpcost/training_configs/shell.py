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
- `if`/`elif`/`else`/`fi`: the branch whose `[[ ... ]]` or `[ ... ]` tests hold (`==`, `=`, `!=`, `-z`, `-n`, `!`,
  joined by `||` and `&&`), or the first one whose tests cannot be told (a file test, a command), as the script's
  own default path;
- every other statement is a command, its words after expansion and quote removal (shlex, POSIX).
Loops run their bodies once; functions are read where they are defined; command substitution `$(...)` is not run.
"""

from __future__ import annotations

import re
import shlex

from dpcost.errors import InputError

__all__ = ["command_words"]

_ASSIGNMENT = re.compile(r"(?:(?:export|local|readonly|declare(?:\s+-\w+)*)\s+)?([A-Za-z_]\w*)(\+?)=(.*)", re.DOTALL)
_WORD_ASSIGNMENT = r"[A-Za-z_]\w*=(?:\"[^\"]*\"|'[^']*'|[^\s\"'(]\S*|)"  # NAME=word, the word maybe quoted
_PREFIX = re.compile(rf"(?:{_WORD_ASSIGNMENT}\s+)+")  # assignments before a command: its environment only
_BRACED = re.compile(r"\$\{([^{}]*)\}")  # innermost first: a default may hold another expansion
_QUOTED_ARRAY = re.compile(r'"\$\{([A-Za-z_]\w*)\[@\]\}"')  # "${ARGS[@]}": one word per element
_PLAIN = re.compile(r"\$([A-Za-z_]\w*)")
_ARITHMETIC = re.compile(r"\$\(\(([\d\s+\-*/%()]*)\)\)")
_OPEN = ("then", "do", "else", "{")  # keywords that may start a statement before its first command
MAX_CHARS = 1 << 16  # a variable or a command longer than this is no launch script's (`A="$A $A"` doubles it)


def command_words(text: str, where: str) -> list[list[str]]:
    """The words of each command the script runs, in order (module docstring); `where` names the file in errors."""
    shell = _Shell(where)
    for statement in _statements(_joined(text)):
        shell.run(statement)
    return shell.commands


def _joined(text: str) -> str:
    """Comments dropped (a `#` at a word's start: not `$#` or `a#b`) and continued lines joined."""
    lines = [re.sub(r"(^|\s)#.*$", "", line) for line in text.splitlines()]
    return re.sub(r"\\\r?\n", " ", "\n".join(lines))


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
            out.append("".join(current).strip())
            current = []
            i += 1
            continue
        current.append(c)
        i += 1
    out.append("".join(current).strip())
    return [s for s in out if s]


class _Shell:
    """The variables so far, the branches being taken, and the commands run."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.scalars: dict[str, str] = {}
        self.arrays: dict[str, list[str]] = {}
        self.branches: list[list[bool]] = []  # per open `if`: [this branch is taken, some branch was taken]
        self.commands: list[list[str]] = []

    def running(self) -> bool:
        return all(taken for taken, _ in self.branches)

    def run(self, statement: str) -> None:
        first, rest = [*statement.split(None, 1), ""][:2]
        if first in ("if", "elif"):
            self.branch(first, rest)
        elif first == "else":
            self.otherwise()
            if rest.strip():
                self.run(rest.strip())
        elif first == "fi":
            if self.branches:
                self.branches.pop()
        elif first in _OPEN:
            if rest.strip():
                self.run(rest.strip())
        elif first in ("done", "esac", "}") or not self.running():
            return
        elif (prefix := _PREFIX.match(statement)) is not None:
            command = statement[prefix.end() :]
            if _ASSIGNMENT.fullmatch(command):  # `A=1 B=2`: every one an assignment
                for word in re.finditer(_WORD_ASSIGNMENT, prefix.group(0)):
                    self.run(word.group(0))
                self.run(command)
            else:  # `NCCL_DEBUG=INFO torchrun ...`: the command's environment, expanded after its words (bash)
                self.commands.append(self.words(command))
        elif (assignment := _ASSIGNMENT.fullmatch(statement)) is not None:
            self.assign(*assignment.groups())
        else:
            self.commands.append(self.words(statement))

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
        """`text` expanded, split into words and unquoted."""
        expanded = self.expand(text)
        if len(expanded) > MAX_CHARS:
            raise InputError(self.where, f"a variable or command grows beyond {MAX_CHARS:,} characters")
        try:
            return shlex.split(expanded)
        except ValueError as exc:
            raise InputError(self.where, f"cannot split the script into arguments ({exc})") from None

    def expand(self, text: str) -> str:
        text = _QUOTED_ARRAY.sub(self._elements, text)
        for _ in range(8):  # innermost expansions first, then those that held them
            if len(text) > MAX_CHARS:
                break
            expanded = _BRACED.sub(self._braced, text)
            expanded = _PLAIN.sub(lambda m: self.value(m.group(1), m.group(0)), expanded)
            expanded = _ARITHMETIC.sub(_arithmetic, expanded)
            if expanded == text:
                break
            text = expanded
        return text

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
