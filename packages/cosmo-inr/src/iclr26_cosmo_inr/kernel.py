"""Fused COSMO-RC layer: phase normalisation, ψ(x; T, C) and its analytic derivative in one autograd Function.

One hidden layer of COSMO-INR applies, elementwise on the complex pre-activation z,

    n = z/ρ(z),   ψ(n) = h_RC(n; T, β) e^{jζn} (ζ = 2πC),   out = ψ/ρ(ψ),   ρ(w) = sqrt(|w|² + ε²),

and the first layer applies ψ alone to a real pre-activation. Written as ordinary autograd operations this
saves about fifty tensors per layer; here the forward saves only z (and the 0-d T, C) and the backward
recomputes what it needs, so a layer holds two real tensors of its input.

The pulse uses shared transcendentals. With u = x/T, y = βu:

    h(x) = (π/(4T)) sinc(u) B(y),   B(y) = sinc(y + ½) + sinc(y − ½) = cos(πy) / (π(¼ − y²)),

so sin(πy), cos(πy) serve B and, by the double-angle formulas at β = ½, also sin(πu), cos(πu).
Derivatives: sinc'(w) = (cos πw − sinc w)/w, B'(y) = (2yB − sin πy)/(¼ − y²), and, since ψ is holomorphic,
ψ'(x) = (h' + jζh) e^{jζx}; ∂ψ/∂T = −(h + x h')/T · e^{jζx} (h depends on x/T only), ∂ψ/∂C = 2πj x ψ.
Near the removable points u = 0 and y = ±½ (|w|² below 1e-4 in float64, 1e-2 in float32) sinc and sinc'
come from their Taylor series to w¹⁰ instead (error below 1e-13), so values and gradients stay finite and
accurate at the singularity itself. The phase normalisation has the (non-holomorphic) backward
G ↦ G/ρ − w Re(w̄ G)/ρ³. The elementwise work runs on chunks of 65 536 values so that its temporaries stay
in cache.

Complex values are pairs ``(re, im)`` of real tensors (``im`` is ``None`` for a real tensor); an upstream
gradient pair (g_re, g_im) is read as G = g_re + j g_im, and the gradient of an input pair is
G_in = G · conj(f'(x)) for a holomorphic f.
"""
from __future__ import annotations

import functools
import math

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

Pair = tuple[Tensor, Tensor | None]

NORM_EPS = 1e-8  # ε of the phase normalisation (the official code's guard against 0/0)
CHUNK = 1 << 16  # values per elementwise chunk
COMPILED_CHUNK = 1 << 20  # values per chunk of the compiled kernel
SERIES_TERMS = 6  # Taylor terms of sinc (k = 0..5) used near its removable points
_SINC_COEFFS = tuple((-(math.pi**2)) ** k / math.factorial(2 * k + 1) for k in range(SERIES_TERMS))


def series_band(dtype: torch.dtype) -> float:
    """|w|² below which sinc(w), sinc'(w) come from their Taylor series: 1e-4 in float64, 1e-2 otherwise."""
    return 1e-4 if dtype == torch.float64 else 1e-2


def _tiny(dtype: torch.dtype) -> float:
    """Floor of |w|² in reciprocals whose entries near 0 are overwritten by a series (no Inf/NaN meanwhile)."""
    return 1e-300 if dtype == torch.float64 else 1e-30


def _add(a: Pair, b: Pair) -> Pair:
    im = a[1] if b[1] is None else b[1] if a[1] is None else a[1] + b[1]
    return a[0] + b[0], im


def _shift(a: Pair, c: float) -> Pair:
    return a[0] + c, a[1]


def _scale(a: Pair, s) -> Pair:
    return a[0] * s, None if a[1] is None else a[1] * s


def _mul(a: Pair, b: Pair) -> Pair:
    (ar, ai), (br, bi) = a, b
    if ai is None:
        return ar * br, None if bi is None else ar * bi
    if bi is None:
        return ar * br, ai * br
    return ar * br - ai * bi, ar * bi + ai * br


def _conj(a: Pair) -> Pair:
    return a if a[1] is None else (a[0], -a[1])


def _mod2(a: Pair) -> Tensor:
    return a[0].square() if a[1] is None else a[0].square() + a[1].square()


def _recip(a: Pair, floor: float = 0.0) -> Pair:
    """1/a; ``floor`` bounds |a|² from below (entries that the caller overwrites afterwards)."""
    inv = 1.0 / _mod2(a).clamp_min(floor)
    return a[0] * inv, None if a[1] is None else -a[1] * inv


def _sin_cos_pi(a: Pair) -> tuple[Pair, Pair]:
    """sin(πa), cos(πa): sin(π(p + iq)) = sin πp cosh πq + i cos πp sinh πq, cos = cos πp cosh πq − i sin πp sinh πq."""
    arg = math.pi * a[0]
    s, c = torch.sin(arg), torch.cos(arg)
    if a[1] is None:
        return (s, None), (c, None)
    up = torch.exp(math.pi * a[1])
    down = 1.0 / up
    ch, sh = 0.5 * (up + down), 0.5 * (up - down)
    return (s * ch, c * sh), (c * ch, -(s * sh))


def sinc_series(w: Pair) -> tuple[Pair, Pair]:
    """sinc(w) and sinc'(w) from sinc(w) = Σ_k (−π²w²)^k/(2k+1)!, k < 6 (for |w| <= 0.1)."""
    w2 = _mul(w, w)
    coef = _SINC_COEFFS
    value = _shift(_scale(w2, coef[-1]), coef[-2])
    deriv = _shift(_scale(w2, 2 * (SERIES_TERMS - 1) * coef[-1]), 2 * (SERIES_TERMS - 2) * coef[-2])
    for k in range(SERIES_TERMS - 3, -1, -1):
        value = _shift(_mul(value, w2), coef[k])
        if k > 0:
            deriv = _shift(_mul(deriv, w2), 2 * k * coef[k])
    return value, _mul(deriv, w)


def sinc_quotient(w: Pair, sin_pi_w: Pair, cos_pi_w: Pair) -> tuple[Pair, Pair]:
    """sinc(w) = sin(πw)/(πw) and sinc'(w) = (cos πw − sinc w)/w (safe only away from w = 0)."""
    inv = _recip(w, _tiny(w[0].dtype))
    value = _mul(sin_pi_w, _scale(inv, 1.0 / math.pi))
    return value, _mul(_add(cos_pi_w, _scale(value, -1.0)), inv)


def _take(a: Pair, idx) -> Pair:
    return a[0][idx], None if a[1] is None else a[1][idx]


def _patch(pairs: tuple[Pair, ...], arg: Pair, centre: float, band: float, fn) -> tuple[Pair, ...]:
    """``pairs`` with the entries where |arg − centre|² < band replaced by ``fn(arg)`` there.

    Eager: ``fn`` runs on those few entries only (none in most chunks). Under ``torch.compile``: branch-free,
    ``fn`` everywhere and a ``where`` (fused into the one generated loop).
    """
    mask = _mod2((arg[0] - centre, arg[1])) < band
    if torch.compiler.is_compiling():
        return tuple((torch.where(mask, v[0], p[0]), None if p[1] is None else torch.where(mask, v[1], p[1]))
                     for p, v in zip(pairs, fn(arg)))
    if not bool(mask.any()):
        return pairs
    idx = mask.nonzero().squeeze(1)
    out = tuple((p[0].clone(), None if p[1] is None else p[1].clone()) for p in pairs)
    for target, values in zip(out, fn(_take(arg, idx))):
        target[0][idx] = values[0]
        if target[1] is not None:
            target[1][idx] = values[1]
    return out


def pulse(x: Pair, T: Tensor, beta: float, derivative: bool) -> tuple[Pair, Pair | None]:
    """h_RC(x; T, β) and, if ``derivative``, dh/dx, for a flat pair ``x`` (``(n,)`` tensors)."""
    band = series_band(x[0].dtype)
    inv_T = 1.0 / T
    u = _scale(x, inv_T)
    y = _scale(x, beta * inv_T)
    sin_y, cos_y = _sin_cos_pi(y)
    if beta == 0.5:  # double angle: sin 2θ = 2 sin θ cos θ, cos 2θ = 1 − 2 sin²θ
        sin_u = _mul(_scale(sin_y, 2.0), cos_y)
        cos_u = _shift(_mul(_scale(sin_y, -2.0), sin_y), 1.0)
    else:
        sin_u, cos_u = _sin_cos_pi(u)
    sinc_u, dsinc_u = _patch(sinc_quotient(u, sin_u, cos_u), u, 0.0, band, sinc_series)
    inv_d = _recip(_shift(_mul(_scale(y, -1.0), y), 0.25), _tiny(x[0].dtype))  # 1/(¼ − y²)
    bracket = _scale(_mul(cos_y, inv_d), 1.0 / math.pi)
    # B'(y); without ``derivative`` a placeholder that is patched along with B and then dropped
    dbracket = _mul(_add(_scale(_mul(y, bracket), 2.0), _scale(sin_y, -1.0)), inv_d) if derivative else bracket
    for centre in (0.5, -0.5):
        bracket, dbracket = _patch((bracket, dbracket), y, centre, band, lambda v: _bracket_near_pole(v, band))
    scale = (math.pi / 4.0) * inv_T
    h = _scale(_mul(sinc_u, bracket), scale)
    if not derivative:
        return h, None
    dh = _scale(_add(_mul(dsinc_u, bracket), _scale(_mul(sinc_u, dbracket), beta)), scale * inv_T)
    return h, dh


def _bracket_near_pole(y: Pair, band: float) -> tuple[Pair, Pair]:
    """B(y) = sinc(y + ½) + sinc(y − ½) and B'(y) as sums of sincs, each from its series or its quotient."""
    value: Pair | None = None
    deriv: Pair | None = None
    for shift in (0.5, -0.5):
        w = (y[0] + shift, y[1])
        sin_w, cos_w = _sin_cos_pi(w)
        quotient = sinc_quotient(w, sin_w, cos_w)
        series = sinc_series(w)
        small = _mod2(w) < band
        v = tuple(torch.where(small, s, q) if q is not None else None for s, q in zip(series[0], quotient[0]))
        d = tuple(torch.where(small, s, q) if q is not None else None for s, q in zip(series[1], quotient[1]))
        value = v if value is None else _add(value, v)
        deriv = d if deriv is None else _add(deriv, d)
    return value, deriv


def _expj(x: Pair, zeta: Tensor) -> Pair:
    """e^{jζx} = e^{−ζ Im x} (cos ζ Re x + j sin ζ Re x)."""
    phase = zeta * x[0]
    c, s = torch.cos(phase), torch.sin(phase)
    if x[1] is None:
        return c, s
    damp = torch.exp(-zeta * x[1])
    return c * damp, s * damp


def _inv_norm(a: Pair) -> Tensor:
    return torch.rsqrt(_mod2(a) + NORM_EPS**2)


def _norm_backward(grad: Pair, a: Pair, inv: Tensor) -> Pair:
    """Gradient through a ↦ a/ρ(a): G/ρ − a Re(ā G)/ρ³."""
    radial = (a[0] * grad[0] + a[1] * grad[1]) * inv.pow(3)
    return grad[0] * inv - a[0] * radial, grad[1] * inv - a[1] * radial


def layer_chunk(z: Pair, T: Tensor, C: Tensor, beta: float, normalise: bool,
                grad: Pair | None = None) -> tuple:
    """The fused layer on one flat chunk.

    Args:
        z: ``(n,)`` pre-activation pair (``im`` ``None`` for a real input; then ``normalise`` must be False).
        T, C: 0-d tensors (T already clamped). grad: the upstream gradient pair, or ``None``.

    Returns:
        Without ``grad``: the output pair ``(out_re, out_im)``, ``(n,)`` each. With ``grad``: ``(grad_re,
        grad_im, grad_T, grad_C)`` (``grad_im`` ``None`` for a real input; T and C gradients 0-d sums).
    """
    zeta = 2.0 * math.pi * C
    inv1 = _inv_norm(z) if normalise else None
    x = _scale(z, inv1) if normalise else z
    h, dh = pulse(x, T, beta, derivative=grad is not None)
    e = _expj(x, zeta)
    psi = _mul(h, e)
    inv2 = _inv_norm(psi) if normalise else None
    if grad is None:
        return _scale(psi, inv2) if normalise else psi
    g2 = _norm_backward(grad, psi, inv2) if normalise else grad
    p = _mul(_conj(g2), e)  # conj(G) e^{jζx}
    q, r = _mul(p, h), _mul(p, dh)  # conj(G) ψ = q e.., conj(G) ∂ψ/∂x = r + jζq
    grad_T = -(_add(q, _mul(x, r))[0].sum()) / T
    xq = _mul(x, q)
    grad_C = -2.0 * math.pi * xq[1].sum()
    a = _add(r, (-zeta * q[1], zeta * q[0]))  # conj(G) ψ'(x)
    if x[1] is None:
        return a[0], None, grad_T, grad_C
    g1 = (a[0], -a[1])
    g0 = _norm_backward(g1, z, inv1) if normalise else g1
    return g0[0], g0[1], grad_T, grad_C


def _chunks(n: int, size: int):
    return (slice(start, min(start + size, n)) for start in range(0, n, size))


@functools.cache
def _compiled_chunk():
    """``layer_chunk`` under ``torch.compile`` (dynamic shapes; compiled once per variant on first use)."""
    return torch.compile(layer_chunk, dynamic=True)


def _chunk_fn(compiled: bool):
    """(chunk kernel, chunk size): the compiled kernel fuses most of the work into a few loops, so it takes
    larger chunks (2^20 values: few calls, bounded temporaries)."""
    return (_compiled_chunk(), COMPILED_CHUNK) if compiled else (layer_chunk, CHUNK)


class _CosmoLayer(torch.autograd.Function):
    """autograd Function of ``cosmo_rc_layer`` (saves the input only)."""

    @staticmethod
    def forward(ctx, re, im, T, C, beta, normalise, compiled):
        ctx.save_for_backward(re, im, T, C)
        ctx.beta, ctx.normalise, ctx.compiled = beta, normalise, compiled
        flat = (re.reshape(-1), None if im is None else im.reshape(-1))
        out_re, out_im = torch.empty_like(flat[0]), torch.empty_like(flat[0])
        fn, size = _chunk_fn(compiled)
        for sl in _chunks(flat[0].numel(), size):
            o_re, o_im = fn(_take(flat, sl), T, C, beta, normalise)
            out_re[sl] = o_re
            out_im[sl] = o_im
        return out_re.view(re.shape), out_im.view(re.shape)

    @staticmethod
    @once_differentiable
    def backward(ctx, g_re, g_im):
        re, im, T, C = ctx.saved_tensors
        flat = (re.reshape(-1), None if im is None else im.reshape(-1))
        g_re = torch.zeros_like(flat[0]) if g_re is None else g_re.reshape(-1)
        g_im = torch.zeros_like(flat[0]) if g_im is None else g_im.reshape(-1)
        grad_re = torch.empty_like(flat[0])
        grad_im = None if im is None else torch.empty_like(flat[0])
        grad_T, grad_C = T.new_zeros(()), C.new_zeros(())
        fn, size = _chunk_fn(ctx.compiled)
        for sl in _chunks(flat[0].numel(), size):
            gr, gi, gt, gc = fn(_take(flat, sl), T, C, ctx.beta, ctx.normalise, (g_re[sl], g_im[sl]))
            grad_re[sl] = gr
            if grad_im is not None:
                grad_im[sl] = gi
            grad_T, grad_C = grad_T + gt, grad_C + gc
        return (grad_re.view(re.shape), None if grad_im is None else grad_im.view(re.shape), grad_T, grad_C,
                None, None, None)


def cosmo_rc_layer(re: Tensor, im: Tensor | None, T: Tensor, C: Tensor, beta: float = 0.5,
                   normalise: bool = False, compiled: bool = False) -> tuple[Tensor, Tensor]:
    """One fused COSMO-RC layer: ψ(x) of x = re + j·im, with phase normalisation before and after if asked.

    Args:
        re, im: real and imaginary parts of the pre-activation, same shape (``im=None`` for a real input).
        T, C: 0-d tensors (learnable or not); T is clamped to >= 1e-4 by the caller.
        beta: roll-off in [0, 1]. normalise: z ← z/ρ(z) before ψ and ψ ← ψ/ρ(ψ) after (complex input only).
        compiled: run the elementwise kernel under ``torch.compile`` (needs a C++ compiler on CPU; the first
            call per variant compiles, about a minute on CPU) instead of eager chunks.

    Returns:
        ``(out_re, out_im)`` of ``re``'s shape. Differentiable once in re, im, T and C.

    Raises:
        ValueError: ``normalise`` with a real input.
    """
    if normalise and im is None:
        raise ValueError("normalise: the phase normalisation needs a complex input (im is None)")
    return _CosmoLayer.apply(re, im, T, C, float(beta), bool(normalise), bool(compiled))
