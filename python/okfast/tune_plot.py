"""``okfast tune --plot``: each configuration's train and holdout objective
on the first fold (docs/spec.md §14.5), the current and the proposed marked.
matplotlib is the ``okfast[plot]`` extra, imported only when a plot is drawn."""

from __future__ import annotations

import os

from okfast.errors import MissingDependencyError
from okfast.tune import TuneReport


def plot(report: TuneReport, path: str | os.PathLike[str]) -> None:
    """Draw ``report`` to ``path`` (any format matplotlib writes, by suffix)."""
    require_plot()
    import matplotlib

    matplotlib.use("Agg")  # a file, never a window
    import matplotlib.pyplot as plt

    fold = report.folds[0]
    held = list(fold.queries)
    train = [i for i in range(len(report.qids)) if i not in set(held)]
    xs = [t.mean_over(train) for t in report.trials]
    ys = [t.mean_over(held) for t in report.trials]
    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    ax.scatter(xs, ys, s=12, alpha=0.5, color="tab:gray", label="configurations")
    ax.scatter(xs[0], ys[0], s=70, color="tab:blue", marker="s", label="current")
    if report.proposed is not None:
        p = report.proposed
        ax.scatter(xs[p], ys[p], s=110, color="tab:red", marker="*", label="proposed")
    low = min(xs + ys)
    ax.plot([low, 1], [low, 1], lw=0.8, color="black", alpha=0.3)
    ax.set_xlabel(f"{report.objective}, training queries ({len(train)})")
    ax.set_ylabel(f"{report.objective}, held-out queries ({len(held)}, fold 1)")
    ax.set_title(f"okfast tune: {len(report.trials)} configurations")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(os.fspath(path))
    plt.close(fig)


def require_plot() -> None:
    """matplotlib, or a :class:`~okfast.errors.MissingDependencyError` naming the extra."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        raise MissingDependencyError(
            f"--plot needs matplotlib, from the plot extra: pip install 'okfast[plot]' ({e})"
        ) from None
