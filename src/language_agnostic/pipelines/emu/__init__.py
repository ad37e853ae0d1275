"""``emu``: EMU (Hirota et al. 2020), its ablations and the fine-tuning baselines on MASSIVE intents."""

from language_agnostic.pipelines.emu.pipeline import create_pipeline

__all__ = ["create_pipeline"]
