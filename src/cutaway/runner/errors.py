"""The runner's error, apart from the runner: the CLI catches it without importing the runner
(and numpy with it) for commands that run nothing."""


class RunnerError(Exception):
    """The experiment cannot go on (a setup or prepare hook failed). Completed runs are kept."""


class ProbeUnavailable(RunnerError):
    """A probe the experiment asks for cannot work here (its tool is missing or not allowed):
    found before anything is stored or run, so the CLI exits 2 as for bad input."""


class UnrunnableCommand(RunnerError):
    """A variant's program cannot start here (no such program, not executable), found before
    anything is stored: bad input, so the CLI exits 2 as hyperfine does for it."""
