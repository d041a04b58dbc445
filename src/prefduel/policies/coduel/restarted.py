"""``coduel-restarts``: CODuel whose population is also refitted from k-means restarts.

CODuel grows its mixture one session at a time (births, deaths, warm-started EM). This
registration adds the population restarts of ``restarts.py``: at points of the refit schedule,
once the users have grown by ``restart_growth``, mixtures of 4-12 components started from the
tightest of ``restarts`` k-means partitions of the users' isotropic posterior means are refined
by EM and replace the learned mixture when their BIC is higher. Everything else is CODuel's, and
every setting of `CODuel` can be changed in a spec (``coduel-restarts:restarts=0`` is
``coduel``). The two settings were chosen on ``dev`` (docs/coduel.md, "Beyond CODuel").
"""

from __future__ import annotations

from typing import Any

from prefduel.policies.base import check_settings
from prefduel.policies.coduel.policy import CODuel
from prefduel.policies.coduel.seed import _signature_with_defaults
from prefduel.policies.loading import POLICIES

#: The settings that make ``coduel-restarts`` (chosen on ``dev``).
RESTART_SETTINGS: dict[str, Any] = {"restarts": 8, "restart_growth": 1.5}
check_settings(CODuel, RESTART_SETTINGS)


@POLICIES.register("coduel-restarts")
class CODuelRestarts(CODuel):
    """CODuel with population restarts kept by BIC (`RESTART_SETTINGS`; see the module
    docstring). Takes every setting of `CODuel`."""

    name = "coduel-restarts"

    def __init__(self, **settings: Any) -> None:
        super().__init__(**{**RESTART_SETTINGS, **settings})

    __init__.__signature__ = _signature_with_defaults(  # type: ignore[attr-defined]
        RESTART_SETTINGS
    )
