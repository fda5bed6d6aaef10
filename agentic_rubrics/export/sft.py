"""``export-sft``: run folders as chat fine-tuning data (docs/training-data.md).

``rubric`` (the default): the rubric agent's trajectories, one conversation each; ``classifier`` and
``judge``: single-turn examples (``export.pairs``). Every example is redacted again here (the secrets
of this process's environment, API-key shapes), filtered (each filter counted), split by repository
and written atomically with its data card (``export.card``) and a manifest (``export.json``) that marks
the folder as an export: a non-empty folder without one is refused unless ``force``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import ConfigError, DataError
from agentic_rubrics.export.card import data_card, token_stats
from agentic_rubrics.export.conversation import (
    CHARS_PER_TOKEN,
    clean,
    estimate_tokens,
    from_trajectory,
    hf_row,
    openai_row,
    unanswered_calls,
)
from agentic_rubrics.export.pairs import Pair, classifier_pairs, judge_pairs
from agentic_rubrics.export.sources import RunSource, open_run
from agentic_rubrics.export.split import split_repositories
from agentic_rubrics.redaction import Redactor, redactor
from agentic_rubrics.runfolder.files import atomic_write_json, atomic_write_text
from agentic_rubrics.types import SCHEMA

TASKS = ("rubric", "classifier", "judge")
"""What an export teaches: to write rubrics, to classify patches, to judge rubric items."""
MIN_AUC = 0.5
"""The utility filter's default: a task's ROC-AUC of S must be above it (better than chance)."""
MAX_TOKENS = 32_768
"""The default longest example kept, in estimated tokens (a 32k context window)."""
VALIDATION_FRACTION = 0.1
"""The default share of examples held out for validation (whole repositories)."""
MANIFEST = "export.json"
FILES = ("openai/train.jsonl", "openai/validation.jsonl", "hf/train.jsonl", "hf/validation.jsonl")
WRITER = "agentic-rubrics export-sft"


@dataclass
class Found:
    """An example that passed its task's own filters, before the length filter and the split."""

    pair: Pair
    tools: list[dict[str, Any]]
    run: int


@dataclass
class ExportResult:
    """What was written."""

    out: Path
    manifest: dict[str, Any]


def _check_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out}: not a folder")
    if not out.exists() or not any(out.iterdir()) or force:
        return
    try:
        written_by = json.loads((out / MANIFEST).read_text(encoding="utf-8")).get("written_by")
    except (OSError, ValueError, AttributeError, RecursionError):
        written_by = None
    if written_by != WRITER:
        raise ConfigError(
            f"{out}: a folder that is not empty and was not written by export-sft (no {MANIFEST}):"
            " give another --out, or --force to write into it"
        )


def _rubric_candidates(
    runs: list[RunSource], drops: Counter[str], options: dict[str, Any], info: Counter[str]
) -> tuple[int, list[Found]]:
    read, out = 0, []
    for index, run in enumerate(runs):
        model = run.models.get("explorer")
        for path, trajectory in run.trajectories():
            read += 1
            iid = trajectory.instance_id
            example, why = from_trajectory(trajectory)
            if example is None:
                drops[why] += 1
                continue
            if trajectory.status != "ok" or run.rubric(iid) is None:
                drops["rubric_invalid"] += 1
                continue
            example = clean(example, keep_thinking=options["keep_thinking"])
            info["thinking_removed"] += 0 if options["keep_thinking"] else example.thinking_removed
            if unanswered_calls(example.messages):
                drops["tool_calls_unanswered"] += 1
                continue
            if options["min_auc"] is not None:
                auc = run.utility(iid)
                if auc is None and options["require_utility"]:
                    drops["utility_not_measurable"] += 1
                    continue
                if auc is None:
                    info["utility_not_measurable"] += 1
                elif auc <= options["min_auc"]:
                    drops["utility"] += 1
                    continue
            meta = {"explorer": trajectory.explorer, "model": trajectory.model or model}
            meta["trajectory"] = path.name
            pair = Pair(iid, run.repo(iid), example.messages, meta)
            out.append(Found(pair, example.tools, index))
    return read, out


def _pair_candidates(
    runs: list[RunSource], task: str, tasks_file: Path | None, drops: Counter[str]
) -> tuple[int, list[Found]]:
    make = classifier_pairs if task == "classifier" else judge_pairs
    out = []
    for index, run in enumerate(runs):
        out += [Found(p, [], index) for p in make(run, tasks_file, drops)]
    return len(out) + sum(drops.values()), out


def export_sft(
    runs: list[Path] | list[str],
    out: Path | str,
    *,
    task: str = "rubric",
    keep_thinking: bool = False,
    min_auc: float | None = MIN_AUC,
    require_utility: bool = False,
    max_tokens: int = MAX_TOKENS,
    validation_fraction: float = VALIDATION_FRACTION,
    seed: int = 0,
    labels: Path | str | None = None,
    tasks: Path | str | None = None,
    force: bool = False,
) -> ExportResult:
    """Export run folders as fine-tuning data into ``out`` (see the module docstring).

    ``min_auc=None`` turns the utility filter off; ``require_utility`` also leaves out tasks whose
    utility cannot be measured. ``labels`` replaces the runs' labels (as ``report --labels``);
    ``tasks`` is the tasks file holding the issues (default: each run's own).

    Raises:
        ConfigError: a bad option, or an ``out`` that is not an export folder (without ``force``).
        DataError: a run folder's file of the wrong shape (file, line and field).
    """
    runs, out = [Path(r) for r in runs], Path(out)
    labels = Path(labels) if labels is not None else None
    tasks = Path(tasks) if tasks is not None else None
    _check_options(runs, task, max_tokens, validation_fraction)
    _check_out(out, force)
    sources = [open_run(p, labels) for p in runs]
    options: dict[str, Any] = {"task": task, "keep_thinking": keep_thinking, "min_auc": min_auc}
    options.update(require_utility=require_utility, max_tokens=max_tokens, seed=seed)
    options.update(validation_fraction=validation_fraction, chars_per_token=CHARS_PER_TOKEN)
    drops: Counter[str] = Counter()
    info: Counter[str] = Counter()
    if task == "rubric":
        read, candidates = _rubric_candidates(sources, drops, options, info)
    else:
        read, candidates = _pair_candidates(sources, task, tasks, drops)
    scrub = redactor()
    kept = _within_length(candidates, scrub, max_tokens, drops)
    if not kept:
        raise _nothing(read, drops, task)
    sizes = Counter(k.pair.repo for k in kept)
    train_repos, validation_repos = split_repositories(sizes, validation_fraction, seed)
    files, tokens_by, per_run = _rows(kept, sources, validation_repos, scrub)
    manifest = _manifest(options, sources, read, drops, info, tokens_by, per_run)
    manifest["split"] = {"train": sorted(train_repos), "validation": sorted(validation_repos)}
    return ExportResult(out, _write(out, files, manifest, scrub))


def _nothing(read: int, drops: Counter[str], task: str) -> DataError:
    if read:
        return DataError(f"nothing to export: {read} read, every one left out ({_named(drops)})")
    hint = " (trajectories are kept with --trajectories, the default)" if task == "rubric" else ""
    return DataError(f"nothing to export: the run folders hold nothing of this kind{hint}")


def _write(
    out: Path, files: dict[str, list[dict[str, Any]]], manifest: dict[str, Any], scrub: Redactor
) -> dict[str, Any]:
    """Every file atomically, the manifest last (it marks a finished export); the manifest."""
    manifest["files"] = {}
    for name in FILES:
        rows = files[name]
        text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
        atomic_write_text(out / name, text)
        digest = "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        manifest["files"][name] = {"rows": len(rows), "sha256": digest}
    manifest = scrub(manifest)
    atomic_write_text(out / "README.md", scrub(data_card(manifest)))
    atomic_write_json(out / MANIFEST, manifest)
    return manifest


def _check_options(runs: list[Path], task: str, max_tokens: int, fraction: float) -> None:
    if task not in TASKS:
        raise ConfigError(f"--task must be one of {', '.join(TASKS)}, not {task!r}")
    if max_tokens < 1:
        raise ConfigError(f"--max-tokens must be at least 1, not {max_tokens}")
    if not 0 <= fraction < 1:
        raise ConfigError(f"--validation must be in [0, 1), not {fraction}")
    if not runs:
        raise ConfigError("give at least one run folder")
    resolved = [p.resolve() for p in runs]
    if len(set(resolved)) != len(resolved):
        raise ConfigError("a run folder is given twice: its examples would count twice")


@dataclass
class Kept:
    """An example redacted, within the length bound."""

    pair: Pair
    run: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    tokens: int


def _within_length(
    candidates: list[Found], scrub: Redactor, max_tokens: int, drops: Counter[str]
) -> list[Kept]:
    """The candidates redacted (every string of every message and tool), the too long counted."""
    kept = []
    for cand in candidates:
        messages, tools = scrub(cand.pair.messages), scrub(cand.tools)
        tokens = estimate_tokens(messages, tools)
        if tokens > max_tokens:
            drops["too_long"] += 1
            continue
        kept.append(Kept(cand.pair, cand.run, messages, tools, tokens))
    kept.sort(key=lambda k: (k.pair.repo, k.pair.instance_id, k.run, _key(k.pair)))
    return kept


def _rows(
    kept: list[Kept], sources: list[RunSource], validation: set[str], scrub: Redactor
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[int]], Counter[int]]:
    """Each file's rows, each split's token counts, each run's examples."""
    files: dict[str, list[dict[str, Any]]] = {name: [] for name in FILES}
    tokens_by: dict[str, list[int]] = {"train": [], "validation": []}
    per_run: Counter[int] = Counter()
    for k in kept:
        side = "validation" if k.pair.repo in validation else "train"
        run = sources[k.run]
        meta = {"instance_id": k.pair.instance_id, "repo": k.pair.repo, "run": run.path.name}
        meta.update(config_hash=run.config_hash, **k.pair.meta)
        files[f"openai/{side}.jsonl"].append(openai_row(k.messages, k.tools))
        files[f"hf/{side}.jsonl"].append(hf_row(k.messages, k.tools, scrub(meta)))
        tokens_by[side].append(k.tokens)
        per_run[k.run] += 1
    return files, tokens_by, per_run


def _key(pair: Pair) -> str:
    return json.dumps(pair.meta, sort_keys=True, default=str)


def _named(drops: Counter[str]) -> str:
    return ", ".join(f"{name}: {n}" for name, n in sorted(drops.items()))


def _manifest(
    options: dict[str, Any],
    sources: list[RunSource],
    read: int,
    drops: Counter[str],
    info: Counter[str],
    tokens_by: dict[str, list[int]],
    per_run: Counter[int],
) -> dict[str, Any]:
    import importlib.metadata

    train, validation = len(tokens_by["train"]), len(tokens_by["validation"])
    counts: dict[str, Any] = {"read": read, "dropped": dict(sorted(drops.items()))}
    counts.update(kept=train + validation, train=train, validation=validation)
    counts.update(sorted(info.items()))
    return {
        "written_by": WRITER,
        "schema": SCHEMA,
        "version": importlib.metadata.version("agentic-rubrics"),
        "task": options["task"],
        "options": options,
        "counts": counts,
        "sources": [_source(s, per_run[i]) for i, s in enumerate(sources)],
        "tokens": {side: token_stats(tokens_by[side]) for side in ("train", "validation")},
        "notes": _notes(options, info),
    }


def _source(run: RunSource, examples: int) -> dict[str, Any]:
    """A run folder as the card names it."""
    return {
        "run": str(run.path),
        "config_hash": run.config_hash,
        "models": run.models,
        "labels": run.labels.source,
        "examples": examples,
    }


def _notes(options: dict[str, Any], info: Counter[str]) -> list[str]:
    """What the export did to the examples, for the card."""
    notes = [
        "Every message, tool definition and field was redacted again at export (the environment's"
        " secrets, text shaped like API keys)."
    ]
    if options["task"] != "rubric":
        prompt = "patch_classifier" if options["task"] == "classifier" else "judge"
        return [
            *notes,
            f"Single-turn examples in the {options['task']}'s own prompt (prompts/{prompt}.yaml).",
        ]
    thinking = (
        "kept, as `reasoning_content` in the hf files (the openai files have no field for it)."
        if options["keep_thinking"]
        else f"removed ({info['thinking_removed']} assistant message(s) had some)."
    )
    return [
        *notes,
        "Conversations are the agent's messages as written, before any elision to fit its context"
        " window; the system prompt, the issue and the tool definitions are those the run recorded.",
        "The agent's accepted submit was never answered by its loop: each example answers it"
        " (`submit_accepted` in prompts/training_data.yaml).",
        f"Thinking: {thinking}",
    ]
