"""The model's token vocabulary, the compact token form of the FSD grammar, and its decoding automaton.

The model never emits brackets or commas: it emits e.g. ``<box> <c12> <c40> <c20> <c48> </box>``, and
``tokens_to_aids`` + ``grammar.serialize`` write the full FSD text. Coordinate token ``<ck>`` is bin k of
``coord_bins`` over [0, 1000] (at 64 bins and 64x64 images, one pixel): value ``round((k + 0.5) * 1000 / B)``,
and an integer x falls in bin ``min(B - 1, floor(x * B / 1000))``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .grammar import COORD_MAX, TRACE_LENGTH, ParseError, VisualAids
from .scene import COLOURS, INSTRUCTION_WORDS, REGIONS, RELATIONS, SHAPES, UnknownObjectError

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
GRAMMAR = ("<ref>", "</ref>", "<box>", "</box>", "<point>", "</point>", "<rel>", "</rel>", "<Answer>", "</Answer>")
TASK_WORDS = ("find", "what", "is", "at", "where", "marker", "which", "object", "moves", "relate", "and", "yes", "no")
NAME_WORDS = ("plate", "table")
N_POINTS = 3


def relation_token(relation: str) -> str:
    """``"left of"`` -> ``"@left_of"`` (relations and regions are single tokens)."""
    return "@" + relation.replace(" ", "_")


RELATION_TOKENS = tuple(relation_token(r) for r in RELATIONS + REGIONS)


def coord_bin(value: float, bins: int) -> int:
    """The bin of a normalised coordinate: ``min(B - 1, floor(x * B / 1000))`` (values outside [0, 1000] clip)."""
    return int(min(bins - 1, max(0, np.floor(value * bins / COORD_MAX))))


def bin_value(k: int, bins: int) -> int:
    """The integer normalised coordinate of bin ``k``: ``round((k + 0.5) * 1000 / B)``."""
    return int(round((k + 0.5) * COORD_MAX / bins))


class Vocab:
    """Shared token vocabulary: specials, words, grammar tokens, relation tokens, ``coord_bins`` coordinates."""

    def __init__(self, coord_bins: int = 64, action_bins: int = 0):
        if isinstance(coord_bins, bool) or not isinstance(coord_bins, int) or not 2 <= coord_bins <= COORD_MAX:
            raise ValueError(f"coord_bins: expected an integer in [2, {COORD_MAX}], got {coord_bins!r}")
        self.coord_bins, self.action_bins = coord_bins, int(action_bins)
        words = sorted(set(INSTRUCTION_WORDS) | set(TASK_WORDS) | set(NAME_WORDS))
        self.itos = [PAD, BOS, EOS, *words, *GRAMMAR, *RELATION_TOKENS] + [f"<c{k}>" for k in range(coord_bins)]
        self.itos += [f"<a{k}>" for k in range(self.action_bins)]
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.action_offset = len(self.itos) - self.action_bins

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: list[str]) -> list[int]:
        """Token strings -> ids.

        Raises:
            UnknownObjectError: a token is outside the vocabulary (lists the known words).
        """
        try:
            return [self.stoi[t] for t in tokens]
        except KeyError as err:
            raise UnknownObjectError(f"unknown word {err.args[0]!r}; known colours {COLOURS}, shapes {SHAPES}, "
                                     f"words {INSTRUCTION_WORDS}") from None

    def coord(self, value: float) -> str:
        return f"<c{coord_bin(value, self.coord_bins)}>"


def _name_tokens(name: str) -> list[str]:
    return name.split()


def aids_to_tokens(aids: VisualAids, vocab: Vocab, cot: bool = True) -> list[str]:
    """The compact target sequence of ``aids`` (SrCoT grounding and relations first when ``cot``)."""
    c = vocab.coord
    out: list[str] = []
    if cot:
        for name, box in aids.refs:
            out += ["<ref>", *_name_tokens(name), "</ref>", "<box>", *map(c, box), "</box>"]
        for s, r, o in aids.relations:
            out += ["<rel>", *_name_tokens(s), relation_token(r), *_name_tokens(o), "</rel>"]
    out += ["<Answer>", "<box>", *map(c, aids.box), "</box>", "<point>"]
    out += [c(v) for p in aids.points for v in p] + ["</point>", "<point>"]
    out += [c(v) for p in aids.trace for v in p] + ["</point>", "</Answer>"]
    return out


class _TokenReader:
    def __init__(self, tokens: list[str], vocab: Vocab):
        self.t, self.i, self.vocab = tokens, 0, vocab

    def next(self) -> str:
        if self.i >= len(self.t):
            raise ParseError("unexpected end of the token sequence", self.i)
        self.i += 1
        return self.t[self.i - 1]

    def expect(self, tok: str) -> None:
        got = self.next()
        if got != tok:
            raise ParseError(f"expected token {tok!r}, got {got!r}", self.i - 1)

    def coords(self, n: int) -> list[int]:
        out = []
        for _ in range(n):
            tok = self.next()
            if not (tok.startswith("<c") and tok[2:-1].isdigit()):
                raise ParseError(f"expected a coordinate token, got {tok!r}", self.i - 1)
            out.append(bin_value(int(tok[2:-1]), self.vocab.coord_bins))
        return out

    def name(self, stop: str) -> str:
        words = []
        while self.i < len(self.t) and self.t[self.i] != stop and not self.t[self.i].startswith("@"):
            words.append(self.next())
        if not words:
            raise ParseError(f"expected a name before {stop!r}", self.i)
        return " ".join(words)


def tokens_to_aids(tokens: list[str], vocab: Vocab) -> VisualAids:
    """Reads a compact token sequence (with or without SrCoT, optional trailing ``<eos>``) into ``VisualAids``.

    Raises:
        ParseError: the sequence breaks the grammar; ``position`` is the token index.
    """
    r = _TokenReader([t for t in tokens if t != EOS], vocab)
    refs, rels = [], []
    while r.i < len(r.t) and r.t[r.i] in ("<ref>", "<rel>"):
        if r.next() == "<ref>":
            name = r.name("</ref>")
            r.expect("</ref>")
            r.expect("<box>")
            refs.append((name, tuple(r.coords(4))))
            r.expect("</box>")
        else:
            subj = r.name("</rel>")
            rel = r.next()
            if rel not in RELATION_TOKENS:
                raise ParseError(f"expected a relation token, got {rel!r}", r.i - 1)
            obj = r.name("</rel>")
            r.expect("</rel>")
            rels.append((subj, rel[1:].replace("_", " "), obj))
    r.expect("<Answer>")
    r.expect("<box>")
    box = tuple(r.coords(4))
    r.expect("</box>")
    lists = []
    for _ in range(2):
        r.expect("<point>")
        vals = []
        while r.i < len(r.t) and r.t[r.i] != "</point>":
            vals += r.coords(1)
        r.expect("</point>")
        if not vals or len(vals) % 2:
            raise ParseError("expected a non-empty list of (x, y) coordinate pairs", r.i - 1)
        lists.append(tuple(zip(vals[::2], vals[1::2], strict=True)))
    r.expect("</Answer>")
    if r.i != len(r.t):
        raise ParseError(f"unexpected token {r.t[r.i]!r} after '</Answer>'", r.i)
    return VisualAids(box, lists[0], lists[1], tuple(refs), tuple(rels))


@dataclass
class Automaton:
    """A deterministic automaton over token ids for grammar-constrained decoding.

    ``allowed[s]`` is the boolean mask of legal tokens in state ``s``, ``step[s, t]`` the next state;
    ``final`` is the state after ``<eos>`` (decoding stops there); ``ordered[s]``: the coordinate chosen in
    state ``s`` is a box's ``x2`` or ``y2`` and must not be below the coordinate two tokens earlier
    (``x1`` / ``y1``), so a decoded box is never inverted (the decoder applies it; a fixed automaton cannot).
    """

    allowed: np.ndarray
    step: np.ndarray
    final: int
    max_length: int
    ordered: np.ndarray

    def first_illegal(self, ids: list[int]) -> int | None:
        """Index of the first token id the decoder could not emit (``len(ids)`` if the sequence stops early;
        None when ``ids`` is a complete legal output, ``<eos>`` included). Mirrors the decoder's masks."""
        state = 0
        for i, t in enumerate(ids):
            if not self.allowed[state, t] or (self.ordered[state] and i >= 2 and t < ids[i - 2]):
                return i
            state = self.step[state, t]
        return None if state == self.final else len(ids)


class _Builder:
    def __init__(self, vocab: Vocab):
        self.vocab, self.edges, self.ordered = vocab, [{}], set()

    def new(self) -> int:
        self.edges.append({})
        return len(self.edges) - 1

    def link(self, src: list[int], tokens, dst: int | None = None) -> int:
        dst = self.new() if dst is None else dst
        for s in src:
            for t in tokens:
                self.edges[s][self.vocab.stoi[t]] = dst
        return dst

    def chain(self, src: list[int], *token_sets) -> int:
        for toks in token_sets:
            src = [self.link(src, toks)]
        return src[0]

    def coords(self, src: list[int], n: int) -> int:
        cs = [f"<c{k}>" for k in range(self.vocab.coord_bins)]
        return self.chain(src, *([cs] * n))

    def box(self, src: list[int]) -> int:
        """``<box> x1 y1 x2 y2 </box>`` with ``x2 >= x1`` and ``y2 >= y1`` (the states choosing x2, y2 are ordered)."""
        s = self.coords([self.link(src, ["<box>"])], 2)
        self.ordered.add(s)
        s = self.coords([s], 1)
        self.ordered.add(s)
        return self.link([self.coords([s], 1)], ["</box>"])

    def name(self, src: list[int]) -> int:
        end = self.new()
        mid = self.link(src, COLOURS)
        self.link([mid], SHAPES, end)
        self.link(src, NAME_WORDS, end)
        return end

    def grounding(self, src: list[int]) -> int:
        s = self.name([self.link(src, ["<ref>"])])
        return self.box([self.link([s], ["</ref>"])])

    def build(self, last: int) -> Automaton:
        final = self.link([last], [EOS])
        n, v = len(self.edges), len(self.vocab)
        allowed, step = np.zeros((n, v), dtype=bool), np.full((n, v), final, dtype=np.int64)
        for s, edges in enumerate(self.edges):
            for t, d in edges.items():
                allowed[s, t], step[s, t] = True, d
        allowed[final, self.vocab.stoi[PAD]] = True  # finished sequences emit padding
        depth: dict[int, int] = {}

        def longest(s: int) -> int:  # the graph is acyclic: longest path from s to the end
            if s not in depth:
                depth[s] = max((longest(d) + 1 for d in self.edges[s].values()), default=0)
            return depth[s]

        ordered = np.zeros(n, dtype=bool)
        ordered[list(self.ordered)] = True
        return Automaton(allowed, step, final, longest(0), ordered)


def aids_automaton(vocab: Vocab, cot: bool = True) -> Automaton:
    """Legal outputs of the main task: [SrCoT: 1-2 groundings, 0-1 relation] then the answer, then ``<eos>``.

    The answer is a box (4 coordinates), 3 affordance points and an 8-point trace.
    """
    b = _Builder(vocab)
    start = [0]
    if cot:
        first = b.grounding([0])
        second = b.grounding([first])
        rel = b.name([b.link([first, second], ["<rel>"])])
        rel = b.name([b.link([rel], RELATION_TOKENS)])
        rel = b.link([rel], ["</rel>"])
        start = [first, second, rel]
    s = b.link(start, ["<Answer>"])
    s = b.box([s])
    s = b.link([b.coords([b.link([s], ["<point>"])], 2 * N_POINTS)], ["</point>"])
    s = b.link([b.coords([b.link([s], ["<point>"])], 2 * TRACE_LENGTH)], ["</point>"])
    return b.build(b.link([s], ["</Answer>"]))


def grounding_automaton(vocab: Vocab) -> Automaton:
    """Legal outputs of the grounding task: ``<ref> name </ref> <box> x1 y1 x2 y2 </box> <eos>``."""
    b = _Builder(vocab)
    return b.build(b.grounding([0]))


def referring_automaton(vocab: Vocab) -> Automaton:
    """Legal outputs of the referring task: ``<ref> name </ref> <eos>``."""
    b = _Builder(vocab)
    return b.build(b.link([b.name([b.link([0], ["<ref>"])])], ["</ref>"]))


def action_automaton(vocab: Vocab, length: int) -> Automaton:
    """Legal outputs of the direct-action policy: ``length`` action-bin tokens, then ``<eos>``."""
    b = _Builder(vocab)
    return b.build(b.chain([0], *([[f"<a{k}>" for k in range(vocab.action_bins)]] * length)))
