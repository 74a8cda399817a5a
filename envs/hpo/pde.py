"""1-D periodic advection and viscous Burgers: initial conditions and a finite-volume solver.

The equations, on x in (0, 1) with periodic boundaries and t in [0, 2], as in PDEBench:

* advection ``u_t + beta u_x = 0``;
* viscous Burgers ``u_t + (u^2 / 2)_x = (nu / pi) u_xx``.

Every array holds **cell averages** on a uniform grid of ``X`` cells (``dx = 1 / X``): initial
conditions are averaged by Gauss-Legendre quadrature, the solver updates averages, and
:func:`coarsen` averages groups of cells, so a fine solution coarsened is directly comparable
with a coarse one. The solver is second order in smooth regions (MUSCL reconstruction with the
MC limiter; for advection the MUSCL-Hancock predictor-corrector, for Burgers Heun / SSP-RK2,
optionally with the exact viscous operator in Strang half steps for large ``nu``) and written by hand because no maintained Python library offers a small,
vectorised FV solver for these two equations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["PDE", "InitialConditions", "draw_initial_conditions", "initial_conditions", "solve", "exact_advection",
           "coarsen"]

ADVECTION_CFL = 0.4
BURGERS_CFL = 0.25  # both the advective (dx / max|u|) and the viscous (dx^2 / (nu / pi)) fraction
_QUADRATURE_NODES = 4  # per cell: exact for the sine part to ~dx^8, ample for the tanh window
_WAVE_NUMBERS = np.array([1, 2, 3, 4])


@dataclass(frozen=True)
class PDE:
    """One equation of the family: its kind and its single coefficient.

    Attributes:
        kind: ``"advection"`` or ``"burgers"``.
        coefficient: the advection speed ``beta`` or the Burgers viscosity ``nu`` (diffusion
            coefficient ``nu / pi``, PDEBench's convention).
    """

    kind: Literal["advection", "burgers"]
    coefficient: float

    def __post_init__(self) -> None:
        if self.kind not in ("advection", "burgers"):
            raise ValueError(f"unknown PDE kind {self.kind!r}; expected 'advection' or 'burgers'")
        if not math.isfinite(self.coefficient):
            raise ValueError(f"PDE coefficient must be finite, got {self.coefficient!r}")
        if self.kind == "burgers" and self.coefficient < 0:
            raise ValueError(f"Burgers viscosity nu must be >= 0, got {self.coefficient!r}")

    @property
    def key(self) -> str:
        """A short stable name, e.g. ``"advection(beta=0.4)"`` or ``"burgers(nu=0.01)"``."""
        name = "beta" if self.kind == "advection" else "nu"
        return f"{self.kind}({name}={self.coefficient:g})"

    def describe(self) -> str:
        """One paragraph for an LLM: the equation, coefficient, domain, boundaries and time span."""
        if self.kind == "advection":
            equation = (f"the 1-D linear advection equation u_t + beta * u_x = 0 with advection speed "
                        f"beta = {self.coefficient:g} (the initial profile travels {2 * self.coefficient:g} "
                        f"domain lengths to the {'right' if self.coefficient >= 0 else 'left'} by t = 2 "
                        f"without changing shape)")
        else:
            equation = (f"the 1-D viscous Burgers equation u_t + (u^2 / 2)_x = (nu / pi) * u_xx with "
                        f"nu = {self.coefficient:g} (diffusion coefficient nu / pi = "
                        f"{self.coefficient / math.pi:.4g}; steep fronts form where the nonlinear term "
                        f"dominates and viscosity smooths them)")
        return (f"The data follow {equation}, on the spatial domain x in (0, 1) with periodic boundary "
                f"conditions, over the time span t in [0, 2]. Initial conditions are sums of two sine "
                f"modes with wave numbers from 1 to 4, random amplitudes and phases, occasionally made "
                f"non-negative (absolute value) and sign-flipped, or confined by a smooth tanh window.")


@dataclass(frozen=True)
class InitialConditions:
    """The random parameters of ``n`` initial conditions (see :func:`initial_conditions`); arrays of length n."""

    k: np.ndarray            # (n, 2) wave numbers
    amplitude: np.ndarray    # (n, 2)
    phase: np.ndarray        # (n, 2)
    take_abs: np.ndarray     # (n,) bool
    sign: np.ndarray         # (n,)
    use_window: np.ndarray   # (n,) bool
    x_left: np.ndarray       # (n,)
    x_right: np.ndarray      # (n,)
    delta: np.ndarray        # (n,)

    def __len__(self) -> int:
        return int(self.sign.shape[0])

    def select(self, rows: slice) -> "InitialConditions":
        """The parameters of a slice of the samples."""
        return InitialConditions(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))

    def values(self, x: np.ndarray) -> np.ndarray:
        """Point values ``(n, P)`` at positions ``x`` ``(P,)`` or ``(n, P)``, periodic with period 1.

        The window is defined on one period (``x`` is reduced modulo 1 first), so a shifted
        windowed profile stays one window, as the exact solution of advection requires.
        """
        x = np.mod(np.broadcast_to(x, (len(self), np.shape(x)[-1])), 1.0)                 # (n, P)
        u = np.einsum("nj,njp->np", self.amplitude,
                      np.sin(2 * np.pi * self.k[:, :, None] * x[:, None, :] + self.phase[:, :, None]))
        u = np.where(self.take_abs[:, None], np.abs(u), u) * self.sign[:, None]
        window = 0.5 * (np.tanh((x - self.x_left[:, None]) / self.delta[:, None])
                        - np.tanh((x - self.x_right[:, None]) / self.delta[:, None]))
        return np.where(self.use_window[:, None], u * window, u)

    def cell_averages(self, cells: int, shift: float = 0.0, nodes: int = _QUADRATURE_NODES) -> np.ndarray:
        """Cell averages ``(n, cells)`` of ``u(x - shift)`` by Gauss-Legendre quadrature per cell.

        With ``shift = beta t`` these are the exact advected cell averages (up to quadrature):
        the profile is evaluated where it came from, kinks and windows included.
        """
        points, weights = np.polynomial.legendre.leggauss(nodes)  # on [-1, 1], weights sum to 2
        x = ((np.arange(cells)[:, None] + 0.5 + 0.5 * points[None, :]) / cells).reshape(-1) - shift
        return self.values(x).reshape(len(self), cells, nodes) @ (weights / 2)


def draw_initial_conditions(rng: np.random.Generator, n: int) -> InitialConditions:
    """The random parameters of ``n`` initial conditions (the draws of :func:`initial_conditions`)."""
    return InitialConditions(
        k=rng.choice(_WAVE_NUMBERS, size=(n, 2)), amplitude=rng.uniform(0.0, 1.0, size=(n, 2)),
        phase=rng.uniform(0.0, 2 * np.pi, size=(n, 2)), take_abs=rng.uniform(size=n) < 0.1,
        sign=rng.choice(np.array([-1.0, 1.0]), size=n), use_window=rng.uniform(size=n) < 0.1,
        x_left=rng.uniform(0.1, 0.45, size=n), x_right=rng.uniform(0.55, 0.9, size=n),
        delta=rng.uniform(0.01, 0.1, size=n))


def initial_conditions(rng: np.random.Generator, n: int, cells: int) -> np.ndarray:
    """PDEBench-style random initial conditions as cell averages.

    Each sample is ``sum_j a_j sin(2 pi k_j x + phi_j)`` with two wave numbers ``k_j`` drawn with
    replacement from {1, 2, 3, 4}, ``a_j ~ U[0, 1]`` and ``phi_j ~ U[0, 2 pi]``; with probability
    0.1 it is replaced by its absolute value; it is multiplied by a random sign; with probability
    0.1 it is multiplied by the window ``0.5 (tanh((x - x_L) / delta) - tanh((x - x_R) / delta))``,
    ``x_L ~ U[0.1, 0.45]``, ``x_R ~ U[0.55, 0.9]``, ``delta ~ U[0.01, 0.1]``.

    The random numbers drawn do not depend on ``cells``, so one generator state gives the same
    functions at every resolution (and ``coarsen`` of a fine draw matches a coarse draw).

    Args:
        rng: the generator to draw from (advanced by the call).
        n: number of samples.
        cells: number of grid cells.

    Returns:
        ``(n, cells)`` float64 cell averages.
    """
    return draw_initial_conditions(rng, n).cell_averages(cells)


def coarsen(u: np.ndarray, factor: int) -> np.ndarray:
    """Average groups of ``factor`` neighbouring cells along the last axis (``(..., X) -> (..., X/f)``)."""
    cells = u.shape[-1]
    if factor < 1 or cells % factor:
        raise ValueError(f"cannot coarsen {cells} cells by a factor of {factor}")
    return u.reshape(*u.shape[:-1], cells // factor, factor).mean(axis=-1)


def exact_advection(u0: np.ndarray, beta: float, t: float) -> np.ndarray:
    """The exact advected cell averages: ``u0`` shifted by ``beta * t`` (periodic).

    The shift is spectral, which is exact for the discrete data: the cell averages of a function
    are samples of its running average, and shifting those samples by a non-integer number of
    cells is exact for every Fourier mode below the grid's Nyquist frequency.

    Args:
        u0: ``(..., X)`` cell averages at ``t = 0``.
        beta: advection speed.
        t: time.

    Returns:
        ``(..., X)`` cell averages at time ``t``.
    """
    cells = u0.shape[-1]
    wave_number = np.fft.rfftfreq(cells, d=1.0 / cells)                  # (X//2 + 1,) cycles per unit length
    phase = np.exp(-2j * np.pi * wave_number * (beta * t))
    return np.fft.irfft(np.fft.rfft(u0, axis=-1) * phase, n=cells, axis=-1)


def solve(pde: PDE, u0: np.ndarray, t_save: np.ndarray, *,
          viscous: Literal["explicit", "split"] = "explicit") -> np.ndarray:
    """Integrate ``pde`` from the cell averages ``u0`` and keep the state at the times ``t_save``.

    Both time steppers are two-stage predictor-correctors. Advection uses MUSCL-Hancock: the
    predictor moves each cell's limited face value half a step forward in time
    (``u_i + (1 - c) s_i / 2`` for Courant number ``c = beta dt / dx`` and MC slope ``s_i``), the
    corrector is the conservative upwind update with those face values. For linear advection it
    matches the space and time errors against each other and is about six times more accurate
    than Heun at the same CFL (at beta = 4 and 1024 cells: 1.8e-3 against 1.1e-2 relative L2
    after t = 2). Burgers uses Heun / SSP-RK2 (Euler predictor, trapezoidal corrector) on the
    Rusanov + central viscous fluxes.

    Time steps: ``dt = 0.4 dx / |beta|`` for advection; for Burgers
    ``dt = min(0.25 dx / max|u|, 0.25 dx^2 / (nu / pi))``, recomputed every step with the maximum
    over the whole batch. A step that would pass the next save time is shortened to land on it.

    The viscous limit makes Burgers with large ``nu`` costly (steps grow as ``nu X^2``).
    ``viscous="split"`` keeps the same central viscous flux but integrates that linear term
    exactly (a diagonal multiplier in Fourier space) in Strang half steps around each inviscid
    step, so only ``dt = 0.25 dx / max|u|`` applies. The exact operator ``exp(t L)`` of the
    periodic 3-point Laplacian ``L`` is a stochastic matrix, so the split scheme keeps the
    maximum principle and the mass of the explicit one, and stays second order.

    Args:
        pde: the equation.
        u0: ``(N, X)`` initial cell averages.
        t_save: increasing times starting at 0, e.g. ``np.linspace(0, 2, 41)``.
        viscous: how Burgers' viscous term is stepped (ignored for advection).

    Returns:
        ``(N, len(t_save), X)`` float64; ``[:, 0]`` is ``u0``.
    """
    u = np.array(u0, dtype=np.float64)
    t_save = np.asarray(t_save, dtype=np.float64)
    if u.ndim != 2:
        raise ValueError(f"u0 must have shape (N, X), got {u.shape}")
    if t_save.ndim != 1 or t_save.size == 0 or t_save[0] != 0 or np.any(np.diff(t_save) <= 0):
        raise ValueError(f"t_save must be strictly increasing and start at 0, got {t_save}")
    if viscous not in ("explicit", "split"):
        raise ValueError(f"viscous must be 'explicit' or 'split', got {viscous!r}")
    cells = u.shape[1]
    dx = 1.0 / cells
    diffusion = pde.coefficient / math.pi
    split = pde.kind == "burgers" and viscous == "split" and diffusion > 0
    if pde.kind == "advection":
        beta = pde.coefficient
        step_limit = lambda v: ADVECTION_CFL * dx / abs(beta) if beta else math.inf  # noqa: E731
    else:
        rhs = lambda v: _burgers_rhs(v, 0.0 if split else diffusion, dx)  # noqa: E731
        viscous_dt = BURGERS_CFL * dx * dx / diffusion if diffusion > 0 and not split else math.inf

        def step_limit(v: np.ndarray) -> float:
            speed = float(np.abs(v).max())
            return min(BURGERS_CFL * dx / speed if speed > 0 else math.inf, viscous_dt)

    # Eigenvalues of the periodic 3-point Laplacian times nu / pi, per rfft mode: (X//2 + 1,)
    decay_rate = diffusion * (2 / dx * np.sin(np.pi * np.arange(cells // 2 + 1) / cells)) ** 2

    def diffuse(v: np.ndarray, duration: float) -> np.ndarray:
        return np.fft.irfft(np.fft.rfft(v, axis=1) * np.exp(-duration * decay_rate), n=cells, axis=1)

    out = np.empty((u.shape[0], t_save.size, cells))                   # (N, T, X)
    out[:, 0] = u
    t = 0.0
    for index in range(1, t_save.size):
        target = t_save[index]
        while t < target:
            dt = step_limit(u)
            # Land exactly on the save time (an infinite dt, when nothing moves, lands there too);
            # the tolerance avoids a round-off sliver of a step just before it.
            if t + dt >= target * (1 - 1e-14):
                dt, t = target - t, float(target)
            else:
                t += dt
            if pde.kind == "advection":
                u = _advection_step(u, pde.coefficient * dt / dx)
                continue
            if split:
                u = diffuse(u, 0.5 * dt)
            # Heun / SSP-RK2: the average of u and two Euler steps is TVD under the CFL limit.
            stage = rhs(u)
            stage *= dt
            stage += u
            change = rhs(stage)
            change *= dt
            change += stage
            change += u
            change *= 0.5
            u = diffuse(change, 0.5 * dt) if split else change
        out[:, index] = u
    return out


def _mc_faces(u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Left/right states at the X+1 faces -1/2 .. X-1/2 and the face differences u_{i+1} - u_i.

    The MC (monotonised central) slope ``minmod(2 dL, (dL + dR) / 2, 2 dR)`` is second order where
    the data are smooth and zero at extrema, so the reconstruction creates no new extrema. The
    faces need half of it, ``minmod(dL, (dL + dR) / 4, dR)``; its sign is
    ``(sign dL + sign dR) / 2``, which is 0 when the signs differ (and when one is 0 the
    magnitude is 0). Written with in-place operations: the solver's time goes here.
    """
    cells = u.shape[1]
    ext = np.concatenate((u[:, -2:], u, u[:, :2]), axis=1)              # (N, X+4) periodic ghosts
    diff = ext[:, 1:] - ext[:, :-1]                                      # (N, X+3)
    size = np.abs(diff)
    half_slope = np.minimum(size[:, :-1], size[:, 1:])                   # (N, X+2) cells -1 .. X
    central = diff[:, :-1] + diff[:, 1:]
    np.abs(central, out=central)
    central *= 0.25
    np.minimum(half_slope, central, out=half_slope)
    sign = np.sign(diff)
    sign = sign[:, :-1] + sign[:, 1:]
    sign *= 0.5
    half_slope *= sign
    centre = ext[:, 1:-1]                                                # (N, X+2) cells -1 .. X
    state_left = centre[:, :-1] + half_slope[:, :-1]                     # (N, X+1) from cell i
    state_right = centre[:, 1:] - half_slope[:, 1:]                      # (N, X+1) from cell i+1
    return state_left, state_right, diff[:, 1:cells + 2]


def _advection_step(u: np.ndarray, courant: float) -> np.ndarray:
    """One MUSCL-Hancock step of ``u_t + beta u_x = 0`` with Courant number ``beta dt / dx``.

    Predictor: the upwind cell's MC-limited face value advanced half a step,
    ``u_i + (1 - |c|) s_i / 2``; corrector: ``u_i - c (F_{i+1/2} - F_{i-1/2})``. TVD for
    ``|c| <= 1`` with the MC limiter.
    """
    state_left, state_right, _ = _mc_faces(u)                            # (N, X+1) faces -1/2 .. X-1/2
    if courant >= 0:   # face i+1/2 takes cell i's value: state_left[:, i+1] = u_i + s_i / 2
        face = u + (1 - courant) * (state_left[:, 1:] - u)               # (N, X) faces 1/2 .. X-1/2
        return u - courant * (face - np.roll(face, 1, axis=1))
    face = u + (1 + courant) * (state_right[:, :-1] - u)                 # u_i - (1-|c|) s_i/2 at face i-1/2
    return u - courant * (np.roll(face, -1, axis=1) - face)


def _burgers_rhs(u: np.ndarray, diffusion: float, dx: float) -> np.ndarray:
    state_left, state_right, jump = _mc_faces(u)
    # Rusanov: the central flux minus dissipation at the local maximum wave speed,
    # 0.25 (l^2 + r^2) - 0.5 max(|l|, |r|) (r - l); then the central viscous flux.
    speed = np.maximum(np.abs(state_left), np.abs(state_right))
    speed *= state_right - state_left
    speed *= 0.5
    flux = np.square(state_left)
    flux += np.square(state_right)
    flux *= 0.25
    flux -= speed
    jump *= diffusion / dx
    flux -= jump                                                         # (N, X+1)
    rate = flux[:, :-1] - flux[:, 1:]
    rate /= dx
    return rate
