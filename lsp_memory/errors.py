"""Errors a user can act on. Each carries one line that says what is wrong and where."""


class UserError(Exception):
    """A problem with the user's input or environment, shown as one line, never a traceback."""


class StoreError(UserError):
    """The store cannot be opened or written: locked, read-only, or from a newer version."""


class ImportFailed(UserError):
    """An import file has bad lines; nothing was written. ``problems`` holds one line each."""

    def __init__(self, source: str, problems: list[str], unit: str = "line") -> None:
        self.problems = problems
        count = len(problems)
        super().__init__(
            f"{source}: {count} bad {unit}{'s' if count != 1 else ''}, nothing imported"
        )


class UnresolvedReference(UserError):
    """A reference given as an argument that names no record of the current user."""
