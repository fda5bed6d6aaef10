"""The tasks of a tasks file that a run folder has not scored: a report must not read as complete."""

from __future__ import annotations

from agentic_rubrics.runfolder.report import Problems


def unscored(expected: tuple[str, list[str]], scored: set[str], out: Problems) -> None:
    """The tasks of a tasks file that a folder has not scored (a run stopped before them, or one of
    other stages): a warning naming the first few, a failure when none of them is scored."""
    name, ids = expected
    left = [i for i in ids if i not in scored]
    if not left:
        return
    resume = f"`agentic-rubrics run --tasks {name} --out <this folder>` resumes the run"
    if len(left) == len(ids):
        out.fatal.append(
            f"None of the {len(ids)} tasks of {name} has been scored in this folder: the report"
            f" says nothing of them. {resume}."
        )
        return
    shown = ", ".join(left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
    out.warnings.append(
        f"{len(left)} of the {len(ids)} tasks of {name} have not been scored in this folder"
        f" ({shown}): the report covers the other {len(ids) - len(left)}; {resume}"
    )
