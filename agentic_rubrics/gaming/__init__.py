"""The gaming suite (``agentic-rubrics sanity``): non-fixing candidates built as real diffs on each task's
base tree (:mod:`.target`, :mod:`.diffs`, :mod:`.attacks`, :mod:`.attacks_files`), run through the
library's own pipeline and reward beside the task's real fixes (:mod:`.suite`), and counted: on how many
tasks each attack ranks at least as high as the best resolved candidate (:mod:`.wins`), written as
``sanity.json`` and ``sanity.md`` (:mod:`.record`)."""
