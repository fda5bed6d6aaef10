"""What in a candidate patch is test infrastructure (agentic_rubrics/test_infra.py), read from the diff:
each kind found, the hostile spellings a reader of headers alone would miss, and what is left alone
(pytest's own source, ordinary config sections)."""

from __future__ import annotations

from agentic_rubrics.test_infra import (
    GRADED_FOLDER,
    PYTEST_ENV,
    InfraChange,
    infra_changes,
    kinds_of,
    neutralised_paths,
)


def _new(path: str, *lines: str) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


def _edit(path: str, start: int, context: list[str], added: list[str]) -> str:
    body = "".join(f" {c}\n" for c in context) + "".join(f"+{a}\n" for a in added)
    n = len(context)
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -{start},{n} +{start},{n + len(added)} @@\n{body}"
    )


def _pairs(patch: str, read_base: object = None) -> set[tuple[str, str]]:
    return {(c.path, c.kind) for c in infra_changes(patch, read_base)}  # type: ignore[arg-type]


def test_the_stealth_patch_is_caught_by_its_config_file_and_nothing_else() -> None:
    fix = _edit("src/m.py", 1, ["def f():"], ["    pass"])
    hook = _new("hooks.py", "def pytest_collection_modifyitems(items):", "    pass")
    ini = _new("pytest.ini", "[pytest]", "addopts = -p hooks")
    changes = infra_changes(fix + hook + ini)
    assert changes == (InfraChange("pytest.ini", "pytest_config"),)
    # the hook's module is inert once nothing loads it: only the config file is put back
    assert neutralised_paths(changes) == ["pytest.ini"]


def test_conftests_anywhere_and_on_either_side_of_a_rename_or_a_deletion() -> None:
    patch = (
        _new("conftest.py", "import pytest")
        + _edit("pkg/tests/conftest.py", 3, ["x = 1"], ["y = 2"])
        + "diff --git a/a/conftest.py b/a/helpers.py\nsimilarity index 100%\n"
        "rename from a/conftest.py\nrename to a/helpers.py\n"
        + "diff --git a/b/conftest.py b/b/conftest.py\ndeleted file mode 100644\n"
        "--- a/b/conftest.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-import pytest\n"
    )
    assert _pairs(patch) == {
        ("conftest.py", "conftest"),
        ("pkg/tests/conftest.py", "conftest"),
        ("a/conftest.py", "conftest"),
        ("b/conftest.py", "conftest"),
    }
    assert "a/helpers.py" not in neutralised_paths(infra_changes(patch))


def test_the_graded_folder_is_found_where_a_layout_puts_it_only() -> None:
    patch = _new(f"{GRADED_FOLDER}/conftest.py", "x = 1") + _new(
        f"pkg/{GRADED_FOLDER}/x.py", "x = 1"
    )
    patch += _new(f"tests/{GRADED_FOLDER}/tests.py", "x = 1")  # Django's layout
    patch += _new(f"sympy/{GRADED_FOLDER}/tests/test_x.py", "x = 1")  # sympy's
    assert _pairs(patch) == {
        (f"{GRADED_FOLDER}/conftest.py", "graded_folder"),
        (f"{GRADED_FOLDER}/conftest.py", "conftest"),
        (f"tests/{GRADED_FOLDER}/tests.py", "graded_folder"),
        (f"sympy/{GRADED_FOLDER}/tests/test_x.py", "graded_folder"),
    }


def test_a_config_section_is_placed_by_the_base_file_or_the_hunk_or_taken_as_pytests() -> None:
    # a hunk that shows no header: without the base file it counts as pytest's section
    edit = _edit("setup.cfg", 10, ["name = x", "version = 1"], ["author = me"])
    assert _pairs(edit) == {("setup.cfg", "pytest_config")}
    metadata = "[metadata]\n" + "x = 1\n" * 8 + "name = x\nversion = 1\n"
    assert _pairs(edit, lambda path: metadata) == set()
    pytest_first = metadata.replace("[metadata]", "[tool:pytest]")
    assert _pairs(edit, lambda path: pytest_first) == {("setup.cfg", "pytest_config")}
    # a base file that cannot be read (None) is the same as none
    assert _pairs(edit, lambda path: None) == {("setup.cfg", "pytest_config")}
    # the hunk shows its section: decided without the base file
    shown = _edit("tox.ini", 4, ["[testenv]", "commands ="], ["    pytest -rA"])
    assert _pairs(shown) == set()
    added = _edit("tox.ini", 4, ["[flake8]"], ["[pytest]", "addopts = -p evil"])
    assert _pairs(added) == {("tox.ini", "pytest_config")}


def test_a_header_added_or_removed_counts_and_so_does_a_line_ending_pytests_section() -> None:
    base = "[tool:pytest]\naddopts = -v\n[flake8]\nmax = 1\n"
    removed = (
        "--- a/setup.cfg\n+++ b/setup.cfg\n@@ -2,3 +2,2 @@\n addopts = -v\n-[flake8]\n max = 1\n"
    )
    assert _pairs(removed, lambda path: base) == {("setup.cfg", "pytest_config")}
    toml = _edit("pyproject.toml", 1, ["[project]", 'name = "x"'], ["[tool.pytest.ini_options]"])
    assert _pairs(toml) == {("pyproject.toml", "pytest_config")}
    native = _edit("pyproject.toml", 1, ['[ tool . "pytest" ]'], ['addopts = ["-p", "x"]'])
    assert _pairs(native) == {("pyproject.toml", "pytest_config")}
    dotted = _edit("pyproject.toml", 1, ["[tool]"], ['pytest.ini_options.addopts = "-p x"'])
    assert _pairs(dotted) == {("pyproject.toml", "pytest_config")}
    other = _edit("pyproject.toml", 1, ["[tool.black]"], ["line-length = 100"])
    assert _pairs(other) == set()


def test_start_up_files_and_modules_that_shadow_the_runners_imports() -> None:
    patch = (
        _new("sitecustomize.py", "x = 1")
        + _new("lib/usercustomize.py", "x = 1")
        + _new("evil.pth", "import evil")
        + _new("inspect.py", "x = 1")
        + _new("pluggy/__init__.py", "x = 1")
        + _new("pkg/inspect.py", "x = 1")  # not on sys.path first: an ordinary module
        + _new("reproduce.py", "x = 1")
    )
    assert _pairs(patch) == {
        ("sitecustomize.py", "startup_hook"),
        ("lib/usercustomize.py", "startup_hook"),
        ("evil.pth", "startup_hook"),
        ("inspect.py", "startup_hook"),
        ("pluggy/__init__.py", "startup_hook"),
    }
    # an existing top-level module edited is the repository's own code
    assert _pairs(_edit("inspect.py", 1, ["x = 1"], ["y = 2"])) == set()


def test_plugins_and_environment_overrides_are_recorded_and_reverted_outside_modules() -> None:
    code = _edit(
        "src/a.py",
        1,
        ["import os"],
        [
            "pytest_plugins = ['evil']",
            "os.environ['PYTEST_ADDOPTS'] = '-p evil'",
            "value = os.environ.get('PYTEST_ADDOPTS', '')",
        ],
    )
    config = _edit("tox.ini", 1, ["[testenv]", "setenv ="], ["    PYTEST_PLUGINS = evil"])
    entry = _edit(
        "setup.cfg",
        1,
        ["[options.entry_points]", "pytest11 ="],
        ["    evil = evil.plugin"],
    )
    changes = infra_changes(code + config + entry)
    assert {(c.path, c.kind) for c in changes} == {
        ("src/a.py", "plugin"),
        ("src/a.py", "env_override"),
        ("tox.ini", "env_override"),
        ("setup.cfg", "plugin"),
    }
    # an ordinary module is recorded, never put back (that would undo the code under test)
    assert neutralised_paths(changes) == ["setup.cfg", "tox.ini"]
    assert kinds_of(changes) == ["plugin", "env_override"]
    assert set(PYTEST_ENV) >= {"PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}


def test_pytests_own_source_defining_hooks_and_reading_the_environment_is_the_product() -> None:
    patch = _edit(
        "src/_pytest/config/__init__.py",
        100,
        ["    def _preparse(self, args):"],
        [
            '        env_addopts = os.environ.get("PYTEST_ADDOPTS", "")',
            '        plugins = getattr(mod, "pytest_plugins", [])',
            "def pytest_collection_modifyitems(session, config, items):",
        ],
    ) + _edit("src/_pytest/runner.py", 5, ["import os"], ["def pytest_runtest_call(item):"])
    assert infra_changes(patch) == ()


def test_lines_are_read_as_git_apply_reads_them() -> None:
    # a removed line that looks like a file header is a change inside the hunk, not a new file
    tricky = (
        "diff --git a/src/x.sql b/src/x.sql\n--- a/src/x.sql\n+++ b/src/x.sql\n@@ -1,2 +1,1 @@\n"
        "--- a/conftest.py\n keep\n"
    )
    assert infra_changes(tricky) == ()
    # a traditional diff (no git header) with its own prefixes, -p1 as git apply reads it
    traditional = (
        "--- x/conftest.py\t2024-01-01\n+++ y/conftest.py\t2024-01-01\n@@ -1 +1 @@\n-a\n+b\n"
    )
    assert _pairs(traditional) == {("conftest.py", "conftest")}
    quoted = (
        'diff --git "a/sp ace/conftest.py" "b/sp ace/conftest.py"\nnew file mode 100644\n'
        '--- /dev/null\n+++ "b/sp ace/conftest.py"\n@@ -0,0 +1 @@\n+x\n'
    )
    assert _pairs(quoted) == {("sp ace/conftest.py", "conftest")}
    # a path that leaves the tree is refused by git apply: nothing to put back there
    assert infra_changes("--- a/../conftest.py\n+++ b/../conftest.py\n@@ -1 +1 @@\n-a\n+b\n") == ()
    assert infra_changes("") == () and infra_changes("not a diff at all\n") == ()


def test_program_code_that_imports_the_test_framework_is_held_not_reverted() -> None:
    """Code the tests import runs in the test process: ``import _pytest.runner`` in a package's
    ``__init__`` can rewrite how every test runs. No runner can put the code under test back, so the
    candidate is flagged (the guard holds it against it), and its module is not reverted."""
    for line in ("import _pytest.runner", "from pytest import hookimpl", "import os, pytest as pt",
                 "runner = __import__('_pytest.runner')"):  # fmt: skip
        patch = _edit("pkg/__init__.py", 1, ["x = 1"], [line])
        assert _pairs(patch) == {("pkg/__init__.py", "framework_patch")}, line
        assert neutralised_paths(infra_changes(patch)) == []
    for path, line in (
        ("pkg/__init__.py", "import pytestish"),  # another package
        ("pkg/__init__.py", "# import pytest"),  # a comment
        ("tests/test_pkg.py", "import pytest"),  # a test
        ("src/_pytest/runner.py", "import _pytest.main"),  # pytest's own source: the product
        ("pluggy/_hooks.py", "import pluggy"),
        ("reproduce_bug.py", "import pytest"),  # an agent's script at the root: nothing imports it
    ):
        assert _pairs(_edit(path, 1, ["x = 1"], [line])) == set(), (path, line)
