"""The trivial baselines: what an answer that uses no data achieves (0 on the normalised scale).

* ``zero`` — policy evaluation: V̂ ≡ 0 and Ĵ = 0;
* ``logging-policy`` — offline learning: return the (public) logging policy; ``uniform-policy``
  — the uniform policy;
* ``uniform-play`` — online learning: a stuck learner that plays the uniform policy in every
  episode;
* ``random-play`` — continuous control: uniformly random actions;
* ``behaviour-policy`` — offline control: the (public, scripted) behaviour policy of the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from privrl.bench.entries import register_entry
from privrl.bench.spec import Entry, Fitted, Output, TaskInput

if TYPE_CHECKING:  # annotations only
    from privrl.privacy.budget import PrivacyBudget
    from privrl.privacy.noise import NoiseSource

__all__ = ["uniform_policy"]


def uniform_policy(task_input: TaskInput) -> np.ndarray:
    """The uniform policy ``(H, S, A)`` of a tabular task."""
    H, S, A = task_input["horizon"], task_input["n_states"], task_input["n_actions"]
    return np.full((H, S, A), 1.0 / A)


def _zero(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
          noise: NoiseSource | None = None) -> Fitted:
    values = np.zeros(int(task_input["n_states"]))
    return Fitted(Output(values=values, value=0.0, release=values))


def _logging(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
             noise: NoiseSource | None = None) -> Fitted:
    return Fitted(Output(policy=np.asarray(task_input["logging_policy"], dtype=float)))


def _uniform(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
             noise: NoiseSource | None = None) -> Fitted:
    return Fitted(Output(policy=uniform_policy(task_input)))


def _uniform_play(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
                  noise: NoiseSource | None = None) -> Fitted:
    K = int(task_input["n_episodes"])
    return Fitted(Output(policies=np.broadcast_to(uniform_policy(task_input), (K, *uniform_policy(task_input).shape))))


def _random_play(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
                 noise: NoiseSource | None = None) -> Fitted:
    assert task_input.make_env is not None, "a continuous-control task gives make_env"
    n_actions = int(task_input.make_env().action_space.n)
    gen = np.random.default_rng(rng.integers(2**63))
    return Fitted(Output(act=lambda obs: gen.integers(0, n_actions, size=len(obs))))


def _behaviour(task_input: TaskInput, budget: PrivacyBudget | None, rng: np.random.Generator,
               noise: NoiseSource | None = None) -> Fitted:
    policy = task_input["behaviour_policy"]
    gen = np.random.default_rng(rng.integers(2**63))
    return Fitted(Output(act=lambda obs: policy(obs, gen)))


register_entry(Entry("zero", "zero estimate", ("policy-evaluation",), "trivial", _zero,
                     description="V̂ ≡ 0, Ĵ = 0"))
register_entry(Entry("logging-policy", "logging policy", ("offline-learning",), "trivial", _logging,
                     description="returns the logging policy of the data"))
register_entry(Entry("uniform-policy", "uniform policy", ("offline-learning",), "trivial", _uniform,
                     description="returns the uniform policy"))
register_entry(Entry("uniform-play", "uniform play (stuck learner)", ("online-learning",), "trivial", _uniform_play,
                     description="plays the uniform policy in every episode"))
register_entry(Entry("random-play", "random play", ("continuous-control",), "trivial", _random_play,
                     description="uniformly random actions"))
register_entry(Entry("behaviour-policy", "behaviour policy", ("offline-control",), "trivial", _behaviour,
                     description="plays the behaviour policy of the data (with its exploration)"))
