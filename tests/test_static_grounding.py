"""The static explorer's grounding: traceback frames, call chains, quoted messages, expected exceptions."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentic_rubrics.explore.static import StaticExplorer
from agentic_rubrics.sandbox import LocalCopySandbox
from agentic_rubrics.types import Rubric, Task

FILES = {
    "shop/__init__.py": "from shop.api import checkout\n",
    "shop/api.py": (
        "from shop import pricing\n\n\n"
        "def checkout(cart):\n"
        "    total = pricing.total(cart)\n"
        "    return round(total, 2)\n\n\n"
        "def refund(order):\n"
        "    return -order\n"
    ),
    "shop/pricing.py": (
        "def total(cart):\n"
        "    return sum(_line(item) for item in cart)\n\n\n"
        "def _line(item):\n"
        "    if item['qty'] < 0:\n"
        "        raise ValueError(f\"negative quantity for {item['sku']!r}\")\n"
        "    return item['price'] * item['qty'] * (1 - item.get('discount', 0))\n"
    ),
    "shop/errors.py": "class PricingError(ValueError):\n    pass\n",
    "tests/test_api.py": "from shop import checkout\n\n\ndef test_empty():\n    assert checkout([]) == 0\n",
}


def rubric_for(tmp_path: Path, issue: str) -> Rubric:
    repo = tmp_path / "repo"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    task = Task(instance_id="shop-1", problem_statement=issue, repo_path=str(repo))

    async def go() -> Rubric:
        async with LocalCopySandbox(repo) as sb:
            rubric, _ = await StaticExplorer().explore(task, sb)
            return rubric

    return asyncio.run(go())


def checks_of(rubric: Rubric) -> dict[str, dict[str, object]]:
    return {i.id: i.check.model_dump() for _, i in rubric.items() if i.check is not None}


TRACEBACK = """checkout() crashes on a returned item

```
Traceback (most recent call last):
  File "/home/me/app/main.py", line 3, in <module>
    checkout(cart)
  File "/usr/lib/python3/site-packages/shop/api.py", line 5, in checkout
    total = pricing.total(cart)
  File "/usr/lib/python3/site-packages/shop/pricing.py", line 2, in total
    return sum(_line(item) for item in cart)
  File "/usr/lib/python3/site-packages/shop/pricing.py", line 7, in _line
    raise ValueError(f"negative quantity for {item['sku']!r}")
ValueError: negative quantity for 'A-1'
```
Returns should be allowed: I expected a PricingError at most, not a crash.
"""


def test_the_deepest_frame_leads(tmp_path: Path) -> None:
    checks = checks_of(rubric_for(tmp_path, TRACEBACK))
    assert checks["FC1"] == {"touches": "shop/pricing.py"}
    symbols = next(c for c in checks.values() if "touches_symbol" in c)
    assert symbols["touches_symbol"][0] == "_line"  # type: ignore[index]


def test_a_symptom_in_a_public_function_leads_to_what_it_calls(tmp_path: Path) -> None:
    issue = "`checkout()` gives the wrong total when an item has a discount: 10% off 20.00 should be 18.00."
    checks = checks_of(rubric_for(tmp_path, issue))
    touched = [c for c in checks.values() if "touches" in c]
    assert any(
        "shop/pricing.py" in (c["touches"] if isinstance(c["touches"], list) else [c["touches"]])
        for c in touched
    )
    symbols = next(c for c in checks.values() if "touches_symbol" in c)["touches_symbol"]
    assert "checkout" in symbols and ("total" in symbols or "_line" in symbols)


def test_the_expected_exception_becomes_a_spec_item(tmp_path: Path) -> None:
    rubric = rubric_for(
        tmp_path,
        TRACEBACK.replace("I expected a PricingError at most", "It should raise PricingError"),
    )
    specs = [i for a, i in rubric.items() if a == "spec_alignment_rubrics"]
    assert any(
        i.check and i.check.name == "adds_match" and "PricingError" in str(i.check.arg)
        for i in specs
    )


def test_nothing_located_still_gives_generic_checks(tmp_path: Path) -> None:
    rubric = rubric_for(tmp_path, "The app is slow on Mondays.")
    assert rubric.metadata.underlying_bug.startswith("Not diagnosed")
    assert {a for a, _ in rubric.items()} >= {
        "file_change_rubrics",
        "integrity_rubrics",
        "runtime_rubrics",
    }
    assert not any(i.check and i.check.name == "touches" for _, i in rubric.items())
