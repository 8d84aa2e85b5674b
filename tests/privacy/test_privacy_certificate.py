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
    cert = make_certificate(est, algorithm="Private", delta=1e-5, extra={"f_max": 2.0, "bad": np.float64(1)})
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
    cert = make_certificate(est, algorithm="Private", delta=None)
    assert cert["private"] is False and cert["epsilon_spent"] is None
    assert cert["budget"] == {"epsilon": "inf", "delta": 0.0}
