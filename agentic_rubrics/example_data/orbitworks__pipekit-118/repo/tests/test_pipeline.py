import pytest

from pipekit import Pipeline, StepFailed
from pipekit.cli import format_plan


def make_pipeline():
    pipe = Pipeline("demo")

    @pipe.step()
    def fetch():
        """Download the data."""
        return [3, 1, 2]

    @pipe.step(requires=["fetch"])
    def clean(rows):
        return sorted(rows)

    @pipe.step(requires=["clean"], tags=["report"])
    def summary(rows):
        """Summarise."""
        return sum(rows)

    return pipe


def test_run_passes_results_along():
    result = make_pipeline().run()
    assert result.ok
    assert result.order == ["fetch", "clean", "summary"]
    assert result.results["summary"] == 6


def test_plan_targets_and_tags():
    pipe = make_pipeline()
    assert pipe.plan(["clean"]) == ["fetch", "clean"]
    assert pipe.plan(tags=["report"]) == ["summary"]


def test_fail_fast_raises():
    pipe = Pipeline()

    @pipe.step()
    def boom():
        raise RuntimeError("no network")

    with pytest.raises(StepFailed) as info:
        pipe.run()
    assert info.value.name == "boom"


def test_keep_going_skips_dependents():
    pipe = Pipeline()

    @pipe.step()
    def boom():
        raise RuntimeError("no network")

    @pipe.step(requires=["boom"])
    def after(value):
        return value

    @pipe.step()
    def other():
        return 1

    result = pipe.run(fail_fast=False)
    assert set(result.failed) == {"boom"}
    assert result.skipped == ["after"]
    assert result.results == {"other": 1}


def test_format_plan():
    pipe = make_pipeline()
    text = format_plan(pipe, pipe.plan())
    assert text.splitlines()[0].split() == ["1.", "fetch", "Download", "the", "data."]
    assert text.splitlines()[2].startswith("3.")
