"""language-agnostic: disentangling meaning from language in multilingual sentence encoders."""

__version__ = "0.1.0"
