"""The report, from the run folder alone: report.json (build), report.md (markdown), plots, the
primary selector's selections, repeats, calibration, audit, and what went wrong (problems)."""
