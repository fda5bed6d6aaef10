"""The run folder's on-disk contract, in one place: its layout and resuming (``folder``), atomic writes
and JSONL (``files``), the tasks file (``tasks``), the typed rows (``rows``) and report.json
(``report``), what is retried on resume (``retry``) and the one-writer lock (``lock``).

Everything a run writes is typed and versioned (``schema``); what is read back is validated where it is
read, once, and a row of another shape or version is an error naming its file, line and field.
"""
