"""The shared deep-learning layer: small networks and their learners for many runs at once
(:mod:`~privrl.deep.networks`, compiled kernels in :mod:`~privrl.deep._kernels`), experience-replay
minibatches (:mod:`~privrl.deep.replay`) and clipped, noisy gradient steps with their accounting
(:mod:`~privrl.deep.dpsgd`: per-example or per-unit clipping, Poisson subsampling, PLD accounting).

A family that trains networks (DP Q-learning's learners; learners on logged trajectories) builds on it;
it knows no family. Nothing here draws privacy noise itself: the noisy sum goes through the fit's
:class:`~privrl.privacy.release.Releaser`.
"""
