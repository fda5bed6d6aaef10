"""The demo's output, compared with a stored reference: a redesign must not change a number.

``agentic-rubrics demo`` (the offline default on the bundled tasks) is run into a fresh folder; its
report.json (every number), verdicts.jsonl (every verdict) and selections.jsonl (every pick and the
hash of the patch submitted) are normalised — run-specific paths and the configuration hash left out,
floats rounded to 12 significant digits — and compared with ``tests/data/demo_reference.json``.

After an intended change of results, regenerate the reference and say why in the commit:
``AGENTIC_RUBRICS_WRITE_REFERENCE=1 .venv/bin/python -m pytest tests/test_demo_reference.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.runfolder.files import read_jsonl

REFERENCE = Path(__file__).parent / "data" / "demo_reference.json"


def _rounded(value: Any) -> Any:
    """Floats to 12 significant digits (a platform's last bits are not a change of result)."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def normalised(folder: Path) -> dict[str, Any]:
    """What the reference holds of a run folder: numbers, verdicts and selections, nothing run-specific."""
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    report.pop("config_hash")  # the configuration's hash, not a result
    report["labels"]["source"] = report["labels"]["source"].replace(str(folder), "<run>")
    verdicts: dict[str, list[str]] = {}  # per candidate: item#repeat=origin:value:reason (the
    # rubric's hash, in the report's tasks, fixes each item's axis and weight)
    for _, row in read_jsonl(folder / "verdicts.jsonl"):
        key = f"{row['instance_id']} {row['candidate_id']}"
        verdicts.setdefault(key, []).append(
            f"{row['item_id']}#{row['repeat']}={row['origin']}:{row['value']}:{row['reason']}"
        )
    selections = {
        row["instance_id"]: {
            "model": row["model_name_or_path"],
            "patch_sha256": hashlib.sha256(row["model_patch"].encode()).hexdigest(),
        }
        for _, row in read_jsonl(folder / "selections.jsonl")
    }
    return _rounded(
        {
            "report": report,
            "verdicts": {k: " ".join(sorted(v)) for k, v in sorted(verdicts.items())},
            "selections": dict(sorted(selections.items())),
        }
    )


def test_the_demo_gives_the_reference_numbers_verdicts_and_selections(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    got = normalised(out)
    if os.environ.get("AGENTIC_RUBRICS_WRITE_REFERENCE") == "1":
        REFERENCE.parent.mkdir(exist_ok=True)
        REFERENCE.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    want = json.loads(REFERENCE.read_text(encoding="utf-8"))
    assert got["selections"] == want["selections"]
    assert got["verdicts"] == want["verdicts"]
    for key in sorted(set(want["report"]) | set(got["report"])):
        assert got["report"].get(key) == want["report"].get(key), key


def test_the_documented_demo_table_is_the_reference() -> None:
    """docs/bundled-examples.md's table of every selector on the demo says what the reference says
    (it went stale once: offline_content's realised Best@1 read 50 where the demo gives 70)."""
    report = json.loads(REFERENCE.read_text(encoding="utf-8"))["report"]
    doc = (Path(__file__).parents[1] / "docs" / "bundled-examples.md").read_text(encoding="utf-8")
    rows = {
        line.split("`")[1]: [c.strip() for c in line.strip("|").split("|")[1:]]
        for line in doc.splitlines()
        if line.startswith("| `")
    }
    assert set(rows) == set(report["selectors"])
    for name, cells in rows.items():
        found = report["selectors"][name]
        want = [f"{100 * found['best_at_k'][k]:.1f}" for k in ("1", "2", "4", "8", "15")]
        want += [f"{found['roc_auc']:.3f}", f"{100 * found['realised_best_at_1']:.0f}"]
        assert cells == want, name
