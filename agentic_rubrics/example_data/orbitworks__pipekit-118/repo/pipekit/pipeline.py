"""``Pipeline``: a registry of steps that can plan and run them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pipekit.errors import DuplicateStepError, StepFailed, UnknownStepError
from pipekit.graph import DependencyGraph
from pipekit.step import Step


@dataclass
class RunResult:
    """What happened during :meth:`Pipeline.run`.

    Attributes:
        order: the names of the steps that were executed, in execution order.
        results: return value of each step that succeeded.
        failed: exception raised by each step that failed (only with ``fail_fast=False``).
        skipped: steps that did not run because something they require failed.
    """

    order: list[str] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    failed: dict[str, BaseException] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no step failed or was skipped."""
        return not self.failed and not self.skipped


class Pipeline:
    """A named collection of steps.

    >>> pipe = Pipeline("release")
    >>> @pipe.step()
    ... def checkout():
    ...     return "src"
    >>> @pipe.step(requires=["checkout"])
    ... def build(src):
    ...     return src + ".whl"
    >>> pipe.run().results["build"]
    'src.whl'
    """

    def __init__(self, name: str = "pipeline") -> None:
        self.name = name
        self._steps: dict[str, Step] = {}

    def step(
        self,
        name: str | None = None,
        *,
        requires: Iterable[str] = (),
        priority: int = 0,
        tags: Iterable[str] = (),
    ) -> Callable[[Callable[..., Any]], Step]:
        """Decorator registering a function as a step and returning the ``Step``."""

        def register(func: Callable[..., Any]) -> Step:
            return self.add(
                Step.from_function(func, name=name, requires=requires, priority=priority, tags=tags)
            )

        return register

    def add(self, step: Step) -> Step:
        """Register an already built step."""
        if step.name in self._steps:
            raise DuplicateStepError(step.name)
        self._steps[step.name] = step
        return step

    def __getitem__(self, name: str) -> Step:
        try:
            return self._steps[name]
        except KeyError:
            raise UnknownStepError(name) from None

    def __contains__(self, name: object) -> bool:
        return name in self._steps

    def __len__(self) -> int:
        return len(self._steps)

    def __iter__(self) -> Iterator[Step]:
        """Steps in declaration order."""
        return iter(self._steps.values())

    def graph(self) -> DependencyGraph:
        """The dependency graph of every registered step, in declaration order."""
        graph = DependencyGraph()
        for step in self._steps.values():
            graph.add(step.name, step.requires, step.priority)
        return graph

    def plan(
        self, targets: Iterable[str] | None = None, *, tags: Iterable[str] | None = None
    ) -> list[str]:
        """The names of the steps to run, in execution order.

        Args:
            targets: only these steps and what they depend on (default: every step).
            tags: keep only steps carrying at least one of these tags. Requirements of a
                kept step are not added back, so this is meant for listing, not running.
        """
        graph = self.graph()
        if targets is not None:
            targets = list(targets)
            for target in targets:
                if target not in graph:
                    raise UnknownStepError(target)
            graph = graph.subgraph(targets)
        order = graph.topological_order()
        if tags is not None:
            wanted = set(tags)
            order = [name for name in order if self._steps[name].tags & wanted]
        return order

    def run(self, targets: Iterable[str] | None = None, *, fail_fast: bool = True) -> RunResult:
        """Run the planned steps one after another.

        Each step receives the results of its requirements positionally, in the order
        they were declared in ``requires``.

        Args:
            targets: as for :meth:`plan`.
            fail_fast: raise ``StepFailed`` on the first failure; otherwise record it,
                skip everything that depends on the failed step, and keep going.
        """
        outcome = RunResult()
        for name in self.plan(targets):
            step = self._steps[name]
            blocked = [dep for dep in step.requires if dep in outcome.failed or dep in outcome.skipped]
            if blocked:
                outcome.skipped.append(name)
                continue
            outcome.order.append(name)
            try:
                value = step(*(outcome.results[dep] for dep in step.requires))
            except Exception as exc:
                if fail_fast:
                    raise StepFailed(name, exc) from exc
                outcome.failed[name] = exc
            else:
                outcome.results[name] = value
        return outcome
