"""Errors that end a command with one clear line and a specific exit code."""


class FslabError(Exception):
    """A user-facing error: printed as one line, exit code `code`."""
    code = 1

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code


class RefusedError(FslabError):
    """fslab refuses to touch something (e.g. a device holding data). Exit 2."""
    code = 2


class UnavailableError(FslabError):
    """A filesystem/tool/target cannot be used here; the message says why."""
    code = 3


class StepFailed(Exception):
    """A measured step failed; the unit is recorded as failed and the run continues."""


class TimedOut(StepFailed):
    """An external command passed its time limit (and was killed with its process group)."""


class TeardownFailed(StepFailed):
    """A resource could not be torn down (still mounted, a busy pool...). The unit fails, the
    run goes on, and the resource stays in the state file for `fslab cleanup`."""
