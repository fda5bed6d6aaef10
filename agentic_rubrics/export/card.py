"""The data card (``README.md`` of an export): what went in, what each filter left out, the split, the
token statistics and the licence notice. Built from the export's manifest alone, so both agree."""

from __future__ import annotations

import statistics
from typing import Any

FILTERS: dict[str, str] = {
    "no_conversation": "no recorded conversation (a static explorer, or a run from before"
    " trajectories kept their messages)",
    "not_submitted": "the agent never had a submit accepted (issue-only: no valid attempt)",
    "rubric_invalid": "the task's rubrics.yaml is absent or does not parse and validate now",
    "tool_calls_unanswered": "a tool call without its result, or a result of no call",
    "utility": "the rubric did not separate resolved from unresolved candidates: per-task ROC-AUC of"
    " S at or below --min-auc",
    "utility_not_measurable": "--require-utility: the task's utility cannot be measured (no labels,"
    " or no resolved and unresolved candidate with S)",
    "unlabelled": "the candidate has no label",
    "patch_not_kept": "the run folder keeps no patch of this hash (patches.jsonl)",
    "empty_patch": "an empty patch (never sent to a model)",
    "not_text": "a patch that is not valid Unicode (never sent to a model)",
    "issue_not_found": "the tasks file has no issue text for the task",
    "checked": "decided by the item's check, not by the judge",
    "missing": "no verdict (missing, with a reason)",
    "repeats_disagree": "the judge's repeats disagree (or some are missing)",
    "item_not_in_rubric": "the verdict names an item the rubric no longer has",
    "too_long": "longer than --max-tokens (estimated)",
}
"""Each filter's name and what it leaves out."""

_UNITS = {"rubric": "trajectories", "classifier": "candidates", "judge": "(candidate, item) pairs"}


def token_stats(tokens: list[int]) -> dict[str, Any]:
    """Count, total, min, median, mean and max of estimated tokens (``None`` when empty)."""
    if not tokens:
        return {"examples": 0, "total": 0, "min": None, "median": None, "mean": None, "max": None}
    return {
        "examples": len(tokens),
        "total": sum(tokens),
        "min": min(tokens),
        "median": statistics.median(tokens),
        "mean": round(statistics.fmean(tokens), 1),
        "max": max(tokens),
    }


def _table(head: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    out += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]
    return out


def data_card(manifest: dict[str, Any]) -> str:
    """The card's Markdown."""
    task = manifest["task"]
    lines = [
        f"# Fine-tuning data: {task}",
        "",
        f"Written by `agentic-rubrics export-sft --task {task}` (agentic-rubrics"
        f" {manifest['version']}) from {len(manifest['sources'])} run folder(s).",
        "",
        "## Files",
        "",
        "- `openai/train.jsonl`, `openai/validation.jsonl`: OpenAI's chat fine-tuning format"
        " (`messages`; `tools` and `parallel_tool_calls` where the agent had tools).",
        "- `hf/train.jsonl`, `hf/validation.jsonl`: the `messages` format Hugging Face trainers read,"
        " `tools` as JSON text, and each example's source (`instance_id`, `repo`, `run` ...).",
        "",
        *_counts(task, manifest["counts"]),
        "",
        "## Sources",
        "",
        *_table(
            ["run folder", "config hash", "models", "labels", "examples"],
            [
                [s["run"], s["config_hash"], _models(s["models"]), s["labels"], s["examples"]]
                for s in manifest["sources"]
            ],
        ),
        "",
        *_split_and_tokens(manifest),
        "",
        "## Processing",
        "",
        *[f"- {note}" for note in manifest["notes"]],
        "",
        "## Licence",
        "",
        "The issues, repository content and candidate patches in these examples carry their original"
        " licences (those of their repositories and of the benchmarks they come from); check them"
        " before you train on or share this data. The rest is output of the models named above,"
        " under their providers' terms.",
        "",
    ]
    return "\n".join(lines)


def _models(models: dict[str, str]) -> str:
    return ", ".join(f"{role}: {model}" for role, model in models.items()) or "-"


def _counts(task: str, counts: dict[str, Any]) -> list[str]:
    lines = [
        "## Counts",
        "",
        f"{counts['read']} {_UNITS[task]} read; each left out is counted by the first filter that"
        f" left it out; {counts['kept']} kept = {counts['train']} train +"
        f" {counts['validation']} validation.",
        "",
    ]
    dropped = [[name, n, FILTERS.get(name, "")] for name, n in counts["dropped"].items()]
    lines += _table(["filter", "left out", "what it leaves out"], dropped or [["none", 0, ""]])
    if "utility_not_measurable" in counts:
        lines += [
            "",
            f"{counts['utility_not_measurable']} kept example(s) had no measurable utility (no"
            " labels, or no resolved and unresolved candidate with S on the task): kept"
            " (--require-utility leaves them out).",
        ]
    return lines


def _split_and_tokens(manifest: dict[str, Any]) -> list[str]:
    options, split, stats = manifest["options"], manifest["split"], manifest["tokens"]
    keys = ["examples", "total", "min", "median", "mean", "max"]
    return [
        "## Split",
        "",
        f"By repository (no repository in both), seed {options['seed']}, validation fraction"
        f" {options['validation_fraction']}: {len(split['train'])} repositories train,"
        f" {len(split['validation'])} validate.",
        "",
        "Validation repositories: " + (", ".join(split["validation"]) or "none") + ".",
        "",
        "## Tokens",
        "",
        f"Estimated without a tokenizer: characters of an example's JSON / {options['chars_per_token']}"
        f" (maximum kept: {options['max_tokens']}).",
        "",
        *_table(["split", *keys], [[name, *(stats[name][k] for k in keys)] for name in stats]),
    ]
