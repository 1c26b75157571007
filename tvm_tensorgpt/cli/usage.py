"""The one error every command raises for bad input: printed as one line, exit code 2."""


class UsageError(Exception):
    """Bad command-line input; the message says what was wrong and what is valid."""
