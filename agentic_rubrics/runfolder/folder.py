"""The run folder's layout: where each file lives, what a finished task is, and resuming.

Resuming: a task is finished once its progress row is written (after its verdict rows), so a killed
run leaves at most verdict rows of unfinished tasks, which :meth:`RunFolder.open` drops.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any, TypeVar, overload

from agentic_rubrics.exceptions import ConfigError, DataError
from agentic_rubrics.runfolder.digests import rows_digest
from agentic_rubrics.runfolder.files import (
    append_jsonl,
    atomic_write_json,
    atomic_write_text,
    read_json,
    read_jsonl,
)
from agentic_rubrics.runfolder.item_audit import ITEM_AUDIT_FILE
from agentic_rubrics.runfolder.names import safe_name
from agentic_rubrics.runfolder.recorded import LEGACY_VERIFIERS, RecordedConfig, VerifierEntry
from agentic_rubrics.runfolder.rows import ProgressRow, RubricStatus, read_row
from agentic_rubrics.runfolder.verifier_rows import ArtifactStatus
from agentic_rubrics.types import SCHEMA, Verdict

StatusRow = TypeVar("StatusRow", RubricStatus, ArtifactStatus)


class RunFolder:
    """A run's folder: configuration, rubrics, verdicts, progress, selections and reports.

    Resuming: a task is finished once its progress row is written (after its verdict rows), so a
    killed run leaves at most verdict rows of unfinished tasks, which :meth:`open` drops.
    """

    def __init__(self, root: Path | str) -> None:
        self.root = root = Path(root)
        self.config_path = root / "config.json"
        self.rubrics_dir = root / "rubrics"
        self.verdicts_path = root / "verdicts.jsonl"
        self.progress_path = root / "progress.jsonl"
        self.selections_path = root / "selections.jsonl"
        self.report_json = root / "report.json"
        self.report_md = root / "report.md"
        self.scores_path = root / "scores.jsonl"
        self.patches_path = root / "patches.jsonl"
        self.spend_path = root / "spend.jsonl"
        self.cache_dir = root / "cache"
        self.trajectories_dir = root / "trajectories"
        self._progress: tuple[tuple[int, int, int], dict[str, ProgressRow]] | None = None

    # configuration ----------------------------------------------------------------

    def open(
        self,
        config: dict[str, Any],
        config_hash: str,
        *,
        restart: bool = False,
        verifiers: dict[str, VerifierEntry] | None = None,
    ) -> None:
        """Create the folder or resume it; refuse a different configuration unless ``restart``.
        ``verifiers``: what the folder's readers need of each verifier of the run, by name.

        Raises:
            ConfigError: the folder was started with another configuration.
        """
        if self.config_path.exists() and not restart:
            recorded = read_json(self.config_path)
            found = recorded.get("config_hash") if isinstance(recorded, dict) else None
            if found != config_hash:
                raise ConfigError(
                    f"{self.config_path}: this folder was started with configuration"
                    f" {found}, not {config_hash}; use another --out folder,"
                    " or --restart to discard its results"
                )
            described = _entries(verifiers) if verifiers is not None else recorded.get("verifiers")
            if recorded.get("config") != config or recorded.get("verifiers") != described:
                # settings outside the hash (budget, concurrency, server): the latest are in force
                updated = {**recorded, "config": config}
                if described is not None:
                    updated["verifiers"] = described
                atomic_write_json(self.config_path, updated)
            self._drop_unfinished()
            return
        # a folder of the user's: the results a run overwrites are refused; with --restart, what it
        # removes too (a seeded response cache, or artifacts reused with --rubrics DIR, are kept)
        kept = {self.cache_dir, *([] if restart else self._artifacts(verifiers))}
        theirs = [p for p in self._owned(verifiers) if p not in kept and p.exists()]
        if theirs and not self.config_path.exists():
            names = ", ".join(p.name for p in theirs[:4]) + (" ..." if len(theirs) > 4 else "")
            raise ConfigError(
                f"{self.root}: not a run folder (no config.json), but it holds files a run writes"
                f" or removes ({names}); nothing was changed: use another --out folder, or move them"
            )
        if restart and self.root.exists():
            self._discard(verifiers)
        self.root.mkdir(parents=True, exist_ok=True)
        record: dict[str, Any] = {
            "schema": SCHEMA,
            "run_id": uuid.uuid4().hex,  # names this run in records made from it (calibrations)
            "config_hash": config_hash,
            "config": config,
        }
        if verifiers is not None:
            record["verifiers"] = _entries(verifiers)
        atomic_write_json(self.config_path, record)

    def _discard(self, verifiers: dict[str, VerifierEntry] | None) -> None:
        """A restart: every result of the folder removed (the response cache too: a restarted run
        must not get its answers from the old one; and the HTML view and item audit of the results)."""
        self.config_path.unlink(missing_ok=True)
        for path in self._owned(verifiers):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)

    def _owned(self, verifiers: dict[str, VerifierEntry] | None) -> list[Path]:
        """The files and folders a run writes, and a restart removes (config.json aside)."""
        return [
            *(self.verdicts_path, self.progress_path, self.selections_path),
            *(self.report_json, self.report_md, self.scores_path, self.patches_path),
            *(self.spend_path, self.root / ITEM_AUDIT_FILE),
            *self._artifacts(verifiers),
            *(self.trajectories_dir, self.cache_dir, self.root / "selections", self.root / "view"),
        ]

    def _artifacts(self, verifiers: dict[str, VerifierEntry] | None) -> list[Path]:
        """The verifiers' artifact folders (``rubrics/``, ``tests/`` ...)."""
        return [self.rubrics_dir, *(self.root / name for name in self.artifact_folders(verifiers))]

    def config(self) -> dict[str, Any]:
        """The recorded configuration (with its hash), as JSON: what resuming compares.

        Raises:
            DataError: not a run folder, or a config.json that is not JSON (naming the file).
        """
        if not self.config_path.exists():
            raise DataError(f"{self.root}: not a run folder (no config.json)")
        try:
            data = json.loads(self.config_path.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:
            raise DataError(f"{self.config_path}: not JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise DataError(f"{self.config_path}: expected a JSON object")
        return data

    def recorded(self) -> RecordedConfig:
        """config.json, typed: what the report reads of it (a :class:`DataError` naming the file,
        the field and the version when it is not of this shape)."""
        return read_row(RecordedConfig, self.config(), str(self.config_path))

    def verifier_entries(self) -> dict[str, VerifierEntry]:
        """Each verifier of the run, by name, as config.json records it (none: no config.json)."""
        if not self.config_path.exists():
            return {}
        return self.recorded().verifier_entries()

    def artifact_folders(self, also: dict[str, VerifierEntry] | None = None) -> list[str]:
        """Every folder of verifiers' artifacts but ``rubrics/``: those config.json records (or, in
        a folder from before it recorded them, those the built-in verifiers used), and ``also``'s."""
        try:
            recorded = self.recorded().verifier_entries() if self.config_path.exists() else {}
        except DataError:
            recorded = {}  # a damaged config.json: only what is named, and the built-in layout
        found = [e.folder for e in (*recorded.values(), *(also or {}).values())]
        found += [e.folder for e in LEGACY_VERIFIERS.values()]
        return [f for f in dict.fromkeys(found) if f != self.rubrics_dir.name]

    # progress ---------------------------------------------------------------------

    def progress(self) -> dict[str, ProgressRow]:
        """Progress rows of finished tasks, by instance id (the last row wins).

        Each row is validated once: the rows are kept until the file changes (its size, time or inode).

        Raises:
            DataError: a row of another version or shape (file, line and field).
        """
        key = self._progress_key()
        if key is None:
            return {}
        if self._progress is not None and self._progress[0] == key:
            return dict(self._progress[1])
        rows: dict[str, ProgressRow] = {}
        for number, record in read_jsonl(self.progress_path, tolerate_torn_tail=True):
            row = read_row(ProgressRow, record, f"{self.progress_path}:{number}")
            rows[row.instance_id] = row
        self._progress = (key, rows)
        return dict(rows)

    def _progress_key(self) -> tuple[int, int, int] | None:
        try:
            st = self.progress_path.stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _cached(self, key: tuple[int, int, int] | None) -> dict[str, ProgressRow] | None:
        """The rows of progress.jsonl as it was at ``key``, if known (``{}``: there was no file)."""
        if key is None:
            return {}
        return dict(self._progress[1]) if self._progress and self._progress[0] == key else None

    def _keep(self, rows: dict[str, ProgressRow] | None) -> None:
        """This folder (the one writer: its lock) just wrote progress.jsonl to hold ``rows``."""
        key = self._progress_key()
        self._progress = (key, rows) if rows is not None and key is not None else None

    def _drop_unfinished(self) -> None:
        typed = self.progress()
        done = set(typed)
        if self.progress_path.exists():
            # rewrite without a torn tail, so the next append starts on a fresh line
            rows = [r for _, r in read_jsonl(self.progress_path, tolerate_torn_tail=True)]
            atomic_write_text(self.progress_path, _jsonl(rows))
            self._keep(typed)
        for path in (self.verdicts_path, self.patches_path):
            if path.exists():
                rows = [r for _, r in read_jsonl(path, tolerate_torn_tail=True)]
                # a row naming no task as a string is kept: the reader that validates it names it
                kept = [r for r in rows if _task_of(r) in done or _task_of(r) is None]
                raw = path.read_text(encoding="utf-8")
                if len(kept) != len(rows) or (raw and not raw.endswith("\n")):
                    atomic_write_text(path, _jsonl(kept))

    def forget(self, instance_ids: set[str], *, rubrics: bool = False) -> None:
        """Make tasks unfinished again: drop their progress, verdict and patch rows (and, with
        ``rubrics``, their rubric and trajectory), so the next pass computes them anew."""
        if not instance_ids:
            return
        kept = {k: v for k, v in self.progress().items() if k not in instance_ids}
        for path in (self.progress_path, self.verdicts_path, self.patches_path):
            if path.exists():
                rows = [r for _, r in read_jsonl(path, tolerate_torn_tail=True)]
                atomic_write_text(
                    path, _jsonl([r for r in rows if _task_of(r) not in instance_ids])
                )
        self._keep(kept)
        if rubrics:
            for iid in instance_ids:
                # first: it marks the rubric done
                self.rubric_status_path(iid).unlink(missing_ok=True)
                self.rubric_path(iid).unlink(missing_ok=True)
                self.trajectory_path(iid).unlink(missing_ok=True)
                for name in self.artifact_folders():
                    self.artifact_status_path(name, iid).unlink(missing_ok=True)  # first: its mark
                    shutil.rmtree(self.artifact_dir(name, iid), ignore_errors=True)

    def record_task(
        self,
        verdict_rows: list[Verdict],
        progress_row: ProgressRow,
        patch_rows: list[dict[str, Any]] | None = None,
    ) -> None:
        """Append a finished task: the patches it scored and its verdicts first, then the progress row
        that commits them."""
        append_jsonl(self.patches_path, patch_rows or [])
        append_jsonl(self.verdicts_path, [v.to_row() for v in verdict_rows])
        rows = self._cached(self._progress_key())
        append_jsonl(self.progress_path, [progress_row.to_json()])
        if rows is not None:  # typed already: not read back and validated again
            rows[progress_row.instance_id] = progress_row
        self._keep(rows)

    def verdict_rows(self) -> list[dict[str, Any]]:
        """Every verdict row of finished tasks, each validated (see :meth:`verdicts`)."""
        return [record for _, record, _ in self._verdicts()]

    def verdicts(self) -> tuple[dict[str, list[Verdict]], dict[str, str]]:
        """The verdicts of finished tasks, typed, by instance id; and each task's digest of its rows
        as they are on disk now (:func:`rows_digest`), to hold against the one its progress row
        recorded when they were written.

        Raises:
            DataError: a row of another version or shape (file, line and field), or two rows for the
                same candidate, item and repeat (both lines named): no verdict counts twice.
        """
        by_task: dict[str, list[Verdict]] = {}
        records: dict[str, list[dict[str, Any]]] = {}
        for _, record, verdict in self._verdicts():
            by_task.setdefault(verdict.instance_id, []).append(verdict)
            records.setdefault(verdict.instance_id, []).append(record)
        return by_task, {iid: rows_digest(rows) for iid, rows in records.items()}

    def _verdicts(self) -> list[tuple[int, dict[str, Any], Verdict]]:
        if not self.verdicts_path.exists():
            return []
        done = set(self.progress())
        out: list[tuple[int, dict[str, Any], Verdict]] = []
        seen: dict[tuple[str, str, str, int], int] = {}
        for number, record in read_jsonl(self.verdicts_path, tolerate_torn_tail=True):
            task = _task_of(record)
            if task is not None and task not in done:
                continue  # a row of an unfinished task (a killed run's); not of the wrong shape
            verdict = read_row(Verdict, record, f"{self.verdicts_path}:{number}")
            key = (verdict.instance_id, verdict.candidate_id, verdict.item_id, verdict.repeat)
            if key in seen:
                raise DataError(
                    f"{self.verdicts_path}:{number}: a second verdict row for {key[0]} candidate"
                    f" {key[1]} item {key[2]} repeat {key[3]} (the first is line {seen[key]}): a"
                    " verdict counts once; remove the row that is wrong (or resume with"
                    " --redo-changed after fixing the inputs)"
                )
            seen[key] = number
            out.append((number, record, verdict))
        return out

    # rubrics ----------------------------------------------------------------------

    def rubric_path(self, instance_id: str) -> Path:
        """Where a task's rubrics.yaml lives."""
        return self.rubrics_dir / safe_name(instance_id) / "rubrics.yaml"

    def rubric_status_path(self, instance_id: str) -> Path:
        """Where a task's exploration outcome is recorded (written after the rubric)."""
        return self.rubrics_dir / safe_name(instance_id) / "status.json"

    def rubric_status(self, instance_id: str) -> RubricStatus | None:
        """A task's recorded exploration outcome, if it was explored.

        Raises:
            DataError: the file is not JSON, or not a status of this version (file and field).
        """
        return self.artifact_status(self.rubrics_dir.name, instance_id, RubricStatus)

    def artifact_dir(self, folder: str, instance_id: str) -> Path:
        """A verifier's folder for one task (``tests/<safe id>/``)."""
        return self.root / folder / safe_name(instance_id)

    def artifact_status_path(self, folder: str, instance_id: str) -> Path:
        """Where a verifier's artifact is marked written (after its files)."""
        return self.artifact_dir(folder, instance_id) / "status.json"

    @overload
    def artifact_status(self, folder: str, instance_id: str) -> ArtifactStatus | None: ...

    @overload
    def artifact_status(
        self, folder: str, instance_id: str, row: type[StatusRow]
    ) -> StatusRow | None: ...

    def artifact_status(
        self, folder: str, instance_id: str, row: type[Any] = ArtifactStatus
    ) -> Any:
        """A task's recorded artifact of one verifier, if it was written (``row``: its status's
        shape; the rubric's is :class:`RubricStatus`).

        Raises:
            DataError: the file is not JSON, or not a status of this version (file and field).
        """
        path = self.artifact_status_path(folder, instance_id)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (ValueError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}: invalid JSON ({exc})") from exc
        except RecursionError:
            raise DataError(f"{path}: JSON nested too deeply") from None
        if not isinstance(record, dict):
            raise DataError(f"{path}: expected a JSON object, got {type(record).__name__}")
        return read_row(row, record, str(path))

    def trajectory_path(self, instance_id: str) -> Path:
        """Where a task's exploration trajectory goes."""
        return self.trajectories_dir / f"{safe_name(instance_id)}.json"


def _task_of(record: dict[str, Any]) -> str | None:
    """The task a row names, ``None`` when its ``instance_id`` is not a string (a list or an object
    cannot even be looked up among the tasks: such a row is left to be named by its validation)."""
    task = record.get("instance_id")
    return task if isinstance(task, str) else None


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)


def _entries(verifiers: dict[str, VerifierEntry]) -> dict[str, Any]:
    return {name: entry.to_json() for name, entry in verifiers.items()}
