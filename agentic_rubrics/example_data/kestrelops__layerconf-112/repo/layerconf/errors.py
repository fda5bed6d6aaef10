"""Exceptions raised by layerconf.

Every error that layerconf raises on purpose derives from :class:`LayerconfError`, so applications
can catch one class at start-up and print a readable message instead of a traceback.
"""

from __future__ import annotations


class LayerconfError(Exception):
    """Base class of all layerconf errors."""


class ConfigError(LayerconfError):
    """The configuration itself is wrong: a key is missing, a value is malformed or unconvertible.

    Attributes:
        key: the dotted key concerned, when known.
        source: the name of the layer the problem comes from, when known.
    """

    def __init__(self, message: str, *, key: str | None = None, source: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.source = source


class SourceError(LayerconfError):
    """A configuration source could not be read at all (for example a required file is missing)."""
