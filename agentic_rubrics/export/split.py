"""Train and validation split by repository: no repository has examples on both sides.

The repositories are sorted, shuffled with the seed, and taken into validation in that order until
validation holds at least ``fraction`` of the examples (at least one repository when there are two or
more and ``fraction`` > 0; never every repository). Deterministic: the same examples, seed and fraction
give the same split.
"""

from __future__ import annotations

import random
from collections import Counter


def split_repositories(
    repo_sizes: Counter[str], fraction: float, seed: int
) -> tuple[set[str], set[str]]:
    """The repositories of train and of validation.

    Raises:
        ValueError: ``fraction`` outside [0, 1).
    """
    if not 0 <= fraction < 1:
        raise ValueError(f"the validation fraction must be in [0, 1), got {fraction}")
    repos = sorted(repo_sizes)
    random.Random(seed).shuffle(repos)
    total = sum(repo_sizes.values())
    validation: set[str] = set()
    held = 0
    for repo in repos[:-1]:  # the last one always trains
        if fraction == 0 or held >= fraction * total:
            break
        validation.add(repo)
        held += repo_sizes[repo]
    return set(repos) - validation, validation
