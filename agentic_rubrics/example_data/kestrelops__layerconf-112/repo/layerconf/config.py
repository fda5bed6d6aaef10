"""The :class:`Config` object: several layers merged, later layers overriding earlier ones."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .errors import ConfigError
from .interpolation import expand
from .parsing import CONVERTERS
from .sources import DefaultsSource, EnvSource, FileSource, Source

_MISSING: Any = object()


class Config:
    """Merged configuration.

    Build it from sources, first to last; a key set in a later source overrides the same key in
    an earlier one::

        cfg = Config([DefaultsSource({...}), FileSource("app.ini"), EnvSource("APP_")])
        cfg.get("db.host")
    """

    def __init__(self, sources: Iterable[Source]) -> None:
        self._layers: list[tuple[str, dict[str, object]]] = []
        self._values: dict[str, object] = {}
        for source in sources:
            values = source.load()
            self._layers.append((source.name, values))
            self._values.update(values)

    @classmethod
    def load(
        cls,
        *,
        defaults: Mapping[str, object] | None = None,
        files: Iterable[str | os.PathLike[str]] = (),
        env_prefix: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Config:
        """The usual stack: ``defaults``, then each file in order, then environment variables."""
        sources: list[Source] = []
        if defaults:
            sources.append(DefaultsSource(defaults))
        sources.extend(FileSource(path) for path in files)
        if env_prefix:
            sources.append(EnvSource(env_prefix, environ=environ))
        return cls(sources)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def keys(self) -> list[str]:
        """Every key set in at least one layer, sorted."""
        return sorted(self._values)

    def get(self, key: str, default: Any = _MISSING, *, cast: type | None = None) -> Any:
        """The value of ``key`` with its references expanded, converted by ``cast`` if given.

        ``default`` is returned as it is when ``key`` is set in no layer.

        Raises:
            ConfigError: ``key`` is missing and no default was given, or its value is malformed
                or cannot be converted to ``cast``.
        """
        if key not in self._values:
            if default is not _MISSING:
                return default
            raise ConfigError(f"missing configuration key {key!r}", key=key)
        value = self._resolve(key)
        if cast is None:
            return value
        return self._convert(key, value, cast)

    def get_int(self, key: str, default: Any = _MISSING) -> Any:
        """``get(key, default, cast=int)``."""
        return self.get(key, default, cast=int)

    def get_float(self, key: str, default: Any = _MISSING) -> Any:
        """``get(key, default, cast=float)``."""
        return self.get(key, default, cast=float)

    def get_bool(self, key: str, default: Any = _MISSING) -> Any:
        """``get(key, default, cast=bool)``."""
        return self.get(key, default, cast=bool)

    def get_list(self, key: str, default: Any = _MISSING) -> Any:
        """``get(key, default, cast=list)``: a comma-separated value as a list of strings."""
        return self.get(key, default, cast=list)

    def require(self, *keys: str) -> None:
        """Check that every key in ``keys`` is set.

        Raises:
            ConfigError: naming every missing key at once.
        """
        missing = [key for key in keys if key not in self._values]
        if missing:
            raise ConfigError(f"missing configuration keys: {', '.join(missing)}", key=missing[0])

    def section(self, prefix: str) -> Section:
        """A read-only mapping view of the keys under ``prefix`` (``section("db")["host"]``)."""
        return Section(self, prefix)

    def as_dict(self, *, nested: bool = False) -> dict[str, Any]:
        """Every key with its expanded value; ``nested=True`` builds nested dicts from the dots."""
        flat = {key: self._resolve(key) for key in sorted(self._values)}
        if not nested:
            return flat
        tree: dict[str, Any] = {}
        for key, value in flat.items():
            *parents, leaf = key.split(".")
            node = tree
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
        return tree

    def explain(self, key: str) -> list[tuple[str, object]]:
        """Which layers set ``key`` and to what raw value, first to last (the last one wins)."""
        return [(name, values[key]) for name, values in self._layers if key in values]

    def _resolve(self, key: str) -> object:
        return expand(self._values[key], self._values, key=key)

    def _convert(self, key: str, value: object, cast: type) -> Any:
        try:
            converter = CONVERTERS[cast]
        except KeyError:
            raise TypeError(f"unsupported cast: {cast!r}") from None
        try:
            return converter(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"{key}: cannot convert {value!r} to {cast.__name__}", key=key
            ) from exc


class Section(Mapping[str, Any]):
    """The keys of a :class:`Config` under one prefix, without the prefix.

    It behaves like any read-only mapping: looking up a name that is not set raises ``KeyError``,
    so ``in``, ``.get()`` and iteration work as usual.
    """

    def __init__(self, config: Config, prefix: str) -> None:
        self._config = config
        self._prefix = prefix.rstrip(".") + "."

    def __getitem__(self, name: str) -> Any:
        key = self._prefix + name
        if key not in self._config:
            raise KeyError(name)
        return self._config.get(key)

    def __iter__(self) -> Iterator[str]:
        return (k[len(self._prefix) :] for k in self._config.keys() if k.startswith(self._prefix))

    def __len__(self) -> int:
        return sum(1 for _ in self)
