"""The benchmark's tasks, one declaration each (registered in :mod:`privrl.registry`, kind
``bench-task``).

Policy evaluation (privacy unit: one trajectory, replaced):

* ``chain`` — the 40-state chain of Balle, Gomrokchi & Precup (2016, §6), γ = 0.99;
* ``frozenlake-pe`` — FrozenLake 8×8 (slippery), γ = 0.99, a logging policy half optimal, half uniform;
* ``clinic-pe`` — the clinic-shaped task :func:`privrl.envs.sparse_tabular` (750 states, 25 actions,
  H = 20, outcome reward), the clinicians' logging policy, γ = 1: the survival rate J.

Offline learning (one trajectory, replaced; the gap V* − V^π̂, exact):

* ``random-tabular`` — Qiao & Wang's random tabular MDP (S = 10, A = 5, H = 10);
* ``linear-mdp`` — Qiao & Wang's linear MDP (Appendix F, H = 20, d = 10);
* ``frozenlake`` — FrozenLake 8×8, H = 100; ``cliffwalking`` — CliffWalking, H = 50;
  ``taxi`` — Taxi (500 states), H = 50 (rewards mapped affinely to [0, 1]);
* ``clinic`` — the clinic-shaped task with its logging policy.

Online learning (one user = one episode, replaced; cumulative regret, exact):

* ``e1-hard`` — Zhou's E1, the hard instance (d = 5, H = 6); ``e2-random`` — E2, a random
  mixture (S = 6, A = 4, H = 5, d = 3); ``riverswim`` — RiverSwim (6 states, H = 20) as a linear
  mixture with one-hot features on the kernel's support (d1 = 22, d2 = 12); ``random-mdp-s20`` — the
  larger instance of the tabular online experiment, a time-homogeneous random MDP (S = 20, A = 2,
  H = 10, K = 4 000), for the tabular learners (UCBVI the reference).

Continuous control (the reward function, sup-norm neighbours; return of the released policy):

* ``centerwalk`` — Wang & Hegde's CenterWalk (T = 5000 samples); ``centerwalk-slow`` — the same
  walk with steps of at most 0.1 and 100-step episodes.

Offline control (one trajectory, added or removed; the learned policy's return, evaluated online):
``cartpole-offline``, ``acrobot-offline``, ``pendulum-offline`` (:mod:`privrl.bench.deep_tasks`).

Sizes are chosen so that the full suite runs in about 15 minutes on 2 cores (``make
bench-suite``); each task's ``notes`` say where that departs from its paper.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from privrl import registry as _registry
from privrl._rng import derive_seed
from privrl.audit.neighbors import replace_one_trajectory
from privrl.bench.deep_tasks import DEEP_OFFLINE_TASKS
from privrl.bench.instances import (
    PETruth,
    RewardShift,
    control_instance,
    offline_instance,
    online_instance,
    policy_evaluation_instance,
    rescaled,
    score_policy,
    score_regret,
    score_return,
    score_values,
    sparse_from_toy_text,
)
from privrl.bench.spec import Instance, Metric, Sweep, Task, TaskInput
from privrl.data import TrajectoryDataset
from privrl.envs.center_walk import CenterWalkEnv
from privrl.envs.chain import chain_values, sample_chain
from privrl.envs.linear import LinearMDP
from privrl.envs.linear_mixture import LinearMixtureMDP, hard_instance, random_mixture, tabular_as_mixture
from privrl.envs.random_tabular import covering_behaviour_policy, random_tabular_mdp
from privrl.envs.river_swim import river_swim
from privrl.envs.sparse_tabular import SparseTabularMDP, sparse_tabular
from privrl.envs.synthetic_linear import synthetic_behaviour_policy, synthetic_linear_mdp
from privrl.envs.tabular import TabularMDP, from_gymnasium_toy_text
from privrl.errors import InvalidDataError
from privrl.privacy.budget import Neighboring, PrivacyUnit
from privrl.tabular_online.experiments import instance_model as tabular_online_instance

__all__ = ["register_task", "get_task", "all_tasks", "pe_neighbour", "data_seed"]

_TRAJ = (PrivacyUnit.TRAJECTORY, Neighboring.REPLACE_ONE)
_USER = (PrivacyUnit.USER_EPISODE, Neighboring.REPLACE_ONE)
_REWARD = (PrivacyUnit.REWARD_FUNCTION, Neighboring.SUP_NORM_ONE)

RMSE = Metric("value_rmse", "RMSE of V̂ over the states", lower_is_better=True)
ERROR = Metric("value_error", "|Ĵ − J| (value at the start distribution)", lower_is_better=True)
GAP = Metric("gap", "suboptimality gap V* − V^π̂", lower_is_better=True)
REGRET = Metric("regret", "cumulative regret over K episodes", lower_is_better=True)
RETURN = Metric("return", "mean return of the released policy", lower_is_better=False)

#: the data-size sweep of the policy-evaluation and offline tasks (privrl.bench.sweep): n = 10³, 10⁴, 10⁵
DECADES = Sweep((1_000, 10_000, 100_000))


def register_task(task: Task) -> Task:
    """Register ``task`` under its name (kind ``bench-task``)."""
    return _registry.register("bench-task", task.name, task, stacklevel=2)


def get_task(name: str) -> Task:
    """The task ``name``; an unknown name is a one-line error listing the known ones."""
    return _registry.get("bench-task", name)


def all_tasks() -> dict[str, Task]:
    """Every registered task, in registration order."""
    return _registry.entries("bench-task")


# =========================================================================== policy evaluation
#: γ and the return bound of the discounted policy-evaluation tasks: one reward of at most 1 per
#: episode (entering the goal), so every return lies in [0, 1]
PE_GAMMA, PE_RETURN_BOUND = 0.99, 1.0


def pe_neighbour(dataset: TrajectoryDataset, return_bound: float) -> TrajectoryDataset:
    """A worst-case-style neighbour of on-policy logs: the episode of lowest return replaced by a
    one-step episode in the least-visited state that earns the largest reward the public bounds
    allow (it moves that state's first-visit mean, and J, by the most one trajectory can)."""
    obs = np.asarray(dataset.observations)
    starts = np.asarray(dataset.episode_starts)
    returns = np.add.reduceat(np.asarray(dataset.rewards, dtype=float), starts[:-1])
    if dataset.n_states is None or dataset.reward_bounds is None:
        raise InvalidDataError("pe_neighbour needs tabular data with declared reward bounds.")
    visits = np.bincount(obs, minlength=int(dataset.n_states)).astype(float)
    visits[visits == 0] = np.inf                      # a state never visited is not "rare": it is absent
    rare = int(np.argmin(visits)) if np.isfinite(visits).any() else 0
    reward = min(float(dataset.reward_bounds[1]), float(return_bound))
    episode: dict[str, object] = {"observations": [rare], "actions": [0], "rewards": [reward],
                               "next_observations": [rare]}
    if dataset.terminals is not None:
        episode["terminals"] = [False]
    other = TrajectoryDataset.from_episodes([episode], n_states=dataset.n_states, n_actions=dataset.n_actions,
                                            reward_bounds=dataset.reward_bounds)
    return dataset.replace_episode(int(np.argmin(returns)), other)


def _pe_audit(build, sizes: Mapping[str, int]):
    """The audit pair of a policy-evaluation task: its builder at the audit sizes, and the
    neighbour of :func:`pe_neighbour`."""
    def pair(rng: np.random.Generator) -> tuple[TaskInput, TaskInput]:
        inst = build(sizes, rng).input
        other = TaskInput(**{**inst.__dict__, "dataset": pe_neighbour(inst.dataset, inst["return_bound"])})
        return inst, other
    return pair


def _chain(sizes: Mapping[str, int], rng: np.random.Generator) -> Instance:
    N = int(sizes.get("n_states", 40))
    data = sample_chain(int(sizes["n"]), n_states=N, stay_probability=0.5, rng=rng)
    truth = PETruth(chain_values(N, 0.5, PE_GAMMA), np.full(N, 1.0 / N))
    return policy_evaluation_instance("chain", data, truth, gamma=PE_GAMMA, return_bound=PE_RETURN_BOUND)


@functools.lru_cache(maxsize=2)
def _frozenlake_pe_model(horizon: int) -> tuple[SparseTabularMDP, TabularMDP, np.ndarray]:
    import gymnasium as gym

    sparse, exact = sparse_from_toy_text(gym.make("FrozenLake-v1", map_name="8x8"), horizon=horizon)
    logging = covering_behaviour_policy(exact.optimal_policy(), exact.n_actions)
    return sparse, exact, logging


def _frozenlake_pe(sizes: Mapping[str, int], rng: np.random.Generator) -> Instance:
    sparse, exact, logging = _frozenlake_pe_model(int(sizes.get("max_steps", 1000)))
    data = sparse.sample(logging, int(sizes["n"]), rng=rng)
    truth = PETruth(exact.evaluate(logging), exact.initial)
    return policy_evaluation_instance("frozenlake-pe", data, truth, gamma=PE_GAMMA, return_bound=PE_RETURN_BOUND)


@functools.lru_cache(maxsize=2)
def _clinic_model(n_states: int, n_actions: int, horizon: int) -> SparseTabularMDP:
    return sparse_tabular(n_states=n_states, n_actions=n_actions, horizon=horizon, rng=0)


def _clinic_shape(sizes: Mapping[str, int]) -> tuple[int, int, int]:
    return int(sizes.get("n_states", 750)), int(sizes.get("n_actions", 25)), int(sizes.get("horizon", 20))


def _clinic_pe(sizes: Mapping[str, int], rng: np.random.Generator) -> Instance:
    model = _clinic_model(*_clinic_shape(sizes))
    data = model.sample(model.logging_policy, int(sizes["n"]), rng=rng)
    truth = PETruth(model.evaluate(model.logging_policy)[0], model.initial)
    return policy_evaluation_instance("clinic-pe", data, truth, gamma=1.0, return_bound=1.0, groups=model.groups,
                                      horizon=model.horizon, target="value")


_PE_NOTE = ("Values are first-visit discounted values (γ = 0.99) of the logging policy; a return is at most 1 "
            "(one reward of 1 on entering the goal), so F_max = 1 is public.")

register_task(Task(
    name="chain", dims={"S": 40, "A": 1}, title="Balle chain (40 states)", setting="policy-evaluation",
    source="the chain of Balle, Gomrokchi & Precup (2016, §6): stay with probability 0.5, reward 1 on entering "
           "the absorbing last state; start uniform",
    logging_policy="the chain itself (a Markov reward process: one action)",
    privacy_unit=_TRAJ[0], neighboring=_TRAJ[1], metric=RMSE, trivial="zero", reference="lsw",
    sizes={"quick": {"n": 1000, "seeds": 2}, "full": {"n": 10_000, "seeds": 5}},
    build=_chain, score=score_values("value_rmse"), optimum=0.0, optimum_label="exact values",
    audit_pair=_pe_audit(_chain, {"n": 100}), sweep=DECADES,
    notes=(_PE_NOTE, "One batch size (n = 10⁴ trajectories) instead of the paper's grid of batch sizes."),
))

register_task(Task(
    name="frozenlake-pe", dims={"S": 64, "A": 4}, title="FrozenLake 8×8, policy evaluation",
    setting="policy-evaluation",
    source="Gymnasium FrozenLake-v1 8×8 (slippery), exact kernel; episodes run until a hole or the goal "
           "(at most 1000 steps)",
    logging_policy="0.5 · optimal (γ = 0.99) + 0.5 · uniform",
    privacy_unit=_TRAJ[0], neighboring=_TRAJ[1], metric=RMSE, trivial="zero", reference="lsw",
    sizes={"quick": {"n": 1000, "seeds": 2}, "full": {"n": 10_000, "seeds": 5}},
    build=_frozenlake_pe, score=score_values("value_rmse"), optimum=0.0, optimum_label="exact values",
    audit_pair=_pe_audit(_frozenlake_pe, {"n": 100}), notes=(_PE_NOTE,), sweep=DECADES,
))

register_task(Task(
    name="clinic-pe", dims={"S": 750, "A": 25, "H": 20},
    title="Clinic (750 states): survival rate under current practice",
    setting="policy-evaluation",
    source="privrl.envs.sparse_tabular (750 states, 25 actions, H = 20, reward 1 on reaching success; "
           "public state groups: the 20 severity levels)",
    logging_policy="the clinicians' policy of the task (close to uniform over 4 admissible actions)",
    privacy_unit=_TRAJ[0], neighboring=_TRAJ[1], metric=ERROR, trivial="zero", reference="monte-carlo",
    sizes={"quick": {"n": 2000, "seeds": 2}, "full": {"n": 10_000, "seeds": 5}},
    build=_clinic_pe, score=score_values("value_error"), optimum=0.0, optimum_label="exact J",
    audit_pair=_pe_audit(_clinic_pe, {"n": 100}), sweep=DECADES,
    notes=("Episodic, undiscounted (γ = 1): J is the probability of success within 20 steps (0.760).",
           "LSW/LSL estimate values per severity level (one-hot features of the public groups); their Ĵ is "
           "the average under the (public) start distribution. DP Monte Carlo releases Ĵ alone."),
))


# =========================================================================== offline learning
def _offline_audit(build, sizes: Mapping[str, int]):
    """The audit pair of an offline task: its builder at the audit sizes and a replaced trajectory
    through the rarest state-action pairs earning the largest reward
    (:func:`~privrl.audit.neighbors.replace_one_trajectory`)."""
    def pair(rng: np.random.Generator) -> tuple[TaskInput, TaskInput]:
        inst = build(sizes, rng).input
        other, _, _ = replace_one_trajectory(inst.dataset, strategy="rarest", rng=rng)
        return inst, TaskInput(**{**inst.__dict__, "dataset": other})
    return pair


def _one_hot(S: int, A: int) -> np.ndarray:
    return np.eye(S * A).reshape(S, A, S * A)


@functools.lru_cache(maxsize=2)
def _random_tabular(S: int, A: int, H: int) -> tuple[LinearMDP, np.ndarray]:
    mdp = random_tabular_mdp(n_states=S, n_actions=A, horizon=H, rng=0)
    return mdp, covering_behaviour_policy(mdp.optimal_policy(), A)


def _random_tabular_task(sizes: Mapping[str, int], rng: np.random.Generator) -> Instance:
    mdp, mu = _random_tabular(10, 5, 10)
    return offline_instance("random-tabular", mdp, mu, int(sizes["n"]), rng, features=_one_hot(10, 5))


@functools.lru_cache(maxsize=2)
def _linear_mdp(H: int) -> LinearMDP:
    return synthetic_linear_mdp(horizon=H, rng=0)


def _linear_mdp_task(sizes: Mapping[str, int], rng: np.random.Generator) -> Instance:
    mdp = _linear_mdp(20)
    return offline_instance("linear-mdp", mdp, synthetic_behaviour_policy(), int(sizes["n"]), rng,
                            features=mdp.features)


@functools.lru_cache(maxsize=4)
def _toy_text(env_id: str, horizon: int, low: float, high: float) -> tuple[Any, np.ndarray]:
    import gymnasium as gym

    kwargs: dict[str, Any] = {"map_name": "8x8"} if env_id.startswith("FrozenLake") else {}
    model = from_gymnasium_toy_text(gym.make(env_id, **kwargs), horizon=horizon)
    if (low, high) != (0.0, 1.0):
        model = rescaled(model, low, high, name=f"{env_id} (H={horizon}, rewards mapped to [0, 1])")
    return model, covering_behaviour_policy(model.optimal_policy(), model.n_actions)


def _toy_text_task(name: str, env_id: str, low: float = 0.0, high: float = 1.0):
    def build(sizes: Mapping[str, int], rng: np.random.Generator) -> Instance:
        model, mu = _toy_text(env_id, int(sizes["horizon"]), low, high)
        return offline_instance(name, model, mu, int(sizes["n"]), rng)
    return build


def _clinic_offline(sizes: Mapping[str, int], rng: np.random.Generator) -> Instance:
    model = _clinic_model(*_clinic_shape(sizes))
    assert model.logging_policy is not None, "the clinic model has its clinicians' logging policy"
    return offline_instance("clinic", model, model.logging_policy, int(sizes["n"]), rng)


_COVER = "0.5 · optimal + 0.5 · uniform (every state-action pair covered)"
_OFFLINE_NOTE = "Every entry uses the 'practical' constants (privacy-neutral utility presets) where it has them."

register_task(Task(
    name="random-tabular", dims={"S": 10, "A": 5, "H": 10, "d": 50}, title="Random tabular MDP (Qiao & Wang)",
    setting="offline-learning",
    source="privrl.envs.random_tabular_mdp: S = 10, A = 5, H = 10, Dirichlet(0.5) transitions, U[0, 1] rewards "
           "(instance 0)",
    logging_policy=_COVER, privacy_unit=_TRAJ[0], neighboring=_TRAJ[1], metric=GAP, trivial="logging-policy",
    reference="apvi", sizes={"quick": {"n": 300, "seeds": 2}, "full": {"n": 1000, "seeds": 5}},
    build=_random_tabular_task, score=score_policy, optimum=0.0, optimum_label="optimal policy",
    audit_pair=_offline_audit(_random_tabular_task, {"n": 30}), sweep=DECADES,
    notes=(_OFFLINE_NOTE, "The paper has no tabular experiment; this is the instance of privrl's."),
))

register_task(Task(
    name="linear-mdp", dims={"S": 2, "A": 100, "H": 20, "d": 10}, title="Linear MDP (Qiao & Wang, App. F)",
    setting="offline-learning",
    source="privrl.envs.synthetic_linear_mdp: 2 states, 100 actions, H = 20, d = 10 (instance 0)",
    logging_policy="action 0 with probability 0.6, the others uniformly (the paper's)",
    privacy_unit=_TRAJ[0], neighboring=_TRAJ[1], metric=GAP, trivial="logging-policy", reference="vapvi",
    sizes={"quick": {"n": 300, "seeds": 2}, "full": {"n": 1000, "seeds": 5}},
    build=_linear_mdp_task, score=score_policy, optimum=0.0, optimum_label="optimal policy",
    audit_pair=_offline_audit(_linear_mdp_task, {"n": 30}), sweep=DECADES,
    notes=(_OFFLINE_NOTE, "One data size (K = 1000) instead of the paper's grid; no split (as in the paper's "
           "experiments)."),
))

def _gym_offline(name: str, env_id: str, *, rewards: tuple[float, float] = (0.0, 1.0),
                 audit_sizes: Mapping[str, int], **fields: Any) -> Task:
    """An offline task on a Gymnasium toy-text environment's exact kernel: the covering logging
    policy, one trajectory per user, the gap to the optimum against the logging policy and APVI."""
    build = _toy_text_task(name, env_id, *rewards)
    return Task(name=name, setting="offline-learning", logging_policy=_COVER, privacy_unit=_TRAJ[0],
                neighboring=_TRAJ[1], metric=GAP, trivial="logging-policy", reference="apvi", build=build,
                score=score_policy, optimum=0.0, optimum_label="optimal policy",
                audit_pair=_offline_audit(build, audit_sizes), **fields)


register_task(_gym_offline(
    "frozenlake", "FrozenLake-v1", audit_sizes={"n": 30, "horizon": 10},
    dims={"S": 64, "A": 4, "H": 100}, title="FrozenLake 8×8, offline",
    source="Gymnasium FrozenLake-v1 8×8 (slippery), exact kernel, H = 100",
    sizes={"quick": {"n": 2000, "horizon": 100, "seeds": 2}, "full": {"n": 10_000, "horizon": 100, "seeds": 5}},
    notes=(_OFFLINE_NOTE,), env={"id": "FrozenLake-v1", "map_name": "8x8"}, sweep=DECADES,
))

register_task(_gym_offline(
    "cliffwalking", "CliffWalking-v1", rewards=(-100.0, 0.0), audit_sizes={"n": 30, "horizon": 10},
    dims={"S": 48, "A": 4, "H": 50}, title="CliffWalking, offline",
    source="Gymnasium CliffWalking-v1, exact kernel, H = 50; rewards −100..0 mapped to [0, 1]",
    sizes={"quick": {"n": 300, "horizon": 50, "seeds": 2}, "full": {"n": 1000, "horizon": 50, "seeds": 5}},
    notes=(_OFFLINE_NOTE, "Rewards r ↦ (r + 100)/100, so gaps are in units of 100 reward points; the goal "
           "earns the image of 0 at every remaining step."), sweep=DECADES,
))

register_task(_gym_offline(
    "taxi", "Taxi-v4", rewards=(-10.0, 20.0), audit_sizes={"n": 20, "horizon": 1}, audit_trials=100,
    dims={"S": 500, "A": 6, "H": 50}, title="Taxi (500 states), offline",
    source="Gymnasium Taxi-v4 (Taxi-v3's successor), exact kernel, H = 50; rewards −10..20 mapped to [0, 1]",
    sizes={"quick": {"n": 1000, "horizon": 10, "seeds": 2}, "full": {"n": 10_000, "horizon": 50, "seeds": 2}},
    notes=(_OFFLINE_NOTE, "Rewards r ↦ (r + 10)/30; a delivered passenger earns the image of 0 at every remaining "
           "step.",
           "2 seeds: DP-APVI's noisy count table has H·S·A·S = 7.5·10⁷ cells (a fit takes 2 s, 15 s with the paper "
           "calibration). The audit instance has n = 20 episodes of H = 1 step and 100 fits per input (a refit on "
           "the 500-state table takes 0.05-0.3 s)."),
    sweep=Sweep((1_000, 10_000, 100_000), seeds=2, note="2 seeds: a DP-APVI fit costs the same at every n (its "
                "noisy count table has H·S·A·S = 7.5·10⁷ cells whatever the data)."),
))

register_task(Task(
    name="clinic", dims={"S": 750, "A": 25, "H": 20}, title="Clinic (750 states), offline", setting="offline-learning",
    source="privrl.envs.sparse_tabular (750 states, 25 actions, H = 20, reward 1 on reaching success)",
    logging_policy="the clinicians' policy of the task (close to uniform over 4 admissible actions)",
    privacy_unit=_TRAJ[0], neighboring=_TRAJ[1], metric=GAP, trivial="logging-policy", reference="apvi",
    sizes={"quick": {"n": 2000, "n_states": 250, "seeds": 2}, "full": {"n": 10_000, "seeds": 3}},
    build=_clinic_offline, score=score_policy, optimum=0.0, optimum_label="optimal policy",
    audit_pair=_offline_audit(_clinic_offline, {"n": 20, "n_states": 62, "n_actions": 5, "horizon": 5}),
    notes=(_OFFLINE_NOTE, "n = 10⁴ episodes (the real-size target is 10⁵); the public reward table (expected "
           "outcome reward) is given to the learners. The audit uses a 62-state instance of the generator."),
    sweep=Sweep((1_000, 10_000, 100_000), seeds=1, note="1 seed: a DP-APVI fit costs the same at every n (its "
                "noisy count table has H·S·A·S = 2.8·10⁸ cells whatever the data; 5 s a fit, 15 s with the paper "
                "calibration): 60-70 CPU-s per size and seed. With 2 seeds the clinic alone took 385 of the sweep's "
                "681 CPU-s of cells, which is more than 6 minutes of wall time on 2 cores once the runner's overhead "
                "is counted."),
))


# =========================================================================== online learning
def _online(name: str, make_model):
    def build(sizes: Mapping[str, int], rng: np.random.Generator) -> Instance:
        return online_instance(name, make_model(sizes, rng), int(sizes["K"]))
    return build


@functools.lru_cache(maxsize=2)
def _river_model(horizon: int) -> LinearMixtureMDP:
    return tabular_as_mixture(river_swim(6, horizon), support="reachable")


_ONLINE_NOTE = ("LinOpt entries use the 'practical' constants; regret is the exact pseudo-regret of the policies "
                "played. The uniform-play baseline never learns (a stuck learner).")

register_task(Task(
    name="e1-hard", dims={"S": 8, "A": 16, "H": 6, "d": 5}, title="Zhou E1: hard linear mixture (d = 5, H = 6)",
    setting="online-learning",
    source="privrl.envs.linear_mixture.hard_instance (Zhou, Gu & Szepesvári 2021's lower-bound instance; signs "
           "of μ drawn per seed, gap set for K)",
    logging_policy="none (online: the learner's own policy)", units="users",
    privacy_unit=_USER[0], neighboring=_USER[1], metric=REGRET, trivial="uniform-play", reference="ucrl-vtr",
    sizes={"quick": {"K": 300, "seeds": 2}, "full": {"K": 2000, "seeds": 5}},
    build=_online("e1-hard", lambda sizes, rng: hard_instance(5, 6, int(sizes["K"]), rng=rng)),
    score=score_regret, optimum=0.0, optimum_label="zero regret",
    notes=(_ONLINE_NOTE, "K = 2000 episodes (the paper's analysis: K → ∞; privrl's paper scale 10⁵)."),
))

register_task(Task(
    name="e2-random", dims={"S": 6, "A": 4, "H": 5, "d": 3},
    title="Zhou E2: random linear mixture (S = 6, A = 4, H = 5, d = 3)",
    setting="online-learning",
    source="privrl.envs.linear_mixture.random_mixture (Dirichlet(0.3) base MDPs, Bernoulli rewards; a new instance "
           "per seed)",
    logging_policy="none (online: the learner's own policy)", units="users",
    privacy_unit=_USER[0], neighboring=_USER[1], metric=REGRET, trivial="uniform-play", reference="ucrl-vtr",
    sizes={"quick": {"K": 300, "seeds": 2}, "full": {"K": 2000, "seeds": 5}},
    build=_online("e2-random", lambda sizes, rng: random_mixture(6, 4, 5, 3, 3, rng=rng)),
    score=score_regret, optimum=0.0, optimum_label="zero regret",
    notes=(_ONLINE_NOTE, "K = 2000 episodes (privrl's paper scale: 10⁵)."),
))

register_task(Task(
    name="riverswim", dims={"S": 6, "A": 2, "H": 20, "d": 22}, title="RiverSwim (6 states, H = 20) as a linear mixture",
    setting="online-learning",
    source="privrl.envs.river_swim (Strehl & Littman 2008; Osband et al. 2013's rewards), cast by "
           "tabular_as_mixture with one-hot features on the kernel's support (d1 = 22, d2 = 12)",
    logging_policy="none (online: the learner's own policy)", units="users",
    privacy_unit=_USER[0], neighboring=_USER[1], metric=REGRET, trivial="uniform-play", reference="ucrl-vtr",
    sizes={"quick": {"K": 100, "seeds": 2}, "full": {"K": 1000, "seeds": 3}},
    build=_online("riverswim", lambda sizes, rng: _river_model(20)),
    score=score_regret, optimum=0.0, optimum_label="zero regret",
    notes=(_ONLINE_NOTE, "Episodic RiverSwim (start in state 0, 20 steps) rather than the average-reward one; "
           "K = 1000 episodes and 3 seeds (the learners' cost grows as d1³ per step)."),
))


#: the tabular online experiment's larger instance (privrl.tabular_online.experiments)
RANDOM_MDP_INSTANCE = "random-20"


@functools.lru_cache(maxsize=1)
def _random_mdp_model() -> LinearMixtureMDP:
    return tabular_as_mixture(tabular_online_instance(RANDOM_MDP_INSTANCE), support="reachable")


register_task(Task(
    name="random-mdp-s20", dims={"S": 20, "A": 2, "H": 10, "d": 800},
    title="Random MDP (S = 20, A = 2, H = 10), time-homogeneous", setting="online-learning",
    source="the larger instance of the tabular online experiment (Qiao & Wang 2023; Chowdhury & Zhou 2022): one "
           "step's kernel of privrl.envs.random_tabular_mdp (S = 20, A = 2, Dirichlet(0.5) transitions, U[0, 1] "
           "rewards, uniform start, instance 0) at every step, cast by tabular_as_mixture (d1 = 800, d2 = 40)",
    logging_policy="none (online: the learner's own policy)", units="users",
    privacy_unit=_USER[0], neighboring=_USER[1], metric=REGRET, trivial="uniform-play", reference="ucbvi",
    sizes={"quick": {"K": 500, "seeds": 2}, "full": {"K": 4000, "seeds": 5}},
    build=_online("random-mdp-s20", lambda sizes, rng: _random_mdp_model()),
    score=score_regret, optimum=0.0, optimum_label="zero regret",
    notes=("The tabular learners only (counts pooled over the steps, practical constants): the LinOpt learners' "
           "cost grows as d1³ per step. The reference (100) is the non-private UCBVI; the uniform-play baseline "
           "never learns (a stuck learner).",
           "K = 4000 episodes as in the experiment, which runs ε = 1 only; 5 seeds (the experiment: 20)."),
))


# =========================================================================== continuous control
#: the evaluation episodes of a control task: this many, seeded from (task, seed)
N_EVAL_EPISODES = 100


#: the samples T of the control tasks' audit instances: every learner makes noisy updates within them
#: (DP-SGD's first update needs a full batch of 64)
AUDIT_SAMPLES = 128


def _control(name: str, **env_kwargs: Any):
    def make_env() -> CenterWalkEnv:
        return CenterWalkEnv(**env_kwargs)

    def build(sizes: Mapping[str, int], rng: np.random.Generator) -> Instance:
        base = int(rng.integers(2**31))
        seeds = tuple(base + i for i in range(int(sizes.get("eval_episodes", N_EVAL_EPISODES))))
        return control_instance(name, make_env, int(sizes["T"]), seeds)

    def audit(rng: np.random.Generator) -> tuple[TaskInput, TaskInput]:
        inst = build({"T": AUDIT_SAMPLES, "eval_episodes": 1}, rng).input
        shifted = TaskInput(**{**inst.__dict__, "make_env": lambda: RewardShift(make_env(), 0.5)})
        return inst, shifted
    return build, audit


_CW_BUILD, _CW_AUDIT = _control("centerwalk")
_SLOW_BUILD, _SLOW_AUDIT = _control("centerwalk-slow", horizon=100, max_move=0.1)
_CONTROL_NOTE = ("δ = 10⁻⁵ (one reward function: the rule δ = 1/(10 n) does not apply). The return is the mean "
                 "over 100 evaluation episodes of the released greedy policy, not the training return. 3 seeds "
                 "(each control cell trains a network for T = 5000 samples).")

register_task(Task(
    name="centerwalk", dims={"A": 2}, title="CenterWalk (Wang & Hegde)", setting="continuous-control",
    source="privrl/CenterWalk-v0: s ∈ [0, 1], steps of U[0, 0.25], reward 0.5 − |s − 0.5|, 50-step episodes",
    logging_policy="none (online interaction, T samples)", units="reward function",
    privacy_unit=_REWARD[0], neighboring=_REWARD[1], metric=RETURN, trivial="random-play", reference="q-learning",
    sizes={"quick": {"T": 500, "seeds": 2}, "full": {"T": 5000, "seeds": 3}},
    build=_CW_BUILD, score=score_return, optimum=20.71, optimum_label="threshold policy (best known)",
    delta=1e-5, audit_pair=_CW_AUDIT,
    notes=(_CONTROL_NOTE, "The reference (100) is non-private Q-learning with the authors' DQN-style loop; DP "
           "Q-learning can only be certified on Algorithm 1's plain loop (its exact counterpart is "
           "'q-learning[alg1]')."),
))

register_task(Task(
    name="centerwalk-slow", dims={"A": 2}, title="CenterWalk, small steps (0.1) and 100-step episodes",
    setting="continuous-control",
    source="privrl.envs.center_walk.CenterWalkEnv(horizon=100, max_move=0.1)",
    logging_policy="none (online interaction, T samples)", units="reward function",
    privacy_unit=_REWARD[0], neighboring=_REWARD[1], metric=RETURN, trivial="random-play", reference="q-learning",
    sizes={"quick": {"T": 500, "seeds": 2}, "full": {"T": 5000, "seeds": 3}},
    build=_SLOW_BUILD, score=score_return, delta=1e-5, audit_pair=_SLOW_AUDIT,
    notes=(_CONTROL_NOTE, "A second 1-D task (DP Q-learning's certificate covers 1-D states only): finer "
           "control over longer episodes; no optimum is known."),
))


# =========================================================================== offline control
# offline RL on multi-dimensional continuous states (CartPole, Acrobot, Pendulum): privrl.bench.deep_tasks
for _task in DEEP_OFFLINE_TASKS:
    register_task(_task)


def data_seed(task: str, seed: int) -> int:
    """The seed of a task's data for one benchmark seed (the same for every entry and budget)."""
    return derive_seed("bench", task, "data", int(seed))

