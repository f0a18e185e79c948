"""What the reader's trainer learns from and how it measures (issue 57): no torch needed for either."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cra.drivers.research.train_reader import groups_of, reranked_metrics


def _case(case_id: str, repo: str, gold_ranks: list[int], n: int = 5, kind: str = "file") -> list[dict]:
    """A case's rows: the first stage's n best (rank 1..n), gold at gold_ranks (0: a gold it did not bring in)."""
    n_gold, n_top = len(gold_ranks), sum(r > 0 for r in gold_ranks)
    rows = [
        {
            "case_id": case_id,
            "repo": repo,
            "kind": kind,
            "key": f"f{r}",
            "rank": r,
            "gold": r in gold_ranks,
            "n_gold": n_gold,
            "n_gold_top": n_top,
            "query": "q",
            "passage": f"p{r}",
        }
        for r in range(1, n + 1)
    ]
    rows += [
        {
            "case_id": case_id,
            "repo": repo,
            "kind": kind,
            "key": f"g{i}",
            "rank": 0,
            "gold": True,
            "n_gold": n_gold,
            "n_gold_top": n_top,
            "query": "q",
            "passage": "gold",
        }
        for i, r in enumerate(gold_ranks)
        if r == 0
    ]
    return rows


def test_training_groups_leave_the_heldout_repositories_and_the_cases_the_first_stage_missed_out():
    pairs = pd.DataFrame(
        _case("a", "ex/a", [2]) + _case("b", "ex/b", [0]) + _case("c", "ex/held", [1]) + _case("d", "ex/a", [3, 0])
    )
    groups, heldout = groups_of(pairs, {"ex/held"})
    assert set(heldout["case_id"]) == {"c"}
    cases = [{pairs.at[i, "case_id"] for i in gold + negatives} for gold, negatives in groups]
    assert cases == [{"a"}, {"d"}]  # b: its gold is not among the first stage's best
    gold, negatives = groups[1]
    assert set(pairs.loc[gold, "key"]) == {"f3", "g1"} and set(pairs.loc[negatives, "key"]) == {"f1", "f2", "f4", "f5"}


def test_reranking_is_measured_against_the_first_stage_and_a_gold_it_missed_stays_missed():
    frame = pd.DataFrame(_case("a", "ex/a", [3]) + _case("b", "ex/a", [0]) + _case("c", "ex/a", [2, 4]))
    perfect = np.where(frame["gold"], 1.0, 0.0)
    metrics = reranked_metrics(frame, perfect)
    assert metrics["file_acc@1_first"] == 0.0 and metrics["file_acc@5_first"] == round(2 / 3, 4)
    assert metrics["file_acc@1_model"] == round(1 / 3, 4)  # a: gold first; c: two gold files never both at 1
    assert metrics["file_acc@5_model"] == round(2 / 3, 4)  # b stays a miss: its gold is not in the first stage's best
    assert metrics["file_cases"] == 3
    symbols = pd.DataFrame(_case("s", "ex/a", [4], kind="symbol"))
    worst = -symbols["gold"].to_numpy(float)
    assert reranked_metrics(symbols, worst)["function_hit@5_model"] == 1.0  # 5 candidates: last is still in 5
    assert reranked_metrics(symbols, worst)["function_hit@1_model"] == 0.0


def test_the_screen_fits_the_mix_on_training_cases_and_measures_it_held_out():
    """`screen_reader`: a model whose score finds the gold gets a mix that follows it (files and symbols), and the
    held-out measure counts a gold the first stage missed as a miss, whatever the model says."""
    from cra.drivers.research.screen_reader import measured, mix_weights

    rng = np.random.default_rng(0)
    train = pd.DataFrame([row for i in range(40) for row in _case(f"t{i}", "ex/a", [int(rng.integers(2, 6))])])
    train["score"] = train["gold"].astype(float) + rng.normal(0, 0.1, len(train))
    weights = mix_weights(train)
    assert weights[1] > 0  # the score's z among the re-read carries weight
    held = pd.DataFrame(
        _case("h1", "ex/held", [4]) + _case("h2", "ex/held", [0]) + _case("h3", "ex/held", [5], kind="symbol")
    )
    held["score"] = held["gold"].astype(float)
    result = measured(held, weights).set_index("case_id")
    assert result.loc["h1", "first@1"] == 0 and result.loc["h1", "model@1"] == 1 and result.loc["h1", "mix@1"] == 1
    assert result.loc["h2", ["first@5", "model@5", "mix@5"]].eq(0).all()  # its gold was never among the re-read
    assert result.loc["h3", "mix@1"] == 1 and result.loc["h3", "first@1"] == 0
