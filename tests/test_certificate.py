"""privrl.certificate.make_certificate: public facts only, JSON-ready, ε from the ledger."""

import json
import math

import numpy as np
from dp_accounting import GaussianDpEvent

import privrl
from privrl.base import Estimator
from privrl.certificate import make_certificate
from privrl.privacy import Ledger, Neighboring, PrivacyBudget, PrivacyUnit


class Private(Estimator):
    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"

    def __init__(self, *, budget=PrivacyBudget(epsilon=1.0, delta=1e-5), clip=math.inf):
        self.budget = budget
        self.clip = clip

    def fit(self):
        self.privacy_ledger_ = Ledger([GaussianDpEvent(8.0)] * 3)
        self.sigma_x_ = 0.123  # data-dependent: must not appear in the certificate
        return self


def test_certificate_contents():
    est = Private().fit()
    cert = make_certificate(est, algorithm="Private", extra={"f_max": 2.0, "bad": np.float64(1)})
    text = json.dumps(cert, allow_nan=False)  # strict JSON
    assert "0.123" not in text and "sigma_x" not in text
    assert cert["format"] == "privrl.certificate" and cert["privrl_version"] == privrl.__version__
    assert cert["private"] is True and cert["guarantee"] == "(epsilon, delta)-DP"
    assert cert["privacy_unit"] == "trajectory" and cert["neighboring"] == "replace_one"
    assert cert["calibration"] == "sound"
    assert cert["budget"] == {"epsilon": 1.0, "delta": 1e-5}
    assert cert["params"]["clip"] == "inf"
    assert cert["epsilon_spent"] == est.privacy_spent(1e-5)
    assert Ledger.from_json(json.dumps(cert["ledger"])) == est.privacy_ledger_
    assert cert["extra"]["f_max"] == 2.0


def test_certificate_of_non_private_fit():
    est = Private(budget=PrivacyBudget.non_private()).fit()
    cert = make_certificate(est, algorithm="Private")
    assert cert["private"] is False and cert["epsilon_spent"] is None
    assert cert["budget"] == {"epsilon": "inf", "delta": 0.0}


# --------------------------------------------------------------------------- issue #13
import dp_accounting  # noqa: E402
import pytest  # noqa: E402

from privrl.certificate import ROUNDING, read_certificate, write_certificate  # noqa: E402
from privrl.errors import BudgetExceededError, InvalidDataError  # noqa: E402


class Releases(Estimator):
    """Releases given events; ``features`` is a public array parameter."""

    privacy_unit = PrivacyUnit.TRAJECTORY
    neighboring = Neighboring.REPLACE_ONE
    guarantee = "(epsilon, delta)-DP"

    def __init__(self, *, budget=None, events=(), features=None, guarantee_=None, certified=True):
        self.budget = budget
        self.events = events
        self.features = features
        self.guarantee_ = guarantee_
        self.certified = certified

    def fit(self):
        if self.guarantee_ is not None:
            self.guarantee = self.guarantee_
        if not self.certified:
            self.certified_ = False
        self.privacy_ledger_ = Ledger(list(self.events))
        return self


def test_public_arrays_are_stored_exactly_beside_the_certificate(tmp_path):
    features = np.random.default_rng(0).normal(size=(60, 40))  # repr would truncate 2400 entries
    est = Releases(budget=PrivacyBudget(epsilon=1.0, delta=1e-5), events=[GaussianDpEvent(8.0)],
                   features=features).fit()
    cert = make_certificate(est, algorithm="Releases", extra={"reward": np.arange(6.0).reshape(2, 3)})
    ref = cert["params"]["features"]
    assert ref["array"] == "params.features" and ref["shape"] == [60, 40] and ref["dtype"] == "<f8"
    assert "..." not in json.dumps(cert)
    write_certificate(tmp_path, cert)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["certificate.json", "certificate.npz"]
    back = read_certificate(tmp_path)
    np.testing.assert_array_equal(back.arrays["params.features"], features)  # bit for bit
    np.testing.assert_array_equal(back.arrays["extra.reward"], np.arange(6.0).reshape(2, 3))
    assert back == json.loads((tmp_path / "certificate.json").read_text())
    tampered = features.copy()
    tampered[0, 0] += 1e-12
    np.savez(tmp_path / "certificate.npz", **{"params.features": tampered, "extra.reward": back.arrays["extra.reward"]})
    with pytest.raises(InvalidDataError, match="does not match its SHA-256"):
        read_certificate(tmp_path)
    # a certificate without arrays leaves no stale sidecar behind
    write_certificate(tmp_path, make_certificate(Private().fit(), algorithm="Private"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["certificate.json"]


def test_guarantee_and_mechanism_are_what_ran():
    laplace = [dp_accounting.LaplaceDpEvent(10.0)] * 3 + [dp_accounting.SelfComposedDpEvent(
        dp_accounting.LaplaceDpEvent(20.0), 4)]
    pure = make_certificate(Releases(budget=PrivacyBudget(epsilon=0.5), events=laplace).fit(),
                            algorithm="R")
    assert pure["guarantee"] == "epsilon-DP" and pure["delta"] == 0.0
    assert pure["epsilon_spent"] == pytest.approx(0.3 + 0.2, rel=1e-15)  # basic composition, exactly
    assert pure["mechanisms"] == ["laplace"]
    gauss = make_certificate(Releases(budget=PrivacyBudget(epsilon=1.0, delta=1e-5),
                                      events=[GaussianDpEvent(8.0)]).fit(), algorithm="R")
    assert gauss["guarantee"] == "(epsilon, delta)-DP" and gauss["mechanisms"] == ["gaussian"]
    assert gauss["delta"] == 1e-5
    zcdp = make_certificate(Releases(budget=PrivacyBudget(rho=0.5), events=[GaussianDpEvent(2.0)] * 4,
                                     guarantee_="rho-zCDP").fit(), algorithm="R", mechanism="gaussian")
    assert zcdp["guarantee"] == "rho-zCDP" and zcdp["rho_spent"] == pytest.approx(0.5)
    assert zcdp["mechanism"] == "gaussian"
    for declared in ("JDP", "LDP"):
        cert = make_certificate(Releases(budget=PrivacyBudget(epsilon=1.0, delta=1e-5), events=[GaussianDpEvent(8.0)],
                                         guarantee_=declared).fit(), algorithm="R")
        assert cert["guarantee"] == declared
    none = make_certificate(Releases(budget=PrivacyBudget.non_private()).fit(), algorithm="R")
    assert none["guarantee"] == "non-private" and none["epsilon_spent"] is None and not none["private"]
    uncertified = make_certificate(Releases(budget=PrivacyBudget(epsilon=1.0, delta=1e-5),
                                            events=[GaussianDpEvent(8.0)], certified=False).fit(), algorithm="R")
    assert uncertified["guarantee"] == "non-private" and uncertified["uncertified"] is True
    assert uncertified["epsilon_spent"] is None and not uncertified["private"]


def test_spent_never_above_the_budget():
    # a budget of 0.1 split as 0.01 + 0.09 sums to 0.1 + 1.4e-17 in floating point
    events = [dp_accounting.LaplaceDpEvent(1 / 0.01), dp_accounting.LaplaceDpEvent(1 / (0.1 - 0.01))]
    assert 0.01 + 1 / (1 / (0.1 - 0.01)) > 0.1
    cert = make_certificate(Releases(budget=PrivacyBudget(epsilon=0.1), events=events).fit(), algorithm="R")
    assert cert["epsilon_spent"] == 0.1  # float rounding: reported as the budget, and said so
    assert cert["spent_rounded_from"]["epsilon_spent"] > 0.1
    tiny = PrivacyBudget(epsilon=1e-300)
    exact = make_certificate(Releases(budget=tiny, events=[dp_accounting.LaplaceDpEvent(1e300)]).fit(),
                             algorithm="R")
    assert exact["epsilon_spent"] == 1e-300 and "spent_rounded_from" not in exact
    over = 0.1 * (1 + 100 * ROUNDING)
    with pytest.raises(BudgetExceededError, match="more than its budget 0.1"):
        make_certificate(Releases(budget=PrivacyBudget(epsilon=0.1),
                                  events=[dp_accounting.LaplaceDpEvent(1 / over)]).fit(), algorithm="R")
    with pytest.raises(BudgetExceededError, match="rho"):
        make_certificate(Releases(budget=PrivacyBudget(rho=0.5), events=[GaussianDpEvent(0.9)],
                                  guarantee_="rho-zCDP").fit(), algorithm="R")
