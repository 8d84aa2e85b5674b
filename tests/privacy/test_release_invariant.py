"""The release invariant (privrl.privacy.draws): every number drawn belongs to a ledger event, in seeded and
in secure mode — and secure noise has the scale its ledger claims.

The contract test (``tests/test_contracts.py``, check ``release_invariant``) runs the invariant on every
private estimator and every declared option; here: the defect it was built for (secure noise drawn again
at every step of a pooled DP-APVI fit), the read guard of keyed streams, each check of
``release_problems``, and the statistical check of OpenDP's samplers with its 0.96 mutant."""

import math
import warnings

import numpy as np
import pytest

import privrl.privacy.secure as secure_module
from policy_evaluation.contract_cases import CASES as POLICY_EVALUATION_CASES
from privrl import InvalidParameterError, PrivacyBudget, UtilityWarning
from privrl.envs.random_tabular import covering_behaviour_policy, random_tabular_mdp
from privrl.errors import PrivacyError
from privrl.offline import DPAPVI
from privrl.privacy import ConstantNoise, Ledger, NoiseSource, NumpyNoise, Releaser, SecureNoise, events
from privrl.privacy.draws import HIDDEN_SCALE, NoiseDeclaration, release_problems, verify_releases
from privrl.privacy.noise import KeyedNoise

pytest.importorskip("opendp")

_MDP = random_tabular_mdp(n_states=5, n_actions=3, horizon=10, rng=3)
_DATA = _MDP.sample(covering_behaviour_policy(_MDP.optimal_policy(), 3), 400, rng=0)


def _stationary_fit(budget, secure=True, **kw):
    est = DPAPVI(budget=budget, stationary=True, secure=secure, **kw)
    with warnings.catch_warnings(), verify_releases():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(_DATA, _MDP.rewards, rng=None if secure else 0)
    return est


def _independent_releases(ledger, event_index):
    """How many independent copies of event ``event_index``'s release the source drew: the fresh draws at
    its (kind, scale) over the dimensions every event at that (kind, scale) declares."""
    decl = ledger.declarations[event_index]
    declared = sum(d.size for d in ledger.declarations if (d.kind, d.scale) == (decl.kind, decl.scale))
    return ledger.draws.fresh[(decl.kind, decl.scale)] / declared


@pytest.mark.parametrize("budget", [PrivacyBudget(epsilon=1.0, delta=1e-6), PrivacyBudget(rho=0.5),
                                    PrivacyBudget(epsilon=1.0)], ids=["approx", "zcdp", "laplace"])
def test_secure_stationary_fit_releases_its_pooled_step_once(budget):
    """The review's defect: with secure noise the one pooled step was drawn afresh at each of H steps
    (counts_[h] differed across h) while the ledger recorded one release — 2.5–5.5× the ε."""
    est = _stationary_fit(budget)
    counts = est.counts_
    for h in range(1, counts.shape[0]):
        np.testing.assert_array_equal(counts[h], counts[0])        # one release serves every step
    ledger = est.privacy_ledger_
    assert release_problems(ledger) == []
    stream = 1                                                      # events: n_sa, the n_sas stream
    assert _independent_releases(ledger, stream) == 1
    # the actual ε, from the number of independent releases drawn, is the ledger's
    actual = Ledger([e if i != stream else events.self_composed(e, round(_independent_releases(ledger, i)))
                     for i, e in enumerate(ledger.events)])
    delta = budget.delta or 1e-5
    assert actual.epsilon(delta) == pytest.approx(ledger.epsilon(delta), rel=1e-9)
    if budget.rho is None:
        assert est.privacy_spent() <= budget.epsilon * (1 + 1e-6)


def test_seeded_and_secure_stationary_fits_make_the_same_number_of_draws():
    seeded = _stationary_fit(PrivacyBudget(rho=0.5), secure=False).privacy_ledger_.draws.fresh
    secure = _stationary_fit(PrivacyBudget(rho=0.5)).privacy_ledger_.draws.fresh
    assert seeded == secure and sum(seeded.values()) == 5 * 3 + 5 * 3 * 5   # pooled n_sa, one step of n_sas


# ----------------------------------------------------------------------------- keyed streams
def test_a_keyed_block_read_twice_is_one_release_in_every_source():
    for source in (NumpyNoise(4), ConstantNoise(0.5)):
        stream = source.keyed()
        np.testing.assert_array_equal(stream.gaussian(3, 50, 2.0), stream.gaussian(3, 50, 2.0))
    kept = SecureNoise().keyed(reread=True)
    np.testing.assert_array_equal(kept.laplace(7, 20, 1.0), kept.laplace(7, 20, 1.0))
    once = SecureNoise().keyed()
    once.gaussian(0, 5, 1.0)
    with pytest.raises(PrivacyError, match="read twice"):
        once.gaussian(0, 5, 1.0)                                   # never a silent fresh draw
    with pytest.raises(InvalidParameterError, match="'key'"):
        kept.laplace(7, 20, 2.0)                                   # the same block at another scale


class _LegacyKeyed(NoiseSource):
    """A user's source written before ``reread``: its keyed blocks are fresh draws."""

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def _standard(self, kind, shape):
        return self.rng.standard_normal(shape)

    def keyed(self):
        return KeyedNoise(lambda kind, key, shape, scale: scale * self.rng.standard_normal(shape), reproducible=True)


def test_a_users_keyed_source_is_guarded_by_the_release_seam():
    rel = Releaser(_LegacyKeyed(), Ledger())
    stream = rel.gaussian_stream(sensitivity=1.0, std=1.0, size=10, reread=True)
    np.testing.assert_array_equal(stream.noise(0, 10), stream.noise(0, 10))
    once = Releaser(_LegacyKeyed(), Ledger()).gaussian_stream(sensitivity=1.0, std=1.0, size=10)
    once.noise(0, 10)
    with pytest.raises(PrivacyError):
        once.noise(0, 10)


# ----------------------------------------------------------------------------- the checks
def test_release_problems_sees_each_kind_of_mismatch():
    ledger = Ledger()
    rel = Releaser(NumpyNoise(0), ledger)
    rel.gaussian(np.zeros(6), sensitivity=2.0, std=3.0)
    assert release_problems(ledger) == []
    rel.noise.gaussian(4, 3.0)                                     # the same release drawn again
    assert any("10 numbers drawn for 6" in p for p in release_problems(ledger))

    ledger = Ledger()
    rel = Releaser(NumpyNoise(0), ledger)
    rel.noise.laplace(5, 1.0)                                      # drawn outside any event
    assert any("no ledger event declares" in p for p in release_problems(ledger))

    ledger = Ledger()
    rel = Releaser(NumpyNoise(0), ledger)
    rel.noise.gaussian(3, 2.0)
    rel.record(events.gaussian(1.0), noise=NoiseDeclaration("gaussian", 2.0, 3, sensitivity=1.0))  # σ/Δ = 2 drawn
    assert any("states gaussian scale 1" in p for p in release_problems(ledger))

    ledger = Ledger()
    Releaser(NumpyNoise(0), ledger).record(events.gaussian(1.0))   # a private event with no declaration
    assert any("no noise declaration" in p for p in release_problems(ledger))

    ledger = Ledger()
    rel = Releaser(NumpyNoise(0), ledger)
    rel.record(events.gaussian(1.0), noise=NoiseDeclaration("gaussian", 1.0, 4, sensitivity=1.0))
    assert any("declared, none drawn" in p for p in release_problems(ledger))


# ----------------------------------------------------------------------------- secure noise's scale
def secure_scale_errors(n_gaussian=100_000, n_laplace=200_000):
    """Relative error of the empirical std of OpenDP's draws against the std the ledger assumes, for
    Gaussian σ ∈ {0.5, 7} (1e5 draws: the std's SE is 0.22 %) and Laplace b ∈ {0.3, 4} (std b√2; 2·10⁵
    draws: SE 0.25 %). A correct sampler stays within 1 % (≥ 4 SE); one drawing 4 % less noise cannot."""
    source = SecureNoise()
    errors = {}
    for std in (0.5, 7.0):
        errors[("gaussian", std)] = float(np.std(source.gaussian(n_gaussian, std)) / std - 1.0)
    for b in (0.3, 4.0):
        errors[("laplace", b)] = float(np.std(source.laplace(n_laplace, b)) / (b * math.sqrt(2.0)) - 1.0)
    return errors


def assert_secure_scale(errors):
    bad = {k: round(v, 4) for k, v in errors.items() if abs(v) > 0.01}
    assert not bad, f"secure noise off its claimed scale by more than 1 %: {bad}"


def test_secure_noise_has_the_scale_the_ledger_claims():
    assert_secure_scale(secure_scale_errors())


def test_a_secure_sampler_drawing_4_percent_less_noise_fails_the_scale_check(monkeypatch):
    """The mutant the review found surviving every test: OpenDP's noise times 0.96."""
    sample = secure_module._sample
    monkeypatch.setattr(secure_module, "_sample", lambda kind, value, scale: sample(kind, value, 0.96 * scale))
    with pytest.raises(AssertionError, match="off its claimed scale"):
        assert_secure_scale(secure_scale_errors(n_gaussian=50_000, n_laplace=100_000))


def test_a_data_dependent_noise_scale_is_never_recorded():
    """DP-LSW's σ_X depends on the data: neither the draw log nor the declarations keep it."""
    case = next(c for c in POLICY_EVALUATION_CASES if c.name == "DPLSW")
    est = case.make(case.budget)
    case.fit(est, np.random.default_rng(0))
    ledger = est.privacy_ledger_
    assert set(ledger.draws.fresh) == {("gaussian", HIDDEN_SCALE)}
    assert [d.scale for d in ledger.declarations] == [HIDDEN_SCALE]
    assert release_problems(ledger) == []
