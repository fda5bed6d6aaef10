import pytest

from layerconf import Config, ConfigError, DefaultsSource, EnvSource, FileSource, SourceError


def make(tmp_path, ini="", env=None, defaults=None):
    path = tmp_path / "app.ini"
    path.write_text(ini)
    sources = [DefaultsSource(defaults or {}), FileSource(path)]
    if env is not None:
        sources.append(EnvSource("APP_", environ=env))
    return Config(sources)


def test_later_layers_override(tmp_path):
    cfg = make(
        tmp_path,
        "[db]\nhost = filehost\nport = 6000\n",
        env={"APP_DB__PORT": "7000"},
        defaults={"db": {"host": "localhost", "port": 5432, "name": "app"}},
    )
    assert cfg.get("db.host") == "filehost"
    assert cfg.get_int("db.port") == 7000
    assert cfg.get("db.name") == "app"
    assert [name for name, _ in cfg.explain("db.port")] == ["defaults", str(tmp_path / "app.ini"), "env:APP_*"]


def test_missing_key_and_default(tmp_path):
    cfg = make(tmp_path)
    assert cfg.get("nope", "x") == "x"
    with pytest.raises(ConfigError):
        cfg.get("nope")


def test_conversion_errors_are_config_errors(tmp_path):
    cfg = make(tmp_path, "[worker]\ncount = many\ndebug = perhaps\n")
    with pytest.raises(ConfigError):
        cfg.get_int("worker.count")
    with pytest.raises(ConfigError):
        cfg.get_bool("worker.debug")


def test_references(tmp_path):
    cfg = make(tmp_path, "[db]\nhost = h\nport = 1\nurl = pg://${db.host}:${db.port}/x\n")
    assert cfg.get("db.url") == "pg://h:1/x"
    assert cfg.as_dict(nested=True)["db"]["url"] == "pg://h:1/x"


def test_required_file_missing(tmp_path):
    with pytest.raises(SourceError):
        Config([FileSource(tmp_path / "missing.ini")])
    assert Config([FileSource(tmp_path / "missing.ini", optional=True)]).keys() == []


def test_section(tmp_path):
    cfg = make(tmp_path, "[db]\nhost = h\n")
    db = cfg.section("db")
    assert db["host"] == "h"
    assert dict(db) == {"host": "h"}
    assert "port" not in db
