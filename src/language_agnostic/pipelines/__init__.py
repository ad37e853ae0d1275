"""Kedro wiring only: each ``<name>/`` holds ``nodes.py`` (thin adapters) and ``pipeline.py``."""
