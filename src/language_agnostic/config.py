"""The error a wrong parameter raises: what every part of the project raises for a ``conf/`` value it cannot use.

What a parameter may be (its type, range, choices, known keys) is stated once, by the typed models of
``language_agnostic/parameters/``; every run checks its parameters against them before its first node,
and the nodes get them as those models read them (``pipelines/config_loader.py``).
"""

from __future__ import annotations


class ParameterError(ValueError):
    """A parameter under ``conf/`` that cannot be used; the message names it (its path) and what is allowed.

    A run that stops on one prints the message alone, without a traceback (``pipelines/errors.py``).
    """
