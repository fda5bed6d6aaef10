"""Configuration sources: the layers a :class:`~layerconf.config.Config` is built from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .errors import SourceError
from .parsing import parse_ini


def flatten(mapping: Mapping[str, object], parent: str = "") -> dict[str, object]:
    """Flatten nested mappings into dotted keys: ``{"db": {"host": "x"}}`` -> ``{"db.host": "x"}``."""
    flat: dict[str, object] = {}
    for key, value in mapping.items():
        dotted = f"{parent}.{key}" if parent else str(key)
        if isinstance(value, Mapping):
            flat.update(flatten(value, dotted))
        else:
            flat[dotted] = value
    return flat


class Source:
    """One layer of configuration. Subclasses implement :meth:`load`."""

    name = "source"

    def load(self) -> dict[str, object]:
        """Return this layer's values as a flat mapping of dotted keys."""
        raise NotImplementedError


class DefaultsSource(Source):
    """Values given in code, possibly nested: ``DefaultsSource({"db": {"port": 5432}})``."""

    def __init__(self, values: Mapping[str, object], *, name: str = "defaults") -> None:
        self._values = values
        self.name = name

    def load(self) -> dict[str, object]:
        return flatten(self._values)


class FileSource(Source):
    """An INI-like file. A missing file is an error unless ``optional`` is true."""

    def __init__(self, path: str | os.PathLike[str], *, optional: bool = False) -> None:
        self.path = Path(path)
        self.optional = optional
        self.name = str(self.path)

    def load(self) -> dict[str, object]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if self.optional:
                return {}
            raise SourceError(f"configuration file not found: {self.path}") from None
        except OSError as exc:
            raise SourceError(f"cannot read {self.path}: {exc}") from exc
        return dict(parse_ini(text, origin=self.name))


class EnvSource(Source):
    """Environment variables starting with ``prefix``.

    ``APP_DB__HOST`` with prefix ``APP_`` becomes the key ``db.host``: the prefix is removed, the
    name is lower-cased and ``separator`` (``__`` by default) becomes a dot.
    """

    def __init__(
        self,
        prefix: str,
        *,
        environ: Mapping[str, str] | None = None,
        separator: str = "__",
    ) -> None:
        if not prefix:
            raise ValueError("EnvSource needs a non-empty prefix")
        self.prefix = prefix
        self.separator = separator
        self._environ = environ
        self.name = f"env:{prefix}*"

    def load(self) -> dict[str, object]:
        environ = os.environ if self._environ is None else self._environ
        values: dict[str, object] = {}
        for name, value in environ.items():
            if name.startswith(self.prefix) and len(name) > len(self.prefix):
                key = name[len(self.prefix) :].lower().replace(self.separator, ".")
                values[key] = value
        return values
