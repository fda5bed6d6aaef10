"""Dependency graph of steps and the execution order derived from it."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from pipekit.errors import CycleError, DuplicateStepError, UnknownStepError


class DependencyGraph:
    """Step names as nodes; an edge ``a -> b`` means ``b`` requires ``a``.

    Nodes remember the order in which they were added (their declaration order) and
    their priority; both are used to make :meth:`topological_order` deterministic.
    """

    def __init__(self) -> None:
        self._index: dict[str, int] = {}
        self._priority: dict[str, int] = {}
        self._requires: dict[str, tuple[str, ...]] = {}
        self._dependents: dict[str, set[str]] = {}

    def add(self, name: str, requires: Iterable[str] = (), priority: int = 0) -> None:
        """Add a node. Requirements may name nodes that are added later."""
        if name in self._index:
            raise DuplicateStepError(name)
        self._index[name] = len(self._index)
        self._priority[name] = priority
        self._requires[name] = tuple(dict.fromkeys(requires))
        self._dependents.setdefault(name, set())
        for dep in self._requires[name]:
            self._dependents.setdefault(dep, set()).add(name)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __len__(self) -> int:
        return len(self._index)

    def __iter__(self) -> Iterator[str]:
        """Node names in declaration order."""
        return iter(self._index)

    def requirements(self, name: str) -> tuple[str, ...]:
        """The direct requirements of ``name``, as declared."""
        if name not in self._index:
            raise UnknownStepError(name)
        return self._requires[name]

    def dependents(self, name: str) -> list[str]:
        """The nodes that directly require ``name``, in declaration order."""
        if name not in self._index:
            raise UnknownStepError(name)
        return sorted(self._dependents.get(name, ()), key=self._index.__getitem__)

    def priority(self, name: str) -> int:
        """The priority ``name`` was added with."""
        if name not in self._index:
            raise UnknownStepError(name)
        return self._priority[name]

    def validate(self) -> None:
        """Raise ``UnknownStepError`` if a node requires a name that was never added."""
        for name, requires in self._requires.items():
            for dep in requires:
                if dep not in self._index:
                    raise UnknownStepError(dep, required_by=name)

    def ancestors(self, name: str) -> set[str]:
        """Every node ``name`` depends on, directly or not (``name`` excluded)."""
        if name not in self._index:
            raise UnknownStepError(name)
        seen: set[str] = set()
        stack = list(self._requires[name])
        while stack:
            dep = stack.pop()
            if dep in seen:
                continue
            if dep not in self._index:
                raise UnknownStepError(dep, required_by=name)
            seen.add(dep)
            stack.extend(self._requires[dep])
        return seen

    def subgraph(self, targets: Iterable[str]) -> DependencyGraph:
        """The graph restricted to ``targets`` and everything they depend on.

        Declaration order and priorities are kept.
        """
        keep: set[str] = set()
        for target in targets:
            keep.add(target)
            keep |= self.ancestors(target)
        sub = DependencyGraph()
        for name in self._index:
            if name in keep:
                sub.add(name, self._requires[name], self._priority[name])
        return sub

    def _sort_key(self, name: str) -> tuple[int, int]:
        return (-self._priority[name], self._index[name])

    def topological_order(self) -> list[str]:
        """All nodes, each after everything it requires.

        Whenever several nodes are ready (all of their requirements are already in the
        order), the one with the highest priority comes next; ties go to the node that
        was declared first. The result is therefore the same on every run.

        Raises:
            UnknownStepError: a node requires a name that was never added.
            CycleError: the requirements form a cycle.
        """
        self.validate()
        waiting = {name: len(reqs) for name, reqs in self._requires.items()}
        ready = deque(sorted((n for n, count in waiting.items() if count == 0), key=self._sort_key))
        order: list[str] = []
        while ready:
            name = ready.popleft()
            order.append(name)
            for child in self._dependents[name]:
                waiting[child] -= 1
                if waiting[child] == 0:
                    ready.append(child)
        if len(order) != len(self._index):
            raise CycleError(self.find_cycle())
        return order

    def find_cycle(self) -> list[str]:
        """One cycle as ``[a, b, ..., a]``, or ``[]`` if the graph is acyclic."""
        state: dict[str, int] = {}  # 1 = on the current path, 2 = done
        path: list[str] = []

        def visit(name: str) -> list[str]:
            state[name] = 1
            path.append(name)
            for dep in self._requires[name]:
                if dep not in self._index:
                    continue
                if state.get(dep) == 1:
                    return path[path.index(dep):] + [dep]
                if dep not in state:
                    found = visit(dep)
                    if found:
                        return found
            path.pop()
            state[name] = 2
            return []

        for name in self._index:
            if name not in state:
                cycle = visit(name)
                if cycle:
                    return cycle
        return []
