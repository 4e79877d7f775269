"""The reproduction benchmarks ``dream.mfeat`` (criteria 1, 2, 3, 5 and issue 30's checks) and
``dream.synthetic`` (criterion 4 on a block-model community set, and the blobs + rings set as a documented
negative case).

Every DREAM variant and baseline runs in the same benchmark on the same data and seeds
(``derive_seeds(seed, k)``); DREAM-vs-baseline claims are paired over those seeds. On the CPU the fits run in
up to two worker processes within ``--threads`` (``fan_out``; the rows do not depend on how many), on
CUDA in-process. Claims are
computed from the measured numbers. Scales: ``smoke`` (300-sample subsets, tiny networks, 2 + 3 epochs,
2 seeds, in-process, only the central claim), ``quick`` (UCI3 with 4 seeds / synthetic with 3, 40 + 12 epochs),
``full`` (HW first seed, UCI3 5 seeds, the semantic and fusion ablations on the first 3 seeds, the other
two on the first, 50 + 30 epochs; criterion 5's seed spread on UCI3), ``paper`` (paper-size MLPs,
200 + 300 epochs, HW and UCI3 with 5 seeds each, plus ALOI100 when ``$ICLR26_DATA/dream/aloi100.mat``
exists). Both training phases use mini-batches at every scale (the estimator's defaults: 128 rows for the
VAEs' pretraining, 256 for the graph term and the joint phase).
"""
from __future__ import annotations

import pathlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from iclr26_shared.bench import Benchmark, Claim, Result, check_scale, derive_seeds
from iclr26_shared.datasets import data_root
from iclr26_shared.metrics import clustering_accuracy
from iclr26_shared.parallel import fan_out
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from .baselines import AverageGraphSpectral, BestViewKMeans, ConcatKMeans, ConcatSpectral, PropagatedKMeans
from .data import load_mat, load_mfeat, load_mfeat_uci3, make_community_views, make_semantic_structural_views

PAPER = ("Dual-Branch Representations with Dynamic Gated Fusion and Triple-Granularity Alignment "
         "for Deep Multi-View Clustering")
PACKAGE = "iclr26-dream"
VARIANTS: dict[str, dict[str, Any]] = {
    "dream": {},
    "dream_nosem": {"use_semantic": False},
    "dream_nostruct": {"use_structure": False},
    "dream_avg": {"fusion": "average"},
    "dream_noalign": {"use_alignment": False},
}
BASELINES = {"concat_km": ConcatKMeans, "concat_spec": ConcatSpectral, "prop_km": PropagatedKMeans,
             "avg_graph_spec": AverageGraphSpectral, "best_view_km": BestViewKMeans}
METHODS = (*VARIANTS, *BASELINES)


@dataclass(frozen=True)
class Job:
    """One fit: a dataset, a method, a seed and DREAM's schedule overrides."""

    data: str
    method: str
    seed: int
    dream_kwargs: dict[str, Any] = field(default_factory=dict)


def purity(y_true, y_pred) -> float:
    """Purity: each cluster counts its majority class."""
    from sklearn.metrics.cluster import contingency_matrix

    table = contingency_matrix(y_true, y_pred)
    return float(table.max(axis=0).sum() / table.sum())


def scores(y, pred) -> dict[str, float]:
    """ACC (Hungarian), NMI, ARI and purity of one clustering."""
    return {"acc": clustering_accuracy(y, pred), "nmi": float(normalized_mutual_info_score(y, pred)),
            "ari": float(adjusted_rand_score(y, pred)), "pur": purity(y, pred)}


def load_data(data: str, seed: int) -> tuple[list[np.ndarray], np.ndarray, list | None]:
    """``(Xs, y, graphs)`` of ``hw``, ``uci3``, ``synthetic`` (blobs + rings), ``synthetic_small`` (n = 300),
    ``communities`` (blobs + a block-model graph, ``make_community_views``), ``communities_small``
    (n = 300), ``uci3_small`` (300 stratified rows) or ``aloi100`` (``$ICLR26_DATA/dream/aloi100.mat``);
    ``graphs`` is ``None`` except for the community sets (their supplied graphs)."""
    if data == "hw":
        return (*load_mfeat(), None)
    if data == "uci3":
        return (*load_mfeat_uci3(), None)
    if data == "uci3_small":
        Xs, y = load_mfeat_uci3()
        rows = np.concatenate([np.flatnonzero(y == c)[:30] for c in range(10)])
        return [X[rows] for X in Xs], y[rows], None
    if data == "synthetic":
        return (*make_semantic_structural_views(n=1200, sep=2.0, random_state=seed), None)
    if data == "synthetic_small":
        return (*make_semantic_structural_views(n=300, sep=2.0, random_state=seed), None)
    if data in ("communities", "communities_small"):
        return make_community_views(n=1200 if data == "communities" else 300, random_state=seed)
    if data == "aloi100":
        return (*load_mat(data_root() / "dream" / "aloi100.mat"), None)
    raise ValueError(f"data: unknown benchmark dataset {data!r}")


def run_method(method: str, Xs, y, seed: int, device: str = "cpu", threads: int | None = None,
               dream_kwargs: dict[str, Any] | None = None, graphs=None) -> dict[str, Any]:
    """Fits one method (a DREAM variant of ``VARIANTS`` or a baseline of ``BASELINES``); returns its row.

    ``threads`` sizes torch's pool for the fit (default: leave it as the caller set it). ``graphs`` (one
    entry per view, ``None`` = kNN graph) go to DREAM and ``PropagatedKMeans``; the other baselines use
    the features only.
    """
    import time

    import torch

    from .model import DREAM

    if threads is not None:
        torch.set_num_threads(threads)
    n_clusters = int(np.unique(y).size)
    start = time.perf_counter()
    extra: dict[str, Any] = {}
    if method in VARIANTS:
        model = DREAM(n_clusters, device=device, random_state=seed, **{**(dream_kwargs or {}), **VARIANTS[method]})
        pred = model.fit(Xs, y, graphs=graphs).labels_
        train = [t for t, ph in zip(model.history_["total"], model.history_["phase"]) if ph == "train"]
        tail = np.asarray(train[-10:] or model.history_["total"][-10:])
        extra = {"loss_spread_last10": float(tail.max() / tail.min() - 1) if tail.size else float("nan"),
                 "finite": bool(np.all(np.isfinite(model.history_["total"]))),
                 "gate": model.gate_values_.mean(axis=0).tolist(),
                 "view_weight": model.view_weights_.mean(axis=0).tolist()}
        if model.semantic_means_:
            extra["means_km_acc"] = semantic_means_kmeans(model.semantic_means_, y, n_clusters, seed)
    elif method in BASELINES:
        model = BASELINES[method](n_clusters, random_state=seed)
        fit_kw = {"graphs": graphs} if method == "prop_km" else {}
        pred = model.fit(Xs, y if method == "best_view_km" else None, **fit_kw).labels_
    else:
        raise ValueError(f"method: expected one of {METHODS}, got {method!r}")
    return {**scores(y, pred), "seconds": time.perf_counter() - start, **extra}


def semantic_means_kmeans(means, y, n_clusters: int, seed: int) -> float:
    """ACC of k-means (10 restarts) on the concatenated row-ℓ2-normalised VAE means (V arrays ``(N, z)``):
    whether the semantic branch learned anything (chance is about 1/K)."""
    from sklearn.cluster import KMeans

    M = np.concatenate([m / (np.linalg.norm(m, axis=1, keepdims=True) + 1e-12) for m in means], axis=1)
    return clustering_accuracy(y, KMeans(n_clusters, n_init=10, random_state=seed).fit_predict(M))


def _run_job(job: Job, device: str) -> dict[str, Any]:
    """One fit; it seeds itself, so its row does not depend on where it runs."""
    Xs, y, graphs = load_data(job.data, job.seed)
    row = run_method(job.method, Xs, y, job.seed, device, dream_kwargs=job.dream_kwargs, graphs=graphs)
    return {"method": job.method, "data": job.data, "seed": job.seed, **row}


def run_jobs(jobs: list[Job], device: str, n_jobs: int = 2) -> list[dict[str, Any]]:
    """Runs the fits in up to ``n_jobs`` worker processes within the caller's threads (``fan_out``; in this
    process on a GPU or with one thread) and returns the rows in the order of ``jobs``, whatever ran where."""
    # DREAM's fits first, so the workers finish together
    order = sorted(range(len(jobs)), key=lambda i: jobs[i].method not in VARIANTS)
    done = fan_out({i: (_run_job, (jobs[i], device)) for i in order}, device=device, wanted=n_jobs)
    return [done[i] for i in range(len(jobs))]


def _mean(rows, data: str, method: str, key: str = "acc", seeds=None) -> float:
    vals = [r[key] for r in rows
            if r["data"] == data and r["method"] == method and (seeds is None or r["seed"] in seeds)]
    return float(np.mean(vals)) if vals else float("nan")


def per_seed(rows, data: str, method: str, seeds, key: str = "acc") -> np.ndarray:
    """``key`` of ``method`` on ``data`` for each of ``seeds`` in that order, shape ``(len(seeds),)``.

    Raises:
        ValueError: a seed has no row.
    """
    found = {r["seed"]: r[key] for r in rows if r["data"] == data and r["method"] == method}
    missing = [s for s in seeds if s not in found]
    if missing:
        raise ValueError(f"rows: no {method} on {data} for seeds {missing}")
    return np.array([found[s] for s in seeds], dtype=float)


N_SEEDS = {"smoke": 2, "quick": 3, "full": 5, "paper": 5}
# dream.mfeat runs 4 seeds at quick: the spread of its paired differences is DREAM's training spread (its k-means
# start and the baselines' k-means agree to 0.001-0.005 over restarts), which 3 seeds' t-interval cannot resolve
MFEAT_SEEDS = {**N_SEEDS, "quick": 4}


# Both phases train in the estimator's mini-batches (VAE pretraining 128, else 256); quick and full shorten the schedule
# to fit the time budgets, paper keeps the spec's.
SCHEDULE = {"smoke": {"pretrain_epochs": 2, "epochs": 3, "latent_dim": 16, "hidden_dims": (32,), "gcn_hidden": 32,
                      "n_triplets": 256},
            "quick": {"pretrain_epochs": 40, "epochs": 12},
            "full": {"pretrain_epochs": 50, "epochs": 30},
            "paper": {"pretrain_epochs": 200, "epochs": 300, "hidden_dims": (500, 500, 2000), "latent_dim": 128}}


def _mfeat_jobs(scale: str, seed: int) -> list[Job]:
    kw = SCHEDULE[scale]
    seeds = derive_seeds(seed, MFEAT_SEEDS[scale])
    s0 = seeds[0]
    if scale == "smoke":
        return [Job("uci3_small", m, s, kw) for m in ("dream", "concat_km") for s in seeds]
    if scale == "quick":
        return [Job("uci3", m, s, kw) for m in ("dream", "concat_km", "concat_spec", "prop_km") for s in seeds]
    # full: HW with one seed only (the spec's first cut to fit ~10 min); the seed spread moves to UCI3;
    # the semantic and fusion ablations on the first three seeds (their sign per seed), the others on the first
    hw_seeds = seeds[:1] if scale == "full" else seeds
    jobs = [Job("hw", "dream", s, kw) for s in hw_seeds] + [Job("uci3", "dream", s, kw) for s in seeds]
    jobs += [Job("uci3", m, s, kw) for m in PAIRED_ABLATIONS for s in seeds[:3]]
    jobs += [Job("uci3", m, s0, kw) for m in ("dream_nostruct", "dream_noalign")]
    jobs += [Job("hw", m, s, kw) for m in BASELINES for s in hw_seeds]
    jobs += [Job("uci3", m, s, kw) for m in BASELINES for s in seeds]
    if scale == "paper" and (data_root() / "dream" / "aloi100.mat").is_file():
        jobs += [Job("aloi100", m, s0, kw) for m in ("dream", "concat_km")]
    return jobs


PAIRED_ABLATIONS = ("dream_nosem", "dream_avg")
# issue 30's targets: mean UCI3 ACC (quick / full and paper), margins over ConcatKMeans and A_hat^2 X k-means
UCI3_ACC = {"quick": 0.925, "full": 0.95, "paper": 0.95}
MARGIN_CONCAT_KM, MARGIN_PROP_KM = 0.015, 0.01


def gate_departure(gates) -> float:
    """max over views of |mean semantic share − 0.5| (one fit's ``gate`` row, shape ``(V,)``)."""
    return float(np.max(np.abs(np.asarray(gates, dtype=float) - 0.5)))


def mfeat_claims(rows, scale: str, seed: int) -> list[Claim]:
    """Criteria 1, 2 (and at full/paper scale 3 and 5) and issue 30's semantic-branch and baseline checks,
    from the measured rows; smoke: the central claim only."""
    seeds = derive_seeds(seed, MFEAT_SEEDS[scale])
    data = "uci3_small" if scale == "smoke" else "uci3"
    uci = per_seed(rows, data, "dream", seeds)
    central = Claim.paired("uci3_dream_vs_concat_kmeans", "DREAM beats every baseline on UCI", uci,
                           per_seed(rows, data, "concat_km", seeds), seeds, margin=MARGIN_CONCAT_KM,
                           what="ACC(DREAM) - ACC(ConcatKMeans)")
    if scale == "smoke":
        return [central]
    gates = [gate_departure(r["gate"]) for s in seeds for r in rows
             if r["data"] == data and r["method"] == "dream" and r["seed"] == s]
    claims = [
        Claim.mean_at_least("uci3_dream_acc", "ACC 95.90 on UCI (3 views)", uci, seeds, UCI3_ACC[scale],
                            "mean DREAM ACC on UCI3"),
        central,
        Claim.paired("uci3_dream_vs_propagated_kmeans", "the trained branches beat their parameter-free version",
                     uci, per_seed(rows, data, "prop_km", seeds), seeds, margin=MARGIN_PROP_KM,
                     what="ACC(DREAM) - ACC(k-means on concatenated row-normalised A_hat^2 X)"),
        Claim.mean_at_least("uci3_semantic_branch_learns", "the semantic (VAE) branch carries cluster structure",
                            per_seed(rows, data, "dream", seeds, key="means_km_acc"), seeds, 0.70,
                            "mean ACC of k-means on DREAM's VAE means"),
        Claim.mean_at_least("uci3_gate_moves", "dynamic gated fusion (the gate departs from its start 0.5)",
                            gates, seeds, 0.05, "mean over seeds of max_v |mean gate_v - 0.5|"),
    ]
    if scale in ("quick",):
        return claims
    hw_acc, hw_nmi = _mean(rows, "hw", "dream"), _mean(rows, "hw", "dream", "nmi")
    claims.append(Claim.at_least("hw_dream_acc", "ACC 97.80 on HW (6 views)", hw_acc, 0.93, "DREAM ACC on HW"))
    claims.append(Claim.at_least("hw_dream_nmi", "HW: DREAM best NMI", hw_nmi, 0.87, "DREAM NMI on HW"))
    claims.append(Claim.at_least("hw_dream_vs_concat_kmeans", "DREAM beats every baseline on HW",
                                 hw_acc - _mean(rows, "hw", "concat_km"), -0.01, "ACC(DREAM) - ACC(ConcatKMeans)"))
    claims.append(Claim.at_least("hw_dream_vs_propagated_kmeans", "the trained branches beat their parameter-free "
                                 "version", hw_acc - _mean(rows, "hw", "prop_km"), MARGIN_PROP_KM,
                                 "ACC(DREAM) - ACC(A_hat^2 X k-means) on HW"))
    for method, paper_gap in (("dream_nosem", "8.9"), ("dream_avg", "13.2")):
        s3 = seeds[:3]
        gaps = per_seed(rows, "uci3", "dream", s3) - per_seed(rows, "uci3", method, s3)
        claims.append(Claim(f"uci3_ablation_sign_{method}", f"UCI ACC gap full - {method} = {paper_gap} points",
                            {"gaps": gaps.tolist(), "seeds": s3, "positive": int((gaps > 0).sum())},
                            f"ACC(full) - ACC({method}) > 0 on at least 2 of {len(s3)} seeds",
                            bool((gaps > 0).sum() >= 2)))
    full0 = _mean(rows, "uci3", "dream", seeds=seeds[:1])
    for method, paper_gap, threshold in (("dream_nostruct", "20.0", 0.05), ("dream_nosem", "8.9", 0.02),
                                         ("dream_avg", "13.2", 0.02), ("dream_noalign", "7.6", 0.0)):
        gap = full0 - _mean(rows, "uci3", method, seeds=seeds[:1])
        claims.append(Claim.at_least(f"uci3_ablation_{method}", f"UCI ACC gap full - {method} = {paper_gap} points",
                                     gap, threshold, f"ACC(full) - ACC({method})"))
    dream_rows = [r for r in rows if r["method"] in VARIANTS]
    spread = max(r["loss_spread_last10"] for r in dream_rows)
    finite = all(r["finite"] for r in dream_rows)
    claims.append(Claim("training_stable", "convergence stable", {"max_spread": spread, "finite": finite},
                        "L_Total max/min - 1 < 0.05 over the last 10 epochs, no NaN", bool(finite and spread < 0.05)))
    data = "hw" if scale == "paper" else "uci3"
    accs = per_seed(rows, data, "dream", seeds)
    claims.append(Claim.at_most(f"{data}_seed_spread", "stable across 5 seeds", float(accs.max() - accs.min()),
                                0.04, f"max - min ACC over {len(seeds)} seeds on {data.upper()}"))
    return claims


# The ring view's class is its radius: row-ℓ2 normalisation and cosine kNN would erase it.
SYNTHETIC_INPUT = {"preprocess": "zscore", "graph_metric": "euclidean"}


# The community set's structural branch is all DREAM has there: the spec's uniform graph-reconstruction loss
# is minimised by H ≈ 0 on a sparse graph (README, second revision), the balanced one trains it as a GAE.
COMMUNITY_INPUT = {"graph_weighting": "balanced"}


def _synthetic_jobs(scale: str, seed: int) -> list[Job]:
    """The community set (DREAM) and the rings set (quick: the semantic-only ablation its claim needs; full:
    also DREAM and w/o semantic, reported), each with the feature-only and Â²X baselines, on the same seeds."""
    kw = {**SCHEDULE[scale], **SYNTHETIC_INPUT}
    small = "_small" if scale == "smoke" else ""
    seeds = derive_seeds(seed, N_SEEDS[scale])
    rings = {"smoke": ("dream",), "quick": ("dream_nostruct",)}.get(scale, ("dream", "dream_nosem", "dream_nostruct"))
    jobs = [Job(f"communities{small}", m, s, {**SCHEDULE[scale], **COMMUNITY_INPUT})
            for m in ("dream", "concat_km", "concat_spec", "prop_km") for s in seeds]
    return jobs + [Job(f"synthetic{small}", m, s, kw)
                   for m in (*rings, "concat_km", "concat_spec", "prop_km") for s in seeds]


COMMUNITY_DREAM_ACC, COMMUNITY_BASELINE_ACC, COMMUNITY_GATE = 0.85, 0.5, 0.45


def synthetic_claims(rows, scale: str, seed: int) -> list[Claim]:
    """Criterion 4 on two sets (issue 30, item 4).

    The community set (``make_community_views``): a noisy feature view and a featureless view whose
    classes are communities of a supplied block-model graph. DREAM must reach 0.85 while the feature
    baseline and the parameter-free Â²X k-means (both views' propagated features concatenated with equal
    weight) stay at or below 0.5, and the featureless view's gate (semantic share) must fall to 0.45 or
    below (its VAE sees only node identities).

    The blobs + rings set, a documented negative case: the ring view's class is the ring's radius, which
    k-means on the features misses and graph propagation cannot recover (Â^k X keeps every ring centred
    on the origin), so DREAM, whose structural branch is a two-hop GCN, cannot meet the spec's
    criterion 4 (DREAM >= 0.90) by design. Its claims check the mechanism; DREAM's ACC, its ablations'
    and the gates are reported in the rows, not gated."""
    if scale == "smoke":
        return []
    d, c, seeds = "synthetic", "communities", derive_seeds(seed, N_SEEDS[scale])
    gates = [r["gate"][1] for s in seeds for r in rows if r["data"] == c and r["method"] == "dream" and r["seed"] == s]
    return [
        Claim.mean_at_least("communities_dream_acc", "DREAM recovers structure only the graph carries (synthetic)",
                            per_seed(rows, c, "dream", seeds), seeds, COMMUNITY_DREAM_ACC, "mean DREAM ACC"),
        Claim.mean_at_most("communities_propagated_kmeans_acc",
                           "equal-weight fusion of the propagated views fails (the case for learned weights)",
                           per_seed(rows, c, "prop_km", seeds), seeds, COMMUNITY_BASELINE_ACC,
                           "mean ACC of k-means on the concatenated row-normalised A_hat^2 X (supplied graph)"),
        Claim.mean_at_most("communities_concat_kmeans_acc", "feature-only baselines miss the communities",
                           per_seed(rows, c, "concat_km", seeds), seeds, COMMUNITY_BASELINE_ACC,
                           "mean ConcatKMeans ACC"),
        Claim.mean_at_most("communities_featureless_view_gate", "the gate favours the reliable (structural) branch",
                           gates, seeds, COMMUNITY_GATE, "mean semantic share of the gate on the featureless view"),
        Claim.mean_at_most("synthetic_concat_kmeans_acc", "feature-only baselines miss the ring structure",
                           per_seed(rows, d, "concat_km", seeds), seeds, 0.40, "mean ConcatKMeans ACC"),
        Claim.mean_at_most("synthetic_concat_spectral_acc", "feature-only baselines miss the ring structure",
                           per_seed(rows, d, "concat_spec", seeds), seeds, 0.60, "mean ConcatSpectral ACC"),
        Claim.mean_at_most("synthetic_propagation_keeps_rings_centred",
                           "negative case: two-hop propagation cannot see the rings (no GCN-based method can)",
                           per_seed(rows, d, "prop_km", seeds), seeds, 0.40,
                           "mean ACC of k-means on the concatenated row-normalised A_hat^2 X"),
        Claim.mean_at_most("synthetic_semantic_only_acc", "w/o structural branch loses most (ablation)",
                           per_seed(rows, d, "dream_nostruct", seeds), seeds, 0.75, "mean ACC(use_structure=False)"),
    ]


def _result(rows: list[dict[str, Any]], claims: list[Claim]) -> Result:
    metrics = {}
    for r in rows:
        key = f"{r['data']}/{r['method']}/seed{r['seed']}"
        metrics[f"{key}/acc"] = r["acc"]
        metrics[f"{key}/nmi"] = r["nmi"]
        metrics[f"{key}/seconds"] = r["seconds"]
    table = []
    for r in rows:
        table.append({k: v for k, v in r.items() if k not in ("gate", "view_weight")}
                     | ({"gate": r["gate"], "view_weight": r["view_weight"]} if "gate" in r else {}))
    return Result(metrics=metrics, rows=table, claims=claims)


def run_mfeat(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """``dream.mfeat``: DREAM (and at full scale its ablations) against the baselines on HW/UCI3."""
    check_scale(scale)
    rows = run_jobs(_mfeat_jobs(scale, seed), device, n_jobs=1 if scale == "smoke" else 2)
    return _result(rows, mfeat_claims(rows, scale, seed))


def run_synthetic(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """``dream.synthetic``: the semantic/structural reliability-shift set (criterion 4)."""
    check_scale(scale)
    rows = run_jobs(_synthetic_jobs(scale, seed), device, n_jobs=1 if scale == "smoke" else 2)
    return _result(rows, synthetic_claims(rows, scale, seed))


MFEAT_BENCHMARK = Benchmark("dream.mfeat", PAPER, PACKAGE, run_mfeat)
SYNTHETIC_BENCHMARK = Benchmark("dream.synthetic", PAPER, PACKAGE, run_synthetic)
BENCHMARKS = (MFEAT_BENCHMARK, SYNTHETIC_BENCHMARK)
