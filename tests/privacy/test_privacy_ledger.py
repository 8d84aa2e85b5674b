"""Ledger: composition, grouping/merging (exactness), δ(ε), zCDP totals, accountant choice and
errors, serialisation round trips."""

import json
import math

import dp_accounting
import pytest
from dp_accounting import (
    ComposedDpEvent,
    GaussianDpEvent,
    LaplaceDpEvent,
    NonPrivateDpEvent,
    NoOpDpEvent,
    PoissonSampledDpEvent,
    SelfComposedDpEvent,
    ZCDpEvent,
)

from privrl.errors import InvalidParameterError
from privrl.privacy import ApproxDpEvent, Ledger, zcdp_to_approx_dp
from privrl.privacy.accounting import (
    delta_of,
    epsilon_of,
    event_from_json,
    event_to_json,
    gaussian_delta,
    group_events,
    make_accountant,
)


# --------------------------------------------------------------------------- empty / non-private
def test_empty_ledger_spends_nothing():
    for led in (Ledger(), Ledger([NoOpDpEvent()] * 3)):
        assert led.is_empty and not led.is_non_private
        assert led.epsilon(1e-5) == 0.0
        assert led.delta(0.5) == 0.0
        assert led.zcdp_rho() == 0.0


@pytest.mark.parametrize("event", [
    NonPrivateDpEvent(), GaussianDpEvent(0.0), LaplaceDpEvent(0.0), ApproxDpEvent(math.inf, 0.0),
    ZCDpEvent(math.inf), SelfComposedDpEvent(GaussianDpEvent(0.0), 3),
    ComposedDpEvent([GaussianDpEvent(1.0), NonPrivateDpEvent()]),
])
def test_noiseless_release_makes_the_ledger_non_private(event):
    led = Ledger([GaussianDpEvent(5.0), event])
    assert led.is_non_private
    assert led.epsilon(1e-5) == math.inf
    assert led.delta(10.0) == 1.0


def test_append_rejects_non_events():
    with pytest.raises(InvalidParameterError,
                       match=r"'event' parameter of Ledger.append must be a dp_accounting DpEvent"):
        Ledger().append(0.5)


def test_ledger_container_behaviour():
    led = Ledger()
    led.append(GaussianDpEvent(1.0))
    led.extend([LaplaceDpEvent(2.0)] * 2)
    assert len(led) == 3 and list(led) == [GaussianDpEvent(1.0)] + [LaplaceDpEvent(2.0)] * 2
    assert led.events == tuple(led)
    assert led == Ledger(led.events) and led != Ledger() and led != "ledger"
    assert "3 events" in repr(led)


# --------------------------------------------------------------------------- composition
def test_grouping_equals_explicit_composition():
    events = [GaussianDpEvent(3.0), LaplaceDpEvent(20.0), GaussianDpEvent(3.0), LaplaceDpEvent(20.0)]
    grouped = group_events(events)
    assert grouped == ComposedDpEvent([SelfComposedDpEvent(GaussianDpEvent(3.0), 2),
                                       SelfComposedDpEvent(LaplaceDpEvent(20.0), 2)])
    direct = make_accountant("pld")
    for e in events:
        direct.compose(e)
    assert Ledger(events).epsilon(1e-5, accountant="pld") == pytest.approx(direct.get_epsilon(1e-5), rel=1e-3)


def test_nested_events_are_flattened():
    nested = ComposedDpEvent([GaussianDpEvent(2.0),
                              SelfComposedDpEvent(ComposedDpEvent([LaplaceDpEvent(5.0), NoOpDpEvent()]), 3)])
    led = Ledger([nested, LaplaceDpEvent(5.0)])
    assert led.composed_event() == ComposedDpEvent([GaussianDpEvent(2.0), SelfComposedDpEvent(LaplaceDpEvent(5.0), 4)])
    flat = Ledger([GaussianDpEvent(2.0)] + [LaplaceDpEvent(5.0)] * 4)
    assert led.epsilon(1e-5) == pytest.approx(flat.epsilon(1e-5), rel=1e-12)


def test_unhashable_events_are_grouped():
    """ComposedDpEvent holds a list (unhashable); other events with lists must still group."""
    nested = ComposedDpEvent([GaussianDpEvent(1.0), ApproxDpEvent(0.1, 1e-7)])
    led = Ledger([nested, nested])
    assert len(led.composed_event().events) == 2
    assert math.isfinite(led.epsilon(1e-5))


@pytest.mark.parametrize("sigmas,counts", [([10.0], [100]), ([2.0, 3.0, 7.5], [1, 4, 9]), ([1.3, 0.9], [1, 1])])
def test_gaussian_merging_is_exact(sigmas, counts):
    """Σ_i count_i Gaussian(σ_i) ≡ one Gaussian with σ_eff = (Σ count_i/σ_i²)^(-1/2): the RDP curves
    coincide order by order (RDP is α/(2σ²)), and the ledger's PLD answer equals the exact curve."""
    events = [SelfComposedDpEvent(GaussianDpEvent(s), c) for s, c in zip(sigmas, counts)]
    sigma_eff = sum(c / s**2 for s, c in zip(sigmas, counts)) ** -0.5
    merged = Ledger(events).composed_event(merge_gaussians=True)
    assert merged == ComposedDpEvent([GaussianDpEvent(pytest.approx(sigma_eff, rel=1e-12))])

    unmerged = ComposedDpEvent(events)
    rdp_merged, rdp_unmerged = make_accountant("rdp"), make_accountant("rdp")
    rdp_merged.compose(merged)
    rdp_unmerged.compose(unmerged)
    assert rdp_merged._rdp == pytest.approx(rdp_unmerged._rdp, rel=1e-10)  # noqa: SLF001
    assert Ledger(events).epsilon(1e-5, accountant="rdp") == pytest.approx(epsilon_of(unmerged, 1e-5, "rdp"), rel=1e-10)

    exact = dp_accounting.get_epsilon_gaussian(sigma_eff, 1e-5)
    # certified upper bound on the exact curve: within 1e-10 relative above the root
    assert exact <= Ledger(events).epsilon(1e-5, accountant="pld") <= exact * (1 + 1e-9)
    # the unmerged PLD accountant agrees up to its (pessimistic) discretisation
    pld = epsilon_of(unmerged, 1e-5, "pld")
    assert exact - 1e-9 <= pld <= exact + 2e-3


def test_merging_keeps_other_events():
    events = [GaussianDpEvent(4.0), LaplaceDpEvent(30.0), GaussianDpEvent(8.0)]
    merged = Ledger(events).composed_event(merge_gaussians=True)
    assert merged.events[1] == LaplaceDpEvent(30.0)
    assert merged.events[0].noise_multiplier == pytest.approx((1 / 16 + 1 / 64) ** -0.5)
    assert Ledger(events).epsilon(1e-5) == pytest.approx(epsilon_of(ComposedDpEvent(events), 1e-5, "pld"), abs=2e-3)


def test_many_distinct_gaussians_are_fast_and_exact():
    """10,000 distinct multipliers: without merging that is 10⁴ PLD compositions."""
    sigmas = [50.0 + 0.01 * i for i in range(10_000)]
    led = Ledger(GaussianDpEvent(s) for s in sigmas)
    sigma_eff = sum(1 / s**2 for s in sigmas) ** -0.5
    assert led.epsilon(1e-5) == pytest.approx(dp_accounting.get_epsilon_gaussian(sigma_eff, 1e-5), rel=1e-9)


# --------------------------------------------------------------------------- δ(ε)
def test_delta_inverts_epsilon_gaussian():
    led = Ledger([GaussianDpEvent(10.0)] * 100)
    eps = led.epsilon(1e-5)
    assert led.delta(eps) == pytest.approx(1e-5, rel=1e-6)
    assert led.delta(eps + 0.5) < 1e-5 < led.delta(eps - 0.5)
    # PLD accountant path (no exact shortcut) agrees
    assert delta_of(SelfComposedDpEvent(GaussianDpEvent(10.0), 100), eps, "pld") == pytest.approx(1e-5, rel=1e-2)


def test_gaussian_delta_closed_form():
    for sigma, eps in [(1.0, 0.5), (3.7306316, 1.0), (0.5, 4.0)]:
        delta = gaussian_delta(sigma, eps)
        assert dp_accounting.get_epsilon_gaussian(sigma, delta) == pytest.approx(eps, rel=1e-8)
    assert gaussian_delta(1.0, math.inf) == 0.0
    assert gaussian_delta(1e-3, 0.0) == pytest.approx(1.0, abs=1e-12)
    assert gaussian_delta(1e3, 50.0) == 0.0


def test_delta_of_mixed_and_pure_ledgers():
    mixed = Ledger([GaussianDpEvent(5.0), LaplaceDpEvent(10.0)])
    eps = mixed.epsilon(1e-6)
    assert mixed.delta(eps) == pytest.approx(1e-6, rel=0.05)
    pure = Ledger([LaplaceDpEvent(10.0)] * 10)  # 1.0-DP by basic composition
    assert pure.delta(1.0) == 0.0
    assert 0 < pure.delta(0.5) < 1
    with pytest.raises(InvalidParameterError,
                       match=r"'epsilon' parameter of Ledger.delta must be a float in \[0.0, inf\)"):
        pure.delta(-1.0)


def test_pure_dp_ledger_never_exceeds_basic_composition():
    led = Ledger([LaplaceDpEvent(1.0)] * 2 + [ApproxDpEvent(0.3, 0.0)])
    for acc in ("pld", "rdp"):
        assert led.epsilon(1e-12, accountant=acc) <= 2.3 + 1e-12


# --------------------------------------------------------------------------- zCDP
def test_zcdp_rho_adds_up():
    led = Ledger([GaussianDpEvent(2.0), ZCDpEvent(0.1), SelfComposedDpEvent(GaussianDpEvent(4.0), 4),
                  ComposedDpEvent([ZCDpEvent(0.05), NoOpDpEvent()])])
    assert led.zcdp_rho() == pytest.approx(1 / 8 + 0.1 + 4 / 32 + 0.05)


def test_zcdp_rho_refuses_non_zcdp_events():
    with pytest.raises(InvalidParameterError, match="LaplaceDpEvent, which is not zCDP"):
        Ledger([GaussianDpEvent(1.0), LaplaceDpEvent(1.0)]).zcdp_rho()


def test_zcdp_ledger_matches_the_conversion():
    """A ρ-zCDP ledger reports exactly zcdp_to_approx_dp(ρ, δ): what approx_dp_to_zcdp calibrates."""
    for rho in (1e-4, 0.05, 2.0):
        led = Ledger([ZCDpEvent(rho / 2)] * 2)
        assert led.epsilon(1e-6) == pytest.approx(zcdp_to_approx_dp(rho, 1e-6), rel=1e-9)


# --------------------------------------------------------------------------- accountant choice
def test_auto_accountant_choice():
    gauss = Ledger([GaussianDpEvent(3.0)] * 4)
    assert gauss.epsilon(1e-5) == gauss.epsilon(1e-5, accountant="pld")
    zcdp = Ledger([ZCDpEvent(0.1), GaussianDpEvent(3.0)])  # PLD cannot do zCDP -> RDP
    assert zcdp.epsilon(1e-5) == pytest.approx(zcdp.epsilon(1e-5, accountant="rdp"))
    approx = Ledger([ApproxDpEvent(0.5, 1e-7), GaussianDpEvent(3.0)])  # RDP cannot do δ > 0 -> PLD
    assert approx.epsilon(1e-5) == approx.epsilon(1e-5, accountant="pld")


def test_clear_error_when_an_accountant_cannot_handle_an_event():
    with pytest.raises(InvalidParameterError,
                       match=r"The 'rdp' accountant cannot account for this ledger \(events: ApproxDpEvent"):
        Ledger([ApproxDpEvent(0.5, 1e-7)]).epsilon(1e-5, accountant="rdp")
    with pytest.raises(InvalidParameterError, match=r"The 'pld' accountant cannot account .*ZCDpEvent"):
        Ledger([ZCDpEvent(0.5)]).epsilon(1e-5, accountant="pld")
    with pytest.raises(InvalidParameterError,
                       match=r"No accountant can account for this ledger \(events: ApproxDpEvent, ZCDpEvent\)"):
        Ledger([ZCDpEvent(0.5), ApproxDpEvent(0.5, 1e-7)]).epsilon(1e-5)


def test_bad_query_arguments():
    led = Ledger([GaussianDpEvent(1.0)])
    with pytest.raises(InvalidParameterError,
                       match=r"'delta' parameter of Ledger.epsilon must be a float in \[0.0, 1.0\). Got 1.0"):
        led.epsilon(1.0)
    with pytest.raises(InvalidParameterError,
                       match=r"'accountant' parameter of Ledger.epsilon must be one of 'pld', 'rdp', 'auto'. "
                             r"Got 'exact'"):
        led.epsilon(1e-5, accountant="exact")
    with pytest.raises(InvalidParameterError, match="'accountant' parameter"):
        make_accountant("auto")


def test_approx_dp_event_accounting():
    """k-fold (ε0, δ0): never worse than basic composition (kε0, kδ0), and the PLD's worst-case
    (ε, δ) curve is used (advanced composition kicks in for large k)."""
    led = Ledger([ApproxDpEvent(0.5, 1e-7)] * 3)
    assert led.epsilon(3e-7 + 1e-12) <= 1.5 + 1e-3
    many = Ledger([ApproxDpEvent(0.01, 0.0)] * 1000)
    assert many.epsilon(1e-6) < 10.0 * 0.5  # advanced composition beats 1000·0.01 = 10 by far


@pytest.mark.parametrize("kwargs,match", [
    (dict(epsilon=-0.1, delta=0.0), r"'epsilon' parameter of ApproxDpEvent must be a float in \[0.0, inf\]"),
    (dict(epsilon=1.0, delta=1.5), r"'delta' parameter of ApproxDpEvent must be a float in \[0.0, 1.0\]. Got 1.5"),
    (dict(epsilon=float("nan"), delta=0.0), "'epsilon' parameter of ApproxDpEvent"),
])
def test_approx_dp_event_validation(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        ApproxDpEvent(**kwargs)


# --------------------------------------------------------------------------- serialisation
def test_json_round_trip_with_nested_events():
    events = [
        GaussianDpEvent(1.5),
        LaplaceDpEvent(2.0),
        ZCDpEvent(0.25),
        ApproxDpEvent(0.5, 1e-7),
        ApproxDpEvent(math.inf, 0.0),
        SelfComposedDpEvent(GaussianDpEvent(3.0), 7),
        ComposedDpEvent([GaussianDpEvent(1.0), SelfComposedDpEvent(ApproxDpEvent(0.1, 0.0), 3),
                         ComposedDpEvent([LaplaceDpEvent(4.0), NoOpDpEvent()])]),
        PoissonSampledDpEvent(0.01, GaussianDpEvent(1.1)),
        NonPrivateDpEvent(),
    ]
    led = Ledger(events)
    text = led.to_json()
    json.loads(text)  # valid JSON (no NaN/Infinity tokens)
    assert "Infinity" not in text
    back = Ledger.from_json(text)
    assert back == led
    assert back.events[6].events[1].event == ApproxDpEvent(0.1, 0.0)
    assert isinstance(back.events[6].events, list)


def test_json_round_trip_keeps_epsilon():
    led = Ledger([GaussianDpEvent(2.0)] * 5 + [ApproxDpEvent(0.2, 1e-8)])
    assert Ledger.from_json(led.to_json()).epsilon(1e-5) == led.epsilon(1e-5)


def test_event_json_helpers():
    e = SelfComposedDpEvent(ApproxDpEvent(0.5, 0.0), 2)
    assert event_from_json(event_to_json(e)) == e
    assert event_to_json(ApproxDpEvent(math.inf, 0.0))["epsilon"] == "inf"


@pytest.mark.parametrize("text,match", [
    ("not json", "Not a privrl ledger"),
    ("[1, 2]", "missing format marker"),
    ('{"format": "other"}', "missing format marker"),
    ('{"format": "privrl.Ledger", "events": [{"foo": 1}]}', "Not a serialised DpEvent"),
    ('{"format": "privrl.Ledger", "events": [{"module_name": "os", "class_name": "system"}]}', "Refusing"),
    ('{"format": "privrl.Ledger", "events": [{"module_name": "dp_accounting.dp_event", "class_name": "Nope"}]}',
     "Unknown DpEvent class"),
    ('{"format": "privrl.Ledger", "events": [{"module_name": "privrl.privacy.accounting", "class_name": "Ledger"}]}',
     "Unknown DpEvent class"),
    ('{"format": "privrl.Ledger", "events": [{"module_name": "privrl.privacy.accounting", '
     '"class_name": "ApproxDpEvent", "epsilon": -1, "delta": 0}]}', "'epsilon' parameter of ApproxDpEvent"),
])
def test_from_json_rejects_bad_input(text, match):
    with pytest.raises(InvalidParameterError, match=match):
        Ledger.from_json(text)


# --------------------------------------------------------------------------- Gaussian + others
@pytest.mark.parametrize("others", [
    [LaplaceDpEvent(20.0)] * 30,
    [ApproxDpEvent(0.5, 1e-6)] * 2,
    [PoissonSampledDpEvent(0.05, GaussianDpEvent(5.0))],  # asymmetric add/remove PLDs
])
def test_gaussian_plus_others_matches_the_pld_accountant(others):
    """The ledger (merged Gaussian; exact hockey stick with ApproxDpEvents) agrees with a PLD of the
    whole, unmerged ledger (both pessimistic or exact; they differ by the Gaussian's discretisation)."""
    events = [GaussianDpEvent(10.0)] * 4 + [GaussianDpEvent(20.0)] * 4 + others
    led = Ledger(events)
    ours = led.epsilon(1e-5)
    whole = ComposedDpEvent(events)
    assert ours == pytest.approx(epsilon_of(whole, 1e-5, "pld"), rel=1e-4, abs=1e-4)
    assert led.delta(ours) <= 1e-5 * (1 + 1e-6)
    assert led.delta(ours) == pytest.approx(delta_of(whole, ours, "pld"), rel=1e-2)
    assert led.delta(ours * 0.99) > 1e-5  # ε is (nearly) the smallest one


def test_gaussian_plus_others_extremes():
    led = Ledger([GaussianDpEvent(1000.0), LaplaceDpEvent(1000.0)])
    assert led.epsilon(0.5) == 0.0  # δ(0) already below the target
    assert 0 < led.epsilon(1e-12) < 0.02


def test_events_holding_lists_are_grouped_by_value():
    from dp_accounting import SingleEpochTreeAggregationDpEvent

    from privrl.privacy.accounting import compose_all

    tree = SingleEpochTreeAggregationDpEvent(2.0, [3, 4])
    with pytest.raises(TypeError):
        hash(tree)
    grouped = compose_all([tree, GaussianDpEvent(1.0), SingleEpochTreeAggregationDpEvent(2.0, [3, 4])])
    assert grouped == ComposedDpEvent([SelfComposedDpEvent(tree, 2), GaussianDpEvent(1.0)])


def test_tiny_gaussian_noise_with_other_events_gives_a_huge_finite_epsilon():
    eps = Ledger([GaussianDpEvent(1e-3), LaplaceDpEvent(1.0)]).epsilon(1e-5)
    assert 1e5 < eps < 1e7 and math.isfinite(eps)


def test_epsilon_at_delta_zero_is_the_pure_epsilon():
    """δ = 0 (the reporting δ of a pure budget): Σ ε_i for pure releases, exactly, under every
    accountant; ∞ as soon as one release is not pure DP (a Gaussian satisfies no finite ε at δ = 0,
    and dp-accounting's PLD says the same)."""
    from dp_accounting.pld import pld_privacy_accountant

    pure = Ledger([LaplaceDpEvent(2.0)] * 3 + [ApproxDpEvent(0.25, 0.0)])
    for accountant in ("auto", "pld", "rdp"):
        assert pure.epsilon(0.0, accountant=accountant) == 1.5 + 0.25
    mixed = Ledger([LaplaceDpEvent(2.0), GaussianDpEvent(10.0)])
    assert mixed.epsilon(0.0) == math.inf and mixed.epsilon(1e-5) < math.inf
    pld = pld_privacy_accountant.PLDAccountant()
    pld.compose(GaussianDpEvent(10.0))
    assert pld.get_epsilon(0.0) == math.inf
    assert Ledger().epsilon(0.0) == 0.0
