"""The baseline field: published dueling-bandit and meta/hierarchical bandit learners
against which CODuel is compared. Importing this package registers them.

Settings tuned on ``dev``:

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
``hier-ts-eb``  ``hier-ts`` that also learns the prior covariance (empirical Bayes; ours)
``conucb-duel`` ConUCB (Zhang et al., WWW 2020) adapted to duels; asks on an ask track
=============== ============================================================================

As published (`prefduel.policies.baselines.published`): ``rucb-paper``, ``colstim-paper``,
``maxinp-paper``, ``coldb-paper``, ``dts-laplace-paper``, ``meta-ts-paper`` and
``hier-ts-paper``, each the class above with its paper's pair rule and stated settings.
"""

from prefduel.policies.baselines.coldb import COLDB
from prefduel.policies.baselines.conucb import ConUCBDuel
from prefduel.policies.baselines.hier_eb import HierTSEB
from prefduel.policies.baselines.linear_duel import CoLSTIM, MaxInP, MaxPairUCB
from prefduel.policies.baselines.published import (
    COLDBPaper,
    CoLSTIMPaper,
    DuelingTSLaplacePaper,
    HierTSPaper,
    MaxInPPaper,
    MetaTSPaper,
    RUCBPaper,
)
from prefduel.policies.baselines.rucb import RUCB
from prefduel.policies.baselines.thompson import DuelingTSLaplace, HierTS, MetaTS

__all__ = [
    "COLDB",
    "RUCB",
    "COLDBPaper",
    "CoLSTIM",
    "CoLSTIMPaper",
    "ConUCBDuel",
    "DuelingTSLaplace",
    "DuelingTSLaplacePaper",
    "HierTS",
    "HierTSEB",
    "HierTSPaper",
    "MaxInP",
    "MaxInPPaper",
    "MaxPairUCB",
    "MetaTS",
    "MetaTSPaper",
    "RUCBPaper",
]
