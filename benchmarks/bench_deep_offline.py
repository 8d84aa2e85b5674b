"""BC / DP-BC and IQL / DP-IQL (privrl.deep_offline) on locally generated CartPole-v1 and Acrobot-v1 behaviour
data, and TD3+BC / DP-TD3+BC on Pendulum-v1 (continuous actions), against the behaviour policy.

Rows (JSON lines): ``deep-offline-behaviour`` per environment (the behaviour data's mean return, and the
behaviour policy's mean return over ``--eval`` fresh episodes), and ``deep-offline-bc`` / ``deep-offline-iql``
for each ε ∈ {1, 3, 8} and ∞ (the non-private learner exactly) and seed: the fit's ``seconds`` and
``cpu_seconds`` (training; the PLD calibration apart: ``calibration_seconds``), the noise multiplier ``z``,
the ledger's ``epsilon_spent`` at δ = 1e-5, ``agreement`` (share of held-out behaviour states where the greedy
policy takes the scripted expert's noiseless action; for TD3+BC ``action_error``, the mean absolute difference
from the controller's noiseless torque) and ``return`` (mean return of the greedy policy over ``--eval`` fresh
episodes).

The data: ``--episodes`` episodes of the ε-greedy scripted expert (ε = 0.1; CartPole cut at 200 steps,
Acrobot at 500), seed 0. Quick by default (CPU is shared): CartPole, BC, 200 episodes, 100 steps at
q = 0.1, one seed. ``--learner iql --env cartpole,acrobot`` measures IQL (its default is 500 steps);
``--learner td3bc --env pendulum`` measures TD3+BC on the Pendulum swing-up data (noise std 0.3, 200 steps per
episode; its default is 1000 steps, MLPs of 64, 64 units, Adam 1e-3, public action bound 2);
``--paper`` runs 2000 episodes and 500 steps (minutes per fit).
Run: ``.venv/bin/python benchmarks/bench_deep_offline.py [--learner iql] [--env cartpole,acrobot]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import emit, measure  # noqa: E402

from privrl.deep_offline import DPBC, DPIQL, DPTD3BC  # noqa: E402
from privrl.deep_offline.continuous_data import (  # noqa: E402
    MAX_TORQUE,
    PENDULUM_OBS_BOUNDS,
    pendulum_dataset,
    pendulum_expert,
)
from privrl.deep_offline.datasets import (  # noqa: E402
    ACROBOT_OBS_BOUNDS,
    CARTPOLE_OBS_BOUNDS,
    acrobot_dataset,
    acrobot_expert,
    cartpole_dataset,
    cartpole_expert,
    mean_return,
)
from privrl.deep_offline.estimators import noise_multiplier  # noqa: E402
from privrl.privacy import PrivacyBudget  # noqa: E402

DELTA = 1e-5
#: per environment: Gymnasium id, data collector, episode cut, public observation bounds, scripted expert
ENVS = {"cartpole": ("CartPole-v1", cartpole_dataset, 200, CARTPOLE_OBS_BOUNDS, cartpole_expert),
        "acrobot": ("Acrobot-v1", acrobot_dataset, 500, ACROBOT_OBS_BOUNDS, acrobot_expert),
        "pendulum": ("Pendulum-v1", pendulum_dataset, 200, PENDULUM_OBS_BOUNDS, pendulum_expert)}
#: per learner: estimator, default steps, its own settings (TD3+BC: continuous actions in [-2, 2])
LEARNERS = {"bc": (DPBC, 100, {}), "iql": (DPIQL, 500, {}),
            "td3bc": (DPTD3BC, 1000, {"max_action": MAX_TORQUE, "hidden": (64, 64), "learning_rate": 1e-3})}
#: the behaviour policy's exploration (CartPole, Acrobot: ε-greedy 0.1; Pendulum: Gaussian torque noise 0.3)
BEHAVIOUR_NOISE = {"cartpole": 0.1, "acrobot": 0.1, "pendulum": 0.3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learner", choices=sorted(LEARNERS), default="bc")
    parser.add_argument("--env", default="cartpole", help="comma-separated: cartpole, acrobot, pendulum")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--steps", type=int, default=None, help="gradient steps (default: bc 100, iql 500, td3bc 1000)")
    parser.add_argument("--rate", type=float, default=0.1)
    parser.add_argument("--eval", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    parser.add_argument("--epsilons", default="1,3,8,inf", help="comma-separated (empty: no fits)")
    parser.add_argument("--paper", action="store_true", help="2000 episodes, 500 steps")
    parser.add_argument("--clip", type=float, default=1.0, help="clip_norm C")
    parser.add_argument("--lr", type=float, default=None, help="Adam step size (default: the learner's setting)")
    parser.add_argument("--policy-delay", type=int, default=None, help="TD3+BC's d (default: the estimator's, 2)")
    parser.add_argument("--alpha", type=float, default=None, help="TD3+BC's α (default: the estimator's, 2.5)")
    parser.add_argument("--hidden", default=None, help="hidden widths, e.g. 32,32 (default: the learner's setting)")
    parser.add_argument("--paired-behaviour", action="store_true",
                        help="also the behaviour policy's return per seed, on the episodes that seed's fits are "
                             "evaluated on (rows deep-offline-behaviour with a seed), for a two-sample comparison")
    args = parser.parse_args()
    args.steps = args.steps or LEARNERS[args.learner][1]
    if args.paper:
        args.episodes, args.steps = 2000, 500
    for env in args.env.split(","):
        env_id, collect, max_steps, _bounds, expert = ENVS[env]
        data = collect(args.episodes, max_steps=max_steps, rng=0)
        held_out = np.asarray(collect(20, max_steps=max_steps, rng=1).observations)
        behaviour = behaviour_return(expert(BEHAVIOUR_NOISE[env]), env, args.eval, max_steps)
        emit("deep-offline-behaviour", env=env, episodes=args.episodes, transitions=len(data.rewards),
             data_return=round(float(np.sum(data.rewards)) / data.n_episodes, 2), **{"return": behaviour},
             seconds=0.0, cpu_seconds=0.0)
        if args.paired_behaviour:
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                emit("deep-offline-behaviour", env=env, episodes=args.episodes, seed=seed, eval_rng=100 + seed,
                     **{"return": behaviour_return(expert(BEHAVIOUR_NOISE[env]), env, args.eval, max_steps,
                                                   seed=seed)}, seconds=0.0, cpu_seconds=0.0)
        for epsilon in (float(e) for e in args.epsilons.split(",") if e):
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                one_fit(env, data, held_out, epsilon, seed, args)


def behaviour_return(act, env: str, n_episodes: int, max_steps: int, seed: int | None = None) -> float:
    """The behaviour policy's mean return over ``n_episodes`` fresh episodes (``seed``: the episodes on which
    :func:`one_fit` evaluates that seed's fits, and its own exploration stream)."""
    rng = np.random.default_rng(7 if seed is None else (7, seed))
    policy = (lambda obs: np.array([[act(obs[0], rng)]])) if env == "pendulum" else \
        (lambda obs: np.array([act(obs[0], 0, rng)]))
    return mean_return(policy, ENVS[env][0], n_episodes, max_steps=max_steps, rng=99 if seed is None else 100 + seed)


def fidelity(env: str, est, held_out: np.ndarray, expert) -> dict[str, float]:
    """Agreement with the scripted expert's noiseless action on held-out states (TD3+BC: the mean absolute
    torque difference, ``action_error``)."""
    rng = np.random.default_rng(0)
    if env == "pendulum":
        act = expert(0.0)
        want = np.array([act(s, rng) for s in held_out])
        return {"action_error": round(float(np.mean(np.abs(est.predict(held_out)[:, 0] - want))), 4)}
    greedy = expert(0.0)
    return {"agreement": round(float(np.mean(est.predict(held_out) == [greedy(s, 0, rng) for s in held_out])), 4)}


def overrides(args: argparse.Namespace) -> dict[str, object]:
    """The learner settings given on the command line (``--lr``, ``--policy-delay``, ``--alpha``, ``--hidden``)."""
    given = {"learning_rate": args.lr, "policy_delay": args.policy_delay, "alpha": args.alpha,
             "hidden": None if args.hidden is None else tuple(int(h) for h in args.hidden.split(","))}
    return {k: v for k, v in given.items() if v is not None}


def one_fit(env: str, data, held_out: np.ndarray, epsilon: float, seed: int, args: argparse.Namespace) -> None:
    """Fit the private learner at ``epsilon`` (∞: the non-private one exactly) and emit its row."""
    env_id, _collect, max_steps, (low, high), expert = ENVS[env]
    budget = PrivacyBudget.non_private() if math.isinf(epsilon) else PrivacyBudget(epsilon=epsilon, delta=DELTA)
    cls, _steps, settings = LEARNERS[args.learner]
    est = cls(budget=budget, n_steps=args.steps, sampling_rate=args.rate, obs_low=low, obs_high=high,
              clip_norm=args.clip, **{**settings, **overrides(args)})
    calibration = measure(lambda: noise_multiplier(budget, args.rate, args.steps), memory=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        timing = measure(lambda: est.fit(data, rng=seed), memory=False)   # the calibration is cached now
    emit(f"deep-offline-{args.learner}", env=env, epsilon=epsilon, seed=seed, episodes=args.episodes,
         transitions=len(data.rewards), steps=args.steps, sampling_rate=args.rate, clip_norm=args.clip,
         **{k: list(v) if isinstance(v, tuple) else v for k, v in overrides(args).items()},
         z=round(est.noise_multiplier_, 4), epsilon_spent=round(est.privacy_spent(DELTA), 4),
         **fidelity(env, est, held_out, expert),
         **{"return": mean_return(est.predict, env_id, args.eval, max_steps=max_steps, rng=100 + seed)},
         calibration_seconds=round(calibration["seconds"], 3), seconds=timing["seconds"],
         cpu_seconds=timing["cpu_seconds"])


if __name__ == "__main__":
    main()
