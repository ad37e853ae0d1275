"""Metrics: numpy/torch in, floats out; nothing here knows about Kedro."""
