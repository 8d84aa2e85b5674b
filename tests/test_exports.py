"""Ecosystem fit (issue #13 §5): every estimator and baseline is exported from ``privrl``, and
works with scikit-learn's ``clone``."""

import importlib
import inspect
import pkgutil

import pytest

import privrl
from privrl.base import Estimator

_SKIP_PREFIXES = ("privrl.testing",)


def _estimator_classes():
    found = {}
    for info in pkgutil.walk_packages(privrl.__path__, "privrl."):
        if info.name.startswith(_SKIP_PREFIXES) or any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError as exc:  # an optional extra missing in this environment
            pytest.skip(f"{info.name} needs an extra: {exc}")
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, Estimator) and obj.__module__ == module.__name__
                    and not name.startswith("_") and obj not in (Estimator, privrl.PrivateEstimator)):
                found[name] = obj
    return found


def test_every_estimator_is_exported_from_privrl():
    classes = _estimator_classes()
    assert len(classes) >= 15, sorted(classes)  # the four families' estimators and baselines
    missing = sorted(name for name in classes if name not in privrl.__all__)
    assert not missing, f"estimators not exported from privrl: {missing}"
    for name, cls in classes.items():
        assert getattr(privrl, name) is cls, name


def test_every_estimator_declares_its_parameters_and_clones():
    from sklearn.base import clone

    for name, cls in _estimator_classes().items():
        assert cls.params, f"{name} declares no parameters (privrl._params.Param)"
        required = {p.name: None for p in cls.params if p.required}
        kwargs = {k: (privrl.PrivacyBudget(epsilon=1.0, delta=1e-5) if k == "budget" else 0.5)
                  for k in required}
        est = cls(**kwargs)
        copy = clone(est)
        assert type(copy) is cls and copy.get_params().keys() == est.get_params().keys()
