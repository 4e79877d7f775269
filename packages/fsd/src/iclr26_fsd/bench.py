"""The reproduction benchmark ``fsd``: seeing-to-doing (FSDTiny + visual-aid controller) vs direct action.

Both models share the backbone, the training scenes, the batch size and the number of optimisation
steps. On every seed of ``derive_seeds(seed, k)`` (k = 3 at quick, 5 at full) both are trained on that
seed's scenes and evaluated on its test_compositional split with the training arm: the central claim is
paired over those seeds. On the first seed they are also evaluated on test_iid and with a different arm
(zero-shot embodiment change), next to the two oracles (ground-truth aids through the same controller; the
expert's quantised joints through the same simulator) and the mean-aids control.
"""
from __future__ import annotations

import pathlib
import time
from dataclasses import dataclass

import numpy as np
from iclr26_shared.bench import Benchmark, Claim, Result, atomic_path, derive_seeds

from .baseline import DirectActionPolicy
from .env import TableTop2D
from .evaluate import DirectOracle, MeanAids, OracleAids, evaluate
from .model import FSDTiny

PAPER = "From Seeing to Doing: Bridging Reasoning and Decision for Robotic Manipulation"
PAPER_SUCCESS = "zero-shot manipulation 40.6% SimplerEnv, 72% on 8 real tasks, +30% over the strongest baseline"


@dataclass(frozen=True)
class Config:
    """One scale of the reproduction (the spec's CPU reproduction, its quick reduction and its GPU scale)."""

    n_train: int = 6000
    n_test: int = 300
    image_size: int = 64
    coord_bins: int = 64
    d_model: int = 64
    n_layers: int = 3
    n_heads: int = 4
    d_mlp: int = 256
    steps: int = 1200
    batch_size: int = 32
    margin: float = 0.05  # issue 29: FSD - Direct >= 0.05 at full, > 0 at quick
    success_floor: float | None = 0.55
    gate_quality: bool = True
    ablations: bool = False
    seeds: int = 5
    lr: float = 1e-3  # peak learning rate of both models (AdamW, warm-up then cosine)
    curriculum: str = "staged"  # FSDTiny's schedule, env.CURRICULA: "staged" (grounding first) or "mixture"


CONFIGS = {
    "smoke": Config(n_train=60, n_test=12, d_model=16, n_layers=1, n_heads=2, d_mlp=32, steps=3, batch_size=8,
                    margin=0.05, success_floor=None, gate_quality=False, seeds=2),
    # quick: 3 paired seeds; per seed 1,000 scenes, 50 + 50 test scenes, 400 steps of batch 16 at lr 3e-3 per model
    # (162-185 CPU seconds with one thread on a shared machine: over the 120 s aim; 120 steps at lr 1e-3 left
    # grounding at chance; lr 1e-2 and 1.5e-3 grounded worse than 3e-3 on tuning seed 101; 800 steps pass the
    # grounding gate on tuning seeds 101 / 202 but cost about 300 CPU seconds)
    "quick": Config(n_train=1000, n_test=50, d_model=48, n_layers=2, d_mlp=192, steps=400, batch_size=16, lr=3e-3,
                    margin=0.0, success_floor=None, gate_quality=False, seeds=3),
    # full: 5 paired seeds, sized for <= 15 min on 2 idle cores; the class defaults (1,200 steps of 32 on 6,000
    # scenes, a 64-wide 3-layer model) are the longer CPU reproduction, `Config()`
    "full": Config(n_train=3000, d_model=48, n_layers=2, d_mlp=192, steps=500, lr=3e-3),
    "paper": Config(n_train=30000, n_test=1000, image_size=128, coord_bins=1000, d_model=256, n_layers=6,
                    n_heads=8, d_mlp=1024, steps=20000, batch_size=64, ablations=True),
}


def _model_kwargs(cfg: Config, seed: int, device: str) -> dict:
    return dict(d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, d_mlp=cfg.d_mlp,
                image_size=cfg.image_size, seed=seed, device=device)


def _figure(path: pathlib.Path, fsd_hist, direct_hist, env: TableTop2D, aids) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 5, figsize=(15, 3))
    for hist, name in ((fsd_hist, "FSDTiny"), (direct_hist, "Direct")):
        loss = np.asarray(hist["loss"])
        k = max(1, len(loss) // 25)
        axes[0].plot(np.convolve(loss, np.ones(k) / k, mode="valid"), label=name)
    axes[0].set(title="training loss", xlabel="step")
    axes[0].legend()
    scale = env.camera.size / 1000.0
    for ax, i in zip(axes[1:], range(4), strict=False):
        ax.imshow(env.images[i])
        gt, pred = env.aids[i], aids[i]
        for a, colour, style in ((gt, "white", "--"), (pred, "black", "-")):
            if a is None:
                continue
            x1, y1, x2, y2 = np.array(a.box) * scale
            ax.plot([x1, x2, x2, x1, x1], [y1, y1, y2, y2, y1], style, color=colour, lw=1)
            t = np.array(a.trace) * scale
            ax.plot(t[:, 0], t[:, 1], style, color=colour, marker=".", ms=3, lw=1)
        ax.set_title(env.instructions[i].replace("put the ", "").replace("move the ", ""), fontsize=6)
        ax.axis("off")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    plt.close(fig)


def _fit_pair(cfg: Config, seed: int, device: str, train: TableTop2D):
    """FSDTiny and the direct-action policy trained on the same scenes: ``(fsd, fsd_hist, direct, direct_hist)``."""
    kw = _model_kwargs(cfg, seed, device)
    fsd = FSDTiny(coord_bins=cfg.coord_bins, **kw)
    fsd_hist = fsd.fit(train, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, curriculum=cfg.curriculum)
    direct = DirectActionPolicy(**kw)
    direct_hist = direct.fit(train, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr)
    return fsd, fsd_hist, direct, direct_hist


def grounding(fsd: FSDTiny, env: TableTop2D) -> tuple[float, float]:
    """``find the <manipulated object>`` on every scene of ``env``: (mean centre error in pixels, fraction
    within 3 pixels, about the grasp tolerance of 0.05 table units)."""
    names = [s.instruction.target for s in env.scenes]
    gt = np.array([env.camera.table_box_to_norm(s.find(n).extent()) for s, n in zip(env.scenes, names)])
    pred = fsd.ground(env.images, names)
    err = np.linalg.norm((pred[:, :2] + pred[:, 2:] - gt[:, :2] - gt[:, 2:]) / 2, axis=1) * env.camera.size / 1000.0
    return float(err.mean()), float(np.mean(err <= 3.0))


def comp_success(cfg: Config, seed: int, device: str) -> tuple[float, float, float]:
    """``(FSDTiny, Direct, FSDTiny with the grasp module)`` success on seed ``seed``'s test_compositional split
    (default arm), both models trained on that seed's training scenes."""
    train = TableTop2D("train", cfg.n_train, seed, image_size=cfg.image_size)
    comp = TableTop2D("test_compositional", cfg.n_test, seed, image_size=cfg.image_size)
    fsd, _, direct, _ = _fit_pair(cfg, seed, device, train)
    aids = fsd.plan(comp)
    return (evaluate(None, comp, "default", plans=aids)["success_rate"],
            evaluate(None, comp, "default", plans=direct.plan(comp))["success_rate"],
            evaluate(None, comp, "default", plans=aids, grasp_module=True)["success_rate"])


def run(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Runs the benchmark at ``scale``; see the module docstring."""
    cfg = CONFIGS[scale]
    seeds = derive_seeds(seed, cfg.seeds)
    seed = seeds[0]  # the first seed also runs the oracles, test_iid, the new arm and the figure
    metrics: dict[str, float] = {}
    t0 = time.perf_counter()
    train = TableTop2D("train", cfg.n_train, seed, image_size=cfg.image_size)
    iid = TableTop2D("test_iid", cfg.n_test, seed, image_size=cfg.image_size)
    comp = TableTop2D("test_compositional", cfg.n_test, seed, image_size=cfg.image_size)
    metrics["data_seconds"] = time.perf_counter() - t0

    kw = _model_kwargs(cfg, seed, device)
    fsd, fsd_hist, direct, direct_hist = _fit_pair(cfg, seed, device, train)
    for name, model, hist in (("fsd", fsd, fsd_hist), ("direct", direct, direct_hist)):
        metrics[f"{name}_parameters"] = model.n_parameters
        metrics[f"{name}_step_seconds"] = hist["seconds"][-1] / len(hist["seconds"])
        metrics[f"{name}_final_loss"] = float(np.mean(hist["loss"][-max(1, cfg.steps // 20):]))

    t0 = time.perf_counter()
    fsd_plans = {"iid": fsd.plan(iid)}
    t1 = time.perf_counter()
    comp_tokens = fsd.predict_tokens(comp.images, comp.instructions)
    decode_s = time.perf_counter() - t1
    fsd_plans["comp"] = [fsd.parse_tokens(t) for t in comp_tokens]
    metrics["fsd_decode_seconds_per_split"] = decode_s
    metrics["fsd_decode_tokens_per_second"] = sum(len(t) for t in comp_tokens) / decode_s
    direct_plans = {"iid": direct.plan(iid), "comp": direct.plan(comp)}
    metrics["predict_seconds"] = time.perf_counter() - t0

    rows, res = [], {}
    grasp = {(split, arm): evaluate(None, env, arm, plans=fsd_plans[split], grasp_module=True)
             for split, env, arm in (("iid", iid, "default"), ("comp", comp, "default"), ("comp", comp, "alt"))}
    for (split, arm), r in grasp.items():
        rows.append({"method": f"FSDTiny + grasp module [{split}, {arm} arm]", "success": r["success_rate"]})
        metrics[f"fsd_grasp_{split}_{arm}_success"] = r["success_rate"]
    evals = [("fsd", "iid", "default"), ("fsd", "comp", "default"), ("fsd", "comp", "alt"),
             ("direct", "iid", "default"), ("direct", "comp", "default"), ("direct", "comp", "alt")]
    envs = {"iid": iid, "comp": comp, "train": train}
    for method, split, arm in evals:
        plans = (fsd_plans if method == "fsd" else direct_plans)[split]
        res[method, split, arm] = evaluate(None, envs[split], arm, plans=plans)

    train_sub = TableTop2D("train", min(cfg.n_test, cfg.n_train), seed, image_size=cfg.image_size)
    t0 = time.perf_counter()
    oracle = {(split, arm): evaluate(OracleAids(), env, arm)["success_rate"]
              for split, env in (("train", train_sub), ("iid", iid), ("comp", comp)) for arm in ("default", "alt")}
    metrics["oracle_episodes_per_second"] = 6 * len(iid) / (time.perf_counter() - t0)
    oracle_grasp = {(split, arm): evaluate(OracleAids(), env, arm, grasp_module=True)["success_rate"]
                    for split, env in (("iid", iid), ("comp", comp)) for arm in ("default", "alt")}
    direct_oracle = {split: evaluate(DirectOracle(direct), env, "default")["success_rate"]
                     for split, env in (("train", train_sub), ("iid", iid), ("comp", comp))}

    for (method, split, arm), r in res.items():
        row = {"method": f"{'FSDTiny' if method == 'fsd' else 'Direct'} [{split}, {arm} arm]",
               "success": r["success_rate"], "parse_fail": r["parse_fail_rate"]}
        row.update({k: r[k] for k in ("point_accuracy", "trace_rmse", "trace_dfd", "start_error", "box_iou")
                    if k in r})
        rows.append(row)
        metrics[f"{method}_{split}_{arm}_success"] = r["success_rate"]
    mean = evaluate(MeanAids(train), comp, "default")
    metrics["mean_aids_comp_success"] = mean["success_rate"]
    metrics["mean_aids_comp_grasp_success"] = evaluate(MeanAids(train), comp, "default", grasp_module=True)[
        "success_rate"]
    rows.append({"method": "Mean aids (control) [comp, default arm]", "success": mean["success_rate"],
                 **{k: mean[k] for k in ("point_accuracy", "trace_rmse", "trace_dfd", "start_error", "box_iou")}})
    metrics["mean_aids_comp_point_accuracy"] = mean["point_accuracy"]
    metrics["mean_aids_comp_start_error"] = mean["start_error"]
    for method in ("fsd", "direct"):
        r = res[method, "comp", "default"]
        metrics[f"{method}_comp_default_grasp_missed_rate"] = r["reasons"].get("grasp_missed", 0) / r["n"]
    for (split, arm), v in oracle.items():
        rows.append({"method": f"Oracle aids [{split}, {arm} arm]", "success": v})
    for (split, arm), v in oracle_grasp.items():
        rows.append({"method": f"Oracle aids + grasp module [{split}, {arm} arm]", "success": v})
    rows.append({"method": "Mean aids (control) + grasp module [comp, default arm]",
                 "success": metrics["mean_aids_comp_grasp_success"]})
    for split, v in direct_oracle.items():
        rows.append({"method": f"Direct oracle [{split}, default arm]", "success": v})
    comp_fsd = res["fsd", "comp", "default"]
    for k in ("point_accuracy", "trace_rmse", "trace_dfd", "trace_hausdorff", "start_error", "box_iou"):
        metrics[f"fsd_comp_{k}"] = comp_fsd[k]
    metrics["fsd_comp_grounding_error_px"], metrics["fsd_comp_grounding_within_3px"] = grounding(fsd, comp)
    metrics["fsd_parse_fail_rate"] = max(res["fsd", s, "default"]["parse_fail_rate"] for s in ("iid", "comp"))
    metrics["oracle_min_success"] = min(oracle.values())
    metrics["oracle_grasp_min_success"] = min(oracle_grasp.values())
    metrics["direct_oracle_min_success"] = min(direct_oracle.values())

    if cfg.ablations:
        for name, flags in (("nocot", dict(cot=False)), ("nosc", dict(self_consistency=False))):
            abl = FSDTiny(coord_bins=cfg.coord_bins, **flags, **kw)
            abl.fit(train, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, curriculum=cfg.curriculum)
            r = evaluate(abl, comp, "default")
            rows.append({"method": f"FSDTiny-{name} [comp, default arm]", "success": r["success_rate"],
                         "point_accuracy": r["point_accuracy"], "trace_rmse": r["trace_rmse"]})
            metrics[f"fsd_{name}_comp_default_success"] = r["success_rate"]

    figures = []
    if scale != "smoke":
        path = out_dir / f"fsd_{scale}_seed{seed}.png"
        _figure(path, fsd_hist, direct_hist, comp, fsd_plans["comp"])
        figures.append(str(path))
    pair = [(metrics["fsd_comp_default_success"], metrics["direct_comp_default_success"],
             metrics["fsd_grasp_comp_default_success"])]
    pair += [comp_success(cfg, s, device) for s in seeds[1:]]
    for s, (f, d, g) in zip(seeds, pair):
        rows.append({"method": f"FSDTiny vs Direct [comp, default arm, seed {s}]", "seed": s, "fsd_success": f,
                     "direct_success": d, "fsd_grasp_module_success": g})
    return Result(metrics=metrics, rows=rows, claims=_claims(cfg, metrics, central_claims(cfg, pair, seeds)),
                  figures=figures)


def central_claims(cfg: Config, pair, seeds) -> list[Claim]:
    """FSDTiny beats direct action by ``cfg.margin``, paired over ``seeds``, executed by the strict trace
    controller and by the grasp module; ``pair[i]`` = (FSD, Direct, FSD with the grasp module) success."""
    direct = [d for _, d, _ in pair]
    return [Claim.paired("seeing_to_doing_beats_direct_action", PAPER_SUCCESS, [f for f, _, _ in pair], direct,
                         seeds, margin=cfg.margin,
                         what="success(FSDTiny, trace only) - success(Direct) (test_compositional, default arm)"),
            Claim.paired("seeing_to_doing_with_grasp_module", PAPER_SUCCESS, [g for _, _, g in pair], direct,
                         seeds, margin=cfg.margin,
                         what="success(FSDTiny, grasp module) - success(Direct) (test_compositional, default arm)")]


def _claims(cfg: Config, m: dict, central: list[Claim]) -> list[Claim]:
    """The claims; ``central`` are the paired FSD-vs-direct claims over the seeds, the others use the first seed."""
    fsd_s = m["fsd_comp_default_success"]
    claims = [
        Claim.at_least("oracle_success", "simulator, IK, homography and success predicate are consistent",
                       m["oracle_min_success"], 0.98, "min over splits and arms of oracle success"),
        Claim.at_least("oracle_grasp_module_success", "the grasp module executes correct aids",
                       m["oracle_grasp_min_success"], 0.98, "min over splits and arms of oracle + grasp module"),
        Claim.at_most("mean_aids_grasp_module_success", "the grasp module does not succeed without grounding",
                      m["mean_aids_comp_grasp_success"], 0.05, "success(mean-aids control + grasp module, comp)"),
        Claim.at_least("direct_oracle_success", "the direct action space can express the task (no straw man)",
                       m["direct_oracle_min_success"], 0.98, "min over splits of direct-oracle success"),
        Claim.at_most("fsd_parse_failure", "FSD outputs follow the visual-aid grammar",
                      m["fsd_parse_fail_rate"], 0.02, "parse-failure rate"),
        Claim.at_least("grounding_within_3px", "grounding is learned (FSD's level-1 data: name -> box)",
                       m["fsd_comp_grounding_within_3px"], 0.80,
                       "fraction of test_compositional scenes where `find the X` lands within 3 px "
                       f"(mean error {m['fsd_comp_grounding_error_px']:.1f} px; chance about 20)"),
        *central,
    ]
    if cfg.success_floor is not None:
        claims.append(Claim.at_least("fsd_compositional_success", PAPER_SUCCESS, fsd_s, cfg.success_floor,
                                     "success(FSDTiny, test_compositional, default arm)"))
    if cfg.gate_quality:
        vabench = "FSD best on VABench point and visual-trace subsets (numbers not retrieved)"
        claims += [
            Claim.at_least("affordance_point_accuracy", vabench, m["fsd_comp_point_accuracy"], 0.60,
                           "fraction of predicted points inside the GT box (test_compositional)"),
            Claim.at_most("trace_rmse", vabench, m["fsd_comp_trace_rmse"], 80, "trace RMSE (0-1000 units)"),
            Claim.at_most("trace_dfd", vabench, m["fsd_comp_trace_dfd"], 120, "discrete Frechet (0-1000 units)"),
            Claim.at_most("trace_start_error", vabench, m["fsd_comp_start_error"], 40, "start-point error"),
        ]
        alt, default = m["fsd_comp_alt_success"], m["fsd_comp_default_success"]
        claims += [
            Claim("fsd_embodiment_transfer", "visual aids are embodiment-agnostic: zero-shot on a new arm",
                  round(alt - default, 4), f"success(alt arm) - success(default arm) >= -0.05 (alt {alt:.3f})",
                  bool(alt - default >= -0.05 - 1e-12)),
            Claim.at_most("direct_fails_new_arm", "direct action is tied to the embodiment it was trained on",
                          m["direct_comp_alt_success"], 0.15, "success(Direct, alt arm)"),
        ]
    if cfg.ablations:
        for name in ("nocot", "nosc"):
            ab = m[f"fsd_{name}_comp_default_success"]
            claims.append(Claim(f"full_geq_{name}", "SrCoT and self-consistency help (ablation, not gated)",
                                round(fsd_s - ab, 4), f"success(full) - success({name}) >= 0", bool(fsd_s >= ab)))
    return claims


FSD_BENCHMARK = Benchmark(name="fsd", paper=PAPER, package="iclr26-fsd", func=run)
