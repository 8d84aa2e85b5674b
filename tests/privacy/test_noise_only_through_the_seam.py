"""Issue #14 §1: nothing in the package draws noise except the pluggable noise sources.

Every continuous noise sampler that a DP mechanism could use (Gaussian, Laplace and their relatives,
in NumPy or torch) may be called only in ``privrl/privacy/noise.py`` (the sources) and
``privrl/privacy/release.py`` (which calls a source's own ``laplace``). A new ``rng.normal(...)`` in
an estimator, experiment or audit fails this test: route it through ``self._privacy(...)``'s
Releaser (or, for a non-privacy draw, add it here with the reason).
"""

import ast
from pathlib import Path

import privrl

SAMPLERS = {"normal", "standard_normal", "laplace", "randn", "multivariate_normal", "standard_cauchy",
            "gumbel", "exponential", "standard_exponential", "logistic", "gamma", "standard_gamma",
            "lognormal", "normal_", "randn_like"}
SEAM = {"privacy/noise.py", "privacy/release.py"}
#: modules whose draws are not privacy noise, with the reason
NOT_PRIVACY_NOISE = {
    "deep_offline/continuous_data.py": "the documented behaviour policy's Gaussian action noise (Pendulum data "
                                       "generation: it makes the logged data, it releases nothing)",
    "deep_offline/_td3bc_learner.py": "TD3's target policy smoothing noise (part of the learner's TD target, drawn "
                                      "from the fit's batch stream, independent of the data; the privacy noise "
                                      "goes through the releaser)",
}
#: receivers whose methods of these names are the seam itself (a Releaser's release) or build an
#: event without drawing (``privacy.events``)
SEAM_RECEIVERS = {"rel", "releaser", "events"}
ROOT = Path(privrl.__file__).resolve().parent


def _sampler_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [f"{path.relative_to(ROOT)}:{node.lineno} .{node.func.attr}(...)"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SAMPLERS
            and not (isinstance(node.func.value, ast.Name) and node.func.value.id in SEAM_RECEIVERS)]


def test_no_noise_sampler_is_called_outside_the_seam():
    offenders = [hit for path in sorted(ROOT.rglob("*.py"))
                 if path.relative_to(ROOT).as_posix() not in SEAM | set(NOT_PRIVACY_NOISE)
                 for hit in _sampler_calls(path)]
    assert offenders == []


def test_the_scan_sees_the_seam_itself():
    # the scan would find a draw if there were one: the sources do draw
    hits = _sampler_calls(ROOT / "privacy" / "noise.py")
    assert len(hits) >= 2
    assert any(".standard_normal(" in h for h in hits)
    assert _sampler_calls(ROOT / "privacy" / "release.py")
