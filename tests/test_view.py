"""The HTML view (``agentic-rubrics view``), opened from ``file://`` in a real headless Chromium.

One run of a few bundled tasks plus a hostile one (its issue, a patch and a candidate id carry markup
meant to run), one view, one browser for the module. Without Playwright or Debian's chromium the browser
tests skip, saying which is missing, unless AGENTIC_RUBRICS_REQUIRE_BROWSER=1 (CI) makes them fail.
Set AGENTIC_RUBRICS_UPDATE_SCREENSHOT=1 to write the README's screenshot (docs/img/view-task.png).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.cli.view import make_server
from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.pipeline.runner import RunConfig, run
from agentic_rubrics.report.view_data import load_view
from agentic_rubrics.report.view_html import MAX_DIFF_LINES, diff_html, json_block, pre
from agentic_rubrics.report.view_index import headline, page_name, write_view
from agentic_rubrics.report.view_task import TASK_SECTIONS, matrix_section, task_page
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.lock import folder_lock
from agentic_rubrics.types import Verdict

pytestmark = pytest.mark.xdist_group("test_view")  # one run, one view, one browser per module
ROOT = Path(__file__).resolve().parents[1]
SCREENSHOT = ROOT / "docs" / "img" / "view-task.png"
HOSTILE = "<script>alert(1)</script> </textarea> </script><img src=x onerror=alert(1)>"
HOSTILE_ID = 'evil/"><img src=x onerror=alert(3)>'
HOSTILE_CANDIDATE = "c<b>'\"x"
EVIL_FILE = (
    "diff --git a/evil.py b/evil.py\nnew file mode 100644\n--- /dev/null\n+++ b/evil.py\n"
    "@@ -0,0 +1,3 @@\n+a = '<script>alert(1)</script>'\n+b = '</textarea>'\n"
    "+c = '</script><img src=x onerror=alert(2)>'\n"
)


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three bundled tasks and a hostile copy of the first, run and reported (plots drawn)."""
    root = tmp_path_factory.mktemp("view")
    rows = [r for _, r in read_jsonl(write_tasks_jsonl(root / "all.jsonl"))][:3]
    evil = json.loads(json.dumps(rows[0]))
    evil["instance_id"] = HOSTILE_ID
    evil["problem_statement"] = f"{HOSTILE}\n\n{evil['problem_statement']}"
    evil["candidates"] = evil["candidates"][:3]
    evil["candidates"][0]["patch"] += EVIL_FILE
    evil["candidates"][1]["id"] = HOSTILE_CANDIDATE
    evil["candidates"][1]["patch"] = EVIL_FILE
    tasks = root / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in [*rows, evil]))
    out = root / "run"
    run(tasks, out, RunConfig(bootstrap_resamples=0))
    return out


@pytest.fixture(scope="module")
def view(reported: Path) -> Path:
    written = write_view(reported, page_size=2)  # a small page: the index's paging is exercised
    assert written.tasks == 4
    return written.folder


def report_json(run: Path) -> dict[str, Any]:
    return json.loads((run / "report.json").read_text())


# --------------------------------------------------------------------------- without a browser


def test_a_json_block_holds_any_text_and_closes_on_nothing() -> None:
    nasty = {"p": "</script><img src=x onerror=alert(1)> & \u2028\u2029 <!-- \ud800"}
    block = json_block("d", nasty)
    inner = block.removeprefix('<script type="application/json" id="d">').removesuffix("</script>")
    assert not re.search("[<>&\u2028\u2029]", inner)
    assert json.loads(inner) == {"p": nasty["p"].replace("\ud800", "\ufffd")}


def test_a_long_patch_is_shown_cut_one_span_per_line() -> None:
    patch = (
        "+" + "x" * 5_000 + "\n-</pre>\udc80\r\n" + "".join(f" line {i}\n" for i in range(4_100))
    )
    html = diff_html(patch)
    spans = re.findall(r'<span class="(d\w)">(.*?)</span>', html)
    assert len(spans) == MAX_DIFF_LINES + 1 and spans[-1] == ("dn", "… 102 more lines not shown")
    assert spans[0] == ("da", "+" + "x" * 1_999 + " … (3,001 more characters)")
    assert spans[1] == ("dd", "-&lt;/pre&gt;\ufffd")
    assert diff_html("") == '<pre class="diff"></pre>'


def test_the_headline_names_best_at_1_and_the_largest_k_once_each(reported: Path) -> None:
    report = load_view(reported).report
    assert headline(report).count("<th>Best@1</th>") == 1
    assert "<th>Best@15</th>" in headline(report)  # the bundled tasks' largest pool
    report.oracle_pass_at_k = {"1": 0.5}  # pools of one candidate
    assert headline(report).count("<th>Best@1</th>") == 1


def test_flipping_repeats_are_marked_in_the_matrix(reported: Path) -> None:
    task = load_view(reported).tasks[0]
    cid, item = task.candidate_ids[0], next(iter(task.rubric.items()))[1]  # type: ignore[union-attr]
    base: dict[str, Any] = {
        "instance_id": task.instance_id,
        "candidate_id": cid,
        "item_id": item.id,
        "axis": "runtime_rubrics",
        "weight": 1,
    }
    task.verdicts = [
        *(Verdict(**base, origin="judged", value=v, repeat=r) for r, v in enumerate((1, 0, 1))),
        Verdict(**base, origin="missing", value=None, reason="provider_error", repeat=3),
    ]
    _, _, markup = matrix_section(task)  # type: ignore[misc]
    assert markup.count('" class="flip"') == 1 and "1 flipping cell(s)" in markup
    cell = re.search(rf'<td data-candidate="{cid}" class="flip">(.*?)</td>', markup)
    assert cell is not None
    assert re.findall(r'data-origin="(\w+)"', cell.group(1)) == ["judged"] * 3 + ["missing"]
    assert 'data-reason="provider_error"' in cell.group(1)


def test_items_passing_or_failing_for_all_are_marked_in_the_matrix(
    reported: Path, view: Path
) -> None:
    """The rows the task pages mark are report.json's, which are those whose verdicts (counted here
    from verdicts.jsonl) are one value for every candidate with one."""
    values: dict[tuple[str, str], list[int]] = {}  # one repeat: a row is a candidate's verdict
    for _, r in read_jsonl(reported / "verdicts.jsonl"):
        if r["value"] is not None:
            values.setdefault((r["instance_id"], r["item_id"]), []).append(r["value"])
    marked_any = 0
    for task in report_json(reported)["tasks"]:
        iid, nd = task["instance_id"], task["non_discriminating"]
        html = (view / page_name(iid)).read_text()
        marked = dict(
            re.findall(r'<tr data-item="([^"]+)" class="nd" data-constant="(\w+)">', html)
        )
        assert marked == {
            **dict.fromkeys(nd["passes_for_all"], "pass"),
            **dict.fromkeys(nd["fails_for_all"], "fail"),
        }
        constant = {
            i: {1: "pass", 0: "fail"}[v[0]]
            for (t, i), v in values.items()
            if t == iid and len(v) >= 2 and len(set(v)) == 1
        }
        assert marked == constant
        assert f"{len(marked)} such item(s)" in html
        marked_any += len(marked)
    assert marked_any > 0
    index = (view / "index.html").read_text()
    assert '<option value="nondisc">' in index and '"nondisc": ' in index


def test_another_verifier_adds_its_artifacts_with_one_function(reported: Path) -> None:
    task = load_view(reported).tasks[0]

    def tests_section(t: Any) -> tuple[str, str, str]:
        return "tests", "Test outputs", pre(f"{t.instance_id}: 3 passed </pre><b>")

    html = task_page(task, [*TASK_SECTIONS, tests_section])
    assert '<section id="tests"><h2>Test outputs</h2><pre>' in html
    assert "3 passed &lt;/pre&gt;&lt;b&gt;" in html


def test_the_command_writes_the_view_and_refuses_a_folder_not_reported(
    reported: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(reported, copy)
    result = CliRunner().invoke(app, ["view", str(copy)])
    assert result.exit_code == 0, result.output
    assert "4 task pages" in result.output and (copy / "view" / "index.html").is_file()
    (copy / "report.json").unlink()
    result = CliRunner().invoke(app, ["view", str(copy)])
    assert result.exit_code == 2
    assert (
        "report.json: file not found" in result.output and "agentic-rubrics report" in result.output
    )
    assert (copy / "view" / "index.html").is_file()  # the older view stays whole
    with folder_lock(copy):  # another process writing the folder: nothing read half-written
        result = CliRunner().invoke(app, ["view", str(copy)])
    assert result.exit_code == 3 and "another process is writing" in result.output
    folder = RunFolder(copy)
    config = folder.config()
    folder.open(config["config"], config["config_hash"], restart=True)
    assert not (copy / "view").exists()  # a restarted run keeps no view of the results it discarded
    result = CliRunner().invoke(app, ["view", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "not a run folder" in result.output
    assert not (tmp_path / "nothing").exists()


def test_report_md_and_the_notebook_point_to_the_view(reported: Path) -> None:
    assert (
        "`agentic-rubrics view RUN` writes `view/index.html`"
        in (reported / "report.md").read_text()
    )
    notebook = json.loads((ROOT / "notebooks" / "rubric_utility_audit.ipynb").read_text())
    assert "agentic-rubrics view RUN" in "".join(notebook["cells"][0]["source"])


def test_served_on_loopback_with_the_view_folder_only(view: Path) -> None:
    server = make_server(view, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        with urllib.request.urlopen(f"{base}/index.html", timeout=10) as reply:
            assert reply.headers["X-Content-Type-Options"] == "nosniff"
            assert b"Content-Security-Policy" in reply.read()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/../report.json", timeout=10)
        assert refused.value.code == 404
        refused.value.close()
    finally:
        server.shutdown()
        server.server_close()


class Tags(HTMLParser):
    """Every tag of a page with its attributes (text, escaped or in a data block, is not a tag)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def test_no_file_of_the_view_loads_anything_from_outside(view: Path) -> None:
    files = [p for p in view.rglob("*") if p.is_file()]
    assert len(files) == 5
    remote = re.compile(r"\s*(https?:|//|[a-z][a-z0-9+.-]*://)", re.I)
    for path in files:
        text = path.read_text()
        tags = Tags(text).tags
        assert {t for t, _ in tags} <= ALLOWED_TAGS, (path, {t for t, _ in tags} - ALLOWED_TAGS)
        for tag, attrs in tags:
            assert not [a for a in attrs if a.startswith("on") or a == "style"], (path, tag, attrs)
            urls = [attrs[a] for a in ("src", "href", "action", "srcset", "poster") if a in attrs]
            assert not [u for u in urls if remote.match(u)], (path, tag, attrs)
            if tag == "script":
                assert attrs in ({}, {"type": "application/json", "id": "view-data"}), attrs
            if tag == "img":
                assert attrs["src"].startswith("data:image/png;base64,"), attrs
        policy = next(
            a["content"] for t, a in tags if a.get("http-equiv") == "Content-Security-Policy"
        )
        assert policy.startswith("default-src 'none'; script-src ") and "unsafe" not in policy
        assert "@import" not in text and "url(" not in text
    for asset in (ROOT / "agentic_rubrics" / "report" / "view_assets").iterdir():
        assert not re.search(r"https?:|url\(|fetch\(|XMLHttpRequest|innerHTML", asset.read_text())


ALLOWED_TAGS = {
    *[
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "nav",
        "h1",
        "h2",
        "p",
        "ul",
        "li",
        "a",
        "code",
        "pre",
        "b",
        "small",
        "span",
        "table",
        "thead",
    ],
    *[
        "tbody",
        "tfoot",
        "tr",
        "th",
        "td",
        "details",
        "summary",
        "section",
        "div",
        "script",
        "noscript",
        "figure",
        "img",
    ],
    *["figcaption", "label", "select", "option", "input", "button"],
}
"""What a page of the view is made of: no link, iframe, object, embed, base or form."""


# --------------------------------------------------------------------------- in a browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    required = os.environ.get("AGENTIC_RUBRICS_REQUIRE_BROWSER") == "1"
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    why = ""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        why = "playwright is not installed (pip install playwright; it is in the dev extra)"
    if not why and not Path(chromium).exists():
        why = "no chromium (apt-get install chromium; .ci/run installs it)"
    if why:
        if required:
            pytest.fail(f"AGENTIC_RUBRICS_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=chromium)
        yield browser
        browser.close()
    finally:
        pw.stop()


class Watched:
    """A page with everything that would say a script ran or something was fetched."""

    def __init__(self, browser: Any, folder: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1200, "height": 1080})
        self.page.set_default_timeout(5_000)
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on(
            "console",
            lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None,
        )
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.folder = folder

    def open(self, rel: str) -> Any:
        self.page.goto((self.folder / rel).as_uri())
        return self.page

    def outside(self) -> list[str]:
        inside = self.folder.as_uri() + "/"
        # the plots are data: images inside index.html itself
        return [u for u in self.requests if not u.startswith((inside, "data:image/png;base64,"))]


@pytest.fixture
def watched(browser: Any, view: Path) -> Iterator[Watched]:
    w = Watched(browser, view)
    yield w
    w.page.close()


def shown_ids(page: Any) -> list[str]:
    return page.eval_on_selector_all("#tasks tbody tr", "rs => rs.map(r => r.dataset.id)")


def every_row(page: Any, column: int | None = None) -> list[str]:
    """Every row the filter keeps, page after page: its id (or the text of one of its cells)."""
    ids: list[str] = []
    script = (
        "rs => rs.map(r => r.dataset.id)"
        if column is None
        else (f"rs => rs.map(r => r.children[{column}].textContent)")
    )
    while True:
        ids += page.eval_on_selector_all("#tasks tbody tr", script)
        if page.is_disabled("#next"):
            return ids
        page.click("#next")


def test_the_index_lists_every_task_and_links_each(watched: Watched, reported: Path) -> None:
    page = watched.open("index.html")
    expected = [t["instance_id"] for t in report_json(reported)["tasks"]]
    assert page.text_content("#shown") == f"{len(expected)} of {len(expected)} tasks"
    assert len(shown_ids(page)) == 2  # page_size 2
    assert sorted(every_row(page)) == sorted(expected)
    page.click("#prev")
    assert page.text_content("#pageno") == "page 1 of 2"
    links = page.eval_on_selector_all(
        "#tasks tbody tr",
        "rs => rs.map(r => [r.dataset.id, r.querySelector('a').getAttribute('href')])",
    )
    for iid, href in links:
        assert href == page_name(iid) and (watched.folder / href).is_file()
    first = shown_ids(page)[0]
    page.click("#tasks tbody tr:first-child a")
    assert page.text_content("h1") == first
    assert len(page.query_selector_all("img")) == 0  # task pages: no images
    assert not watched.errors and not watched.outside()


def test_a_task_page_agrees_with_verdicts_and_report(watched: Watched, reported: Path) -> None:
    verdicts = Counter(
        (r["instance_id"], r["candidate_id"], r["origin"])
        for _, r in read_jsonl(reported / "verdicts.jsonl")
    )
    scores = {
        (r["instance_id"], r["candidate_id"]): r["score"]
        for _, r in read_jsonl(reported / "scores.jsonl")
    }
    for task in report_json(reported)["tasks"]:
        iid = task["instance_id"]
        page = watched.open(page_name(iid))
        columns = page.eval_on_selector_all(
            "thead th[data-candidate]", "hs => hs.map(h => h.dataset.candidate)"
        )
        assert len(columns) == task["candidates"]
        for cid in columns:
            counts = page.eval_on_selector_all(
                "tbody td[data-candidate]",
                """(tds, cid) => tds.filter(td => td.dataset.candidate === cid)
                    .flatMap(td => [...td.querySelectorAll('[data-origin]')].map(s => s.dataset.origin))""",
                cid,
            )
            for origin in ("judged", "checked", "missing"):
                assert Counter(counts)[origin] == verdicts[(iid, cid, origin)], (iid, cid, origin)
            s = page.eval_on_selector_all(
                'tr[data-row="S"] td',
                "(tds, c) => tds.find(td => td.dataset.candidate === c).querySelector('.s').dataset.s",
                cid,
            )
            assert s == repr(scores[(iid, cid)])
        selected = page.eval_on_selector_all(
            'tr[data-row="picked by"] td',
            "tds => tds.filter(td => td.querySelector('.sel')).map(td => td.dataset.candidate)",
        )
        assert selected == [task["selected"]["candidate_id"]]
    assert not watched.errors and not watched.outside()


def test_filters_and_sorting(watched: Watched, reported: Path) -> None:
    tasks = report_json(reported)["tasks"]
    wrong = sorted(
        t["instance_id"]
        for t in tasks
        if t["resolved"] and t["picks"][t["selected"]["selector"]]["resolved"] is False
    )
    page = watched.open("index.html")
    page.select_option("#filter", "wrong")
    assert sorted(every_row(page)) == wrong
    missing = sorted(
        t["instance_id"]
        for t in tasks
        if any(
            r["instance_id"] == t["instance_id"] and r["origin"] == "missing"
            for _, r in read_jsonl(reported / "verdicts.jsonl")
        )
    )
    page.select_option("#filter", "missing")
    assert sorted(every_row(page)) == missing
    nondisc = sorted(t["instance_id"] for t in tasks if t["non_discriminating"]["count"])
    page.select_option("#filter", "nondisc")
    assert sorted(every_row(page)) == nondisc and nondisc
    page.select_option("#filter", "all")
    page.fill("#find", "EVIL/")
    assert shown_ids(page) == [HOSTILE_ID]
    page.fill("#find", "")
    page.click('th[data-key="k"]')
    assert [int(k) for k in every_row(page, 2)] == sorted(t["candidates"] for t in tasks)
    page.click('th[data-key="k"]')  # again: descending, from the first page
    assert page.text_content("#pageno") == "page 1 of 2"
    ks = [int(k) for k in every_row(page, 2)]
    assert ks == sorted((t["candidates"] for t in tasks), reverse=True)
    assert not watched.errors and not watched.outside()


def test_a_hostile_run_executes_nothing(watched: Watched, reported: Path) -> None:
    page = watched.open("index.html")
    page.fill("#find", "evil")
    page.click("#tasks tbody a")
    assert page.text_content("h1") == HOSTILE_ID
    assert HOSTILE in page.text_content("pre.issue")
    for details in page.query_selector_all("details"):
        details.evaluate("d => d.open = true")
    diffs = page.text_content("#candidates")
    assert "+c = '</script><img src=x onerror=alert(2)>'" in diffs
    columns = page.eval_on_selector_all(
        "thead th[data-candidate]", "hs => hs.map(h => h.dataset.candidate)"
    )
    assert HOSTILE_CANDIDATE in columns
    assert page.eval_on_selector_all("img, textarea, iframe, object, embed", "e => e.length") == 0
    assert page.eval_on_selector_all("script", "e => e.length") == 0  # task pages hold no script
    page.wait_for_timeout(200)
    assert not watched.dialogs and not watched.errors
    assert not watched.outside(), watched.outside()


def test_the_readme_screenshot_of_a_task_page(
    watched: Watched, reported: Path, tmp_path: Path
) -> None:
    task = next(
        t["instance_id"] for t in report_json(reported)["tasks"] if t["instance_id"] != HOSTILE_ID
    )
    page = watched.open(page_name(task))
    for section in ("#issue", "#rubric"):  # the verdict matrix first
        page.eval_on_selector(section, "e => e.remove()")
    shot = tmp_path / "view-task.png"
    page.screenshot(path=str(shot))
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size < 200_000
    if os.environ.get("AGENTIC_RUBRICS_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(shot, SCREENSHOT)
    assert SCREENSHOT.is_file() and SCREENSHOT.stat().st_size < 200_000
    assert "docs/img/view-task.png" in (ROOT / "README.md").read_text()
