"""Gate signals (ragcourse.signals), the measurements that judge them (evaluation.auc & co), and SignalGate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragcourse import signals
from ragcourse.evaluation import auc, auc_interval, gate_mistakes, tradeoff, wilson
from ragcourse.gate import CHEAP_CUT, COMBINED_GATE, DISTANCE_GATE, RECOMMENDED_GATE, SignalGate


def test_content_words_and_coverage():
    assert signals.query_words("What is the caption of a Figure 2?") == {"caption", "figure"}
    assert signals.coverage("caption figure legend", ["The FIGURE has a", "caption."]) == round(2 / 3, 4)
    assert signals.coverage("how to do it", ["anything"]) == 0.0  # no content word at all
    assert signals.coverage("tables", ["a table"]) == 0.0  # no stemming: documented


def test_agreement_counts_shared_positions_in_the_top_k():
    assert signals.agreement([1, 2, 3, 4, 5], [4, 9, 1, 8, 5], k=4) == 0.5
    assert signals.agreement([1, 2], [2, 1], k=1) == 0.0
    with pytest.raises(ValueError, match="k=0"):
        signals.agreement([1], [1], k=0)


def test_margin_is_best_minus_mean_of_the_next_three():
    assert signals.margin([0.2, 1.0, 0.4, 0.6, 0.0]) == round(1.0 - (0.6 + 0.4 + 0.2) / 3, 4)
    assert signals.margin([0.7]) == 0.0
    with pytest.raises(ValueError, match="empty"):
        signals.margin([])


def test_matrix_rejects_unknown_signal_names():
    s = signals.Signals(0.3, 0.6, 0.1, 0.5, 0.25)
    assert signals.matrix([s, s], ("agreement", "distance")).tolist() == [[0.25, 0.3], [0.25, 0.3]]
    with pytest.raises(ValueError, match="'speed'"):
        signals.matrix([s], ("speed",))


def test_fit_logistic_separates_a_separable_set_and_is_penalised():
    x = np.array([[0.1], [0.2], [0.3], [0.7], [0.8], [0.9]])
    means, scales, weights, bias = signals.fit_logistic(x, [0, 0, 0, 1, 1, 1])
    assert means.tolist() == [0.5] and math.isclose(scales[0], x.std())
    assert weights[0] > 0 and abs(bias) < 1e-9  # symmetric data: no offset
    _, _, stronger, _ = signals.fit_logistic(x, [0, 0, 0, 1, 1, 1], penalty=0.1)
    assert stronger[0] > weights[0]  # a smaller penalty lets the weight grow
    with pytest.raises(ValueError, match="both classes"):
        signals.fit_logistic(x, [1] * 6)


def test_measure_reads_the_dense_top_k_and_the_reranker(corpus):
    from ragcourse.pipeline import build

    class Lengths:
        name, use = "lengths", "text"

        def score(self, query, passages):
            return [float(len(p)) for p in passages]

    retriever = build("E")
    query = "How do I add a caption to a figure?"
    s = signals.measure(retriever, Lengths(), query, k=4, depth=10)
    top = retriever.retrieve(query, k=10, method="dense")
    lengths = sorted((len(h.chunk.text) for h in top), reverse=True)
    assert s.distance == round(top[0].distance, 4) == signals.nearest_distance(retriever, query)
    assert s.rerank_top == lengths[0] and s.rerank_margin == round(lengths[0] - np.mean(lengths[1:4]), 4)
    assert s.coverage == signals.coverage(query, [h.chunk.text for h in top[:4]])
    bm25 = retriever.rank(query, "bm25")[:4]
    assert s.agreement == len({retriever.chunks.index(h.chunk) for h in top[:4]} & set(bm25)) / 4


def test_auc_counts_pairs_and_half_ties():
    assert auc([3, 2], [1, 0]) == 1.0 and auc([0], [1]) == 0.0
    assert auc([1, 1], [1]) == 0.5
    assert auc([0.9, 0.5, 0.3], [0.5, 0.1]) == (2 + 1.5 + 1) / 6
    with pytest.raises(ValueError, match="unanswerable"):
        auc([1.0], [])


def test_auc_interval_is_seeded_contains_the_estimate_and_resamples_groups():
    a, u = [0.9, 0.8, 0.7, 0.4, 0.35, 0.2], [0.5, 0.3, 0.1, 0.6]
    first = auc_interval(a, u, n_resamples=300, seed=3)
    assert first == auc_interval(a, u, n_resamples=300, seed=3)
    assert first.low <= auc(a, u) <= first.high
    # Groups of identical pairs resampled whole: every resample keeps each pair intact.
    grouped = auc_interval([0.9, 0.9, 0.2, 0.2], [0.5], groups=["q1", "q1", "q2", "q2"], n_resamples=200)
    assert set(np.round(grouped, 6)) <= {0.0, 0.5, 1.0}
    with pytest.raises(ValueError, match="3 labels for 4"):
        auc_interval([1, 2, 3, 4], [0], groups=["a", "b", "c"])


def test_tradeoff_runs_from_answering_all_to_refusing_all():
    curve = tradeoff([0.9, 0.4, 0.4], [0.5, 0.1])
    assert curve.threshold.tolist() == [-math.inf, 0.1, 0.4, 0.5, 0.9]
    assert curve.refused.tolist() == [0.0, 0.0, 2 / 3, 2 / 3, 1.0]
    assert curve.bluffed.tolist() == [1.0, 0.5, 0.5, 0.0, 0.0]


def test_gate_mistakes_counts_both_mistakes_with_wilson_intervals():
    result = gate_mistakes([True, False, True], [True, False, False, False])
    assert (result.refused, result.n_in, result.bluffed, result.n_out) == (1, 3, 1, 4)
    assert result.refused_ci == wilson(1, 3) and result.bluffed_ci == wilson(1, 4)


def test_signal_gate_scores_standardized_signals_and_refuses_the_boundary():
    g = SignalGate(("distance", "coverage"), (0.5, 0.5), (0.1, 0.25), (-1.0, 2.0), 0.5, 0.0)
    assert g.score({"distance": 0.4, "coverage": 0.25, "extra": 9}) == round(0.5 + 1.0 - 2.0, 4)
    assert not g.answers({"distance": 0.55, "coverage": 0.5})  # score exactly 0.0: refused
    assert g.answers({"distance": 0.54, "coverage": 0.5})
    with pytest.raises(ValueError, match=r"lack \['coverage'\]"):
        g.score({"distance": 0.4})
    with pytest.raises(ValueError, match="scales > 0"):
        SignalGate(("distance",), (0.0,), (0.0,), (1.0,), 0.0, 0.0)


def test_the_distance_gate_is_the_cheap_cut_and_the_stored_gates_are_well_formed():
    assert DISTANCE_GATE.answers({"distance": CHEAP_CUT - 1e-4}) and not DISTANCE_GATE.answers({"distance": CHEAP_CUT})
    assert set(COMBINED_GATE.names) <= set(signals.NAMES) and RECOMMENDED_GATE in (DISTANCE_GATE, COMBINED_GATE)
    # Its weights point the way its signals do: a larger distance argues for refusing, a larger score for answering.
    pairs = zip(COMBINED_GATE.names, COMBINED_GATE.weights, strict=True)
    assert all((w > 0) == signals.HIGHER_ANSWERS[n] for n, w in pairs)
