"""The issue-only static rubric, the integrity checks on real-looking patches, and the offline ranking."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.explore.issue_static import build_issue_rubric
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.rank.offline import OFFLINE_FEATURES, offline_ranking, patch_features
from agentic_rubrics.rubric.checks import run_check
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.types import Candidate, Check, Task

ROOT = Path(__file__).resolve().parents[1]
LITE = ROOT.parent / "shared" / "data" / "swebench" / "lite_candidates.jsonl.gz"

ISSUE = """`Parser.parse_header` crashes on empty input

```
Traceback (most recent call last):
  File "/site-packages/textkit/cli.py", line 10, in main
    parse_header(line)
  File "/site-packages/textkit/parser.py", line 42, in parse_header
    raise KeyError(f"missing header name {name!r}")
KeyError: "missing header name ''"
```
It should raise ValueError instead. The helper `normalize_name` in `textkit/names.py` looks fine.
"""


def diff(
    path: str, removed: list[str], added: list[str], header: str = "", new: bool = False
) -> str:
    old = "/dev/null" if new else f"a/{path}"
    head = f"diff --git a/{path} b/{path}\n" + ("new file mode 100644\n" if new else "")
    body = "".join(f"-{x}\n" for x in removed) + "".join(f"+{x}\n" for x in added)
    start = "0,0" if new else f"40,{len(removed)}"
    return f"{head}--- {old}\n+++ b/{path}\n@@ -{start} +40,{len(added)} @@ {header}\n{body}"


GOOD = diff(
    "textkit/parser.py",
    ['        raise KeyError(f"missing header name {name!r}")'],
    ['        raise ValueError(f"missing header name {name!r}")'],
    "def parse_header(text):",
)
ELSEWHERE = diff("textkit/render.py", ["    return x"], ["    return x or ''"], "def render(x):")
NOISY = (
    diff(
        "textkit/parser.py",
        ["        raise KeyError(name)"],
        [
            "        import requests",
            "        print('debug', name)",
            "        time.sleep(1)",
            "        raise ValueError(name)",
        ],
        "def parse_header(text):",
    )
    + diff("reproduce.py", [], ["from textkit import parse_header", "parse_header('')"], new=True)
    + diff(
        "tests/test_parser.py",
        ["    assert parse('a: b') == ['a', 'b']"],
        ["    pass"],
        "def test_parse():",
    )
    + diff("setup.py", ["    install_requires=[],"], ["    install_requires=['requests'],"])
)
SKIPPER = diff(
    "tests/test_parser.py",
    ["def test_empty():"],
    ["@pytest.mark.skip(reason='flaky')", "def test_empty():"],
)


def task(*patches: str) -> Task:
    return Task(
        instance_id="textkit__textkit-7",
        repo="acme/textkit",
        problem_statement=ISSUE,
        candidates=[Candidate(id=f"c{i}", patch=p) for i, p in enumerate(patches)],
    )


def verdicts(rubric: Any, patch: str) -> dict[str, int | None]:
    return {i.id: run_check(i.check, patch).value for _, i in rubric.items()}


def test_names_come_from_the_issue_and_are_confirmed_by_the_diffs() -> None:
    rubric = build_issue_rubric(task(GOOD, ELSEWHERE))
    checks = {i.id: i.check.model_dump() for _, i in rubric.items()}
    assert checks["FC1"] == {
        "touches": ["textkit/parser.py"]
    }  # the deepest frame, changed by a candidate
    assert checks["FC2"]["touches_symbol"] == ["parse_header"]
    text = json.dumps(checks)
    # named in the issue but changed by no candidate: not written down
    assert "cli.py" not in text and "names.py" not in text and "normalize_name" not in text
    # changed by a candidate but not named in the issue: not written down either
    assert "render" not in text
    assert any("ValueError" in str(c.get("adds_match", "")) for c in checks.values())
    (quoted,) = [i for _, i in rubric.items() if i.check and i.check.name == "removes_match"]
    assert "missing header name" in quoted.description
    assert (
        run_check(quoted.check, GOOD).value == 1 and run_check(quoted.check, ELSEWHERE).value == 0
    )
    good, elsewhere = verdicts(rubric, GOOD), verdicts(rubric, ELSEWHERE)
    assert good["FC1"] == good["FC2"] == 1 and elsewhere["FC1"] == elsewhere["FC2"] == 0


def test_no_confirmation_no_location_items() -> None:
    rubric = build_issue_rubric(task(ELSEWHERE, ELSEWHERE))
    assert not any(
        i.check and i.check.name in ("touches", "touches_symbol") for _, i in rubric.items()
    )


def test_integrity_and_runtime_checks_on_real_looking_patches() -> None:
    rubric = build_issue_rubric(task(GOOD, NOISY, SKIPPER))
    by_desc = {i.description: i for _, i in rubric.items()}

    def value(description_start: str, patch: str) -> int | None:
        (item,) = [i for d, i in by_desc.items() if d.startswith(description_start)]
        return run_check(item.check, patch).value

    for start in ("Removes no assertion", "Adds no print", "Adds no sleep", "Adds no import of a third-party",
                  "Leaves packaging", "Adds no script", "Changes no existing line of the tests"):  # fmt: skip
        assert value(start, GOOD) == 1, start
        assert value(start, NOISY) == 0, start
    assert (
        value("Adds no skip or xfail", SKIPPER) == 0 and value("Adds no skip or xfail", GOOD) == 1
    )
    assert value("Changes source code outside the tests", GOOD) == 1
    assert value("Changes source code outside the tests", SKIPPER) == 0
    assert value("Changes source code outside the tests", "") == 0


def test_third_party_import_check_knows_the_standard_library() -> None:
    check = Check.model_validate({"adds_no_import_except": ["textkit"], "in": "*.py"})
    ok = diff(
        "textkit/a.py",
        [],
        [
            "import os, json",
            "from collections import deque",
            "from . import names",
            "from textkit.x import y",
        ],
    )
    bad = diff("textkit/a.py", [], ["import numpy as np"])
    assert run_check(check, ok).value == 1 and run_check(check, bad).value == 0


def test_offline_ranking_reads_only_patches_and_s() -> None:
    patches = {"a": GOOD, "b": GOOD, "c": ELSEWHERE, "d": "", "e": "not a diff"}
    features = patch_features(patches)
    assert features["d"] is None and features["e"] is None  # empty and unparsable rank last
    assert features["a"]["agreement"] > features["c"]["agreement"]  # type: ignore[index]
    ranking = offline_ranking(features, {"a": 1.0, "b": 1.0, "c": 0.5, "d": None, "e": None})
    assert ranking["d"] is None and ranking["e"] is None
    assert ranking["a"] == ranking["b"] > ranking["c"]  # type: ignore[operator]
    assert set(OFFLINE_FEATURES) >= set(features["a"])  # type: ignore[arg-type]


def make_pool_file(
    tmp_path: Path, n_repos: int = 3, per_repo: int = 4, extra_fields: bool = True
) -> Path:
    rng = random.Random(7)
    rows = []
    for r in range(n_repos):
        for i in range(per_repo):
            cands = []
            for k in range(6):
                good = k < 2 or rng.random() < 0.2
                patch = GOOD if good else (ELSEWHERE if k % 2 else NOISY)
                cands.append(
                    {
                        "source": f"run-{k}",
                        "patch": patch,
                        "resolved": good,
                        "source_kind": "full_run",
                    }
                )
            row = {"instance_id": f"org{r}__repo{r}-{i}", "repo": f"org{r}/repo{r}", "base_commit": "x",
                   "problem_statement": ISSUE, "candidates": cands}  # fmt: skip
            if extra_fields:
                row.update(gold_patch=GOOD, test_patch="+assert 1", fail_to_pass=["t"], pass_to_pass=[],
                           hints_text="look at parser.py", difficulty="<15 min fix")  # fmt: skip
            rows.append(row)
    path = tmp_path / "pool.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in rows))
    return path


def test_scores_do_not_depend_on_evaluation_fields_or_sources(tmp_path: Path) -> None:
    from agentic_rubrics.datasets.swebench import load_candidates_file, write_tasks

    full = write_tasks(load_candidates_file(make_pool_file(tmp_path)), tmp_path / "full.jsonl")
    rows = [r for _, r in read_jsonl(full)]
    for r in rows:
        for c in r["candidates"]:
            c["source"] = "anonymous"
    stripped = tmp_path / "stripped.jsonl"
    stripped.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = load_config(None, {"bootstrap_resamples": 0, "repos": {"url_template": "none"}})
    a = run(full, tmp_path / "a", config)
    b = run(stripped, tmp_path / "b", config)
    assert a is not None and b is not None
    assert a["selectors"] == b["selectors"]
    for name in ("verdicts.jsonl", "progress.jsonl"):

        def rows(folder: str, name: str = name) -> list[str]:
            out = []
            for _, r in read_jsonl(tmp_path / folder / name):
                r.pop("seconds", None)  # wall time
                out.append(json.dumps(r, sort_keys=True))
            return sorted(out)

        assert rows("a") == rows("b"), name
    # offline is a ranking of its own: never an item verdict, never a decision
    assert not any(
        "offline" in line for line in (tmp_path / "a" / "verdicts.jsonl").read_text().splitlines()
    )
    assert a["primary_selector"] == "self_consistency" and "offline" in a["selectors"]


def test_the_benchmark_cross_validates_and_writes_results(tmp_path: Path) -> None:
    pool = make_pool_file(tmp_path)
    out = tmp_path / "bench"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "swebench_rerank.py"), "--data", str(pool), "--out", str(out), "--work", str(tmp_path / "work"), "--resamples", "20"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["instances"] == 12
    for key in ("random", "self_consistency", "static_rubric", "offline"):
        m = results["methods"][key]
        assert set(m) >= {
            "best_at_k",
            "best_at_k_ci",
            "oracle_at_k",
            "random_at_k",
            "roc_auc",
            "pr_auc",
            "coverage",
        }
        assert set(m["best_at_k"]) == {str(k) for k in range(1, 17)}
        assert all(0.0 <= v <= 1.0 for v in m["best_at_k"].values())
    assert results["methods"]["random"]["best_at_k"]["1"] == pytest.approx(
        results["methods"]["random"]["random_at_k"]
    )
    assert set(results["ablation_offline"]) == {
        "rubric S",
        "line agreement",
        "file agreement",
        "patch shape",
    }
    assert results["sanity"]["gold_patch_mean_s"] > results["sanity"]["empty_patch_mean_s"]
    assert "offline" in done.stdout and "ablation" in done.stdout


@pytest.mark.skipif(not LITE.exists(), reason="the shared SWE-bench data is not here")
def test_offline_beats_self_consistency_on_real_lite_candidates(tmp_path: Path) -> None:
    out = tmp_path / "lite"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "swebench_rerank.py"), "--data", str(LITE), "--out", str(out), "--work", str(tmp_path / "work"), "--resamples", "0"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    methods = json.loads((out / "results.json").read_text())["methods"]
    assert methods["offline"]["best_at_k"]["16"] > methods["self_consistency"]["best_at_k"]["16"]
    assert methods["offline"]["roc_auc"] > 0.7


_HASHSEED_SCRIPT = r"""
import json, sys
from pathlib import Path
from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.explore.issue_static import build_issue_rubric
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.rubric.file import rubric_to_yaml
from agentic_rubrics.types import Task

out = Path(sys.argv[1])
issue_only = Task.model_validate_json(sys.argv[2])
rubrics = {"issue-only": rubric_to_yaml(build_issue_rubric(issue_only))}
rows = write_tasks_jsonl(out / "all.jsonl").read_text().splitlines()[:1]
(out / "tasks.jsonl").write_text("\n".join(rows) + "\n")
config = load_config(None, {"explorer": {"sandbox": {"type": "local-copy"}}})
run(out / "tasks.jsonl", out / "run", config, stages=("explore",))
for path in sorted((out / "run" / "rubrics").glob("*/rubrics.yaml")):
    rubrics[path.parent.name] = path.read_text()
print(json.dumps(rubrics))
"""


def test_static_rubrics_do_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Two processes with different PYTHONHASHSEED write the same static rubrics, byte for byte."""

    def hunk(path: str, header: str, old: str, new: str) -> str:
        return diff(path, [old], [new], header)

    # four names, each changed by every candidate: their votes tie, and set order used to break it
    both = (
        hunk("textkit/parser.py", "def parse_header(text):", "    return x", "    return y")
        + hunk("textkit/parser.py", "def strip_name(text):", "    return a", "    return b")
        + hunk("textkit/fields.py", "def split_fields(text):", "    return c", "    return e")
        + hunk("textkit/fields.py", "def join_fields(text):", "    return f", "    return g")
    )
    issue = (
        "`parse_header`, `split_fields`, `join_fields` and `strip_name` all mishandle empty"
        " input in textkit/parser.py and textkit/fields.py"
    )
    tied = Task(
        instance_id="textkit__textkit-9",
        repo="acme/textkit",
        problem_statement=issue,
        candidates=[Candidate(id=f"c{i}", patch=both) for i in range(3)],
    )
    procs = []
    for seed in ("0", "1", "2"):
        folder = tmp_path / seed
        folder.mkdir()
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", _HASHSEED_SCRIPT, str(folder), tied.model_dump_json()],
                env={**os.environ, "PYTHONHASHSEED": seed},
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    outputs = []
    for proc in procs:
        stdout, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        outputs.append(json.loads(stdout))
    assert len(outputs[0]) == 2 and "touches_symbol" in outputs[0]["issue-only"]
    for other in outputs[1:]:
        assert other == outputs[0]


def test_an_explored_rubric_is_parsed_once_and_judged_as_written(tmp_path: Path) -> None:
    """The rubric a task judges with is the one parsed from the text written for it, parsed once."""
    import asyncio

    from agentic_rubrics.pipeline.context import RunContext
    from agentic_rubrics.pipeline.verifiers import BUILTIN
    from agentic_rubrics.pipeline.verifiers.rubric_writing import RUBRIC_FILE, write_rubric
    from agentic_rubrics.rubric.file import parse_rubric

    task = Task(
        instance_id="textkit-1",
        repo="org/textkit",
        base_commit="x",
        problem_statement=ISSUE,
        candidates=[Candidate(id="a", patch=GOOD), Candidate(id="b", patch=NOISY)],
    )
    # the issue-only static rubric: no repository is fetched for the task
    ctx = RunContext.build(load_config(None, {"repos": {"url_template": "none"}}), tmp_path, None)
    outcome, parsed = asyncio.run(write_rubric(task, ctx, BUILTIN["rubric"], None))
    text = outcome.files.get(RUBRIC_FILE)
    assert outcome.status.status == "ok" and text is not None and parsed is not None
    written, warnings = parse_rubric(text)
    assert parsed == written and outcome.status.lint_warnings == len(warnings)  # as written
    assert outcome.status.hash == written.content_hash()


def test_the_offline_speed_benchmark_measures_a_run_and_hashes_its_outputs(tmp_path: Path) -> None:
    """The benchmark's outputs check hashes what a run wrote: any changed verdict changes it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "offline_speed", ROOT / "benchmarks" / "offline_speed.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    pool = make_pool_file(tmp_path, n_repos=2, per_repo=2)
    found = bench.measure_one(pool, tmp_path / "a", rerun=False)
    assert found["tasks"] == 4 and found["candidates"] == 24
    assert found["cpu_s"]["run_with_report"] > 0 and found["peak_rss_mb"] > 0
    folder = tmp_path / "a" / "run"
    assert bench.output_digests(folder) == found["outputs"]
    verdicts = folder / "verdicts.jsonl"
    rows = verdicts.read_text().splitlines()
    flip = next(n for n, row in enumerate(rows) if '"value": 1' in row)
    rows[flip] = rows[flip].replace('"value": 1', '"value": 0')
    verdicts.write_text("\n".join(rows) + "\n")
    changed = bench.output_digests(folder)
    assert changed["verdicts"] != found["outputs"]["verdicts"]
    assert changed["rubrics"] == found["outputs"]["rubrics"]
