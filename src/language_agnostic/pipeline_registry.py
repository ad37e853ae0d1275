"""Project pipelines."""

from kedro.framework.project import find_pipelines
from kedro.pipeline import Pipeline

from language_agnostic.pipelines.massive.pipeline import create_pipeline as create_massive_pipeline

DEFAULT_PIPELINES = ("massive", "embeddings")
# Pipelines that read the ``massive`` stage's outputs and so run it first: one command from
# a fresh clone (``kedro run --pipelines=fmda``) then does the whole job. The ``massive``
# stage takes about 25 s on 2 cores, so rerunning it on every call costs little.
NEEDS_MASSIVE = ("fmda", "emu")  # slu reads its own locales (slu.locales) from the archive


def register_pipelines() -> dict[str, Pipeline]:
    """Register the project's pipelines: every ``pipelines/<name>`` package, plus ``__default__``.

    ``__default__`` (what ``make run`` runs) holds the quick stages; ``fmda`` (massive → embed →
    train → evaluate → report, tens of minutes on a CPU, see docs/benchmarks.md) runs only when
    asked for.

    Returns:
        A mapping from pipeline names to ``Pipeline`` objects.
    """
    # Kedro loads only the pipelines a run asks for, so ``massive`` is built here, not looked up
    pipelines = find_pipelines(raise_errors=True)
    for name in NEEDS_MASSIVE:
        # a pipeline replaced by its configuration error fails at once, without the massive stage
        if name in pipelines and f"{name}_configuration_error_node" not in {n.name for n in pipelines[name].nodes}:
            pipelines[name] = create_massive_pipeline() + pipelines[name]
    pipelines["__default__"] = sum((p for name, p in pipelines.items() if name in DEFAULT_PIPELINES), Pipeline([]))
    return pipelines
