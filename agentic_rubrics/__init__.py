"""agentic_rubrics: pick the right patch out of K candidates without running them.

Stages: explore the repository and write a weighted rubric (``rubrics.yaml``); judge every candidate
item by item (a model, or deterministic checks); score S with missing verdicts excluded; select the
best candidate per task; report Best@K, ROC-AUC, PR-AUC, coverage, flakiness and cost.

The protocols (``protocols.py``) are what the stages implement. Importing this package is cheap: the public API
is loaded on first use, and nothing here imports litellm, swe-rex, matplotlib or scikit-learn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"


_LAZY: dict[str, str] = {
    # the protocols
    "Model": "agentic_rubrics.protocols",
    "Sandbox": "agentic_rubrics.protocols",
    "Judge": "agentic_rubrics.protocols",
    # vocabulary
    "Task": "agentic_rubrics.types",
    "Candidate": "agentic_rubrics.types",
    "Rubric": "agentic_rubrics.types",
    "RubricItem": "agentic_rubrics.types",
    "RubricMetadata": "agentic_rubrics.types",
    "Axes": "agentic_rubrics.types",
    "Check": "agentic_rubrics.types",
    "Verdict": "agentic_rubrics.types",
    "CandidateScore": "agentic_rubrics.types",
    "Selection": "agentic_rubrics.types",
    "Completion": "agentic_rubrics.protocols",
    "CommandResult": "agentic_rubrics.protocols",
    "Usage": "agentic_rubrics.protocols",
    "AXES": "agentic_rubrics.types",
    "MISSING_REASONS": "agentic_rubrics.reasons",
    "SCHEMA": "agentic_rubrics.types",
    # errors
    "AgenticRubricsError": "agentic_rubrics.exceptions",
    "RubricError": "agentic_rubrics.exceptions",
    "CheckError": "agentic_rubrics.exceptions",
    "DataError": "agentic_rubrics.exceptions",
    "ConfigError": "agentic_rubrics.exceptions",
    "JudgeError": "agentic_rubrics.exceptions",
    "ModelError": "agentic_rubrics.exceptions",
    "SandboxError": "agentic_rubrics.exceptions",
    "PatchParseError": "agentic_rubrics.exceptions",
    "RepoError": "agentic_rubrics.exceptions",
    "BudgetExceeded": "agentic_rubrics.exceptions",
    "Problem": "agentic_rubrics.exceptions",
    # rubric files
    "load_rubric": "agentic_rubrics.rubric.file",
    "parse_rubric": "agentic_rubrics.rubric.file",
    "write_rubric": "agentic_rubrics.rubric.file",
    "lint": "agentic_rubrics.rubric.lint",
    # checks and patches
    "CHECKS": "agentic_rubrics.rubric.checks",
    "run_check": "agentic_rubrics.rubric.checks",
    "check_verdicts": "agentic_rubrics.rubric.check_verdicts",
    "parse_patch": "agentic_rubrics.patch",
    # scoring
    "DecisionPolicy": "agentic_rubrics.rank.scoring",
    "score_candidate": "agentic_rubrics.rank.scoring",
    "reduce_repeats": "agentic_rubrics.rank.scoring",
    # the main job
    "run": "agentic_rubrics.pipeline.runner",
    "run_async": "agentic_rubrics.pipeline.runner",
    "RunConfig": "agentic_rubrics.pipeline.config",
    "load_config": "agentic_rubrics.pipeline.config",
    "write_report": "agentic_rubrics.pipeline.runner",
    "report_folder": "agentic_rubrics.pipeline.runner",
    "frames": "agentic_rubrics.report.frames",
    "audit_items": "agentic_rubrics.report.item_audit",
    "ItemAuditFile": "agentic_rubrics.runfolder.item_audit",
    "compare_methods": "agentic_rubrics.report.method_comparison",
    "MethodComparison": "agentic_rubrics.runfolder.method_comparison",
    "export_sft": "agentic_rubrics.export.sft",
    "Report": "agentic_rubrics.runfolder.report",
    "register_selector": "agentic_rubrics.rank.selectors",
    "register_verifier": "agentic_rubrics.pipeline.verifiers",
    "VerifierSpec": "agentic_rubrics.pipeline.verifiers",
    "VerifierSettings": "agentic_rubrics.pipeline.verifiers",
    "Graded": "agentic_rubrics.pipeline.verifiers",
    "load_tasks": "agentic_rubrics.runfolder.tasks",
    "sanity": "agentic_rubrics.gaming.suite",
    "SanityReport": "agentic_rubrics.gaming.record",
    "ATTACK_KINDS": "agentic_rubrics.gaming.attacks",
    "RunFolder": "agentic_rubrics.runfolder.folder",
    "load_examples": "agentic_rubrics.datasets.bundled",
    "write_tasks_jsonl": "agentic_rubrics.datasets.bundled",
    "ChecksJudge": "agentic_rubrics.judge.judges",
    "LLMJudge": "agentic_rubrics.judge.judges",
    "LLM": "agentic_rubrics.llm.door",
    "LLMConfig": "agentic_rubrics.llm.door",
    "Ledger": "agentic_rubrics.llm.door",
    "PatchClassifier": "agentic_rubrics.rank.classifier",
    "load_prompt": "agentic_rubrics.prompts",
    "JudgeConfig": "agentic_rubrics.judge.judges",
    "StaticExplorer": "agentic_rubrics.explore.static",
    "ExplorerConfig": "agentic_rubrics.explore",
    "LocalCopySandbox": "agentic_rubrics.sandbox",
    "RepoCache": "agentic_rubrics.datasets.repos",
    "RepoConfig": "agentic_rubrics.datasets.repos_config",
    "resolve_repo_path": "agentic_rubrics.datasets.repos",
    "select": "agentic_rubrics.rank.rerank",
    "self_consistency_ranking": "agentic_rubrics.rank.agreement",
    # metrics
    "best_at_k": "agentic_rubrics.rank.metrics",
    "pass_at_k": "agentic_rubrics.rank.metrics",
    "random_at_k": "agentic_rubrics.rank.metrics",
    "roc_auc": "agentic_rubrics.rank.metrics",
    "pr_auc": "agentic_rubrics.rank.metrics",
    "flakiness": "agentic_rubrics.rank.metrics",
    "bootstrap_ci": "agentic_rubrics.rank.metrics",
    "tie_rate": "agentic_rubrics.rank.metrics",
}

__all__ = sorted(["__version__", *_LAZY])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentic_rubrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from agentic_rubrics.datasets.bundled import load_examples, write_tasks_jsonl
    from agentic_rubrics.exceptions import (
        AgenticRubricsError,
        BudgetExceeded,
        CheckError,
        ConfigError,
        DataError,
        JudgeError,
        ModelError,
        PatchParseError,
        Problem,
        RubricError,
        SandboxError,
    )
    from agentic_rubrics.explore import ExplorerConfig
    from agentic_rubrics.explore.static import StaticExplorer
    from agentic_rubrics.export.sft import export_sft
    from agentic_rubrics.gaming.attacks import ATTACK_KINDS
    from agentic_rubrics.gaming.record import SanityReport
    from agentic_rubrics.gaming.suite import sanity
    from agentic_rubrics.judge.judges import ChecksJudge, JudgeConfig, LLMJudge
    from agentic_rubrics.llm.door import LLM, Ledger, LLMConfig
    from agentic_rubrics.patch import parse_patch
    from agentic_rubrics.pipeline.config import RunConfig, load_config
    from agentic_rubrics.pipeline.runner import run, run_async, write_report
    from agentic_rubrics.pipeline.verifiers import (
        Graded,
        VerifierSettings,
        VerifierSpec,
        register_verifier,
    )
    from agentic_rubrics.prompts import load_prompt
    from agentic_rubrics.protocols import CommandResult, Completion, Judge, Model, Sandbox, Usage
    from agentic_rubrics.rank.agreement import self_consistency_ranking
    from agentic_rubrics.rank.classifier import PatchClassifier
    from agentic_rubrics.rank.metrics import (
        best_at_k,
        bootstrap_ci,
        flakiness,
        pass_at_k,
        pr_auc,
        random_at_k,
        roc_auc,
        tie_rate,
    )
    from agentic_rubrics.rank.rerank import select
    from agentic_rubrics.rank.scoring import DecisionPolicy, reduce_repeats, score_candidate
    from agentic_rubrics.reasons import MISSING_REASONS
    from agentic_rubrics.report.frames import frames
    from agentic_rubrics.report.item_audit import audit_items
    from agentic_rubrics.report.method_comparison import compare_methods
    from agentic_rubrics.rubric.check_verdicts import check_verdicts
    from agentic_rubrics.rubric.checks import CHECKS, run_check
    from agentic_rubrics.rubric.file import load_rubric, parse_rubric, write_rubric
    from agentic_rubrics.rubric.lint import lint
    from agentic_rubrics.runfolder.folder import RunFolder
    from agentic_rubrics.runfolder.item_audit import ItemAuditFile
    from agentic_rubrics.runfolder.method_comparison import MethodComparison
    from agentic_rubrics.runfolder.report import Report
    from agentic_rubrics.runfolder.tasks import load_tasks
    from agentic_rubrics.sandbox import LocalCopySandbox
    from agentic_rubrics.types import (
        AXES,
        SCHEMA,
        Axes,
        Candidate,
        CandidateScore,
        Check,
        RubricItem,
        RubricMetadata,
        Selection,
        Task,
    )
