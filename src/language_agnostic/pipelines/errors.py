"""A data or configuration error ends a run with its message, not a framework traceback.

Such an error already names the file and line, or the parameter, and what to do; the hundred lines
of Kedro and project frames above it only hide that line. :func:`install` (called by
``settings.py``) replaces the process's ``sys.excepthook``: when the uncaught exception is, or
was caused by, one of :data:`USER_ERRORS`, it prints that message alone; anything else (a bug)
keeps Python's full traceback. ``LANGUAGE_AGNOSTIC_TRACEBACK=1`` shows the traceback always.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import TracebackType

from language_agnostic.config import ParameterError
from language_agnostic.corpora.errors import CorpusFormatError, MissingRawDataError
from language_agnostic.corpora.massive import AnnotationError
from language_agnostic.encoders.backends import BackendError
from language_agnostic.encoders.bundled import BundledFormatError
from language_agnostic.encoders.extraction import ExtractionError
from language_agnostic.encoders.loading import EncoderLoadError
from language_agnostic.encoders.store import StoreBusyError
from language_agnostic.pipelines.project_config import PipelineConfigurationError
from language_agnostic.pipelines.run_lock import RunLockBusyError

USER_ERRORS: tuple[type[BaseException], ...] = (
    CorpusFormatError,
    AnnotationError,
    MissingRawDataError,
    PipelineConfigurationError,
    ParameterError,  # also ExportError
    BackendError,
    ExtractionError,
    BundledFormatError,
    EncoderLoadError,
    StoreBusyError,
    RunLockBusyError,
)
TRACEBACK_VARIABLE = "LANGUAGE_AGNOSTIC_TRACEBACK"
Hook = Callable[[type[BaseException], BaseException, TracebackType | None], object]


def user_error(exc: BaseException | None) -> BaseException | None:
    """The first of :data:`USER_ERRORS` in ``exc``'s chain (itself, its cause, its context), if any."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, USER_ERRORS):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def error_message(exc: BaseException) -> str:
    """What the user reads: the error's class and message, and how to get the traceback."""
    return (
        f"\nError ({type(exc).__name__}): {exc}\n"
        f"(no traceback for a data or configuration error; {TRACEBACK_VARIABLE}=1 shows it)\n"
    )


def excepthook(previous: Hook) -> Hook:
    """A ``sys.excepthook`` that prints a user error's message alone and hands the rest to ``previous``."""

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> object:
        found = user_error(value)
        if found is None or os.environ.get(TRACEBACK_VARIABLE, "") not in ("", "0"):
            return previous(kind, value, tb)
        sys.stderr.write(error_message(found))
        return None

    hook.previous = previous  # type: ignore[attr-defined]
    return hook


def install() -> None:
    """Install :func:`excepthook` over the current ``sys.excepthook`` (once)."""
    if not hasattr(sys.excepthook, "previous"):
        sys.excepthook = excepthook(sys.excepthook)
