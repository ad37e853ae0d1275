"""Project pipelines."""

from kedro.framework.project import find_pipelines
from kedro.pipeline import Pipeline

DEFAULT_PIPELINES = ("massive", "embeddings")


def register_pipelines() -> dict[str, Pipeline]:
    """Register the project's pipelines: every ``pipelines/<name>`` package, plus ``__default__``.

    ``__default__`` (what ``make run`` runs) holds the finished stages; ``fmda`` is still in
    progress and slow on a CPU (see docs/results.md), so it runs only when asked for.

    Returns:
        A mapping from pipeline names to ``Pipeline`` objects.
    """
    pipelines = find_pipelines(raise_errors=True)
    pipelines["__default__"] = sum((p for name, p in pipelines.items() if name in DEFAULT_PIPELINES), Pipeline([]))
    return pipelines
