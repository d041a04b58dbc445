"""A complete user policy for prefduel, run from this file:

    prefduel run --policies "random,notransfer,examples/my_policy.py:RaterWithWins"
    prefduel run --policies "examples/my_policy.py:RaterWithWins:weight=2.0"

It follows the rater's score g (the last feature) and, for the current user, adds a bonus
for personas that won this user's clicks so far. It uses no prefduel import at all: any
class with these five methods and a ``name`` runs on every roster.
"""

import numpy as np


class RaterWithWins:
    name = "rater-with-wins"

    def __init__(self, weight: float = 1.0):
        self.weight = weight  # constructor stores settings only

    def reset(self, rng, context):  # once per run; context: K, d, S, N, beta, b
        self.rng, self.K = rng, context["K"]

    def start_student(self):  # a new user arrives: forget the previous one
        self.wins = np.zeros(self.K)
        self.shown = np.zeros(self.K)

    def select(self, Phi):  # Phi: K x d features of this question; g is the last column
        rate = (self.wins + 1) / (self.shown + 2)  # smoothed win rate of each persona
        score = Phi[:, -1] + self.weight * (rate - 0.5) + 1e-9 * self.rng.random(self.K)
        i, j = np.argsort(-score)[:2]
        self.pair = (int(i), int(j))
        return self.pair

    def update(self, outcome):  # 1 if the FIRST index won the click, else 0
        i, j = self.pair
        self.shown[[i, j]] += 1
        self.wins[i if outcome == 1 else j] += 1

    def end_student(self):  # the user leaves
        pass
