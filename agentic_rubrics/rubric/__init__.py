"""The rubric, the contract between explorer and judge: rubrics.yaml read within limits, validated,
linted and written; the closed vocabulary of deterministic checks (over the diff, and over the
candidate applied to the base tree: ``postimage/``); how grounded a rubric is."""
