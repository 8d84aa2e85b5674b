"""The Pendulum behaviour data (continuous actions): the controller's rules, its return, and the Minari
round trip of ``python -m privrl.deep_offline.datasets --env pendulum``."""

import numpy as np
import pytest

from privrl.deep_offline.continuous_data import pendulum_dataset, pendulum_expert, read_minari
from privrl.deep_offline.datasets import main as generate


@pytest.fixture(autouse=True)
def minari_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))


def test_the_controller_pumps_energy_below_and_stabilises_near_the_top():
    rng = np.random.default_rng(0)
    act = pendulum_expert(0.0)
    assert act(np.array([-1.0, 0.0, 1.0]), rng) == pytest.approx(2.0)           # hanging, E < 15: push along θ̇
    assert act(np.array([-1.0, 0.0, -1.0]), rng) == pytest.approx(-2.0)
    assert act(np.array([np.cos(0.1), np.sin(0.1), 0.0]), rng) == pytest.approx(-1.0)   # PD: -(10 θ + 2 θ̇)
    noisy = [pendulum_expert(0.5)(np.array([np.cos(0.1), np.sin(0.1), 0.0]), rng) for _ in range(4000)]
    assert np.mean(noisy) == pytest.approx(-1.0, abs=0.03) and np.std(noisy) == pytest.approx(0.5, rel=0.05)


def test_the_noiseless_controller_swings_up_far_better_than_random_torques():
    returns = pendulum_dataset(4, noise=0.0, rng=0).episode_returns()
    assert returns.shape == (4,) and np.all(returns > -400)            # random torques: about -1200


def test_the_pendulum_command_writes_a_minari_dataset_that_reads_back():
    generate(["--env", "pendulum", "--episodes", "3", "--max-steps", "50", "--seed", "1", "--id",
              "privrl/pendulum-test-v0"])
    back, data = read_minari("privrl/pendulum-test-v0"), pendulum_dataset(3, max_steps=50, rng=1)
    assert back.actions.shape == (150, 1) and np.all(np.abs(back.actions) <= 2.0)
    for k in ("observations", "actions", "rewards", "next_observations", "terminals", "episode_starts"):
        np.testing.assert_array_equal(getattr(back, k), getattr(data, k))
    env = pytest.importorskip("minari").load_dataset("privrl/pendulum-test-v0").recover_environment()
    assert env.spec.max_episode_steps == 50                     # the data's cut, not Pendulum-v1's 200
    env.close()
