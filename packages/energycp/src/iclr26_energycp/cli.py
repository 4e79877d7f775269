"""``iclr26-energycp``: demo, calibrate, predict, evaluate, bench/reproduce (a thin layer over the API)."""
from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
from collections.abc import Sequence

import numpy as np
from iclr26_shared.bench import atomic_path, write_json_atomic
from iclr26_shared.cli import Parser, add_bench_command, call_handler, common_options, progress

from .bench import BENCHMARK
from .datasets import load_logits, make_digits_logits, tune_pool_split
from .predictor import EnergyConformalClassifier
from .scores import BASE_SCORES
from .tuning import tune_energy

KWARGS = {"raps": {"penalty": 0.2, "kreg": 2}, "saps": {"saps_weight": 0.2}}


def _device(spec: str):
    """None for the numpy path, or a torch device when ``spec`` asks for (or ``auto`` finds) CUDA."""
    if spec == "cpu" or (spec == "auto" and importlib.util.find_spec("torch") is None):
        return None
    from iclr26_shared.device import resolve_device

    dev = resolve_device(spec)
    return None if dev.type == "cpu" else dev


def _to(device, a: np.ndarray):
    if device is None:
        return a
    import torch

    return torch.as_tensor(a, device=device)


def _read(logits_path: str, labels_path: str | None, need_labels: bool, what: str):
    z, y = load_logits(logits_path, labels_path)
    if need_labels and y is None:
        raise SystemExit(f"--{what}-labels: {logits_path} holds no labels; pass --{what}-labels FILE")
    return z, y


def _output(path: str, force: bool) -> pathlib.Path:
    p = pathlib.Path(path)
    if p.exists() and not force:
        raise SystemExit(f"{p} exists; pass --force to overwrite it")
    return p


def _table(rows: list[dict], cols: list[str]) -> str:
    head = f"{'method':<14}" + "".join(f"{c:>18}" for c in cols)
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['method']:<14}" + "".join(f"{r[c]:>18}" for c in cols))
    return "\n".join(lines)


def cmd_demo(args: argparse.Namespace) -> int:
    data = make_digits_logits(0)
    tz, ty, pz, py = tune_pool_split(data["pool_logits"], data["pool_labels"], 300, 99)
    idx = np.random.default_rng(args.seed).permutation(pz.shape[0])
    cal, test = idx[:500], idx[500:]
    dev = _device(args.device)
    rows = []
    for score in progress(BASE_SCORES, desc="scores", quiet=args.quiet):
        tuned = tune_energy(tz, ty, score, alpha=args.alpha, n_repeats=20, random_state=args.seed,
                            **KWARGS.get(score, {}))
        for energy in (False, True):
            model = EnergyConformalClassifier(score, energy=energy, alpha=args.alpha, T_energy=tuned.T_energy,
                                              beta=tuned.beta, random_state=args.seed, **KWARGS.get(score, {}))
            model.fit(_to(dev, pz[cal]), _to(dev, py[cal]))
            m = model.evaluate(_to(dev, pz[test]), py[test])
            ood = model.predict_set(_to(dev, data["ood_logits"]))
            m["ood_size"] = float(np.asarray(ood.cpu() if hasattr(ood, "cpu") else ood).sum(1).mean())
            rows.append({"method": ("energy-" if energy else "") + score, **m})
    fmt = [{"method": r["method"], **{k: f"{r[k]:.3f}" for k in ("coverage", "size", "sscv", "covgap", "ood_size")},
            "empty%": f"{100 * r['empty_rate']:.1f}"} for r in rows]
    print(f"embedded corrupted digits, alpha = {args.alpha}, 500 calibration / {test.size} test, 500 OOD inputs")
    print(_table(fmt, ["coverage", "size", "sscv", "covgap", "empty%", "ood_size"]))
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    z, y = _read(args.cal_logits, args.cal_labels, True, "cal")
    T_energy, beta = args.T_energy, args.beta
    if args.tune_logits:
        tz, ty = _read(args.tune_logits, args.tune_labels, True, "tune")
        tuned = tune_energy(tz, ty, args.score, alpha=args.alpha, T_cal=args.T_cal, random_state=args.seed,
                            **KWARGS.get(args.score, {}))
        T_energy, beta = tuned.T_energy, tuned.beta
        print(f"tuned on {tz.shape[0]} tuning rows: T_energy = {T_energy:g}, beta = {beta:g}")
    out = _output(args.output, args.force)
    dev = _device(args.device)
    model = EnergyConformalClassifier(args.score, energy=not args.no_energy, alpha=args.alpha, T_energy=T_energy,
                                      beta=beta, T_cal=args.T_cal, randomized=not args.no_randomized,
                                      class_conditional=args.class_conditional, random_state=args.seed,
                                      **KWARGS.get(args.score, {}))
    model.fit(_to(dev, z), _to(dev, y))
    write_json_atomic(out, model.to_dict())
    q = model.q_hat_
    print(f"calibrated {args.score}{'' if args.no_energy else ' (energy)'} on {z.shape[0]} rows, "
          f"q_hat = {q if np.isscalar(q) else 'per class'} -> {out}")
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    model = EnergyConformalClassifier.from_dict(json.loads(pathlib.Path(args.model).read_text(encoding="utf-8")))
    z, _ = load_logits(args.logits)
    dev = _device(args.device)
    sets = model.predict_set(_to(dev, z))
    sets = sets.cpu().numpy() if hasattr(sets, "cpu") else np.asarray(sets)
    print(f"{sets.shape[0]} prediction sets, mean size {sets.sum(1).mean():.4f}")
    if args.output:
        out = _output(args.output, args.force)
        if out.suffix == ".json":
            write_json_atomic(out, [np.flatnonzero(r).tolist() for r in sets])
        elif out.suffix == ".npy":
            with atomic_path(out) as tmp:
                np.save(tmp, sets)
        else:
            raise SystemExit(f"-o: expected a .npy or .json path, got {out.name}")
        print(f"-> {out}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    zc, yc = _read(args.cal_logits, args.cal_labels, True, "cal")
    zt, yt = _read(args.test_logits, args.test_labels, True, "test")
    if zc.shape[1] != zt.shape[1]:
        raise SystemExit(f"--test-logits: expected K = {zc.shape[1]} columns like the calibration file, "
                         f"got {zt.shape[1]}")
    scores = [s.strip() for s in args.scores.split(",") if s.strip()]
    bad = [s for s in scores if s not in BASE_SCORES]
    if bad:
        raise SystemExit(f"--scores: expected a comma list of {BASE_SCORES}, got {bad}")
    if not 0 < args.tune_frac < 1:
        raise SystemExit(f"--tune-frac: expected a number in (0, 1), got {args.tune_frac}")
    n_tune = max(4, int(round(args.tune_frac * zc.shape[0])))
    tz, ty, rest_z, rest_y = tune_pool_split(zc, yc, n_tune, args.seed)
    pool_z, pool_y = np.concatenate([rest_z, zt]), np.concatenate([rest_y, yt])
    n_cal = rest_z.shape[0]
    dev = _device(args.device)
    results: dict[str, dict[str, list[float]]] = {}
    for score in progress(scores, desc="scores", quiet=args.quiet):
        tuned = tune_energy(tz, ty, score, alpha=args.alpha, random_state=args.seed, **KWARGS.get(score, {}))
        for t in range(args.trials):
            idx = np.random.default_rng(args.seed + 100 + t).permutation(pool_z.shape[0])
            cal, test = idx[:n_cal], idx[n_cal:]
            for energy in (False, True):
                model = EnergyConformalClassifier(score, energy=energy, alpha=args.alpha, T_energy=tuned.T_energy,
                                                  beta=tuned.beta, random_state=args.seed + 100 + t,
                                                  **KWARGS.get(score, {}))
                model.fit(_to(dev, pool_z[cal]), _to(dev, pool_y[cal]))
                m = model.evaluate(_to(dev, pool_z[test]), pool_y[test])
                rec = results.setdefault(("energy-" if energy else "") + score, {})
                for k, v in m.items():
                    rec.setdefault(k, []).append(v)
    cols = ["coverage", "size", "sscv", "covgap"]
    rows = [{"method": name, **{c: f"{np.mean(rec[c]):.3f} ± {np.std(rec[c]):.3f}" for c in cols}}
            for name, rec in results.items()]
    print(f"{args.trials} trials, {n_cal} calibration / {pool_z.shape[0] - n_cal} test, {n_tune} tuning rows, "
          f"alpha = {args.alpha}")
    print(_table(rows, cols))
    if args.json:
        out = _output(args.json, args.force)
        write_json_atomic(out, {name: {k: {"mean": float(np.mean(v)), "sd": float(np.std(v))} for k, v in rec.items()}
                                for name, rec in results.items()})
        print(f"-> {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-energycp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    common = common_options()

    demo = sub.add_parser("demo", parents=[common], help="the eight methods on the embedded digits logits")
    demo.add_argument("--alpha", type=float, default=0.1)
    demo.set_defaults(handler=cmd_demo)

    cal = sub.add_parser("calibrate", parents=[common], help="fit q_hat on calibration logits; write the model JSON")
    cal.add_argument("--cal-logits", required=True, help=".npy/.npz/.pt/.csv logits (n, K)")
    cal.add_argument("--cal-labels", default=None, help="labels file (not needed when the logits file holds them)")
    cal.add_argument("--score", choices=BASE_SCORES, default="aps")
    cal.add_argument("--no-energy", action="store_true", help="the base score, without the energy weight")
    cal.add_argument("--alpha", type=float, default=0.1)
    cal.add_argument("--T-energy", dest="T_energy", type=float, default=1.0)
    cal.add_argument("--beta", type=float, default=1.0)
    cal.add_argument("--T-cal", dest="T_cal", type=float, default=1.0)
    cal.add_argument("--no-randomized", action="store_true", help="u = 0 (larger sets)")
    cal.add_argument("--class-conditional", action="store_true", help="one threshold per class")
    cal.add_argument("--tune-logits", default=None, help="tune T_energy and beta on these (disjoint) logits")
    cal.add_argument("--tune-labels", default=None)
    cal.add_argument("-o", "--output", default="model.json")
    cal.add_argument("--force", action="store_true", help="overwrite an existing output file")
    cal.set_defaults(handler=cmd_calibrate)

    pred = sub.add_parser("predict", parents=[common], help="prediction sets from a calibrated model JSON")
    pred.add_argument("--model", required=True)
    pred.add_argument("--logits", required=True)
    pred.add_argument("-o", "--output", default=None, help="sets as a boolean (n, K) .npy or a .json list of lists")
    pred.add_argument("--force", action="store_true", help="overwrite an existing output file")
    pred.set_defaults(handler=cmd_predict)

    ev = sub.add_parser("evaluate", parents=[common], help="base vs energy over random cal/test splits")
    ev.add_argument("--cal-logits", required=True)
    ev.add_argument("--cal-labels", default=None)
    ev.add_argument("--test-logits", required=True)
    ev.add_argument("--test-labels", default=None)
    ev.add_argument("--scores", default="lac,aps,raps,saps")
    ev.add_argument("--alpha", type=float, default=0.1)
    ev.add_argument("--tune-frac", type=float, default=0.2, help="fraction of the calibration file kept for tuning")
    ev.add_argument("--trials", type=int, default=10)
    ev.add_argument("--json", default=None, help="write mean and sd of every metric here")
    ev.add_argument("--force", action="store_true", help="overwrite an existing output file")
    ev.set_defaults(handler=cmd_evaluate)

    add_bench_command(sub, [BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    return call_handler(args)
