"""Fusion: signals normalised per task and combined, missing values renormalised (never 0); fusion
selectors named in --selectors; fitted weights read defensively; the fitting procedure's refusals."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentic_rubrics.exceptions import ConfigError, DataError
from agentic_rubrics.rank import fusion_fit
from agentic_rubrics.rank.fusion import Fusion, fuse, normalise, read_fusion_file
from agentic_rubrics.rank.selectors import check_names, get_selector


def test_each_normalisation_places_a_task_values_in_the_unit_range() -> None:
    values = {"a": 3.0, "b": 1.0, "c": None, "d": 3.0, "e": 2.0}
    assert normalise(values, "rank") == {
        "a": 2.5 / 3,
        "b": 0.0,
        "c": None,
        "d": 2.5 / 3,
        "e": 1 / 3,
    }
    assert normalise(values, "minmax") == {"a": 1.0, "b": 0.0, "c": None, "d": 1.0, "e": 0.5}
    ranks = normalise(values, "rrf", rrf_k=60)
    assert ranks["a"] == ranks["d"] == 1 / 61.5 and ranks["e"] == 1 / 63 and ranks["c"] is None
    # a signal equal for every candidate that has it says nothing: the middle, not 0 or 1
    assert normalise({"a": 0.4, "b": 0.4, "c": None}) == {"a": 0.5, "b": 0.5, "c": None}


def test_a_missing_value_is_left_out_and_the_weights_renormalised_never_read_as_zero() -> None:
    # b has no S (its judge failed) but the best agreement; a has S at the bottom of three
    signals = {
        "self_consistency": {"a": 0.2, "b": 0.9, "c": 0.5},
        "rubric": {"a": 0.1, "b": None, "c": 0.8},
    }
    fused = fuse(signals, Fusion({"self_consistency": 1.0, "rubric": 1.0}), ["a", "b", "c"])
    assert fused == {"a": 0.0, "b": 1.0, "c": 0.75}
    # read as 0, b's missing S would have ranked it below c (0.5 against 0.75)
    as_zero = {**signals, "rubric": {"a": 0.1, "b": 0.0, "c": 0.8}}
    read_as_zero = fuse(as_zero, Fusion({"self_consistency": 1, "rubric": 1}), "abc")
    assert read_as_zero["c"] > read_as_zero["b"]  # type: ignore[operator]
    # a candidate with no signal at all has no value: ranked last
    assert fuse({"x": {"a": 1.0, "b": None}}, Fusion({"x": 1.0}), ["a", "b"])["b"] is None


def test_a_negative_weight_means_lower_is_better_in_every_method() -> None:
    signals = {"new_error": {"a": 1.0, "b": 0.0, "c": 0.0}, "sc": {"a": 0.9, "b": 0.5, "c": 0.1}}
    for method in ("rank", "minmax", "rrf"):
        fused = fuse(signals, Fusion({"new_error": -3.0, "sc": 1.0}, method), ["a", "b", "c"])
        assert max(fused, key=lambda c: fused[c] or 0) == "b", method
        alone = fuse(signals, Fusion({"new_error": -1.0}, method), ["a", "b", "c"])
        assert alone["a"] < alone["b"] == alone["c"], method  # type: ignore[operator]


def test_with_every_signal_present_the_ranking_is_that_of_the_weighted_sum() -> None:
    rng = random.Random(7)
    for _ in range(200):
        ids = [f"c{i}" for i in range(rng.randint(2, 8))]
        signals = {s: {c: rng.choice([0.0, 0.5, 1.0, rng.random()]) for c in ids} for s in "xyz"}
        weights = {s: rng.uniform(-2, 2) for s in "xyz"}
        fused = fuse(signals, Fusion(weights), ids)
        z = {s: normalise(signals[s]) for s in "xyz"}
        linear = {c: sum(w * z[s][c] for s, w in weights.items()) for c in ids}  # type: ignore[operator]
        for a in ids:
            for b in ids:
                if linear[a] > linear[b] + 1e-9:
                    assert fused[a] > fused[b]  # type: ignore[operator]


def test_fusion_names_are_parsed_and_bad_ones_refused_with_what_is_expected() -> None:
    selector: Any = get_selector("fusion:self_consistency*2+rubric+content.new_error*-1")
    assert selector.fusion.weights == {
        "self_consistency": 2.0,
        "rubric": 1.0,
        "content.new_error": -1.0,
    }
    assert get_selector("rrf:self_consistency+rubric").fusion.method == "rrf"  # type: ignore[attr-defined]
    check_names(["fusion:self_consistency+rubric", "fitted:weights.json", "self_consistency"])
    for bad, says in [
        ("fusion:", "is not a signal"),
        ("fusion:rubric*x", "is not a signal"),
        ("fusion:content.size", "unknown content feature"),
        ("fusion:rrf:rubric", "a fusion is not a signal"),
        ("fusion:rubric+rubric", "given twice"),
        ("fusion:no_such_selector", "unknown selector"),
        ("fusion:rubric*0", "at least one signal with a weight"),
    ]:
        with pytest.raises(ConfigError, match=says):
            get_selector(bad)


def task(scores: dict[str, float | None], baselines: dict[str, Any]) -> Any:
    return SimpleNamespace(
        instance_id="t1",
        scores={
            c: SimpleNamespace(score=s, rank_value=s, empty_patch=False) for c, s in scores.items()
        },
        baselines=baselines,
    )


def test_a_fusion_selector_reads_other_selectors_values_and_names_a_missing_signal() -> None:
    t = task(
        {"a": 0.9, "b": 0.2, "c": None},
        {
            "self_consistency": {"a": 0.1, "b": 0.8, "c": 0.5},
            "content_features": {"a": {"new_error": 1.0}, "b": {"new_error": 0.0}, "c": None},
        },
    )
    fused = get_selector("fusion:self_consistency+rubric+content.new_error*-1").ranking(t)
    assert fused == pytest.approx({"a": (0 + 1 + 0) / 3, "b": (1 + 0 + 1) / 3, "c": 0.5 / 1})
    t.scores["b"].empty_patch = True  # ranked last, whatever its signals
    assert get_selector("fusion:self_consistency").ranking(t)["b"] is None
    with pytest.raises(DataError, match="needs the signal 'patch_classifier'"):
        get_selector("fusion:self_consistency+patch_classifier").ranking(t)


def weights_file(path: Path, **changes: Any) -> Path:
    raw: dict[str, Any] = {
        "schema": "agentic-rubrics/fusion-weights/1",
        "fusion": {"method": "rank", "weights": {"self_consistency": 1.0}, "rrf_k": 60},
        "fitted_on": {"instances": 12},
        "evidence": {},
        "fit_instance_sha256": [],
    }
    raw.update(changes)
    path.write_text(json.dumps(raw))
    return path


def test_a_hostile_weights_file_is_refused_naming_the_file_and_the_field(tmp_path: Path) -> None:
    good = weights_file(tmp_path / "w.json")
    assert read_fusion_file(good).fusion.weights == {"self_consistency": 1.0}
    cases = {
        "not json": ("{", "not a fusion weights file"),
        "schema": ({"schema": "agentic-rubrics/fusion-weights/9"}, "schema is"),
        "weights": ({"fusion": {"weights": {"self_consistency": True}}}, "fusion.weights"),
        "nan": ({"fusion": {"weights": {"self_consistency": float("nan")}}}, "finite"),
        "method": ({"fusion": {"weights": {"rubric": 1}, "method": "vote"}}, "fusion method"),
        "fitted_on": ({"fitted_on": []}, "field 'fitted_on'"),
        "hashes": ({"fit_instance_sha256": "x"}, "fit_instance_sha256"),
    }
    for name, (change, says) in cases.items():
        path = tmp_path / f"{name.replace(' ', '_')}.json"
        if isinstance(change, str):
            path.write_text(change)
        else:
            weights_file(path, **change)
        with pytest.raises(DataError, match=says) as err:
            read_fusion_file(path)
        assert str(path) in str(err.value), name
    unknown = weights_file(tmp_path / "u.json", fusion={"weights": {"content.size": 1.0}})
    with pytest.raises(DataError, match=f"{unknown}.*unknown content feature"):
        get_selector(f"fitted:{unknown}")
    with pytest.raises(ConfigError, match="cannot read the weights file"):
        get_selector(f"fitted:{tmp_path / 'absent.json'}")


def pools(n: int, groups: int, flip: frozenset[str] = frozenset()) -> list[fusion_fit.Pool]:
    """``n`` pools of 6 candidates; ``good`` predicts the label (its reverse in groups ``flip``),
    ``noise`` does not."""
    rng = random.Random(1)
    out = []
    for i in range(n):
        group = f"repo{i % groups}"
        labels = {f"c{j}": j < 2 for j in range(6)}
        good = {
            c: (0.2 if y else 0.8) if group in flip else (0.8 if y else 0.2)
            for c, y in labels.items()
        }
        good = {c: v + rng.uniform(-0.3, 0.3) for c, v in good.items()}
        noise = {c: rng.random() for c in labels}
        out.append(fusion_fit.Pool(f"i{i}", group, labels, {"good": good, "noise": noise}))
    return out


def test_the_fit_finds_the_signal_that_predicts_and_its_direction() -> None:
    fusion, _, scores = fusion_fit.fit(pools(30, 6), ["good", "noise"], k=6)
    assert abs(fusion.weights["good"]) > 3 * abs(fusion.weights.get("noise", 0.0))
    assert fusion.weights["good"] > 0 and set(scores) >= {"good alone", "noise alone"}
    flipped = pools(30, 6, flip=frozenset(f"repo{g}" for g in range(6)))
    reversed_fit = fusion_fit.fit_weights(flipped, fusion_fit.Config(("good",), 1.0))
    assert reversed_fit.weights["good"] < 0


def test_folds_keep_a_repository_together_and_the_held_out_figures_are_out_of_sample() -> None:
    data = pools(40, 5, flip=frozenset({"repo3"}))
    for fold in fusion_fit.folds(data, 5):
        assert len({data[n].group for n in fold}) == 1
    values, chosen = fusion_fit.cross_validate(data, ["good", "noise"], k=6)
    assert len(chosen) == 5
    held = [fusion_fit.best_at(p, values[n], 6) for n, p in enumerate(data) if p.group == "repo3"]
    # repo3 reverses the signal: weights fitted without it pick badly there (in sample they would not)
    assert sum(held) / len(held) < 0.2
    ev = fusion_fit.evidence(data, values, k=6, resamples=200)
    assert ev["pools"] == 40 and ev["fitted"]["best_at_6_ci"] is not None


def test_a_fit_is_refused_without_a_resolved_candidate_or_with_too_few_instances() -> None:
    data = pools(12, 4)
    none_resolved = [
        fusion_fit.Pool(p.instance_id, p.group, dict.fromkeys(p.labels, False), p.signals)
        for p in data
    ]
    with pytest.raises(DataError, match="no resolved candidate among 72 labelled candidates"):
        fusion_fit.check_enough(none_resolved)
    all_resolved = [
        fusion_fit.Pool(p.instance_id, p.group, dict.fromkeys(p.labels, True), p.signals)
        for p in data[:3]
    ]
    with pytest.raises(DataError, match=r"9 labelled instance.*needs at least 10"):
        fusion_fit.check_enough(data[:9] + all_resolved)
    fusion_fit.check_enough(data[:10])
    few_repos, by = fusion_fit.grouped(pools(12, 2))
    assert by == "instance" and len({p.group for p in few_repos}) == 12
