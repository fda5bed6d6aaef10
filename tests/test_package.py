"""The package surface: cheap to import, every public name resolves, protocols are usable."""

from __future__ import annotations

import json
import subprocess
import sys

import agentic_rubrics

HEAVY = ("litellm", "swerex", "matplotlib", "sklearn", "scipy")

PROBE = """
import json, sys
{body}
heavy = sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r})
print(json.dumps(heavy))
"""


def _heavy_after(body: str) -> list[str]:
    code = PROBE.format(body=body, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_and_help_load_no_heavy_module() -> None:
    assert _heavy_after("import agentic_rubrics") == []
    help_body = (
        "from agentic_rubrics.cli.app import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
    )
    assert _heavy_after(help_body) == []


def test_core_api_stays_light() -> None:
    body = (
        "import agentic_rubrics as ar\n"
        "ar.load_rubric; ar.score_candidate; ar.best_at_k; ar.run_check; ar.Task; ar.parse_patch\n"
        "ar.run; ar.RunConfig; ar.StaticExplorer; ar.LocalCopySandbox; ar.ChecksJudge; ar.select\n"
        "ar.LLM; ar.LLMConfig; ar.LLMJudge; ar.PatchClassifier; ar.load_prompt\n"
    )
    assert _heavy_after(body) == []


def test_every_public_name_resolves() -> None:
    for name in agentic_rubrics.__all__:
        assert getattr(agentic_rubrics, name) is not None, name
    assert "best_at_k" in dir(agentic_rubrics)


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        agentic_rubrics.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_every_error_is_rooted() -> None:
    from agentic_rubrics import exceptions

    for name in dir(exceptions):
        obj = getattr(exceptions, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, agentic_rubrics.AgenticRubricsError), name
