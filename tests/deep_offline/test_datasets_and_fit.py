"""The CartPole and Acrobot behaviour data (scripted experts, Minari round trip) and ``privrl fit dp-bc | bc |
dp-iql | iql`` on them."""

import json

import numpy as np
import pytest

from privrl.cli import main
from privrl.deep_offline.datasets import acrobot_dataset, acrobot_expert, cartpole_dataset, cartpole_expert, read_minari
from privrl.deep_offline.datasets import main as generate


@pytest.fixture(autouse=True)
def minari_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))


def _recovered_cut(dataset_id):
    """The time limit of the environment a Minari dataset records (``recover_environment``)."""
    minari = pytest.importorskip("minari")
    env = minari.load_dataset(dataset_id).recover_environment()
    try:
        return env.spec.max_episode_steps
    finally:
        env.close()


def test_the_expert_is_epsilon_greedy_on_the_pd_rule():
    rng = np.random.default_rng(0)
    greedy = cartpole_expert(0.0)
    assert greedy(np.array([0.0, 0.0, 0.05, 0.0]), 0, rng) == 1
    assert greedy(np.array([0.0, 0.0, 0.05, -0.2]), 0, rng) == 0
    noisy = cartpole_expert(0.5)
    acts = [noisy(np.array([0.0, 0.0, 0.05, 0.0]), 0, rng) for _ in range(2000)]
    assert abs(np.mean(acts) - 0.75) < 0.03                 # half random: 1 with probability 0.5 + 0.25


def test_the_same_seed_gives_the_same_data_and_minari_round_trips_it():
    data = cartpole_dataset(4, max_steps=30, rng=5)
    assert data.observations.shape[1] == 4 and data.n_actions == 2 and data.n_episodes == 4
    np.testing.assert_array_equal(cartpole_dataset(4, max_steps=30, rng=5).observations, data.observations)
    generate(["--episodes", "4", "--max-steps", "30", "--seed", "5", "--id", "privrl/cartpole-test-v0"])
    back = read_minari("privrl/cartpole-test-v0")
    for k in ("observations", "actions", "rewards", "next_observations", "episode_starts"):
        np.testing.assert_array_equal(getattr(back, k), getattr(data, k))
    assert _recovered_cut("privrl/cartpole-test-v0") == 30           # the data's cut, not CartPole-v1's 500


def test_the_acrobot_expert_pumps_energy_and_beats_random_play():
    rng = np.random.default_rng(0)
    greedy = acrobot_expert(0.0)
    assert greedy(np.array([1.0, 0, 1.0, 0, 0.0, 0.3]), 0, rng) == 2      # torque along θ̇₂
    assert greedy(np.array([1.0, 0, 1.0, 0, 0.0, -0.3]), 0, rng) == 0
    data = acrobot_dataset(3, epsilon=0.0, rng=0)
    assert data.observations.shape[1] == 6 and data.n_actions == 3
    assert np.all(data.terminals[data.episode_starts[1:] - 1])             # every episode reaches the goal
    assert float(np.sum(data.rewards)) / 3 > -150                         # random play stays at -500


def test_the_acrobot_command_writes_a_minari_dataset_that_reads_back():
    generate(["--env", "acrobot", "--episodes", "3", "--max-steps", "100", "--seed", "2", "--id",
              "privrl/acrobot-test-v0"])
    back, data = read_minari("privrl/acrobot-test-v0"), acrobot_dataset(3, max_steps=100, rng=2)
    for k in ("observations", "actions", "rewards", "terminals", "episode_starts"):
        np.testing.assert_array_equal(getattr(back, k), getattr(data, k))
    assert _recovered_cut("privrl/acrobot-test-v0") == 100


@pytest.mark.filterwarnings("always::privrl.errors.UtilityWarning")
@pytest.mark.parametrize("name,budget", [("dp-bc", ["--epsilon", "3", "--delta", "1e-5"]), ("bc", []),
                                         ("dp-iql", ["--epsilon", "3", "--delta", "1e-5"]), ("iql", [])])
def test_fit_from_a_minari_dataset_writes_the_policy_and_certificate(tmp_path, capsys, name, budget):
    generate(["--episodes", "6", "--max-steps", "20", "--seed", "0", "--id", "privrl/cartpole-fit-v0"])
    out = tmp_path / name
    assert main(["fit", name, "--data", "privrl/cartpole-fit-v0", "--reward-bounds", "0", "1", *budget,
                 "--n-steps", "2", "--sampling-rate", "0.5", "--seed", "0", "--out", str(out)]) == 0
    arrays = np.load(out / "result.npz")
    assert arrays["sizes"].tolist() == [4, 32, 32, 2]
    assert arrays["params"].size == 4 * 32 + 32 + 32 * 32 + 32 + 32 * 2 + 2
    cert = json.loads((out / "certificate.json").read_text())
    text = json.dumps(cert)
    # 6 trajectories: the plan is hopeless, and a private fit says so once, on one line of stderr
    noisy = [ln for ln in capsys.readouterr().err.splitlines() if "noise-dominated" in ln]
    if name.startswith("dp-"):
        owner = {"dp-bc": "DPBC", "dp-iql": "DPIQL"}[name]
        assert len(noisy) == 1 and noisy[0].startswith(f"privrl fit {name}: warning: UtilityWarning: {owner}: "
                                                       "noise-dominated DP-SGD steps"), noisy
    else:
        assert noisy == []
    if name.startswith("dp-"):
        assert "add_or_remove_one" in text and "trajectory" in text
        assert "n_trajectories" not in text                        # add/remove neighbours differ in it
    if name.endswith("iql"):
        assert arrays["q_sizes"].tolist() == [4, 32, 32, 2] and arrays["v_sizes"].tolist() == [4, 32, 32, 1]
        assert arrays["q_params"].size == arrays["params"].size
