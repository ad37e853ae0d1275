"""Encoders: the bundled multilingual-e5-small, Hugging Face encoders, pooling and extraction."""
