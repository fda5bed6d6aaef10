"""layerconf: layered configuration from defaults, INI-like files and environment variables."""

from .config import Config, Section
from .errors import ConfigError, LayerconfError, SourceError
from .parsing import parse_ini
from .sources import DefaultsSource, EnvSource, FileSource, Source

__all__ = [
    "Config",
    "ConfigError",
    "DefaultsSource",
    "EnvSource",
    "FileSource",
    "LayerconfError",
    "Section",
    "Source",
    "SourceError",
    "parse_ini",
]

__version__ = "0.6.1"
