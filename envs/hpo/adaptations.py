"""The twelve source-to-target adaptations of HyperparamSearch-v0.

Two source models are pretrained, one per family: advection with ``beta = 0.4`` and Burgers with
``nu = 0.01``. Each is fine-tuned towards three targets of its own family (a coefficient shift)
and three of the other family (a change of equation):

* ``adv0.4->adv{0.1, 1.0, 4.0}``: slower and faster transport;
* ``burg0.01->burg{0.001, 0.1, 1.0}``: sharper fronts and stronger diffusion;
* ``adv0.4->burg{0.001, 0.01, 0.1}``: linear transport to a nonlinear equation, from nearly
  inviscid to clearly viscous;
* ``burg0.01->adv{0.1, 0.4, 1.0}``: back to linear transport, including the advection source's
  own coefficient (so the cross-family shift is seen without a coefficient shift).

Names are ``<family><coefficient>-><family><coefficient>`` with families ``adv`` and ``burg``;
whole coefficients keep one decimal (``adv1.0``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .pde import PDE

__all__ = ["Adaptation", "ADAPTATIONS", "SOURCES", "adaptation_name"]

_SHORT = {"advection": "adv", "burgers": "burg"}


@dataclass(frozen=True)
class Adaptation:
    """Fine-tune a model pretrained on ``source`` for ``target``.

    Attributes:
        name: the task id, e.g. ``adv0.4->adv1.0``.
        source: the equation the model was pretrained on.
        target: the equation whose training data it is fine-tuned on and scored on.
    """

    name: str
    source: PDE
    target: PDE


ADVECTION_SOURCE = PDE("advection", 0.4)
BURGERS_SOURCE = PDE("burgers", 0.01)
SOURCES: tuple[PDE, ...] = (ADVECTION_SOURCE, BURGERS_SOURCE)

_TARGETS: dict[PDE, tuple[PDE, ...]] = {
    ADVECTION_SOURCE: (PDE("advection", 0.1), PDE("advection", 1.0), PDE("advection", 4.0),
                       PDE("burgers", 0.001), PDE("burgers", 0.01), PDE("burgers", 0.1)),
    BURGERS_SOURCE: (PDE("burgers", 0.001), PDE("burgers", 0.1), PDE("burgers", 1.0),
                     PDE("advection", 0.1), PDE("advection", 0.4), PDE("advection", 1.0)),
}


def adaptation_name(source: PDE, target: PDE) -> str:
    """The task id of an adaptation, e.g. ``adv0.4->burg0.01`` or ``burg0.01->adv1.0``."""
    return f"{_short(source)}->{_short(target)}"


def _short(pde: PDE) -> str:
    # Whole coefficients keep one decimal (``adv1.0``, not ``adv1``): the ids the scenarios use.
    text = f"{pde.coefficient:g}"
    return _SHORT[pde.kind] + (text + ".0" if "." not in text and "e" not in text else text)


ADAPTATIONS: dict[str, Adaptation] = {
    adaptation_name(source, target): Adaptation(adaptation_name(source, target), source, target)
    for source, targets in _TARGETS.items() for target in targets
}
