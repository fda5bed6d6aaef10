"""The closed vocabularies of reason codes: why a verdict is missing, and why a check could not decide.

Records hold these codes, never text from a patch or a reply; report.md explains them from here.
"""

from __future__ import annotations

from typing import Final

MISSING_REASONS: Final[dict[str, str]] = {
    "not_configured": "no judge was configured for items without a check",
    "check_error": "the item's check could not decide (the detail says why: see CHECK_ERROR_DETAILS)",
    "rubric_error": "the task's rubric failed to load or was never written",
    "no_verdict": "the item has no verdict row at all",
    "skipped_by_judge": "the judge did not answer this item, even when asked again",
    "invalid_value": "the judge answered with something other than 0/1/true/false",
    "empty_reply": "the judge's reply was empty",
    "unparsable_reply": "the judge's reply held no JSON object",
    "truncated": "the judge's reply was cut off (finish_reason 'length')",
    "refusal": "the judge refused to answer",
    "provider_error": "the model provider failed after bounded retries",
    "context_window": "the prompt did not fit the model's context window (not retried)",
    "split_vote": "repeated judgements tied",
    "budget": "the run's cost limit was reached before this item was judged",
    "empty_patch": "the candidate patch is empty; nothing was sent to the judge",
    "no_repository": "the item's check needs the task's repository at its base commit; there was none",
}
"""The closed vocabulary of reasons a verdict can be missing."""

CHECK_ERROR_DETAILS: Final[dict[str, str]] = {
    "invalid_check": "the check is not valid (unknown name, wrong argument, regex that does not compile)",
    "not_a_diff": "the candidate patch is not a unified diff",
    "invalid_text": "the candidate patch holds bytes that are not UTF-8 (or lone surrogates)",
    "timeout": "a regex of the check ran past its time limit on this patch",
    "rubric_timeout": "the rubric's checks together ran past their shared time limit on this patch"
    " before this one ran",
    "not_applied": "a repository-aware check: the patch did not apply, so there is no post-image",
    "not_parsed": "a repository-aware check: a changed file's post-image does not parse",
    "analysis_incomplete": "a repository-aware check: a file or the usage scan could not be analysed",
    "analysis_timeout": "a repository-aware check: the patch's analysis ran past its time limit",
    "analysis_crashed": "a repository-aware check: the process analysing the patch died",
    "too_large": "a repository-aware check: the patch or a file it touches or writes is over a size"
    " bound, so it was not analysed",
    "not_confined": "a repository-aware check: the patch was not applied because bubblewrap cannot"
    " run here and isolation was required",
}
"""Why a check could not decide: the ``detail`` of a ``missing: check_error`` verdict."""

SIMILARITY_REASONS: Final[dict[str, str]] = {
    "proxy_empty": "the proxy author changed no file: there is nothing to compare candidates with",
    "proxy_does_not_apply": "the proxy patch does not apply to the task's base tree",
    "proxy_too_large": "the proxy patch is over its size bound (similarity.max_proxy_chars)",
    "proxy_failed": "the proxy author wrote no patch (the detail after ':' says why: budget, model"
    " error, no repository, sandbox error)",
    "proxy_not_found": "--proxies DIR holds no proxy.diff for the task",
    "invalid_text": "the candidate patch holds bytes that are not UTF-8 (or lone surrogates)",
    "invalid_value": "the judge answered with something other than an integer from 1 to 5",
}
"""Why a candidate's patch-similarity rating is missing, beside :data:`MISSING_REASONS`'s reply and
provider codes (``truncated``, ``unparsable_reply``, ``split_vote``, ``budget`` ...)."""

NO_BEHAVIOUR_CHANGE: Final = "no_behaviour_change"
"""The reason of a ``checked`` 0 on every item of the functional axes (file change, spec alignment,
runtime) of a candidate that changes no behaviour of the program (``rubric/behaviour.py``): such a
candidate is ranked with the empty patches, below every other."""
TAMPERS_WITH_TESTS: Final = "tampers_with_tests"
"""The reason of a ``checked`` 0 on every integrity item of a candidate that changes the test
infrastructure (``test_infra.py``: conftests, pytest's configuration, start-up files, plugins, the
test framework imported by program code, the graded folder): what its tests say is not its code's
alone. Such a candidate is rejected and ranked below every candidate that does not; the tests
verifier puts what it can of that infrastructure back, or refuses it (the graded folder)."""
FUNCTIONAL_AXES: Final = ("file_change_rubrics", "spec_alignment_rubrics", "runtime_rubrics")
"""The axes that say whether a candidate does what the issue asks; the integrity axis says whether it
does harm."""
