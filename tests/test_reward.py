"""Rubric scores as a reward: verl's compute_score and the batched scorer give a finished run's S for its
candidates (checks judge and LLM judge), abstain (None) where the score is missing, and the reward
server survives malformed, oversized, concurrent and failing requests over real HTTP on loopback."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.reward import (
    RewardScorer,
    RewardServer,
    close_scorers,
    compute_score,
    compute_score_batch,
    extract_patch,
)
from agentic_rubrics.rubric.file import rubric_to_yaml
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.testing import LoopbackServer, Reply, message_text, requested_ids

from .conftest import item, rubric
from .test_llm_pipeline import cfg, make_inputs


def _scores(folder: Path) -> dict[tuple[str, str], float | None]:
    """The run's S of each candidate, as its reward: 0 for one the checks decided cannot be the fix
    (an empty patch, one whose ``applies`` check is 0, no behaviour change, the test infrastructure
    changed)."""
    held = {"no_behaviour_change", "tampers_with_tests", "empty_patch"}
    unapplied = {
        (v["instance_id"], v["candidate_id"])
        for _, v in read_jsonl(folder / "verdicts.jsonl")
        if v["origin"] == "checked" and v["reason"] == "applies" and v["value"] == 0
    }
    return {
        (r["instance_id"], r["candidate_id"]): 0.0
        if held & set(r["reasons"]) or (r["instance_id"], r["candidate_id"]) in unapplied
        else r["score"]
        for _, r in read_jsonl(folder / "scores.jsonl")
    }


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("reward") / "demo"
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    yield out
    close_scorers()


def test_compute_score_gives_the_runs_s_for_every_demo_candidate(demo_run: Path) -> None:
    expected = _scores(demo_run)
    tasks = load_tasks(demo_run / "demo_tasks.jsonl")
    rows = [(t.instance_id, c.id, c.patch) for t in tasks for c in t.candidates]
    assert len(rows) == len(expected) > 100
    infos = [{"run_folder": str(demo_run), "instance_id": iid} for iid, _, _ in rows]
    batch = compute_score_batch(
        ["swe"] * len(rows), [p for *_, p in rows], [None] * len(rows), infos
    )
    assert batch == [expected[(iid, cid)] for iid, cid, _ in rows]
    # one at a time, the patch inside a model's response, the checks judge named: the same S
    for iid, cid, patch in rows[:12]:
        response = f"I fixed it.\n```diff\n{patch}```\nDone."
        got = compute_score(
            "swe", response, None, {"run_folder": str(demo_run), "instance_id": iid}
        )
        assert got == expected[(iid, cid)]
        info = {"instance_id": iid, "details": True}
        out = compute_score("swe", patch, None, info, run_folder=str(demo_run), judge="checks")
        assert out["score"] == expected[(iid, cid)] and out["reward_absent"] is False


def test_missing_is_none_never_zero(demo_run: Path, tmp_path: Path) -> None:
    info = {"run_folder": str(demo_run), "instance_id": "nobody__nothing-1"}
    assert compute_score("swe", "diff --git a/x b/x\n", None, info) is None
    flagged = compute_score("swe", "", None, info, abstain=-1.0)  # chosen by the caller, flagged
    assert flagged["score"] == -1.0 and flagged["reward_absent"] is True
    assert flagged["absent_reason"] == "unknown_instance"
    with pytest.raises(DataError, match="instance_id"):
        compute_score("swe", "", None, {"run_folder": str(demo_run)})
    with pytest.raises(DataError, match="run_folder, or rubrics_dir"):
        compute_score("swe", "", None, {"instance_id": "x"})
    with pytest.raises(DataError, match=r"extra_info\.run_folder: expected a string, got int"):
        compute_score("swe", "", None, {"instance_id": "x", "run_folder": 3})
    with pytest.raises(DataError, match="judge: expected 'checks' or 'run'"):
        compute_score("swe", "", None, {**info, "judge": "llm"})
    # a patch that does not apply: the items decided on the tree stay missing with their reason
    task = load_tasks(demo_run / "demo_tasks.jsonl")[0]
    stray = "--- a/nowhere.py\n+++ b/nowhere.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    with RewardScorer.from_run(demo_run) as scorer:
        reward = scorer.score(task.instance_id, stray)
    by_id = {v.item_id: v for v in reward.verdicts}
    applies = [v for v in reward.verdicts if v.reason == "applies"]
    assert applies and all(v.value == 0 for v in applies)
    not_applied = [v for v in reward.verdicts if v.detail == "not_applied"]
    assert not_applied and all(v.value is None and v.status == "missing" for v in not_applied)
    assert [v.value for v in by_id.values() if v.value is not None and v.value > 0]  # S over the
    assert reward.score == 0.0 and reward.abstained is None  # rest is not 0: the reward is
    # a binary section declaring 100 GB on one line of data: corrupt (git refuses it), so the patch
    # does not apply: 0 (its declared size switched the analysis off, and a comment-only patch got 1.0)
    head = "diff --git a/blob.bin b/blob.bin\nnew file mode 100644\nindex 0000000..1111111\n"
    bogus = head + "GIT binary patch\nliteral 99999999999\nzcmeIu0Sy2E0K%a6Pi+qeh%mq\n\n"
    # one whose data could inflate past the analysis's bound: not analysed, `applies` undecided, a
    # gate missing: no reward, never S over the rest
    big = head + "GIT binary patch\nliteral 67108865\n" + ("z" + "0" * 65 + "\n") * 1300 + "\n"
    with RewardScorer.from_run(demo_run) as scorer:
        for patch in (stray, task.candidates[0].patch):
            got = scorer.score(task.instance_id, patch.rstrip("\n") + "\n" + bogus)
            assert (got.score, got.abstained) == (0.0, None), got
            got = scorer.score(task.instance_id, patch.rstrip("\n") + "\n" + big)
            assert (got.score, got.abstained) == (None, "gate_missing"), got
    # nothing, a response with no diff, a diff of prose: the lowest reward too, never S of the checks
    for response in ("", "hello world", "diff --git a/x b/x\nI could not fix it.\n"):
        got = compute_score("swe", response, None, {**info, "instance_id": task.instance_id})
        assert got == 0.0, response
    # a rubric whose every item needs the applied tree, and no `applies` item
    only_tree = rubric(
        runtime=[item("RT1", 2, {"parses": True}), item("RT2", 1, {"no_new_undefined_names": True})]
    )
    (tmp_path / "rubrics" / task.instance_id).mkdir(parents=True)
    (tmp_path / "rubrics" / task.instance_id / "rubrics.yaml").write_text(rubric_to_yaml(only_tree))
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(task.model_dump_json() + "\n")
    settings = {"rubrics_dir": str(tmp_path / "rubrics"), "tasks_file": str(tasks_file)}
    # ... and a patch that does not apply is still known not to: 0, not an abstention
    assert compute_score("swe", stray, None, {**settings, "instance_id": task.instance_id}) == 0.0
    good = compute_score(
        "swe", task.candidates[0].patch, None, {**settings, "instance_id": task.instance_id}
    )
    assert good == 1.0


def test_extract_patch() -> None:
    diff = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n"
    assert extract_patch("\n " + diff) == diff
    assert extract_patch(f"Plan:\n```python\nprint(1)\n```\n```diff\n{diff}```\n") == diff
    other = diff.replace("a.py", "b.py")
    assert extract_patch(f"```\n{diff}```\nthen\n```patch\n{other}```") == other  # the last one
    assert extract_patch(f"Here it is:\n{diff}") == diff
    assert extract_patch("no diff here, sorry") == ""
    started = time.monotonic()
    assert extract_patch("```\n" * 200_001 + "x") == ""  # unclosed fences: one pass
    assert time.monotonic() - started < 2


def _patch_script(body: dict[str, Any], _: int) -> Reply:
    """A judge that passes an item only for the patch setting x = 2 (so S differs by candidate)."""
    text = message_text(body["messages"][-1])
    return Reply(content=json.dumps({i: int("+x = 2" in text) for i in requested_ids(body)}))


def test_llm_reward_gives_the_runs_s(tmp_path: Path) -> None:
    tasks_file, rubrics = make_inputs(tmp_path)
    with LoopbackServer(_patch_script) as srv:
        run(tasks_file, tmp_path / "out", cfg(srv, rubrics))
        expected = _scores(tmp_path / "out")
        assert len(set(expected.values())) >= 2
        sent = len(srv.requests)
        tasks = load_tasks(tasks_file)
        pairs = [(t.instance_id, c.patch) for t in tasks for c in t.candidates]
        with RewardScorer.from_run(tmp_path / "out") as scorer:
            got = scorer.score_many(pairs)
            assert scorer.efficiency()["model_calls"] == len(srv.requests) - sent
        ids = [(t.instance_id, c.id) for t in tasks for c in t.candidates]
        assert [r.score for r in got] == [expected[k] for k in ids]
        # identical patches judged once: one call per distinct non-empty patch per task
        assert len(srv.requests) - sent == 2 * 2
        llm_items = [v for v in got[0].verdicts if v.status == "judged"]
        assert llm_items and all(v.reason is None for v in llm_items)


def _checks_scorer(tmp_path: Path, **llm: Any) -> RewardScorer:
    """A scorer over make_inputs' rubrics: checks only, or the LLM judge at ``llm["server"]``."""
    tasks_file, rubrics = make_inputs(tmp_path)
    if "server" in llm:
        config = cfg(llm["server"], rubrics, model={"max_retries": 0})
    else:
        config = load_config(None, {"rubrics_dir": str(rubrics)})
    return RewardScorer(config, rubrics_dir=rubrics, tasks=load_tasks(tasks_file))


GOOD = "diff --git a/core.py b/core.py\n--- a/core.py\n+++ b/core.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def _post(
    url: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=20)
    try:
        conn.putrequest("POST", "/score")
        sent = {
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
            **(headers or {}),
        }
        for key, value in sent.items():
            if value:
                conn.putheader(key, value)
        conn.endheaders(body if "Content-Length" not in (headers or {}) else None)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}"), dict(resp.getheaders())
    finally:
        conn.close()


def _score_body(instance_id: str = "demo__task-0", patch: str = GOOD) -> bytes:
    return json.dumps({"instance_id": instance_id, "patch": patch}).encode()


def test_server_answers_and_refuses_hostile_requests(tmp_path: Path) -> None:
    scorer = _checks_scorer(tmp_path)
    with scorer, RewardServer(scorer, max_body=4096) as server:
        status, body, _ = _post(server.url, _score_body())
        assert status == 200 and body["S"] == 1.0 and body["instance_id"] == "demo__task-0"
        assert body["coverage"] == pytest.approx(3 / 9)  # one checked item of weight 3 out of 9
        verdicts = {v["item_id"]: v for v in body["verdicts"]}
        assert (
            verdicts["SA1"]["status"] == "missing" and verdicts["SA1"]["reason"] == "not_configured"
        )
        assert verdicts["SA1"]["value"] is None and "prompt" not in json.dumps(body)
        cases = [
            (b"{not json", 400, "body: not JSON"),
            (b"[1, 2]", 400, "expected a JSON object, got an array"),
            (b'{"instance_id": "demo__task-0"}', 400, "patch: missing"),
            (b'{"instance_id": "demo__task-0", "patch": 7}', 400, "patch: expected a string"),
            (b'{"instance_id": 3, "patch": ""}', 400, "instance_id: expected a non-empty string"),
            (b'{"instance_id": "demo__task-0", "patch": "", "x": 1}', 400, "unknown field(s) x"),
            (b'{"instance_id": "nobody", "patch": ""}', 404, "unknown instance 'nobody'"),
            (b"\xff\xfe{}", 400, "not UTF-8"),
            (b"[" * 100_000 + b"]" * 100_000, 413, "over the limit"),
        ]
        for raw, code, words in cases:
            status, body, _ = _post(server.url, raw)
            assert (status, words in body.get("error", "")) == (code, True), (raw[:40], body)
        # an announced size over the limit is refused before a byte of the body is read
        status, body, _ = _post(server.url, b"", {"Content-Length": str(10**9)})
        assert status == 413
        status, body, _ = _post(server.url, b"{}", {"Content-Length": ""})
        assert status == 411
        status, body, _ = _post(server.url, b"", {"Content-Length": "9" * 5000})
        assert status == 413  # a length too long to be a number of bytes: no int() of it
        status, body, _ = _post(server.url, b"", {"Content-Length": "-1"})
        assert status == 400 and "Content-Length" in body["error"]
        # a refused request on a kept-alive connection does not leave its body to be read as the
        # next request
        host, port = server.url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        for path in ("/nowhere", "/score"):
            conn.request("POST", path, _score_body())
            answer = conn.getresponse()
            assert answer.status == (404 if path == "/nowhere" else 200), answer.read()
            answer.read()
        conn.close()
        conn = http.client.HTTPConnection(*server.url.removeprefix("http://").split(":"), timeout=5)
        conn.request("GET", "/health")
        health = json.loads(conn.getresponse().read())
        conn.close()
        assert health["status"] == "ok" and health["judge"] == "checks" and health["instances"] == 2
        # after all that, it still scores
        assert _post(server.url, _score_body())[0] == 200


def test_server_limits_concurrency_queues_and_stops_gracefully(tmp_path: Path) -> None:
    with LoopbackServer(_patch_script, latency=0.3) as model:
        scorer = _checks_scorer(tmp_path, server=model)
        server = RewardServer(scorer, concurrency=2, queue=10).start()
        results: list[int] = []

        def one(n: int) -> None:
            patch = GOOD.replace("x = 2", f"x = {n + 2}")  # distinct patches: no shared verdicts
            results.append(_post(server.url, _score_body(patch=patch))[0])

        threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [200] * 8 and server.max_scoring == 2
        # a full queue: refused at once with Retry-After, never a score
        tight = RewardServer(scorer, concurrency=1, queue=0).start()
        got: list[tuple[int, dict[str, Any], dict[str, str]]] = []
        first = threading.Thread(
            target=lambda: got.append(_post(tight.url, _score_body(patch=GOOD + " ")))
        )
        first.start()
        deadline = time.monotonic() + 10
        while tight.admitted == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        status, body, headers = _post(tight.url, _score_body(patch=GOOD.replace("2", "9")))
        assert status == 503 and headers.get("Retry-After") == "1" and "S" not in body
        # stopping waits for the request in flight, which gets its answer
        assert tight.stop() is True
        first.join()
        assert got[0][0] == 200
        with pytest.raises(OSError):
            _post(tight.url, _score_body())
        assert server.stop() is True
        scorer.close()


def test_server_judge_failure_gives_missing_verdicts_and_an_absent_reward(tmp_path: Path) -> None:
    with LoopbackServer(lambda b, n: Reply(status=500)) as model:
        scorer = _checks_scorer(tmp_path, server=model)
        with scorer, RewardServer(scorer) as server:
            status, body, _ = _post(
                server.url, _score_body(patch=GOOD.replace("core.py", "util.py"))
            )
    assert status == 200, body
    verdicts = {v["item_id"]: v for v in body["verdicts"]}
    assert {verdicts[i]["reason"] for i in ("SA1", "SA2", "RT1")} == {"provider_error"}
    assert verdicts["FC1"]["value"] == 0  # the check still decides its item
    # but S over it alone would be the checks' value posing as the judge's: absent
    assert body["S"] is None and body["abstained"] == "judge_failed:provider_error"
    assert body["missing"] == {"provider_error": 3}


def test_server_judge_failure_with_no_check_abstains(tmp_path: Path) -> None:
    (tmp_path / "r" / "t-1").mkdir(parents=True)
    only_model = rubric(spec_alignment=[item("SA1", 2), item("SA2", 1)])
    (tmp_path / "r" / "t-1" / "rubrics.yaml").write_text(rubric_to_yaml(only_model))
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(
        json.dumps({"instance_id": "t-1", "problem_statement": "x is wrong"}) + "\n"
    )
    with LoopbackServer(lambda b, n: Reply(content="")) as model:
        config = cfg(model, tmp_path / "r", model={"max_retries": 0})
        scorer = RewardScorer(config, rubrics_dir=tmp_path / "r", tasks=load_tasks(tasks_file))
        with scorer, RewardServer(scorer) as server:
            status, body, _ = _post(server.url, _score_body("t-1"))
    assert status == 200 and body["S"] is None and body["abstained"] == "judge_failed:empty_reply"
    assert body["missing"] == {"empty_reply": 2}


def test_serve_reward_command_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    tasks_file, rubrics = make_inputs(tmp_path)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentic_rubrics.cli.app",
            "serve-reward",
            "--rubrics",
            str(rubrics),
            "--tasks",
            str(tasks_file),
            "--port",
            "0",
            "--checks-only",
            "--header-timeout",
            "1.5",
            "--max-connections",
            "4",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        status, body, _ = _post(url, _score_body())
        assert status == 200 and body["S"] == 1.0
        # a connection that sends nothing is closed at --header-timeout
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=20) as idle:
            started = time.monotonic()
            assert idle.recv(100) == b"" and time.monotonic() - started < 15
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert proc.stderr is not None and "stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_server_a_judge_that_cannot_be_used_is_a_502_never_a_score(tmp_path: Path) -> None:
    with LoopbackServer(lambda b, n: Reply(status=401, error="invalid api key")) as model:
        scorer = _checks_scorer(tmp_path, server=model)
        with scorer, RewardServer(scorer) as server:
            status, body, _ = _post(server.url, _score_body())
            again = _post(server.url, _score_body(patch=GOOD.replace("2", "3")))[0]
    assert status == 502 and "authentication failed" in body["error"] and "S" not in body
    assert again == 502


class _BrokenScorer(RewardScorer):
    """A scorer with a fault of its own (not the judge's): the server answers 500, and goes on."""

    def score(self, instance_id: str, patch: str) -> Any:
        if patch == "boom":
            raise RuntimeError("a bug")
        return super().score(instance_id, patch)


def test_server_a_fault_of_its_own_is_a_500_and_it_goes_on(tmp_path: Path) -> None:
    tasks_file, rubrics = make_inputs(tmp_path)
    config = load_config(None, {"rubrics_dir": str(rubrics)})
    scorer = _BrokenScorer(config, rubrics_dir=rubrics, tasks=load_tasks(tasks_file))
    with scorer, RewardServer(scorer) as server:
        status, body, _ = _post(server.url, _score_body(patch="boom"))
        assert status == 500 and body["error"] == "internal error (RuntimeError); see the log"
        assert _post(server.url, _score_body())[0] == 200
