"""prefduel: personalize LLM answers from pairwise preferences, and evaluate it.

Parts available today: TutorDuel worlds (TutorSim), the policy API, the runner and scoring.
"""

__version__ = "0.1.0"
