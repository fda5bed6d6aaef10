"""matplotlib figures for the report's plots and the calibration diagram: imported only when one is
drawn, the Agg backend (no display), PNGs written atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def figure(width: float = 6.4, height: float = 4.0) -> Any:
    """A new figure and its axes (the Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height), dpi=100)
    return fig, ax


def save(fig: Any, path: Path) -> None:
    """Write ``fig`` to ``path`` as PNG (atomically, without a timestamp) and close it."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.tight_layout()
    fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)
    tmp.replace(path)
