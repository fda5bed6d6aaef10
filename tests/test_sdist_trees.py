"""Approximate trees from release sdists: the release each rule picks, the index pip uses (a loopback
one here), the sha256 checked, the mark beside the tree, and the instance's patches taken out."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agentic_rubrics.datasets.sdist_trees import (
    MARK,
    Sdist,
    SdistTrees,
    approximate_source,
    index_url,
    pick,
    sdists,
)
from agentic_rubrics.exceptions import RepoError
from tests.django_sdist import GOLD, RELEASED, TEST_PATCH, TESTS_BEFORE, index


def _s(version: str) -> Sdist:
    return Sdist(f"Django-{version}.tar.gz", "u", "0", tuple(int(p) for p in version.split(".")))


def test_each_rule_picks_its_release() -> None:
    available = [_s(v) for v in ("2.2", "2.2.28", "3.0", "3.0.1", "3.0.14", "3.2")]
    assert pick("3.0", available, "first").filename == "Django-3.0.tar.gz"  # type: ignore[union-attr]
    assert pick("3.0", available, "last").filename == "Django-3.0.14.tar.gz"  # type: ignore[union-attr]
    assert pick("3.0", available, "previous").filename == "Django-2.2.28.tar.gz"  # type: ignore[union-attr]
    assert (
        pick("3.1", available, "first") is None
    )  # no release of that series: none, not a neighbour
    assert pick("2.2", available, "previous") is None and pick("dev", available, "first") is None


def test_the_index_is_pips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple/")
    assert index_url() == "http://127.0.0.1:9/simple"


def test_only_final_sdists_are_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    with index(("1.0", "0.9")) as (url, _):
        listed = sdists("Django", url)
    assert [s.filename for s in listed] == ["Django-0.9.tar.gz", "Django-1.0.tar.gz"]


def test_an_approximate_tree_is_marked_and_its_patches_taken_out(tmp_path: Path) -> None:
    with index() as (url, asked):
        trees = SdistTrees(tmp_path / "cache", "first", index=url)
        patches = {"gold_patch": GOLD, "test_patch": TEST_PATCH}
        tree = trees.tree("django__django-1", "django/django", "1.0", patches)
        again = trees.tree("django__django-1", "django/django", "1.0", patches)
    assert again == tree and asked.count("/files/Django-1.0.tar.gz") == 1  # cached
    assert (tree / "calc/__init__.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert (tree / "tests/calc_tests/tests.py").read_text() == TESTS_BEFORE
    assert (tree / "tests/runtests.py").read_text() == RELEASED["tests/runtests.py"]
    assert not (tree / MARK).exists()  # beside the tree, never in it
    mark = approximate_source(tree)
    assert mark is not None and mark["approximate_tree"] is True
    assert mark["source"]["sdist"] == "Django-1.0.tar.gz" and mark["source"]["version"] == "1.0"
    assert len(mark["source"]["sha256"]) == 64 and mark["reversed"] == ["gold_patch", "test_patch"]
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(top.stdout.strip()) == tree.resolve()  # its own repository: git apply's root
    # the instance's tree shares the release's files but never changes them
    release = tmp_path / "cache" / "releases" / "Django-1.0"
    assert (release / "calc/__init__.py").read_text() == RELEASED["calc/__init__.py"]
    assert (release / "tests/calc_tests/tests.py").read_text() == RELEASED[
        "tests/calc_tests/tests.py"
    ]
    assert (tree / "tests/runtests.py").stat().st_ino == (
        release / "tests/runtests.py"
    ).stat().st_ino
    assert approximate_source(tmp_path) is None


def test_the_previous_release_is_taken_as_released(tmp_path: Path) -> None:
    with index() as (url, _):
        trees = SdistTrees(tmp_path / "cache", "previous", index=url)
        tree = trees.tree("django__django-2", "django/django", "1.0", {"gold_patch": GOLD})
    mark = json.loads((tree.parent / MARK).read_text())
    assert (mark["source"]["sdist"], mark["reversed"]) == ("Django-0.9.tar.gz", [])
    assert "a + b" in (tree / "calc/__init__.py").read_text()


def test_a_corrupt_archive_or_a_missing_release_is_a_repo_error(tmp_path: Path) -> None:
    with index(corrupt=True) as (url, _):
        trees = SdistTrees(tmp_path / "cache", "first", index=url)
        with pytest.raises(RepoError, match="sha256") as caught:
            trees.tree("django__django-1", "django/django", "1.0", {})
        assert caught.value.reason == "sdist_unavailable"
        with pytest.raises(RepoError, match=r"no release for version '7\.1'"):
            trees.tree("django__django-1", "django/django", "7.1", {})
    assert not list((tmp_path / "cache" / "sdists").glob("*.tar.gz"))
    with pytest.raises(RepoError, match="no sdist stands in"):
        trees.tree("a__b-1", "acme/calc", "1.0", {})


def test_nearest_takes_the_first_release_without_its_fix_else_the_one_before(
    tmp_path: Path,
) -> None:
    elsewhere = GOLD.replace("return a + b", "return b + a")  # not what the release holds
    with index() as (url, _):
        trees = SdistTrees(tmp_path / "cache", "nearest", index=url)
        patches = {"gold_patch": GOLD, "test_patch": TEST_PATCH}
        fixed_there = trees.tree("django__django-1", "django/django", "1.0", patches)
        other = trees.tree("django__django-2", "django/django", "1.0", {"gold_patch": elsewhere})
    first, previous = approximate_source(fixed_there), approximate_source(other)
    assert first is not None and previous is not None
    assert (first["rule"], first["release"], first["source"]["sdist"]) == (
        "nearest",
        "first",
        "Django-1.0.tar.gz",
    )
    assert first["reversed"] == ["gold_patch", "test_patch"]
    assert (previous["release"], previous["source"]["sdist"], previous["reversed"]) == (
        "previous",
        "Django-0.9.tar.gz",
        [],
    )
    assert fixed_there.parent.name == "django__django-1.nearest"
