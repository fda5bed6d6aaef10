"""The per-instance runs of ``execution_coverage.py``: the tests verifier over an instance's candidates
(its own test files as the artifact), and the candidates run with the harness's command in bubblewrap
and in docker."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests_verifier_swebench import absolute_imports

from agentic_rubrics.sandbox.testlogs import directives

FILE_NAME_OK = ("test_", "conftest")
_PASS = ("passed", "xfailed")  # swebench/harness/grading.py: test_passed


def artifact(record: Any, tree: Path) -> dict[str, str]:
    """The test files the harness runs (the test patch's directives) after the test patch, flattened
    by name (relative imports made absolute), with the nearest conftest.py below the root."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        names = directives(record.test_patch)
        for path in names:
            if (tree / path).is_file():
                (work / path).parent.mkdir(parents=True, exist_ok=True)
                (work / path).write_bytes((tree / path).read_bytes())
        done = subprocess.run(
            ["patch", "-p1", "-s", "-d", str(work)],
            input=record.test_patch,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            return {}
        out: dict[str, str] = {}
        for name in names:
            base = Path(name).name
            if not (work / name).is_file() or not base.endswith(".py") or base in out:
                continue
            if not (base.startswith("test_") or base.endswith("_test.py")):
                continue
            package = str(Path(name).parent).replace("/", ".")
            out[base] = absolute_imports((work / name).read_text(), package)
            for folder in [Path(name).parent, *Path(name).parent.parents][:-1]:
                conftest = tree / folder / "conftest.py"
                if conftest.is_file() and "conftest.py" not in out:
                    where = str(folder).replace("/", ".")
                    out["conftest.py"] = absolute_imports(conftest.read_text(), where)
    return out


def agreement_of(
    args: Any, record: Any, task: Any, tree: Path, site: str = "bwrap"
) -> dict[str, Any]:
    """The tests verifier on one instance's candidates, against the harness's labels (cached in
    ``WORK/runs/<id>/result.json``), in bubblewrap over the spec's venv or (``site`` ``docker``) in
    containers of the instance's image built here (``--test-docker local``)."""
    iid = record.instance_id
    work = args.work / "runs" / iid
    done_file = work / "result.json"
    if done_file.is_file():
        return json.loads(done_file.read_text())
    files = artifact(record, tree)
    labels = {c.id: bool(c.resolved) for c in task.candidates}
    result: dict[str, Any] = {"candidates": len(labels), "graded": 0, "agree": 0, "site": site}
    result |= {"missing": {}, "disagreements": [], "artifact_files": sorted(files)}
    if not files:
        result["missing"] = {"no_test_file": len(labels)}
        _write(done_file, result)
        return result
    given = work / "tests" / iid
    given.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (given / name).write_text(text)
    row = {"instance_id": iid, "repo": record.repo, "base_commit": record.base_commit}
    row |= {"version": record.version, "problem_statement": task.problem_statement}
    row["candidates"] = [
        {"id": c.id, "source": c.source, "patch": c.patch} for c in task.candidates
    ]
    (work / "tasks.jsonl").write_text(json.dumps(row) + "\n")
    (work / "settings.yaml").write_text(f"tests:\n  timeout_s: {args.timeout}\n")
    cmd = [str(Path(sys.executable).parent / "agentic-rubrics"), "run"]
    cmd += ["--tasks", str(work / "tasks.jsonl"), "--out", str(work / "run")]
    cmd += [
        "--verifiers",
        "tests",
        "--tests",
        str(work / "tests"),
        "--config",
        str(work / "settings.yaml"),
    ]
    if site == "docker":
        cmd += ["--test-docker", "local"]
    else:
        cmd += ["--test-env-spec", str(with_pytest(args))]
        cmd += ["--test-env-cache", str(args.env_cache)]
    cmd += ["--test-reruns", "0", "--repo-url", args.repo_url]
    cmd += ["--repo-cache", str(args.repo_cache)] if args.repo_cache else []
    start = time.monotonic()
    try:
        subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            check=False,
            timeout=args.timeout * (len(labels) + 4),
        )
    except subprocess.TimeoutExpired:
        result["missing"] = {"run_timeout": len(labels)}
        _write(done_file, result)
        return result
    result["wall_s"] = round(time.monotonic() - start, 1)
    progress = work / "run" / "progress.jsonl"
    if not progress.is_file():
        result["missing"] = {"no_progress": len(labels)}
        _write(done_file, result)
        return result
    p = json.loads(progress.read_text().splitlines()[-1])
    rec = p["baselines"]["tests"]
    graded = {c: v for c, v in (rec.get("pass_rate") or {}).items() if v is not None}
    result["status"] = rec.get("status")
    result["counted_tests"] = rec.get("counted")
    result["graded"] = len(graded)
    result["agree"] = sum((v == 1.0) == labels[c] for c, v in graded.items())
    why: dict[str, int] = {}
    for c, reason in (rec.get("reasons") or {}).items():
        if c not in graded:
            why[reason] = why.get(reason, 0) + 1
    result["missing"] = why
    sources = {c.id: c.source for c in task.candidates}
    result["disagreements"] = [
        {
            "instance_id": iid,
            "candidate": c,
            "source": sources[c],
            "pass_rate": v,
            "label": labels[c],
        }
        for c, v in sorted(graded.items())
        if (v == 1.0) != labels[c]
    ]
    _write(done_file, result)
    return result


def with_pytest(args: Any) -> Path:
    """The env spec with pytest added where it has none (sympy's runs bin/test; the tests verifier
    runs pytest), written into WORK."""
    specs = json.loads(Path(args.env_spec).read_text())
    for spec in specs.values():
        names = [
            r.split("=")[0].split("<")[0].split(">")[0].strip().lower()
            for r in spec.get("requirements", [])
        ]
        if "pytest" not in names:
            spec["requirements"] = [*spec.get("requirements", []), "pytest==7.4.4"]
    path = Path(args.work) / "tests_env_spec.json"
    path.write_text(json.dumps(specs, indent=1, sort_keys=True) + "\n")
    return path


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def _command(record: Any, python: str) -> Any:
    from agentic_rubrics.sandbox.testlogs import command, run_command, runner_for

    runner = runner_for(record.repo)
    return run_command(runner, command(runner, python, directives(record.test_patch)))


def _verdict(run: Any, names: list[str]) -> dict[str, Any]:
    statuses = {n: run.outcomes.get(n, "missing") for n in names}
    return {
        "resolved": all(s in _PASS for s in statuses.values()) if run.outcomes else None,
        "reason": run.reason,
        "statuses": statuses,
    }


def spec_for(specs: dict[str, Any], repo: str, version: str) -> Any:
    """The spec of ``repo@version``, else of ``repo``, else ``*`` (env-check's own order)."""
    for key in (f"{repo}@{version}", repo, "*"):
        if key in specs:
            return specs[key]
    return None


async def compare_instance(
    args: Any, checker: Any, record: Any, task: Any, config: Any
) -> dict[str, Any]:
    """Each distinct candidate run with the harness's command in bubblewrap and in docker."""
    from agentic_rubrics.sandbox.base import Where
    from agentic_rubrics.sandbox.built_files import add_built_files
    from agentic_rubrics.sandbox.testenv import build_env
    from agentic_rubrics.sandbox.testrun import PreparedTree, run_tests
    from agentic_rubrics.sandbox.testrun_docker import run_candidates_docker

    names = [*record.fail_to_pass, *record.pass_to_pass]
    prepared = PreparedTree(checker.tree(record))
    try:
        spec = spec_for(checker.specs, record.repo, record.version)
        assert spec is not None
        interp = build_env(
            spec,
            prepared.path,
            cache_dir=args.env_cache,
            repo=record.repo,
            repo_version=record.version,
        )
        add_built_files(interp.tree_files, prepared.path)
        distinct = {c.patch: f"p{n}" for n, c in enumerate(task.candidates)}
        local = {}
        for patch, pid in distinct.items():
            local[pid] = await run_tests(
                prepared.path,
                patch,
                {},
                python=interp.python,
                limits=checker.limits,
                test_patch=record.test_patch,
                command=_command(record, interp.python),
                read_only=interp.read_only,
            )
        docker = await run_candidates_docker(
            config,
            Where(record.instance_id, None, base_commit=record.base_commit),
            {pid: patch for patch, pid in distinct.items()},
            {},
            python="python",
            limits=checker.limits,
            test_patch=record.test_patch,
            command=_command(record, "python"),
            parallel=1,
        )
        out = []
        for c in task.candidates:
            pid = distinct[c.patch]
            b, d = _verdict(local[pid], names), _verdict(docker[pid], names)
            differing = [n for n in names if b["statuses"][n] != d["statuses"][n]]
            out.append(
                {
                    "candidate": c.id,
                    "label": bool(c.resolved),
                    "bwrap": b["resolved"],
                    "docker": d["resolved"],
                    "reasons": [b["reason"], d["reason"]],
                    "same_resolved": b["resolved"] == d["resolved"],
                    "same_outcomes": not differing,
                    "differing_tests": {
                        n: [b["statuses"][n], d["statuses"][n]] for n in differing[:5]
                    },
                }
            )
    finally:
        prepared.close()
    return {"instance_id": record.instance_id, "candidates": out}
