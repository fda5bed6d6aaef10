"""What comes in: tasks (SWE-bench rows, harness reports, the bundled examples), their labels, what a run
scored of them (inputs), and the real repositories at each task's base commit."""
