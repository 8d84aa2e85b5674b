"""Plain-class benchmark plugins (no privrl base class) for the audit's tests: certainty-equivalence
planning on Laplace-noised transition counts, as ``examples/laplace_planner.py``, written against
the plugin protocol alone.

:class:`PlainLaplaceCounts` declares its release: its fit takes a ``noise`` source and draws every
privacy noise from it, and ``release_`` is the noisy count table. :class:`PlainLaplaceCountsTenth`
is its broken copy written by hand: a tenth of the noise, the same claim. :class:`OwnNoiseCounts`
declares nothing (it draws its noise from ``rng``): the audit can only refit it black-box.

Privacy unit: one trajectory, replaced; replacing it changes at most 2H counts by 1, so the
ℓ1-sensitivity is 2H and Laplace noise of scale 2H/ε per count is ε-DP (one ``LaplaceDpEvent(b/Δ)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from dp_accounting import LaplaceDpEvent

from privrl.envs.finite import backward_induction
from privrl.errors import InvalidParameterError


class PlainLaplaceCounts:
    """Planning on Laplace-noised transition counts, a plain class drawing its noise from ``noise``."""

    name = "plain-laplace-counts"
    settings = ("offline-learning",)
    privacy_unit = "trajectory"
    budgets = ("eps",)
    #: the noise actually drawn is the calibrated noise divided by this (1: honest)
    divisor = 1.0

    def __init__(self, *, budget: Any) -> None:
        if budget.is_zcdp:
            raise InvalidParameterError(f"The 'budget' parameter of {type(self).__name__} must be an (epsilon, delta) "
                                        f"budget. Got {budget!r} instead.")
        self.budget = budget

    def _counts(self, task_input: Any) -> np.ndarray:
        H, S, A = int(task_input["horizon"]), int(task_input["n_states"]), int(task_input["n_actions"])
        data = task_input.dataset
        counts = np.zeros((H, S, A, S))
        np.add.at(counts, (np.tile(np.arange(H), data.n_episodes), np.asarray(data.observations),
                           np.asarray(data.actions), np.asarray(data.next_observations)), 1.0)
        return counts

    def _plan(self, task_input: Any, noisy: np.ndarray, scale: float, sensitivity: float) -> None:
        S = noisy.shape[-1]
        weights = np.maximum(noisy, 0.0)
        totals = weights.sum(axis=-1, keepdims=True)
        P = np.where(totals > 0, weights / np.where(totals > 0, totals, 1.0), 1.0 / S)
        Q, _ = backward_induction(P, np.asarray(task_input["reward"], dtype=float))
        self.policy_ = Q.argmax(axis=-1)
        self.release_ = noisy
        self.dp_event_ = LaplaceDpEvent(scale / sensitivity)

    def fit(self, task_input: Any, *, rng: Any = None, noise: Any = None) -> PlainLaplaceCounts:
        counts = self._counts(task_input)
        sensitivity = 2.0 * int(task_input["horizon"])
        scale = sensitivity / float(self.budget.epsilon)
        # the benchmark always gives a noise source; rng only when run outside it
        draw = noise.laplace(counts.shape, scale / self.divisor) if noise is not None else \
            np.random.default_rng(rng).laplace(0.0, scale / self.divisor, counts.shape)
        self._plan(task_input, counts + draw, scale, sensitivity)
        return self


class PlainLaplaceCountsTenth(PlainLaplaceCounts):
    """The same with a tenth of its noise and the same claim: a broken plugin."""

    name = "plain-laplace-counts-tenth"
    divisor = 10.0


class OwnNoiseCounts(PlainLaplaceCounts):
    """The same drawing its noise from ``rng``: it declares no release the audit can reach."""

    name = "own-noise-counts"

    def fit(self, task_input: Any, *, rng: Any = None) -> OwnNoiseCounts:      # no noise keyword
        return super().fit(task_input, rng=rng)
