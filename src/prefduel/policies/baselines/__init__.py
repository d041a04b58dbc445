"""The baseline field: published dueling-bandit and meta/hierarchical bandit learners
against which CODuel is compared. Importing this package registers them:

=============== ============================================================================
id              method
=============== ============================================================================
``rucb``        RUCB (Zoghi et al., ICML 2014), non-contextual, pooled over users
``colstim``     CoLSTIM-style (Bengs, Saha & Hüllermeier, ICML 2022), per user
``maxinp``      MaxInP (Saha, NeurIPS 2021), per user
``maxpair-ucb`` optimistic pair rule ``u_i + u_j + beta width(i, j)``, per user
``dts-laplace`` dueling Thompson sampling on a Laplace posterior, per user
``coldb``       online clustering of linear dueling bandits (Wang et al., ICML 2025)
``meta-ts``     Meta-Thompson sampling (Kveton et al., ICML 2021) over the shared prior mean
``hier-ts``     hierarchical Thompson sampling (Hong et al., AISTATS 2022)
=============== ============================================================================
"""

from prefduel.policies.baselines.coldb import COLDB
from prefduel.policies.baselines.linear_duel import CoLSTIM, MaxInP, MaxPairUCB
from prefduel.policies.baselines.rucb import RUCB
from prefduel.policies.baselines.thompson import DuelingTSLaplace, HierTS, MetaTS

__all__ = [
    "COLDB",
    "RUCB",
    "CoLSTIM",
    "DuelingTSLaplace",
    "HierTS",
    "MaxInP",
    "MaxPairUCB",
    "MetaTS",
]
