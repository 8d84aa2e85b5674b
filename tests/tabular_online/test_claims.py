"""The RiverSwim experiment's claim function returns each verdict its claims admit, from synthetic
measurements built to make them hold, fail or stay undecided (the stuck learner's rule included)."""

import math

import numpy as np
import pandas as pd

from privrl.tabular_online import experiments as ex
from privrl.tabular_online.engine import optimal_value

K = 2000
STUCK = K * ex.stuck_regret_per_episode("riverswim-6")


def _frame(regret, seeds=4, scale="paper"):
    """``regret(algorithm, privatizer, noise, epsilon, K)`` -> final regret; rows for the main grid."""
    rows = []
    settings = [s for s in ex.settings("quick") if s["instance"] == "riverswim-6"]
    for seed in range(seeds):
        for s in settings:
            eps = s.get("epsilon", math.nan)
            value = regret(s["algorithm"], s["privatizer"], s["noise"], eps, s["K"]) * (1 + 0.01 * seed)
            rows.append({**s, "rho": s.get("rho", math.nan), "seed": seed, "scale": scale,
                         "metric": "cumulative_regret", "episodes": s["K"], "step": s["K"], "value": value})
    return pd.DataFrame(rows)


def _verdicts(df):
    """The verdicts of the orderings (the burn-in claim of target (c) has its own test below)."""
    return {c.claim.split(" (")[0][:40]: c.verdict for c in ex.claims(df) if "leaves the stuck learner" not in c.claim}


def _good(alg, priv, noise, eps, k):
    """DP-UCBVI beats Private-UCB-VI, JDP beats LDP, BLT beats the tree, the privacy share falls."""
    if priv == "none":
        return 0.02 * k
    base = {"dp-ucbvi": 0.05, "private-ucb-vi": 0.08, "private-ucb-po": 0.09}[alg] * k
    base *= 2.0 if priv == "local" else 1.0
    base *= {"gaussian-blt": 0.9, "gaussian-tree": 1.0}.get(noise, 1.0)
    if priv == "local":                                # the LDP cost grows with K, the JDP cost does not
        return base + (20.0 if k < K else 500.0)
    return base + (200.0 if k < K else 50.0)


def test_every_claim_holds_on_good_measurements():
    verdicts = _verdicts(_frame(_good))
    assert set(verdicts.values()) == {"holds"}, verdicts
    assert len(verdicts) == 5


def test_claims_fail_when_the_orders_are_reversed():
    def bad(alg, priv, noise, eps, k):
        if priv == "none":
            return 0.02 * k
        base = {"dp-ucbvi": 0.08, "private-ucb-vi": 0.05, "private-ucb-po": 0.09}[alg] * k
        base *= 0.5 if priv == "local" else 1.0
        base *= {"gaussian-blt": 1.1}.get(noise, 1.0)
        if priv == "local":
            return base + (500.0 if k < K else 520.0)
        return base + (10.0 if k < K else 500.0)
    assert set(_verdicts(_frame(bad)).values()) == {"fails"}


def test_claims_are_undecided_when_the_learners_are_stuck_or_seeds_are_few():
    stuck = _verdicts(_frame(lambda alg, priv, noise, eps, k: 0.02 * k if priv == "none" else STUCK * k / K))
    assert [v for k, v in stuck.items() if not k.startswith("The JDP privacy share")] == ["undecided"] * 4
    few = ex.claims(_frame(_good, seeds=2))
    assert all(c.verdict == "undecided" for c in few if "privacy share" not in c.claim)
    quick = [c for c in ex.claims(_frame(_good, scale="quick")) if "privacy share" in c.claim or "grows" in c.claim]
    assert len(quick) == 2 and all(c.verdict == "undecided" and "paper scale" in c.reason for c in quick)


def _share_claim(df):
    return next(c for c in ex.claims(df) if "privacy share" in c.claim)


def test_the_privacy_share_claim_is_undecided_when_the_jdp_learner_is_stuck():
    """A JDP learner at the stuck learner's regret has a share that tends to 1 whatever the algorithm:
    the rule must not read it as a failure (nor a success)."""
    def stuck_jdp(alg, priv, noise, eps, k):
        return STUCK * k / K if priv == "central" and noise == "laplace" else _good(alg, priv, noise, eps, k)
    claim = _share_claim(_frame(stuck_jdp))
    assert claim.verdict == "undecided" and "no better than the stuck learner" in claim.reason
    assert _share_claim(_frame(_good)).verdict == "holds"


def _large_frame(regret, seeds=4):
    """Rows of the larger instance (random-20) only, at its quick K."""
    rows = []
    for seed in range(seeds):
        for s in [s for s in ex.settings("quick") if s["instance"] == "random-20"]:
            rows.append({**s, "rho": math.nan, "seed": seed, "scale": "paper", "metric": "cumulative_regret",
                         "episodes": s["K"], "step": s["K"], "value": regret(s) * (1 + 0.01 * seed)})
    return pd.DataFrame(rows)


def test_the_larger_instance_is_judged_against_uniform_play():
    k = max(s["K"] for s in ex.settings("quick") if s["instance"] == "random-20")
    uniform = k * ex.stuck_regret_per_episode("random-20")

    def learns(s):
        if s["privatizer"] == "none":
            return 0.1 * uniform
        order = {"dp-ucbvi": 0.3, "private-ucb-vi": 0.5, "private-ucb-po": 0.6}[s["algorithm"]]
        return uniform * order * (1.5 if s["privatizer"] == "local" else 1.0)
    claims = [c for c in ex.claims(_large_frame(learns)) if "random-20" in c.claim]
    assert [c.verdict for c in claims] == ["holds", "holds"]
    at_uniform = [c for c in ex.claims(_large_frame(lambda s: uniform)) if "random-20" in c.claim]
    assert all(c.verdict == "undecided" and "uniform play" in c.reason for c in at_uniform) and len(at_uniform) == 2


def test_the_larger_instance_is_time_homogeneous_and_its_trivial_answer_is_uniform_play():
    model = ex.instance_model("random-20")
    S, H = ex.INSTANCES["random-20"]
    P = np.asarray(model.P)
    assert P.shape == (H, S, 2, S) and np.array_equal(P, np.broadcast_to(P[0], P.shape))
    uniform = np.full((H, S, 2), 0.5)
    assert math.isclose(ex.stuck_regret_per_episode("random-20"), optimal_value(model) - model.value(uniform))
    assert ex.stuck_regret_per_episode("random-20") > 0.5


def _burn_in_claim(blt_regret, tree_regret):
    def regret(alg, priv, noise, eps, k):
        return {"gaussian-blt": blt_regret, "gaussian-tree": tree_regret}.get(noise, _good(alg, priv, noise, eps, k))
    return next(c for c in ex.claims(_frame(regret)) if "leaves the stuck learner" in c.claim)


def test_the_blt_ends_the_burn_in_where_the_tree_does_not():
    """Target (c) against the trivial answer: holds when only the tree is stuck, fails when the BLT is
    stuck too, undecided (the paired comparison decides) when both learn."""
    assert _burn_in_claim(0.6 * STUCK, STUCK).verdict == "holds"
    assert _burn_in_claim(STUCK, STUCK).verdict == "fails"
    both = _burn_in_claim(0.3 * STUCK, 0.6 * STUCK)
    assert both.verdict == "undecided" and "tree learns too" in both.reason
