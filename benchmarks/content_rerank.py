"""The honest part of ``swebench_rerank.py``: rankings that cannot be won by knowing who wrote a patch.

- ``best_system_prior``: each candidate scored by how often its source (the agent run that wrote it)
  resolved the OTHER instances of the same file (leave-one-instance-out). The anchor any ranking on mixed
  pools must be read against: it knows nothing of the patch.
- ``offline_content``: the library's ranking (``agentic_rubrics.rank.content.content_ranking``) over
  ``CONTENT_FEATURES`` only (what the patch does to the code and how it agrees with the others), with
  weights fitted like the shipped ones, on single-generator pools (``content_fit.py``), leaving each
  repository out; ``offline_content_shipped``: the weights fitted on every pool (in-sample here).
- ``offline_content_full_pools``: the same features fitted on the full (mixed) pools, leaving each
  repository out (the earlier ``offline_content``).
- ``offline_all_features``: the same fit over the content features plus the patch-shape features of
  ``offline`` (size, files, new files, touching tests), for comparison.
- a source-predictability table: for each feature, a shallow decision tree predicting the candidate's
  source family from that one feature (5-fold, folds by instance), beside the majority-class baseline.
- single-generator slices: per instance, a pool of one source family's candidates only (the setting of a
  user's Best@K), every method recomputed on that pool (agreement with the pool's others; the issue-only
  rubric rebuilt from the pool's own diffs), reported with bootstrap intervals.

Every method is measured on the same instances; instances with a repository are reported apart from
those without. Labels serve the fits (on other repositories) and the metrics; sources serve the prior, the
predictability table and the slices, never a feature.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from content_features import CONTENT_FEATURES, CONTENT_GROUPS, patch_key

from agentic_rubrics.explore.issue_static import build_issue_rubric
from agentic_rubrics.patch import is_empty_patch
from agentic_rubrics.rank import metrics
from agentic_rubrics.rank.content import SHAPE_FEATURES as SHAPE
from agentic_rubrics.rank.content import (
    ContentWeights,
    content_features,
    content_ranking,
    content_rows,
)
from agentic_rubrics.rank.offline import OFFLINE_FEATURES
from agentic_rubrics.rank.scoring import score_candidate
from agentic_rubrics.rubric.check_verdicts import check_verdicts
from agentic_rubrics.types import Candidate, Task

ALL_FEATURES = tuple(dict.fromkeys((*CONTENT_FEATURES, *OFFLINE_FEATURES)))
FIT_FAMILIES = ("autocoderover-2024", "swe-agent-gpt4-2024")
"""The families whose single-generator pools the shipped ``offline_content`` weights were fitted on
(Lite's two with slices then): the fit is kept as shipped, the measured slices come from the data."""
MIN_SLICE_POOLS = 15
"""A source family gets a single-generator slice (in the study's results and in ``choose_default.py``'s
rule) when the file holds at least this many of its pools (instances with two or more of its
candidates)."""


def family(source: str | None) -> str:
    """The source family: the run's folder (``autocoderover-2024/acr-run-1`` -> ``autocoderover-2024``)."""
    return (source or "?").split("/", 1)[0]


@dataclass
class Inst:
    """One instance's pool as the study sees it."""

    instance_id: str
    repo: str
    labels: dict[str, bool]
    sources: dict[str, str]
    patches: dict[str, str]
    s: dict[str, float | None]
    post: dict[str, dict[str, Any] | None]
    has_repo: bool
    rank: dict[str, float | None] = field(default_factory=dict)
    """The rubric selector's tiered values (empty < no verdict < failed gate < inconclusive < S)."""
    features: dict[str, dict[str, float] | None] = field(default_factory=dict)
    """The judge-time content features (``agentic_rubrics.rank.content.content_features``) of this pool."""
    rows: dict[str, dict[str, float]] = field(default_factory=dict)
    approximate_tree: bool = False
    """Post-image rows from an approximate tree (``--approximate-trees``); ``has_repo`` stays false."""

    def compute(self) -> Inst:
        """Features and rows recomputed on this pool (what the selector does at judge time)."""
        self.features = content_features(self.patches, self.post)
        self.rows = content_rows(self.features, self.s)
        return self


def build(
    pool_tasks: list[Any],
    issue_only: dict[str, Any],
    grounded: dict[str, Any],
    post: dict[str, dict[str, Any]],
    with_tree: set[str],
    approximate: frozenset[str] = frozenset(),
) -> list[Inst]:
    """The instances of ``issue_only`` (fully labelled), with S grounded where a repository was at
    hand; post-image rows read on ``with_tree`` and on ``approximate`` (an approximate tree stands
    in: the post-image rows are read on it, the rubric stays the one written without a tree)."""
    by_id = {t.instance_id: t for t in pool_tasks}
    out = []
    for iid, t in issue_only.items():
        task = by_id[iid]
        g = grounded.get(iid)
        scored = g if g is not None and g.rubric is not None else t
        has_repo, approx = iid in with_tree, iid in approximate
        inst = Inst(
            instance_id=iid,
            repo=task.repo,
            labels={c: bool(v) for c, v in t.labels.items()},
            sources={c.id: c.source or "?" for c in task.candidates},
            patches={c.id: c.patch for c in task.candidates},
            s={c: sc.score for c, sc in scored.scores.items()},
            post={
                c.id: post.get(patch_key(iid, c.patch)) if has_repo or approx else None
                for c in task.candidates
            },
            has_repo=has_repo,
            approximate_tree=approx,
            rank={c: sc.rank_value for c, sc in scored.scores.items()},
        )
        out.append(inst.compute())
    return out


# --------------------------------------------------------------------------- rankings


def fit(rows: Sequence[dict[str, float]], ys: Sequence[int], features: Sequence[str]) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = [[r[f] for f in features] for r in rows]
    return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=5000)).fit(x, ys)


def loro_models(insts: list[Inst], features: Sequence[str]) -> dict[str, Any]:
    """A model per repository, fitted on the other repositories' full pools."""
    models = {}
    for repo in sorted({i.repo for i in insts}):
        rows, ys = [], []
        for i in insts:
            if i.repo != repo:
                for cid, r in i.rows.items():
                    rows.append(r)
                    ys.append(int(i.labels[cid]))
        models[repo] = fit(rows, ys, features)
    return models


def apply_model(
    model: Any, rows: dict[str, dict[str, float]], features: Sequence[str], ids: list[str]
) -> dict[str, float | None]:
    out: dict[str, float | None] = dict.fromkeys(ids)
    if rows:
        keys = list(rows)
        probs = model.predict_proba([[rows[k][f] for f in features] for k in keys])[:, 1]
        out.update({k: float(p) for k, p in zip(keys, probs, strict=True)})
    return out


def source_prior(insts: list[Inst]) -> Callable[[str, str], float | None]:
    """Resolve rate of a source over the other instances (leave-one-instance-out)."""
    k: Counter[str] = Counter()
    n: Counter[str] = Counter()
    own: dict[tuple[str, str], tuple[int, int]] = {}
    for i in insts:
        mine: Counter[str] = Counter()
        tot: Counter[str] = Counter()
        for cid, y in i.labels.items():
            src = i.sources[cid]
            mine[src] += int(y)
            tot[src] += 1
        for src in tot:
            k[src] += mine[src]
            n[src] += tot[src]
            own[(i.instance_id, src)] = (mine[src], tot[src])

    def prior(iid: str, src: str) -> float | None:
        mk, mn = own.get((iid, src), (0, 0))
        rest = n[src] - mn
        return (k[src] - mk) / rest if rest else None

    return prior


# --------------------------------------------------------------------------- metrics


def pool_metrics(
    insts: list[Inst], ranking: Callable[[Inst], dict[str, float | None]], resamples: int
) -> dict[str, Any]:
    """Best@K (K = 1..16, and K = the whole pool) with intervals, ROC-AUC, PR-AUC of one method."""
    ks = list(range(1, 17))
    per_k: dict[int, list[float]] = {k: [] for k in ks}
    whole, oracle, randoms, pairs = [], [], [], []
    for i in insts:
        r = ranking(i)
        ids = list(i.labels)
        ys = [int(i.labels[c]) for c in ids]
        vals = [r.get(c) for c in ids]
        for k in ks:
            per_k[k].append(metrics.best_at_k(vals, ys, k) or 0.0)
        whole.append(metrics.best_at_k(vals, ys, len(ids)) or 0.0)
        oracle.append(metrics.pass_at_k(ys, len(ids)) or 0.0)
        randoms.append(metrics.random_at_k(ys) or 0.0)
        pairs += [(float(v), y) for v, y in zip(vals, ys, strict=True) if v is not None]

    def ci(values: list[float]) -> list[float] | None:
        if not resamples:
            return None
        found = metrics.bootstrap_ci(values, metrics.mean, n_resamples=resamples)
        return [round(found[0], 4), round(found[1], 4)] if found else None

    return {
        "instances": len(insts),
        "best_at_k": {str(k): metrics.mean(v) for k, v in per_k.items()},
        "best_at_16_ci": ci(per_k[16]),
        "best_at_pool": metrics.mean(whole),
        "best_at_pool_ci": ci(whole),
        "oracle_at_pool": metrics.mean(oracle),
        "random_at_pool": metrics.mean(randoms),
        "roc_auc": metrics.roc_auc([p for p, _ in pairs], [y for _, y in pairs]) if pairs else None,
        "pr_auc": metrics.pr_auc([p for p, _ in pairs], [y for _, y in pairs]) if pairs else None,
    }


def rankings(
    insts: list[Inst],
    extra: dict[str, Callable[[Inst], dict[str, float | None]]],
    single: dict[str, ContentWeights],
    shipped: ContentWeights,
) -> dict[str, Callable[[Inst], dict[str, float | None]]]:
    """Every method as a ranking function of an instance's (full or sliced) pool. ``single``: the
    single-generator content weights per left-out repository; ``shipped``: those fitted on all."""
    prior = source_prior(insts)
    content = loro_models(insts, CONTENT_FEATURES)
    everything = loro_models(insts, ALL_FEATURES)

    def feat(name: str) -> Callable[[Inst], dict[str, float | None]]:
        return lambda i: {c: (i.rows[c][name] if c in i.rows else None) for c in i.labels}

    return {
        "random": lambda i: dict.fromkeys(i.labels, 0.0),
        "self_consistency": feat("agreement"),
        "static_rubric": lambda i: dict(i.rank),
        "best_system_prior": lambda i: {c: prior(i.instance_id, i.sources[c]) for c in i.labels},
        **extra,
        "offline_content": lambda i: content_ranking(i.features, i.s, single[i.repo]),
        "offline_content_shipped": lambda i: content_ranking(i.features, i.s, shipped),
        "offline_content_full_pools": lambda i: apply_model(
            content[i.repo], i.rows, CONTENT_FEATURES, list(i.labels)
        ),
        "offline_all_features": lambda i: apply_model(
            everything[i.repo], i.rows, ALL_FEATURES, list(i.labels)
        ),
    }


def by_subset(
    insts: list[Inst], methods: dict[str, Callable[[Inst], dict[str, float | None]]], resamples: int
) -> dict[str, Any]:
    subsets = {
        "all": insts,
        "with_repository": [i for i in insts if i.has_repo],
        "without_repository": [i for i in insts if not i.has_repo],
    }
    if any(i.approximate_tree for i in insts):
        subsets["approximate_tree"] = [i for i in insts if i.approximate_tree]
    return {
        name: {m: pool_metrics(sub, fn, resamples) for m, fn in methods.items()} if sub else {}
        for name, sub in subsets.items()
    }


def ablation(insts: list[Inst]) -> dict[str, Any]:
    """What each group of content features adds: LORO fits without it and with it alone."""
    out: dict[str, Any] = {}
    for group, names in CONTENT_GROUPS.items():
        entry = {}
        for how, feats in (
            ("without", [f for f in CONTENT_FEATURES if f not in names]),
            ("alone", list(names)),
        ):
            models = loro_models(insts, feats)
            fn = lambda i, m=models, f=feats: apply_model(m[i.repo], i.rows, f, list(i.labels))  # noqa: E731
            entry[how] = {
                sub: {
                    k: v
                    for k, v in pool_metrics(s, fn, 0).items()
                    if k in ("best_at_pool", "roc_auc")
                }
                | {"best_at_16": pool_metrics(s, fn, 0)["best_at_k"]["16"]}
                for sub, s in (
                    ("all", insts),
                    ("with_repository", [i for i in insts if i.has_repo]),
                )
            }
        out[group] = entry
    return out


def predictability(insts: list[Inst]) -> dict[str, Any]:
    """Per feature: a depth-3 tree's accuracy at naming the candidate's source family from it alone."""
    import numpy as np
    from sklearn.model_selection import GroupKFold, cross_val_score
    from sklearn.tree import DecisionTreeClassifier

    rows, fams, groups = [], [], []
    for n, i in enumerate(insts):
        for cid, r in i.rows.items():
            rows.append(r)
            fams.append(family(i.sources[cid]))
            groups.append(n)
    y = np.array(fams)
    majority = Counter(fams).most_common(1)[0][1] / len(fams)
    out: dict[str, Any] = {"candidates": len(fams), "families": len(set(fams)),
                           "majority_baseline": round(majority, 4), "features": {}}  # fmt: skip
    sets = {f: [f] for f in ALL_FEATURES}
    sets["(all content features)"] = list(CONTENT_FEATURES)
    sets["(all patch-shape features)"] = list(SHAPE)
    for name, feats in sets.items():
        x = np.array([[r[f] for f in feats] for r in rows])
        acc = cross_val_score(DecisionTreeClassifier(max_depth=3, random_state=0), x, y,
                              groups=groups, cv=GroupKFold(5))  # fmt: skip
        out["features"][name] = {
            "accuracy": round(float(acc.mean()), 4),
            "lift_over_majority": round(float(acc.mean()) - majority, 4),
            "in_offline_content": name in CONTENT_FEATURES or name == "(all content features)",
        }
    return out


# --------------------------------------------------------------------------- single generator


def _issue_only_s(
    inst: Inst, problem: str, ids: list[str]
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    task = Task(instance_id=inst.instance_id, problem_statement=problem,
                candidates=[Candidate(id=c, patch=inst.patches[c]) for c in ids])  # fmt: skip
    rubric = build_issue_rubric(task)
    s: dict[str, float | None] = {}
    rank: dict[str, float | None] = {}
    for c in ids:
        v = check_verdicts(rubric, inst.patches[c], instance_id=inst.instance_id, candidate_id=c)
        sc = score_candidate(rubric, v.values(), instance_id=inst.instance_id, candidate_id=c,
                             empty_patch=is_empty_patch(inst.patches[c]))  # fmt: skip
        s[c], rank[c] = sc.score, sc.rank_value
    return s, rank


def slice_families(insts: list[Inst], least: int = MIN_SLICE_POOLS) -> dict[str, int]:
    """Each source family with at least ``least`` single-generator pools in ``insts`` (an instance
    with two or more of its candidates), and how many, largest first."""
    counts: Counter[str] = Counter()
    for i in insts:
        fams = Counter(family(s) for s in i.sources.values())
        counts.update(f for f, n in fams.items() if n >= 2)
    return {f: n for f, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= least}


def slice_pools(insts: list[Inst], fam: str, problems: dict[str, str]) -> list[Inst]:
    """Each instance's pool cut to one source family (at least two candidates), features recomputed."""
    out = []
    for i in insts:
        ids = [c for c in i.labels if family(i.sources[c]) == fam]
        if len(ids) < 2:
            continue
        if i.has_repo:  # the grounded rubric reads the tree and the issue, not the other candidates
            s, rank = {c: i.s[c] for c in ids}, {c: i.rank[c] for c in ids}
        else:  # the issue-only rubric is confirmed against the pool's diffs: rebuilt on this pool
            s, rank = _issue_only_s(i, problems[i.instance_id], ids)
        sub = Inst(i.instance_id, i.repo, {c: i.labels[c] for c in ids},
                   {c: i.sources[c] for c in ids}, {c: i.patches[c] for c in ids}, s,
                   {c: i.post[c] for c in ids}, i.has_repo, rank,
                   approximate_tree=i.approximate_tree)  # fmt: skip
        out.append(sub.compute())
    return out
