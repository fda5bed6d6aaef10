"""SWE-bench harness output as labels, in every shape the harness has written it.

- Today's run report (``<model>.<run_id>.json``): ``resolved_ids`` are resolved; ``unresolved_ids``,
  ``error_ids`` and ``empty_patch_ids`` are not. Instances it does not list stay unlabelled.
- The older ``results.json`` (``get_model_report``): lists ``no_generation``, ``generated``,
  ``with_logs``, ``install_fail``, ``reset_failed``, ``no_apply``, ``applied``, ``test_errored``,
  ``test_timeout`` and ``resolved``. Every prediction it lists and does not list as ``resolved`` is
  unresolved (a generated patch that was never resolved is unresolved, whatever happened on the way).
- Per-instance ``report.json`` files (``{instance_id: {"resolved": ..., "tests_status": ...}}``), alone or
  in the harness's log folders ``logs/run_evaluation/<run_id>/<model>/<instance_id>/``. An instance folder
  with a ``run_instance.log`` and no ``report.json`` is an evaluation that never reached the tests: the
  harness counts it as not resolved, and so does this reader, with the reason (``patch_apply_failed`` when
  the log says ``>>>>> Patch Apply Failed``, else ``no_report``).

Every unresolved label carries a reason code, counted so an import can say how many candidates are
unresolved because their patch did not apply, timed out, and so on.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import DataError

APPLY_PATCH_FAIL = ">>>>> Patch Apply Failed"
"""What the harness logs in ``run_instance.log`` when no ``git apply`` / ``patch`` variant applied."""

# results.json lists in the order their reason wins (a later stage says more than an earlier one)
_OLD_REASONS = (
    ("generated", "not_evaluated"),
    ("with_logs", "tests_failed"),
    ("applied", "tests_failed"),
    ("no_generation", "empty_patch"),
    ("no_apply", "patch_apply_failed"),
    ("install_fail", "install_failed"),
    ("reset_failed", "reset_failed"),
    ("test_timeout", "tests_timed_out"),
    ("test_errored", "tests_errored"),
)
_RUN_REPORT_REASONS = (
    ("unresolved_ids", "tests_failed"),
    ("error_ids", "evaluation_error"),
    ("empty_patch_ids", "empty_patch"),
    ("unresolved", "tests_failed"),
)


@dataclass
class HarnessLabels:
    """Labels by instance id, and why the unresolved ones are unresolved (by reason code)."""

    labels: dict[str, bool] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Unresolved instances by reason code."""
        return dict(sorted(Counter(self.reasons.values()).items()))

    def add(self, instance_id: str, resolved: bool, reason: str | None = None) -> None:
        self.labels[instance_id] = resolved
        if resolved:
            self.reasons.pop(instance_id, None)
        else:
            self.reasons[instance_id] = reason or "tests_failed"

    def update(self, other: HarnessLabels) -> None:
        for iid, value in other.labels.items():
            self.add(iid, value, other.reasons.get(iid))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from exc
    except RecursionError as exc:
        raise DataError(f"{path}: JSON nested too deeply") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from exc


def _ids(path: Path, doc: dict[str, Any], key: str) -> list[str]:
    value = doc.get(key) or []
    if not isinstance(value, list):
        raise DataError(f"{path}: {key}: expected a list of instance ids")
    return [str(v) for v in value]


def load_report(path: Path) -> HarnessLabels:
    """Labels from a harness report file, or from a folder of the harness's evaluation logs."""
    if path.is_dir():
        return _from_log_folder(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    doc = _read_json(path)
    if not isinstance(doc, dict):
        raise DataError(f"{path}: expected a JSON object")
    out = HarnessLabels()
    if "generated" in doc or "no_generation" in doc or "applied" in doc:
        for key, reason in _OLD_REASONS:
            for iid in _ids(path, doc, key):
                out.add(iid, False, reason)
        for iid in _ids(path, doc, "resolved"):
            out.add(iid, True)
        return out
    if "resolved_ids" in doc or isinstance(doc.get("resolved"), list):
        for key, reason in _RUN_REPORT_REASONS:
            for iid in _ids(path, doc, key):
                out.add(iid, False, reason)
        for iid in _ids(path, doc, "resolved_ids") + _ids(path, doc, "resolved"):
            out.add(iid, True)
        return out
    for iid, entry in doc.items():
        if not isinstance(entry, dict) or "resolved" not in entry:
            raise DataError(f"{path}: {iid}: expected an object with a 'resolved' field")
        applied = entry.get("patch_successfully_applied")
        out.add(
            str(iid),
            bool(entry["resolved"]),
            None if applied is not False else "patch_apply_failed",
        )
    return out


def _from_log_folder(root: Path) -> HarnessLabels:
    out = HarnessLabels()
    for report in sorted(root.rglob("report.json")):
        out.update(load_report(report))
    for log in sorted(root.rglob("run_instance.log")):
        folder = log.parent
        if (folder / "report.json").exists() or folder.name in out.labels:
            continue
        text = log.read_text(encoding="utf-8", errors="replace")
        out.add(
            folder.name, False, "patch_apply_failed" if APPLY_PATCH_FAIL in text else "no_report"
        )
    return out


def load_report_labels(path: Path) -> dict[str, bool]:
    """Labels only (see :func:`load_report` for the reasons)."""
    return load_report(path).labels
