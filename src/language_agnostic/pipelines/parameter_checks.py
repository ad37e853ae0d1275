"""Parameters checked when a Kedro run starts, before its first node: a wrong type, an out-of-range
value or an unknown key stops the run with one message naming its ``conf/`` path (no traceback).

Each training block is parsed by the function its training nodes parse it with (so the check and
the training never disagree): ``fmda`` (model, loss, training, every variant and head), the ``qe``
and ``sts`` heads, ``emu.training``, ``slu.training``, ``embeddings.extraction`` and
``trained_models``. Typed settings (``config.py:settings_from_params``) check every field's type.

Why not Kedro's own typed-parameter validation: it checks parameters that a node declares with a
pydantic model or a dataclass type hint, and this project's nodes take parameter mappings whose
shape follows the run's ``--env`` (variants, methods and pairs are keys); the settings dataclasses
below are the same typed models, applied when the session starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from language_agnostic.config import ParameterError, settings_from_params
from language_agnostic.encoders.extraction import extraction_settings
from language_agnostic.training import fmda, heads
from language_agnostic.training.loop import TrainSettings

# keys a pipeline's training block holds besides TrainSettings' fields (read by its own code)
EXTRA_TRAINING_KEYS = {"emu": (), "slu": ("train_layers",)}


def check_parameters(params: Mapping[str, Any]) -> None:
    """Every section this module knows, parsed as the pipelines parse it.

    Raises:
        ParameterError: the first wrong value, naming its parameter and what is allowed.
    """
    extraction = (params.get("embeddings") or {}).get("extraction")
    if extraction is not None:
        extraction_settings(dict(extraction))
    fmda.check_parameters(params)
    for pipeline in ("qe", "sts"):
        if params.get(pipeline):
            heads.check_parameters(params[pipeline], pipeline)
    for pipeline, extra in EXTRA_TRAINING_KEYS.items():
        training = dict((params.get(pipeline) or {}).get("training") or {})
        if training:
            settings_from_params(
                TrainSettings, {k: v for k, v in training.items() if k not in extra}, f"{pipeline}.training"
            )


__all__ = ["ParameterError", "check_parameters"]
