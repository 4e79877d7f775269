"""``FSDTiny``: a small vision-language model trained from scratch that emits SrCoT and FSD's visual aids.

Training: teacher-forced cross-entropy on the output tokens over the staged task mixture of
``env.CURRICULUM`` (AdamW, cosine learning rate after a short linear warm-up; a coordinate token's target is a
Gaussian over the bins, ``COORD_SIGMA``). Decoding: greedy (or
sampled) with grammar-constrained masking, batched, the prefix encoded once and a key/value cache for
the output tokens.
"""
from __future__ import annotations

import math
import os
import pathlib
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from iclr26_shared.bench import atomic_path

from .data import UserData
from .env import TASKS, TableTop2D, curriculum_stages, referring_prompt
from .grammar import TRACE_LENGTH, ParseError, VisualAids
from .network import NetConfig, PrefixLM
from .scene import parse_instruction
from .tokens import (
    BOS,
    EOS,
    N_POINTS,
    PAD,
    Automaton,
    Vocab,
    aids_automaton,
    aids_to_tokens,
    bin_value,
    grounding_automaton,
    referring_automaton,
    tokens_to_aids,
)

POINTER = 32
"""Channels of FSDTiny's pointer readout (``network.PrefixLM``); the direct-action policy, which emits no
coordinates, has none."""
COORD_SIGMA = 1.0
"""Std (in bins) of the Gaussian target of a coordinate token (a smoothed per-axis classification over bins)."""
SampleFn = Callable[[int, np.random.Generator, int], tuple[np.ndarray, list[list[str]], list[list[str]]]]


def check_images(images, size: int) -> np.ndarray:
    """Validates a batch of images: uint8 (B, S, S, 3), or floats in [0, 1] (converted to uint8).

    Raises:
        ValueError: wrong shape or range (use ``grammar.resize_pad`` for other image sizes).
    """
    a = np.asarray(images)
    if a.ndim == 3:
        a = a[None]
    if a.ndim != 4 or a.shape[1:] != (size, size, 3):
        raise ValueError(f"images: expected shape (B, {size}, {size}, 3), got {a.shape}; "
                         f"use iclr26_fsd.grammar.resize_pad(image, {size}) for other sizes")
    if a.dtype == np.uint8:
        return a
    if not np.issubdtype(a.dtype, np.floating) or not np.all(np.isfinite(a)) or a.min() < 0 or a.max() > 1:
        raise ValueError(f"images: expected uint8 or floats in [0, 1], got dtype {a.dtype}")
    return np.rint(a * 255).astype(np.uint8)


class TokenPolicy:
    """What ``FSDTiny`` and ``DirectActionPolicy`` share: the backbone, the training loop, the decoder."""

    kind = ""

    def __init__(self, vocab: Vocab, d_model: int, n_layers: int, n_heads: int, d_mlp: int, image_size: int,
                 max_out: int, seed: int, device, pointer: int = 0):
        from iclr26_shared.device import resolve_device

        self.vocab = vocab
        self.config = NetConfig(len(vocab), d_model, n_layers, n_heads, d_mlp, image_size, 16, max_out,
                                vocab.stoi["<c0>"], vocab.coord_bins, pointer)
        self.seed = int(seed)
        self.coord_sigma = COORD_SIGMA
        self.device = resolve_device(device)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            self.net = PrefixLM(self.config).to(self.device)
        self.history_: dict[str, list[float]] = {}

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.net.parameters())

    def _check_env(self, env) -> None:
        if not isinstance(env, TableTop2D):
            raise TypeError(f"env: expected a TableTop2D, got {type(env).__name__}")
        if env.camera.size != self.config.image_size:
            raise ValueError(f"env: expected {self.config.image_size}-pixel images, got {env.camera.size}")

    def _inputs(self, images, instructions: Sequence[str] | str) -> tuple[np.ndarray, list[list[str]]]:
        """Checked uint8 images and instruction prompts (one instruction per image)."""
        images = check_images(images, self.config.image_size)
        if isinstance(instructions, str):
            instructions = [instructions]
        if len(instructions) != len(images):
            raise ValueError(f"instructions: expected {len(images)} (one per image), got {len(instructions)}")
        return images, [parse_instruction(t).text.split() for t in instructions]

    def _prompts(self, prompts: Sequence[list[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        n = max(len(p) for p in prompts)
        if n > self.config.max_prompt:
            raise ValueError(f"prompt: expected at most {self.config.max_prompt} tokens, got {n}")
        ids = torch.full((len(prompts), n), self.vocab.stoi[PAD], dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, :len(p)] = torch.tensor(self.vocab.encode(p))
        mask = ids != self.vocab.stoi[PAD]
        return ids.to(self.device), mask.to(self.device)

    def _loss(self, images: np.ndarray, prompts, targets) -> torch.Tensor:
        n = max(len(t) for t in targets) + 1
        out_in = torch.full((len(targets), n), self.vocab.stoi[PAD], dtype=torch.long)
        out_tgt = torch.full((len(targets), n), -100, dtype=torch.long)
        for i, t in enumerate(targets):
            ids = self.vocab.encode(t)
            out_in[i, :len(ids) + 1] = torch.tensor([self.vocab.stoi[BOS], *ids])
            out_tgt[i, :len(ids) + 1] = torch.tensor([*ids, self.vocab.stoi[EOS]])
        ids, mask = self._prompts(prompts)
        img = torch.from_numpy(np.ascontiguousarray(images)).to(self.device)
        logits = self.net(img, ids, mask, out_in.to(self.device))
        return self._cross_entropy(logits.reshape(-1, logits.shape[-1]), out_tgt.to(self.device).view(-1))

    def _cross_entropy(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of logits (N, V) against target ids (N,) (-100 = ignored). A coordinate target
        ``<ck>`` is a Gaussian over the coordinate bins (std ``coord_sigma`` bins, ``<ck>`` its mode), so a bin
        next to the right one costs less than a far one; ``coord_sigma = 0`` is the plain one-hot loss."""
        keep = target >= 0
        logits, target = logits[keep], target[keep]
        logp = torch.log_softmax(logits, -1)
        nll = -logp.gather(1, target[:, None])[:, 0]
        lo, n = self.config.coord_start, self.config.coord_bins
        coord = (target >= lo) & (target < lo + n)
        if self.coord_sigma > 0 and bool(coord.any()):
            k = torch.arange(n, device=logits.device, dtype=torch.float32)
            w = torch.softmax(-0.5 * ((k[None] - (target[coord] - lo)[:, None].float()) / self.coord_sigma) ** 2, -1)
            nll = nll.clone()
            nll[coord] = -(w * logp[coord, lo:lo + n]).sum(-1)
        return nll.mean()

    def _train(self, sample: SampleFn, steps: int, batch_size: int, lr: float, weight_decay: float,
               log_every: int, progress, callback) -> dict[str, list[float]]:
        for name, v in (("steps", steps), ("batch_size", batch_size)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name}: expected a positive integer, got {v!r}")
        rng = np.random.default_rng(self.seed)
        # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
        opt = torch.optim.AdamW(self.net.parameters(), lr=lr, weight_decay=weight_decay, foreach=True)
        warmup = max(1, min(50, steps // 10))
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
        hist: dict[str, list[float]] = {"loss": [], "seconds": []}
        start = time.perf_counter()
        self.net.train()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            for step in (progress(range(steps)) if progress else range(steps)):
                loss = self._loss(*sample(batch_size, rng, step))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
                opt.step()
                sched.step()
                hist["loss"].append(float(loss.detach()))
                hist["seconds"].append(time.perf_counter() - start)
                if callback is not None and (step + 1) % log_every == 0:
                    callback(step + 1, float(np.mean(hist["loss"][-log_every:])))
        self.net.eval()
        self.history_ = hist
        return hist

    @torch.no_grad()
    def _decode(self, images: np.ndarray, prompts: list[list[str]], automaton: Automaton | None,
                temperature: float = 0.0, generator: torch.Generator | None = None,
                batch_size: int = 256, forced: list[list[str]] | None = None) -> list[list[str]]:
        """Batched KV-cached decoding; ``automaton`` masks illegal tokens (None: only padding/``<bos>`` masked).
        ``forced``: per prompt, output tokens fed as given before decoding goes on (all of one length)."""
        if forced is not None and (len(forced) != len(prompts) or len({len(f) for f in forced}) > 1):
            raise ValueError(f"forced: expected {len(prompts)} token lists of one length, got "
                             f"{sorted({len(f) for f in forced})} lengths for {len(forced)}")
        forced_ids = None if forced is None else torch.tensor([self.vocab.encode(f) for f in forced],
                                                              dtype=torch.long, device=self.device)
        self.net.eval()
        out: list[list[str]] = []
        pad, eos = self.vocab.stoi[PAD], self.vocab.stoi[EOS]
        if automaton is not None:
            allowed = torch.from_numpy(automaton.allowed).to(self.device)
            step_to = torch.from_numpy(automaton.step).to(self.device)
            ordered = torch.from_numpy(automaton.ordered).to(self.device)
            token_ids = torch.arange(len(self.vocab), device=self.device)
            c0 = self.config.coord_start
            max_len = min(automaton.max_length, self.config.max_out)
        else:
            free = torch.ones(len(self.vocab), dtype=torch.bool, device=self.device)
            free[[pad, self.vocab.stoi[BOS]]] = False
            max_len = self.config.max_out
        for lo in range(0, len(prompts), batch_size):
            img = torch.from_numpy(np.ascontiguousarray(images[lo:lo + batch_size])).to(self.device)
            ids, mask = self._prompts(prompts[lo:lo + batch_size])
            cache = self.net.encode(img, ids, mask)
            b = img.shape[0]
            tok = torch.full((b,), self.vocab.stoi[BOS], dtype=torch.long, device=self.device)
            state = torch.zeros(b, dtype=torch.long, device=self.device)
            done = torch.zeros(b, dtype=torch.bool, device=self.device)
            seq = []
            for pos in range(max_len):
                logits = self.net.step(cache, tok, pos)
                if automaton is not None:
                    legal = allowed[state]
                    if pos >= 2:  # a box's x2 / y2 is not below its x1 / y1 (token ids of coordinates ascend)
                        below = (token_ids[None] >= c0) & (token_ids[None] < seq[-2][:, None])
                        legal = legal & ~(below & ordered[state][:, None])
                else:
                    legal = free.expand(b, -1).clone()
                if automaton is None:
                    legal[done] = False
                    legal[done, pad] = True
                logits = logits.masked_fill(~legal, float("-inf"))
                if temperature > 0:
                    probs = torch.softmax(logits / temperature, -1)
                    tok = torch.multinomial(probs, 1, generator=generator)[:, 0]
                else:
                    tok = logits.argmax(-1)
                if forced_ids is not None and pos < forced_ids.shape[1]:
                    tok = forced_ids[lo:lo + batch_size, pos]
                seq.append(tok)
                if automaton is not None:
                    state = step_to[state, tok]
                    done = state == automaton.final
                else:
                    done = done | (tok == eos)
                if bool(done.all()):
                    break
            rows = torch.stack(seq, 1).cpu().tolist()
            out += [[self.vocab.itos[t] for t in r if t != pad] for r in rows]
        return out

    def _state(self) -> dict:
        return {"kind": self.kind, "config": self.config.to_dict(), "seed": self.seed,
                "state_dict": self.net.state_dict()}

    def save(self, path: str | os.PathLike) -> pathlib.Path:
        """Writes the model (configuration + weights) to ``path`` atomically."""
        with atomic_path(path) as tmp:
            torch.save(self._state(), tmp)
        return pathlib.Path(path)


class FSDTiny(TokenPolicy):
    """The tiny FSD model: image + instruction -> SrCoT (grounding, relations) -> visual aids.

    Args:
        cot: emit the SrCoT part before the answer (``False``: the answer-only ablation).
        self_consistency: train on the inverse tasks too (``False``: the no-self-consistency ablation).
        d_model, n_layers, n_heads, d_mlp: transformer sizes (default ~0.4M parameters).
        image_size: input side in pixels (64, or 128 at the GPU scale).
        coord_bins: coordinate tokens over [0, 1000] (default ``image_size``: one per pixel; 1000 gives
            FSD's exact integer grid).
        seed: seeds the initialisation and the training samples.
        device: ``"cpu"``, ``"cuda"``, ``"auto"``...
    """

    kind = "fsd"

    def __init__(self, cot: bool = True, self_consistency: bool = True, d_model: int = 96, n_layers: int = 3,
                 n_heads: int = 4, d_mlp: int = 384, image_size: int = 64, coord_bins: int | None = None,
                 seed: int = 0, device="cpu"):
        vocab = Vocab(image_size if coord_bins is None else coord_bins)
        self.cot, self.self_consistency = bool(cot), bool(self_consistency)
        self.automaton = aids_automaton(vocab, self.cot)
        super().__init__(vocab, d_model, n_layers, n_heads, d_mlp, image_size, self.automaton.max_length, seed,
                         device, POINTER)

    @property
    def tasks(self) -> tuple[str, ...]:
        return TASKS if self.self_consistency else tuple(t for t in TASKS if t != "consistency")

    def fit(self, data: TableTop2D | UserData, steps: int = 1200, batch_size: int = 32, lr: float = 1e-3,
            weight_decay: float = 0.05, log_every: int = 100, progress=None, callback=None,
            curriculum="staged") -> dict:
        """Trains (or, called again, fine-tunes) on ``data`` for ``steps`` optimisation steps; returns the history.

        Args:
            data: a ``TableTop2D`` train split (the staged task mixture) or ``UserData`` from ``load_jsonl``
                (your own records: each step draws records uniformly; the target is the record's SrCoT, when
                ``cot``, and its box, affordance points and trace, checked first by ``check_records``).
            curriculum: for a ``TableTop2D``: ``"staged"`` (``env.CURRICULUM``: single-object grounding first,
                then multi-object grounding and relations, then SrCoT + visual aids), ``"mixture"`` (the spec's
                single-stage mixing from the first step) or custom ``(fraction, {task: weight})`` stages.

        History: ``{"loss": [per step], "seconds": [cumulative]}``; ``callback(step, mean_loss)`` every ``log_every``.
        """
        if isinstance(data, UserData):
            images, prompts, targets = self.check_records(data)

            def sample(n, rng, step):
                idx = rng.integers(len(targets), size=n)
                return images[idx], [prompts[i] for i in idx], [targets[i] for i in idx]

            return self._train(sample, steps, batch_size, lr, weight_decay, log_every, progress, callback)
        self._check_env(data)
        ends, weights = curriculum_stages(curriculum, self.tasks)
        ends = ends * steps

        def sample(n, rng, step):
            stage = min(int(np.searchsorted(ends, step, side="right")), len(ends) - 1)
            b = data.sample_tasks(n, self.tasks, weights[stage], cot=self.cot, vocab=self.vocab, rng=rng)
            return b.images, b.prompts, b.targets

        return self._train(sample, steps, batch_size, lr, weight_decay, log_every, progress, callback)

    def check_records(self, data: UserData) -> tuple[np.ndarray, list[list[str]], list[list[str]]]:
        """Images (N, S, S, 3), prompts and target tokens of user records, each checked against what this model
        reads (template instructions) and writes (the decoding grammar: with ``cot`` 1-2 ``refs`` and at most
        one relation, then a box with x1 <= x2 and y1 <= y2, 3 affordance points and 8 trace points).

        Raises:
            ValueError: the first record that does not fit (its line in the file and the reason).
        """
        if not isinstance(data, UserData):
            raise TypeError(f"data: expected UserData (load_jsonl) or a TableTop2D, got {type(data).__name__}")
        images = check_images(data.images, self.config.image_size)
        prompts, targets = [], []
        for text, aid, line in zip(data.instructions, data.aids, data.lines, strict=True):
            try:
                prompts.append(parse_instruction(text).text.split())
                toks = aids_to_tokens(aid, self.vocab, self.cot)
                bad = self.automaton.first_illegal(self.vocab.encode([*toks, EOS]))
            except ValueError as err:  # UnknownObjectError is a ValueError
                raise ValueError(f"records: line {line}: {err}") from None
            if bad is not None:
                got = toks[bad] if bad < len(toks) else "the end"
                raise ValueError(
                    f"records: line {line}: expected {'1-2 refs, at most 1 relation, then ' if self.cot else ''}"
                    f"a box with x1 <= x2 and y1 <= y2, {N_POINTS} affordance points and {TRACE_LENGTH} trace "
                    f"points, got {got!r} at output token {bad}"
                    + ("; records without refs need a model without SrCoT (fsd-nocot)"
                       if self.cot and not aid.refs else ""))
            targets.append(toks)
        return images, prompts, targets

    @torch.no_grad()
    def loss(self, data: UserData, batch_size: int = 256) -> float:
        """Mean teacher-forced cross-entropy per output token (``<eos>`` included) on user records."""
        images, prompts, targets = self.check_records(data)
        self.net.eval()
        total, count = 0.0, 0
        for lo in range(0, len(targets), batch_size):
            chunk = targets[lo:lo + batch_size]
            n = sum(len(t) + 1 for t in chunk)
            total += float(self._loss(images[lo:lo + batch_size], prompts[lo:lo + batch_size], chunk)) * n
            count += n
        return total / count

    def predict_tokens(self, images, instructions: Sequence[str], temperature: float = 0.0,
                       constrained: bool = True, generator: torch.Generator | None = None) -> list[list[str]]:
        """The generated compact token sequences (see ``tokens``)."""
        images, prompts = self._inputs(images, instructions)
        return self._decode(images, prompts, self.automaton if constrained else None, temperature, generator)

    def parse_tokens(self, tokens: list[str]) -> VisualAids | None:
        """``tokens_to_aids``, or None when the sequence breaks the grammar (a parse failure)."""
        try:
            return tokens_to_aids(tokens, self.vocab)
        except (ParseError, ValueError):
            return None

    def predict(self, images, instructions: Sequence[str], sample_k: int = 1, temperature: float = 0.7,
                constrained: bool = True, seed: int = 0) -> list[VisualAids | None]:
        """Visual aids for each (image, instruction); None where the output does not parse.

        Args:
            images: uint8 (B, S, S, 3) (or floats in [0, 1]).
            instructions: B instruction texts.
            sample_k: 1 = greedy; K > 1 also samples K answers at ``temperature`` and keeps the first whose
                trace start is re-identified by the referring task as the instructed object (self-consistency),
                falling back to the greedy answer.
            constrained: grammar-constrained decoding (``False`` exposes raw outputs; parse failures -> None).

        Raises:
            ValueError: bad image shape/dtype, instruction count; ``UnknownObjectError`` for unknown words.
        """
        greedy = [self.parse_tokens(t) for t in self.predict_tokens(images, instructions, constrained=constrained)]
        if sample_k <= 1:
            return greedy
        images = check_images(images, self.config.image_size)
        gen = torch.Generator(device=self.device).manual_seed(seed)
        targets = [parse_instruction(t).target for t in instructions]
        chosen: list[VisualAids | None] = [None] * len(greedy)
        for _ in range(sample_k):
            toks = self.predict_tokens(images, instructions, temperature, constrained, gen)
            cand = [self.parse_tokens(t) for t in toks]
            idx = [i for i, a in enumerate(cand) if chosen[i] is None and a is not None]
            if not idx:
                continue
            names = self.refer(images[idx], np.array([cand[i].trace[0] for i in idx]))
            for i, name in zip(idx, names, strict=True):
                if name == targets[i]:
                    chosen[i] = cand[i]
        return [c if c is not None else g for c, g in zip(chosen, greedy, strict=True)]

    def ground(self, images, names: Sequence[str]) -> np.ndarray:
        """The grounding task (``find the <name>``): the decoded box of each named object, (N, 4) normalised."""
        images = check_images(images, self.config.image_size)
        words = [n.split() for n in names]
        if len(words) != len(images):
            raise ValueError(f"names: expected one name per image ({len(images)}), got {len(words)}")
        boxes = np.empty((len(words), 4), dtype=np.float64)
        for length in sorted({len(w) for w in words}):  # names of one length decode together (forced prefixes)
            idx = [i for i, w in enumerate(words) if len(w) == length]
            outs = self._decode(images[idx], [["find", "the", *words[i]] for i in idx],
                                grounding_automaton(self.vocab), forced=[["<ref>", *words[i], "</ref>"] for i in idx])
            boxes[idx] = [[bin_value(int(t[2:-1]), self.vocab.coord_bins) for t in o if t.startswith("<c")]
                          for o in outs]
        return boxes

    def refer(self, images, points) -> list[str]:
        """The referring task: the name of the object at each normalised image point (N, 2)."""
        images = check_images(images, self.config.image_size)
        prompts = [referring_prompt(p, self.vocab) for p in np.asarray(points, dtype=float)]
        outs = self._decode(images, prompts, referring_automaton(self.vocab))
        return [" ".join(t for t in o if t not in ("<ref>", "</ref>", EOS)) for o in outs]

    def plan(self, env: TableTop2D) -> list[VisualAids | None]:
        """Greedy visual aids for every scene of a split (what ``evaluate`` executes)."""
        return self.predict(env.images, env.instructions)

    def _state(self) -> dict:
        return {**super()._state(), "cot": self.cot, "self_consistency": self.self_consistency,
                "coord_bins": self.vocab.coord_bins}
