"""prefduel: personalize LLM answers from pairwise preferences, and evaluate it.

TutorDuel and CODuel (worlds, policies, runner, stats, report, pages, datagen), personalized
rankings (ranking) and PrefDisco (prefdisco), on one core and one LLM layer (llm).
"""

__version__ = "0.2.0"
