"""The ``Step`` record: one named unit of work in a pipeline."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pipekit.utils import check_name, unique


@dataclass(frozen=True)
class Step:
    """A named callable plus the names of the steps whose results it needs.

    Attributes:
        name: unique name of the step inside its pipeline.
        func: the callable; it receives the results of ``requires`` positionally, in that order.
        requires: names of the steps that must run before this one.
        priority: higher runs earlier when several steps are ready at the same time.
        tags: free-form labels used to select steps (``Pipeline.plan(tags=...)``).
        description: one line shown by ``pipekit plan``; defaults to the first docstring line.
    """

    name: str
    func: Callable[..., Any]
    requires: tuple[str, ...] = ()
    priority: int = 0
    tags: frozenset[str] = field(default_factory=frozenset)
    description: str = ""

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        requires: Iterable[str] = (),
        priority: int = 0,
        tags: Iterable[str] = (),
    ) -> Step:
        """Build a step from a function, taking the name and description from it by default."""
        step_name = check_name(name if name is not None else func.__name__)
        doc = (func.__doc__ or "").strip().splitlines()
        return cls(
            name=step_name,
            func=func,
            requires=tuple(unique(check_name(r) for r in requires)),
            priority=int(priority),
            tags=frozenset(tags),
            description=doc[0] if doc else "",
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)
