"""The raw encoder's retrieval table (pooling × direction), as in the bundled-encoder design note."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from language_agnostic.reporting.markdown import table


def raw_retrieval_markdown(rows: pd.DataFrame, identity: Mapping[str, Any]) -> str:
    """Markdown: one row per pooling, one column per retrieval direction (accuracy@1 on MASSIVE test)."""
    directions = [(r.source, r.target) for r in rows.drop_duplicates(["source", "target"]).itertuples()]
    headers = [f"{s.split('-')[0]}→{t.split('-')[0]}" for s, t in directions]
    lines = [
        "# Raw encoder: cross-lingual retrieval accuracy@1 on MASSIVE test",
        "",
        f"Encoder: {identity.get('name')} (weights sha256 {str(identity.get('weights_sha256'))[:12]}…). "
        "Cosine nearest neighbour over the 2,974 test pairs of each language pair.",
        "",
        *table(["pooling", *headers]),
    ]
    for pooling, group in rows.groupby("embedding", sort=False):
        values = {(r.source, r.target): r.value for r in group.itertuples()}
        lines.append(f"| {pooling} | " + " | ".join(f"{values[d]:.3f}" for d in directions) + " |")
    return "\n".join(lines) + "\n"
