"""``python -m agentic_rubrics.testing serve``: the loopback servers from the command line."""

from agentic_rubrics.testing import main

if __name__ == "__main__":
    raise SystemExit(main())
