"""rlcourse: autograded reinforcement-learning coursework, graded by hidden exact graders."""
import functools



@functools.cache
def engine_version() -> str:
    """The installed package's version, from its metadata (pyproject.toml's `version`, as pip
    installed it): what `rlcourse --version` prints, and what every report and feedback page
    records, so a grade can be traced to the engine that gave it. "unknown" when rlcourse runs
    from a folder that was never installed."""
    from importlib import metadata

    try:
        return metadata.version("rlcourse")
    except metadata.PackageNotFoundError:
        return "unknown"
