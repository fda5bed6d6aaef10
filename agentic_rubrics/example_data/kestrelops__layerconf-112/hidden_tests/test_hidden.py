import pytest

import layerconf
from layerconf import Config, ConfigError, DefaultsSource, EnvSource, FileSource, LayerconfError
from layerconf.cli import main


def flat(mapping):
    return Config([DefaultsSource(mapping)])


# --- FAIL_TO_PASS: references that cannot be resolved raise ConfigError ---------------------------


def test_reference_to_unset_key_raises_config_error():
    cfg = Config.load(
        defaults={
            "db": {
                "host": "pg-staging.internal",
                "url": "postgresql://billing@${db.host}:${db.port}/billing",
            }
        }
    )
    with pytest.raises(ConfigError):
        cfg.get("db.url")


def test_reference_error_is_a_layerconf_error_not_a_key_error():
    cfg = flat({"a": "${missing}"})
    with pytest.raises(LayerconfError) as info:
        cfg.get("a")
    assert isinstance(info.value, ConfigError)


def test_unset_reference_across_file_and_env_layers(tmp_path):
    path = tmp_path / "app.ini"
    path.write_text("[db]\nurl = postgresql://${db.host}:${db.port}/billing\n")
    cfg = Config([FileSource(path), EnvSource("BILLING_", environ={"BILLING_DB__HOST": "h"})])
    with pytest.raises(ConfigError):
        cfg.get("db.url")


def test_unset_key_referenced_indirectly():
    cfg = flat({"a": "x-${b}", "b": "${c}/y"})
    with pytest.raises(ConfigError):
        cfg.get("a")
    with pytest.raises(ConfigError):
        cfg.get("b")


def test_unterminated_reference_raises_config_error():
    cfg = flat({"db": {"host": "h", "url": "postgresql://${db.host/billing"}})
    with pytest.raises(ConfigError):
        cfg.get("db.url")


def test_unterminated_reference_in_referenced_value():
    cfg = flat({"a": "<${b}>", "b": "${c", "c": "z"})
    with pytest.raises(ConfigError):
        cfg.get("a")


def test_typed_getter_with_unset_reference():
    cfg = flat({"worker": {"count": "${pool.size}"}})
    with pytest.raises(ConfigError):
        cfg.get_int("worker.count")


def test_as_dict_raises_config_error():
    cfg = flat({"db": {"url": "pg://${db.host}:${db.port}"}, "name": "app"})
    with pytest.raises(ConfigError):
        cfg.as_dict()
    with pytest.raises(ConfigError):
        cfg.as_dict(nested=True)
    broken = flat({"a": "${b"})
    with pytest.raises(ConfigError):
        broken.as_dict()


def test_section_lookup_raises_config_error():
    cfg = flat({"db": {"url": "pg://${db.host}"}})
    with pytest.raises(ConfigError):
        cfg.section("db")["url"]


def test_cli_reports_invalid_reference(tmp_path, capsys):
    path = tmp_path / "app.ini"
    path.write_text("[db]\nurl = pg://${db.host}:${db.port}\n")
    assert main([str(path)]) == 2
    assert main(["--get", "db.url", str(path)]) == 2
    bad = tmp_path / "bad.ini"
    bad.write_text("[db]\nurl = pg://${db.host\n")
    assert main([str(bad)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err


# --- PASS_TO_PASS: the rest of interpolation and error handling ---------------------------------


def test_references_expand_recursively_and_stringify():
    cfg = flat({"db": {"host": "h", "port": 5432, "ssl": True, "url": "pg://${db.host}:${db.port}?ssl=${db.ssl}"}})
    assert cfg.get("db.url") == "pg://h:5432?ssl=true"
    cfg = flat({"a": "${b}-${b}", "b": "${c}", "c": "z"})
    assert cfg.get("a") == "z-z"


def test_fallbacks():
    cfg = flat({"a": "${x:-5432}", "b": "${x:-}", "c": "${y:-none}", "y": "set"})
    assert cfg.get("a") == "5432"
    assert cfg.get("b") == ""
    assert cfg.get("c") == "set"


def test_escape_and_lone_dollars():
    cfg = flat({"a": "$${HOME}/x", "b": "costs $5", "c": "trailing $"})
    assert cfg.get("a") == "${HOME}/x"
    assert cfg.get("b") == "costs $5"
    assert cfg.get("c") == "trailing $"


def test_non_string_values_are_returned_unchanged():
    cfg = flat({"n": 3, "flag": False, "items": ["a", "b"]})
    assert cfg.get("n") == 3
    assert cfg.get("flag") is False
    assert cfg.get("items") == ["a", "b"]


def test_circular_references_raise_config_error():
    cfg = flat({"a": "${b}", "b": "${a}", "s": "${s}"})
    with pytest.raises(ConfigError):
        cfg.get("a")
    with pytest.raises(ConfigError):
        cfg.get("s")


def test_missing_key_default_and_require():
    cfg = flat({"a": "1"})
    assert cfg.get("nope", None) is None
    assert cfg.get("nope", "d", cast=int) == "d"
    with pytest.raises(ConfigError):
        cfg.get("nope")
    with pytest.raises(ConfigError):
        cfg.require("a", "b", "c")
    cfg.require("a")


def test_conversions():
    cfg = flat({"n": "10_000", "f": "1.5", "yes": "on", "no": "0", "l": "a, b,,c", "bad": "x"})
    assert cfg.get_int("n") == 10000
    assert cfg.get_float("f") == 1.5
    assert cfg.get_bool("yes") is True
    assert cfg.get_bool("no") is False
    assert cfg.get_list("l") == ["a", "b", "c"]
    for getter in (cfg.get_int, cfg.get_float, cfg.get_bool):
        with pytest.raises(ConfigError):
            getter("bad")
    with pytest.raises(TypeError):
        cfg.get("n", cast=dict)


def test_section_is_a_plain_mapping():
    cfg = flat({"db": {"host": "h", "port": "${db.host}:1"}})
    db = cfg.section("db")
    assert db["port"] == "h:1"
    with pytest.raises(KeyError):
        db["nope"]
    assert "nope" not in db
    assert db.get("nope") is None
    assert sorted(db) == ["host", "port"]
    assert len(db) == 2


def test_layers_and_env(tmp_path):
    path = tmp_path / "app.ini"
    path.write_text("[db]\nhost = filehost\nurl = ${db.host}/${db.name}\n")
    cfg = Config.load(
        defaults={"db": {"host": "localhost", "name": "app"}},
        files=[path],
        env_prefix="APP_",
        environ={"APP_DB__NAME": "prod", "OTHER": "x"},
    )
    assert cfg.get("db.url") == "filehost/prod"
    assert cfg.as_dict(nested=True) == {"db": {"host": "filehost", "name": "prod", "url": "filehost/prod"}}
    assert [value for _, value in cfg.explain("db.name")] == ["app", "prod"]


def test_parse_errors_and_missing_files(tmp_path):
    with pytest.raises(ConfigError):
        layerconf.parse_ini("[db]\nhost\n")
    with pytest.raises(layerconf.SourceError):
        Config.load(files=[tmp_path / "nope.ini"])


def test_cli_prints_config(tmp_path, capsys):
    path = tmp_path / "app.ini"
    path.write_text("[db]\nhost = h\nurl = pg://${db.host}\n")
    assert main([str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == ["db.host = h", "db.url = pg://h"]
    assert main(["--get", "db.url", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "pg://h"
    assert main(["--get", "nope", str(path)]) == 2
