"""SWE-bench files into the pipeline's task format.

Readers for what users have: dataset rows (JSON, JSONL, or a Hugging Face ``datasets`` export when that
package is installed), predictions from one or many runs (``instance_id``, ``model_name_or_path``,
``model_patch``), harness reports as labels (a ``report.json`` per instance, or a run report with
``resolved_ids``), and the combined candidates format (one record per instance with ``candidates``).
Malformed rows fail with the file, the line and the field.

Only ``problem_statement`` and the patches reach scoring; gold patches, test patches, FAIL_TO_PASS /
PASS_TO_PASS, hints and candidate sources stay with the evaluation (:class:`Pool` keeps the gold patch
apart for sanity checks).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.swebench_reports import HarnessLabels, load_report, load_report_labels
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.patch import patch_hash
from agentic_rubrics.types import Candidate, Task

__all__ = [
    "HarnessLabels",
    "Instance",
    "Pool",
    "PoolOptions",
    "Prediction",
    "build_pool",
    "load_candidates_file",
    "load_instances",
    "load_predictions",
    "load_report",
    "load_report_labels",
    "pool_from_runs",
    "read_records",
    "write_tasks",
]


def _open_text(path: Path) -> str:
    try:
        # bytes that are not UTF-8 become lone surrogates: the candidate holding them is judged
        # check_error (invalid_text), the rest of the file is read (see agentic_rubrics.surrogates)
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape") as fh:
                return fh.read()
        return path.read_bytes().decode("utf-8", "surrogateescape")
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found") from exc
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from exc


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, record)`` from a JSONL file, a JSON list, or a JSON object of records (gzip allowed).

    For a JSON document the "line" is the record's position (1-based). A Hugging Face ``datasets``
    export (a ``save_to_disk`` folder, or ``.parquet`` / ``.arrow``) is read when ``datasets`` is
    installed.
    """
    if path.is_dir() or path.suffix in (".parquet", ".arrow"):
        yield from _read_hf(path)
        return
    text = _open_text(path)
    doc: Any = None
    if text.lstrip()[:1] in ("[", "{"):
        try:
            doc = json.loads(text)  # a JSON document; JSONL fails here with "Extra data"
        except RecursionError as exc:
            raise DataError(f"{path}: JSON nested too deeply") from exc
        except json.JSONDecodeError as exc:
            if text.lstrip()[:1] == "[":
                raise DataError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from exc
            doc = None  # JSON Lines (or a broken line, which the line-by-line pass names)
    if isinstance(doc, dict) and "instance_id" not in doc:
        # {instance_id: record} (SWE-bench also accepts predictions in this form)
        doc = [{"instance_id": k, **v} if isinstance(v, dict) else v for k, v in doc.items()]
    if isinstance(doc, dict):
        doc = [doc]
    if isinstance(doc, list):
        for n, record in enumerate(doc, start=1):
            if not isinstance(record, dict):
                raise DataError(f"{path}:{n}: expected a JSON object, got {type(record).__name__}")
            yield n, record
        return
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{number}: invalid JSON ({exc.msg})") from exc
        except RecursionError as exc:
            raise DataError(f"{path}:{number}: JSON nested too deeply") from exc
        if not isinstance(record, dict):
            raise DataError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        yield number, record


def _read_hf(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        import datasets
    except ImportError as exc:
        raise DataError(
            f"{path}: a Hugging Face datasets export; install the 'datasets' package to read it,"
            " or export it as JSONL"
        ) from exc
    if not path.exists():
        raise DataError(f"{path}: file not found")
    try:  # a file that is not what its name says is bad input, named as such
        if path.is_dir():
            ds = datasets.load_from_disk(str(path))
            if isinstance(ds, datasets.DatasetDict):
                ds = ds[next(iter(ds))]
        else:
            kind = "parquet" if path.suffix == ".parquet" else "arrow"
            ds = datasets.load_dataset(kind, data_files=str(path), split="train")
    except (OSError, ValueError, datasets.exceptions.DatasetGenerationError) as exc:
        raise DataError(f"{path}: not a Hugging Face datasets export ({exc})") from exc
    for n, record in enumerate(ds, start=1):
        yield n, dict(record)


def _field(path: Path, line: int, record: dict[str, Any], name: str, kind: type = str) -> Any:
    if name not in record or record[name] is None:
        raise DataError(f"{path}:{line}: {name}: missing required field")
    value = record[name]
    if not isinstance(value, kind):
        raise DataError(
            f"{path}:{line}: {name}: expected {kind.__name__}, got {type(value).__name__}"
        )
    return value


# --------------------------------------------------------------------------- pieces


@dataclass
class Instance:
    """A SWE-bench instance: what scoring may read, and the gold patch kept apart for evaluation."""

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    gold_patch: str = ""
    version: str = ""
    """SWE-bench's ``version`` (which environment the repository's tests need)."""


def _instance(path: Path, line: int, r: dict[str, Any]) -> Instance:
    return Instance(
        instance_id=_field(path, line, r, "instance_id"),
        repo=str(r.get("repo", "")),
        base_commit=str(r.get("base_commit", "")),
        problem_statement=_field(path, line, r, "problem_statement"),
        gold_patch=str(r.get("patch") or r.get("gold_patch") or ""),
        version=str(r.get("version") or ""),
    )


def load_instances(path: Path) -> dict[str, Instance]:
    """SWE-bench dataset rows by instance id (``patch`` is the gold patch)."""
    out: dict[str, Instance] = {}
    for line, r in read_records(path):
        inst = _instance(path, line, r)
        out[inst.instance_id] = inst
    return out


@dataclass
class Prediction:
    """One run's patch for one instance."""

    instance_id: str
    source: str
    patch: str


def load_predictions(path: Path, *, source: str | None = None) -> list[Prediction]:
    """A predictions file (JSONL, JSON list, or JSON object keyed by instance id).

    Every record needs ``instance_id`` and ``model_patch`` (``null`` for a run that produced nothing);
    ``source`` names the run when records carry no ``model_name_or_path`` (``--source NAME``).
    """
    out = []
    for line, r in read_records(path):
        iid = _field(path, line, r, "instance_id")
        name = source or r.get("model_name_or_path")
        if not name:
            raise DataError(
                f"{path}:{line}: model_name_or_path: missing; name this run with --source NAME"
                " (one --source per --predictions, in the same order)"
            )
        if "model_patch" not in r:
            raise DataError(
                f"{path}:{line}: model_patch: missing; a SWE-bench predictions record holds"
                f" instance_id, model_name_or_path and model_patch (this one has"
                f" {', '.join(sorted(map(str, r))) or 'no keys'})"
            )
        patch = r["model_patch"]
        if patch is not None and not isinstance(patch, str):
            raise DataError(f"{path}:{line}: model_patch: expected a string or null")
        out.append(Prediction(iid, str(name), patch or ""))
    return out


# --------------------------------------------------------------------------- pools


@dataclass
class Pool:
    """Tasks ready for the pipeline, plus what only evaluation may use."""

    tasks: list[Task]
    gold: dict[str, str] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    label_conflicts: int = 0
    unknown_instances: list[str] = field(default_factory=list)
    """Instance ids with candidates but no dataset row (left out), by name."""
    unresolved_reasons: dict[str, int] = field(default_factory=dict)
    """Candidates a harness report labels unresolved, by reason (``patch_apply_failed`` ...)."""


@dataclass
class PoolOptions:
    """How candidate pools are built."""

    full_run_only: bool = True
    """Keep only candidates whose source run published its failing patches too."""
    min_candidates: int = 2
    """Leave out instances with fewer candidates (after the filters)."""
    dedup: bool = False
    """Keep one candidate per distinct normalised patch (the first one)."""
    cap_per_source: int | None = None
    """At most this many candidates from one source per instance."""


def build_pool(
    instances: dict[str, Instance],
    candidates: dict[str, list[tuple[str, str, bool | None, str | None]]],
    options: PoolOptions | None = None,
) -> Pool:
    """Tasks from instances and their candidates ``(source, patch, resolved, source_kind)``."""
    options = options or PoolOptions()
    pool = Pool(tasks=[])
    dropped: dict[str, int] = {}
    for iid in sorted(candidates):
        inst = instances.get(iid)
        if inst is None:
            dropped["no_instance_row"] = dropped.get("no_instance_row", 0) + 1
            pool.unknown_instances.append(iid)
            continue
        kept: list[Candidate] = []
        seen: dict[str, Candidate] = {}
        per_source: dict[str, int] = {}
        for source, patch, resolved, kind in candidates[iid]:
            if options.full_run_only and kind not in (None, "full_run"):
                continue
            if (
                options.cap_per_source is not None
                and per_source.get(source, 0) >= options.cap_per_source
            ):
                continue
            key = patch_hash(patch)
            if options.dedup and key in seen:
                if (
                    seen[key].resolved is not None
                    and resolved is not None
                    and seen[key].resolved != resolved
                ):
                    pool.label_conflicts += 1
                continue
            per_source[source] = per_source.get(source, 0) + 1
            cand = Candidate(
                id=f"c{len(kept) + 1:02d}", source=source, patch=patch, resolved=resolved
            )
            seen.setdefault(key, cand)
            kept.append(cand)
        if len(kept) < options.min_candidates:
            dropped["too_few_candidates"] = dropped.get("too_few_candidates", 0) + 1
            continue
        pool.tasks.append(
            Task(
                instance_id=iid,
                repo=inst.repo,
                base_commit=inst.base_commit,
                problem_statement=inst.problem_statement,
                version=inst.version,
                candidates=kept,
            )
        )
        if inst.gold_patch:
            pool.gold[iid] = inst.gold_patch
    pool.dropped = dropped
    return pool


def load_candidates_file(path: Path, options: PoolOptions | None = None) -> Pool:
    """The combined format: one record per instance with ``candidates: [{source, patch, resolved, ...}]``."""
    instances: dict[str, Instance] = {}
    candidates: dict[str, list[tuple[str, str, bool | None, str | None]]] = {}
    for line, r in read_records(path):
        inst = _instance(path, line, r)
        iid = inst.instance_id
        instances[iid] = inst
        rows = _field(path, line, r, "candidates", list)
        out = []
        for i, c in enumerate(rows):
            if not isinstance(c, dict):
                raise DataError(f"{path}:{line}: candidates[{i}]: expected an object")
            patch = c.get("patch")
            if not isinstance(patch, str):
                raise DataError(f"{path}:{line}: candidates[{i}].patch: missing or not a string")
            resolved = c.get("resolved")
            if resolved is not None and not isinstance(resolved, bool):
                raise DataError(
                    f"{path}:{line}: candidates[{i}].resolved: expected true, false or null"
                )
            out.append((str(c.get("source", f"source-{i}")), patch, resolved, c.get("source_kind")))
        candidates[iid] = out
    return build_pool(instances, candidates, options)


RunFiles = tuple[Path, Path | None] | tuple[Path, Path | None, str | None]
"""One agent run: its predictions file, its harness report (or ``None``), optionally its source name."""


def pool_from_runs(
    dataset: Path, runs: Iterable[RunFiles], options: PoolOptions | None = None
) -> Pool:
    """Dataset rows plus runs, each ``(predictions, report or None[, source name])``: a pool per instance.

    Runs stay separate sources even when they share a ``model_name_or_path`` (two samples of one agent):
    their file names tell them apart, or an explicit source name.
    """
    instances = load_instances(dataset)
    loaded = []
    for run in runs:
        predictions, report, source = (*run, None)[:3]
        preds = load_predictions(predictions, source=source)
        harness = load_report(report) if report is not None else HarnessLabels()
        loaded.append((predictions, source, preds, harness))
    users: dict[str, list[Path]] = {}
    for predictions, source, preds, _ in loaded:
        for name in {p.source for p in preds} if source is None else ():
            users.setdefault(name, []).append(predictions)
    candidates: dict[str, list[tuple[str, str, bool | None, str | None]]] = {}
    reasons: Counter[str] = Counter()
    for predictions, source, preds, harness in loaded:
        for p in preds:
            name = p.source
            sharing = users.get(name, []) if source is None else []
            if len(sharing) > 1:
                if sum(1 for x in sharing if x.name == predictions.name) > 1:
                    raise DataError(
                        f"{' and '.join(map(str, sharing))}: these runs all call themselves {name!r}"
                        " and their files share a name; give each run its own --source NAME"
                        " (one --source per --predictions, in the same order)"
                    )
                name = f"{name} ({predictions.name})"
            label = harness.labels.get(p.instance_id)
            if label is False:
                reasons[harness.reasons.get(p.instance_id, "tests_failed")] += 1
            candidates.setdefault(p.instance_id, []).append((name, p.patch, label, None))
    pool = build_pool(instances, candidates, options)
    pool.unresolved_reasons = dict(sorted(reasons.items()))
    return pool


def write_tasks(pool: Pool, path: Path) -> Path:
    """The pool's tasks as a tasks JSONL file."""
    from agentic_rubrics.runfolder.files import atomic_write_text

    atomic_write_text(
        path,
        "".join(json.dumps(t.model_dump(mode="json"), sort_keys=True) + "\n" for t in pool.tasks),
    )
    return path
