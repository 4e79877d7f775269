import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iclr26_fsd import grammar
from iclr26_fsd.grammar import ParseError, VisualAids, parse, resize_pad, serialize, to_normalised, to_pixels
from iclr26_fsd.tokens import Vocab, aids_to_tokens, bin_value, coord_bin, tokens_to_aids

coord = st.integers(0, 1000)
point = st.tuples(coord, coord)
name = st.sampled_from(["red square", "blue circle", "plate", "orange triangle"])
aids_st = st.builds(
    VisualAids,
    box=st.tuples(coord, coord, coord, coord),
    points=st.lists(point, min_size=1, max_size=4).map(tuple),
    trace=st.lists(point, min_size=8, max_size=8).map(tuple),
    refs=st.lists(st.tuples(name, st.tuples(coord, coord, coord, coord)), max_size=2).map(tuple),
    relations=st.lists(st.tuples(name, st.sampled_from(["left of", "behind", "top left"]), name),
                       max_size=1).map(tuple),
)


@settings(max_examples=40, deadline=None)
@given(aids_st)
def test_parse_inverts_serialize(aids):
    assert parse(serialize(aids), strict=False) == aids


def test_serialize_matches_the_fsd_format():
    aids = VisualAids((1, 2, 3, 4), ((5, 6),), tuple((i, i) for i in range(8)), (("red square", (0, 0, 9, 9)),),
                      (("red square", "left of", "blue circle"),))
    text = serialize(aids)
    assert text.startswith("<ref>red square</ref><box>[[0, 0, 9, 9]]</box> <rel>red square|left of|blue circle</rel>")
    assert "<Answer><box>[[1, 2, 3, 4]]</box><point>[[5, 6]]</point><point>[[0, 0], [1, 1]" in text


def test_parse_error_carries_the_offset():
    text = "<Answer><box>[[1, 2, 3, 4]]</box><point>[[5, 6]]</pointX"
    with pytest.raises(ParseError) as err:
        parse(text)
    assert err.value.position == text.index("</pointX")


def test_out_of_range_coordinate_is_an_error_not_clipped():
    text = "<Answer><box>[[1, 2, 3, 1001]]</box><point>[[5, 6]]</point><point>[[5, 6]]</point></Answer>"
    with pytest.raises(ParseError, match="outside"):
        parse(text)
    with pytest.raises(ValueError):
        VisualAids((1, 2, 3, -1), ((0, 0),), ((0, 0),))


def test_strict_requires_eight_trace_points():
    text = serialize(VisualAids((1, 2, 3, 4), ((5, 6),), ((1, 1),) * 7))
    assert len(parse(text).trace) == 7
    with pytest.raises(ParseError, match="8 points"):
        parse(text, strict=True)


def test_pixel_conversion_uses_the_padding_rule():
    # 640x480: S = 640, the image sits 80 px below the top of the padded square
    np.testing.assert_allclose(to_pixels([[0, 0], [1000, 1000], [500, 500]], 640, 480),
                               [[0, -80], [640, 560], [320, 240]])
    np.testing.assert_allclose(to_pixels([[0, 125]], 480, 640), [[-80, 80]])
    px = np.array([[0.0, 0.0], [639.0, 479.0], [123.4, 300.2]])
    back = to_pixels(np.rint(to_normalised(px, 640, 480)), 640, 480)
    assert np.abs(back - px).max() <= 1.0


def test_resize_pad_keeps_normalised_coordinates():
    img = np.zeros((48, 64, 3), dtype=np.uint8)
    img[10:14, 40:44] = 255  # a white square centred at pixel (42, 12)
    out = resize_pad(img, 64)
    ys, xs = np.nonzero(out[..., 0])
    n = to_normalised([[42.0, 12.0]], 64, 48)[0]
    assert abs(xs.mean() + 0.5 - n[0] * 64 / 1000) < 1.0 and abs(ys.mean() + 0.5 - n[1] * 64 / 1000) < 1.0


def test_bad_sizes_and_shapes_are_refused():
    with pytest.raises(ValueError, match="width"):
        to_pixels([[0, 0]], 0, 10)
    with pytest.raises(ValueError, match="coords"):
        to_pixels([0, 0, 0], 10, 10)
    with pytest.raises(TypeError):
        parse(None)


@settings(max_examples=30, deadline=None)
@given(aids_st)
def test_compact_tokens_round_trip_to_bin_centres(aids):
    vocab = Vocab(64)
    back = tokens_to_aids(aids_to_tokens(aids, vocab, cot=True), vocab)
    assert [n for n, _ in back.refs] == [n for n, _ in aids.refs] and back.relations == aids.relations
    for got, want in zip(np.ravel(back.trace), np.ravel(aids.trace), strict=True):
        assert got == bin_value(coord_bin(want, 64), 64) and abs(got - want) <= 1000 / 64


def test_module_exports_the_grammar():
    assert grammar.TRACE_LENGTH == 8
