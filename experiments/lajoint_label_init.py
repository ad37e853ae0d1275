"""Are LAJoint's initial label embeddings (§3.1) usable inputs? Their spread and scale against the encoder's own words.

For MASSIVE's label positions (``s_O, s_B, s_I`` and the 55 slots of the en-US train split), prints:

- the L2 norm of the initial label embeddings (1: "the normalized mean-pooling") against the
  norms of the encoder's word embeddings of the labels' own tokens, the vectors the label
  embeddings stand in for at the input;
- how alike the label positions are: the mean, minimum and maximum pairwise cosine of the label
  embeddings, and after the embedding layer (label + position embedding, then its LayerNorm),
  against the same figures for the labels' word embeddings.

Label positions that all looked alike (cosine near 1) or whose scale was far from the words' would
be a defect of the initialisation; this reads neither a test nor a dev split.

Usage::

    .venv/bin/python -u experiments/lajoint_label_init.py
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from language_agnostic.corpora.massive_slu import label_vocabulary
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.lajoint import LajointConfig, initial_label_embeddings


def pairwise(vectors: torch.Tensor) -> tuple[float, float, float]:
    """Mean, minimum and maximum cosine over distinct pairs of rows."""
    unit = F.normalize(vectors.float(), dim=-1)
    cos = (unit @ unit.T).numpy()
    upper = cos[np.triu_indices(len(cos), 1)]
    return float(upper.mean()), float(upper.min()), float(upper.max())


def after_embedding_layer(model: torch.nn.Module, vectors: torch.Tensor) -> torch.Tensor:
    """Rows as the first transformer layer sees them at positions 1..n (the label positions' places)."""
    positions = torch.arange(1, len(vectors) + 1).unsqueeze(0)
    with torch.no_grad():
        return model.embeddings(
            inputs_embeds=vectors.unsqueeze(0), position_ids=positions, token_type_ids=torch.zeros_like(positions)
        )[0]


def main() -> None:
    rows = pd.read_parquet("data/03_primary/massive_slu.parquet")
    train = rows[(rows["locale"] == "en-US") & (rows["partition"] == "train")]
    slots = tuple(label[2:] for label in label_vocabulary(train) if label.startswith("B-"))
    config = LajointConfig(n_intents=2, slots=slots)
    encoder = load_encoder("bundled")
    model, tokenizer = encoder.model.eval(), encoder.tokenizer
    texts = config.label_texts()
    labels = initial_label_embeddings(model, tokenizer, texts)
    table = model.get_input_embeddings().weight.detach()
    # one word-embedding vector per label: the mean of its own tokens' (the scale the input expects)
    words = torch.stack([table[tokenizer(t, add_special_tokens=False)["input_ids"]].mean(0) for t in texts])
    token_norms = torch.cat([table[tokenizer(t, add_special_tokens=False)["input_ids"]].norm(dim=-1) for t in texts])
    print(f"{len(texts)} label positions ({len(slots)} slots); encoder {encoder.identity.get('name')}\n")
    print("| | label embeddings (init) | the labels' word embeddings |\n|---|---:|---:|")
    print(
        f"| L2 norm, median | {labels.norm(dim=-1).median():.3f} | {token_norms.median():.3f} per token, "
        f"{words.norm(dim=-1).median():.3f} per label (token mean) |"
    )
    for name, (a, b) in {
        "pairwise cosine at the input": (labels, words),
        "pairwise cosine after the embedding layer": (
            after_embedding_layer(model, labels),
            after_embedding_layer(model, words),
        ),
    }.items():
        (ma, lo_a, hi_a), (mb, lo_b, hi_b) = pairwise(a), pairwise(b)
        print(f"| {name}: mean (min, max) | {ma:.3f} ({lo_a:.3f}, {hi_a:.3f}) | {mb:.3f} ({lo_b:.3f}, {hi_b:.3f}) |")


if __name__ == "__main__":
    main()
