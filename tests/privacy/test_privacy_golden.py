"""Golden accounting numbers (ARCHITECTURE.md §7, dp-accounting 0.6.0), the sensitivity convention,
and agreement with two independent accountants (prv-accountant, autodp)."""

import math

import dp_accounting
import pytest
from dp_accounting import GaussianDpEvent, LaplaceDpEvent, SelfComposedDpEvent
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from privrl.privacy import Ledger, calibrate_gaussian
from privrl.privacy.accounting import epsilon_of

NR = dp_accounting.NeighboringRelation


# --------------------------------------------------------------------------- golden numbers
def test_golden_100_fold_gaussian_exact():
    # 100 releases with multiplier 10 = one release with multiplier 10/√100 = 1: privrl's own exact
    # curve (gaussian_delta / gaussian_epsilon, Balle & Wang 2018 Thm. 8) gives the golden number
    from privrl.privacy.accounting import gaussian_delta, gaussian_epsilon

    eps = gaussian_epsilon(1.0, 1e-5)
    assert eps == pytest.approx(4.37718, abs=5e-6)
    assert gaussian_delta(1.0, eps) <= 1e-5 < gaussian_delta(1.0, eps * (1 - 1e-8))
    assert Ledger([GaussianDpEvent(10.0)] * 100).epsilon(1e-5) == pytest.approx(4.37718, abs=5e-6)


def test_golden_100_fold_gaussian_pld_accountant():
    eps = epsilon_of(SelfComposedDpEvent(GaussianDpEvent(10.0), 100), 1e-5, "pld")
    assert eps == pytest.approx(4.37718, abs=5e-6)
    assert eps >= dp_accounting.get_epsilon_gaussian(1.0, 1e-5) - 1e-9  # PLD is pessimistic


def test_golden_100_fold_gaussian_rdp_accountant():
    assert epsilon_of(SelfComposedDpEvent(GaussianDpEvent(10.0), 100), 1e-5, "rdp") == \
        pytest.approx(4.72851, abs=5e-6)


def test_golden_100_fold_gaussian_ledger():
    ledger = Ledger([GaussianDpEvent(10.0)] * 100)
    assert ledger.epsilon(1e-5, accountant="pld") == pytest.approx(4.37718, abs=5e-6)
    assert ledger.epsilon(1e-5) == pytest.approx(4.37718, abs=5e-6)  # auto -> PLD/exact
    assert ledger.epsilon(1e-5, accountant="rdp") == pytest.approx(4.72851, abs=5e-6)


def test_golden_single_gaussian_sigma():
    assert dp_accounting.get_sigma_gaussian(1.0, 1e-5) == pytest.approx(3.7306, abs=5e-5)
    sigma = calibrate_gaussian(1.0, 1e-5)
    assert sigma == pytest.approx(3.7306, abs=1e-4)
    assert sigma >= dp_accounting.get_sigma_gaussian(1.0, 1e-5)  # never below the exact σ


def test_golden_ten_laplace():
    ledger = Ledger([LaplaceDpEvent(10.0)] * 10)  # b/Δ = 10 -> ε = 0.1 each
    assert ledger.epsilon(1e-6) == pytest.approx(0.99898, abs=5e-6)
    assert ledger.epsilon(1e-6) < 1.0  # tighter than basic composition


# --------------------------------------------------------------------------- convention
@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_replace_one_relation_doubles_the_sensitivity(sigma):
    """dp-accounting's REPLACE_ONE relation on GaussianDpEvent(σ) gives the ε of sensitivity 2
    (N(0,σ²) vs N(2,σ²)), see upstream issue #378. privrl's Δ is already measured under the
    algorithm's own relation (replace-one: the worst replacement), so the ledger must account
    with ADD_OR_REMOVE_ONE, which gives the ε of sensitivity 1 — the true ε of N(0,σ²) vs N(Δ,σ²)
    with σ/Δ = the multiplier."""
    delta = 1e-5
    sens1 = dp_accounting.get_epsilon_gaussian(sigma, delta)
    sens2 = dp_accounting.get_epsilon_gaussian(sigma / 2.0, delta)

    replace = pld_privacy_accountant.PLDAccountant(neighboring_relation=NR.REPLACE_ONE)
    replace.compose(GaussianDpEvent(sigma))
    assert replace.get_epsilon(delta) == pytest.approx(sens2, rel=1e-3)
    assert replace.get_epsilon(delta) > 1.5 * sens1

    add_remove = pld_privacy_accountant.PLDAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    add_remove.compose(GaussianDpEvent(sigma))
    assert add_remove.get_epsilon(delta) == pytest.approx(sens1, rel=1e-3)

    # the ledger (and its RDP accountant) uses sensitivity 1
    assert Ledger([GaussianDpEvent(sigma)]).epsilon(delta) == pytest.approx(sens1, rel=1e-9)
    assert Ledger([GaussianDpEvent(sigma)]).epsilon(delta, accountant="rdp") == pytest.approx(
        epsilon_of(GaussianDpEvent(sigma), delta, "rdp"), rel=1e-12)
    rdp = rdp_privacy_accountant.RdpAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    rdp.compose(GaussianDpEvent(sigma))
    assert Ledger([GaussianDpEvent(sigma)]).epsilon(delta, accountant="rdp") == pytest.approx(
        rdp.get_epsilon(delta), rel=1e-12)


def test_mechanism_with_replace_one_sensitivity_matches_the_pair_of_gaussians():
    """A query whose replace-one sensitivity is Δ = 2, noise std σ = 6: the event carries 6/2 = 3
    and the ledger reports the ε of N(0, 36) vs N(2, 36), i.e. of multiplier 3."""
    from privrl.privacy import GaussianMechanism

    mech = GaussianMechanism(sensitivity=2.0, noise_std=6.0)
    _, event = mech.release(0.0, rng=0)
    assert event == GaussianDpEvent(3.0)
    exact = dp_accounting.get_epsilon_gaussian(3.0, 1e-5)
    # the ledger's exact Gaussian ε is a certified upper bound (bisection keeps the feasible end,
    # relative tolerance 1e-10), so it may sit just above dp-accounting's root-finder value
    assert exact <= Ledger([event]).epsilon(1e-5) <= exact * (1 + 1e-9)


# --------------------------------------------------------------------------- independent accountants
def _prv_epsilon(mechanisms, counts, delta):
    """(lower, estimate, upper) of prv-accountant (Gopi, Lee & Wutschitz 2021), eps_error 0.01."""
    pytest.importorskip("prv_accountant")
    from prv_accountant import PRVAccountant

    acc = PRVAccountant(prvs=mechanisms, max_self_compositions=counts, eps_error=0.01, delta_error=1e-10)
    return acc.compute_epsilon(delta=delta, num_self_compositions=counts)


def test_prv_accountant_agrees_on_gaussian_composition():
    pytest.importorskip("prv_accountant")
    from prv_accountant.privacy_random_variables import GaussianMechanism

    low, est, high = _prv_epsilon([GaussianMechanism(noise_multiplier=10.0)], [100], 1e-5)
    ours = Ledger([GaussianDpEvent(10.0)] * 100).epsilon(1e-5, accountant="pld")
    assert low - 1e-9 <= ours <= high + 1e-9  # prv's certified interval (±0.01)
    assert ours == pytest.approx(est, abs=1e-3)


def test_prv_accountant_agrees_on_laplace_composition():
    pytest.importorskip("prv_accountant")
    from prv_accountant.privacy_random_variables import LaplaceMechanism

    low, est, high = _prv_epsilon([LaplaceMechanism(mu=0.1)], [10], 1e-6)  # mu = Δ/b = ε
    ours = Ledger([LaplaceDpEvent(10.0)] * 10).epsilon(1e-6, accountant="pld")
    assert low - 1e-9 <= ours <= high + 1e-9
    assert ours == pytest.approx(est, abs=1e-3)


def test_prv_accountant_agrees_on_mixed_composition():
    pytest.importorskip("prv_accountant")
    from prv_accountant.privacy_random_variables import GaussianMechanism, LaplaceMechanism

    low, est, high = _prv_epsilon([GaussianMechanism(noise_multiplier=4.0), LaplaceMechanism(mu=0.05)],
                                  [20, 30], 1e-5)
    ours = Ledger([GaussianDpEvent(4.0)] * 20 + [LaplaceDpEvent(20.0)] * 30).epsilon(1e-5, accountant="pld")
    assert low - 1e-9 <= ours <= high + 1e-9
    assert ours == pytest.approx(est, abs=2e-3)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # autodp's internal scipy optimiser
def test_autodp_agrees_on_gaussian_rdp():
    """autodp's RDP composition (continuous orders) vs the ledger's RDP (dp-accounting's grid of
    orders): the grid can only be looser, and by less than 1e-3 here."""
    pytest.importorskip("autodp")
    from autodp.mechanism_zoo import GaussianMechanism
    from autodp.transformer_zoo import Composition

    theirs = Composition()([GaussianMechanism(sigma=10.0)], [100]).get_approxDP(1e-5)
    ours = Ledger([GaussianDpEvent(10.0)] * 100).epsilon(1e-5, accountant="rdp")
    assert theirs - 1e-9 <= ours <= theirs + 1e-3


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # autodp's internal scipy optimiser
def test_autodp_agrees_on_laplace_composition():
    pytest.importorskip("autodp")
    from autodp.mechanism_zoo import LaplaceMechanism
    from autodp.transformer_zoo import Composition

    theirs = Composition()([LaplaceMechanism(b=10.0)], [10]).get_approxDP(1e-6)
    ours = Ledger([LaplaceDpEvent(10.0)] * 10).epsilon(1e-6, accountant="pld")
    assert ours == pytest.approx(theirs, abs=1e-4)
    assert math.isfinite(ours)
