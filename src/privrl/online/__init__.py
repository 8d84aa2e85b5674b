"""The shared online layer: episodes of an online learner in a finite-horizon tabular model or a
Gymnasium environment, and their exact regret.

* :mod:`~privrl.online.episodes` — one run's named streams, acting from a deterministic or stochastic
  policy, an episode on a tabular model from pre-drawn uniforms, an episode on a gym env;
* :mod:`~privrl.online.regret` — the optimal values, a policy's exact value, the pseudo-regret of an
  episode, a run's regret trace;
* :mod:`~privrl.online.loop` — :func:`~privrl.online.loop.run_episodes`, the episode loop of a learner
  that plans a policy, plays it and observes the trajectory (counters and privatizers live in the
  learner: it releases its statistics through its fit's releaser).

LinOpt's compiled lockstep engine (:mod:`privrl.linear_mixture.engine`) uses its episodes and regret
oracle; tabular online learners use the loop. It knows no family.
"""
