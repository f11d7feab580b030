"""Domain errors. The CLI turns them into one line on stderr and an exit code; the library just raises."""

from __future__ import annotations

__all__ = ["DpcostError", "InputError"]


class DpcostError(Exception):
    """Base class of every error dpcost raises on purpose."""


class InputError(DpcostError):
    """Bad input: an unknown name, a malformed file, a value out of range (exit code 2).

    `where` names the file or flag, the message says which field and what is allowed.
    """

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}" if where else message)
