"""A 1-D Fourier neural operator (Li et al. 2021) that maps a short history to the next time step.

The model reads the last ``input_steps`` states of a periodic field plus the grid coordinate as
channels, lifts them to ``width`` channels, applies ``layers`` Fourier layers (a spectral
convolution that keeps the lowest ``modes`` Fourier modes, plus a pointwise convolution, GELU) and
projects back to one channel: the next state. :func:`rollout` applies it autoregressively.

Parameters are initialised from an explicit ``torch.Generator``, so a model is a function of its
seed alone and no global random state is read or written.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["SpectralConv1d", "FNO1d", "rollout"]


class SpectralConv1d(nn.Module):
    """Multiply the lowest ``modes`` Fourier modes by learned complex matrices; drop the rest.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        modes: complex Fourier modes kept (at most ``X // 2 + 1`` for a grid of ``X`` points).
    """

    def __init__(self, in_channels: int, out_channels: int, modes: int) -> None:
        super().__init__()
        self.in_channels, self.out_channels, self.modes = in_channels, out_channels, modes
        # Stored as real (..., 2) pairs and viewed as complex in forward: every optimizer and
        # state_dict round trip handles real tensors, not all handle complex ones alike.
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels, modes, 2))

    def reset_parameters(self, generator: torch.Generator) -> None:
        # The reference FNO initialisation: U[0, 1/(in*out)) for the real and imaginary parts.
        scale = 1.0 / (self.in_channels * self.out_channels)
        with torch.no_grad():
            self.weight.copy_(scale * torch.rand(self.weight.shape, generator=generator))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cells = x.shape[-1]
        if self.modes > cells // 2 + 1:
            raise ValueError(f"{self.modes} modes do not fit a grid of {cells} points")
        x_ft = torch.fft.rfft(x, dim=-1)                                   # (B, Cin, X//2+1) complex
        weight = torch.view_as_complex(self.weight)                        # (Cin, Cout, M)
        out_ft = torch.zeros(x.shape[0], self.out_channels, cells // 2 + 1, dtype=x_ft.dtype, device=x.device)
        out_ft[:, :, :self.modes] = torch.einsum("bim,iom->bom", x_ft[:, :, :self.modes], weight)
        return torch.fft.irfft(out_ft, n=cells, dim=-1)                    # (B, Cout, X)


class FNO1d(nn.Module):
    """Next-step operator ``u[t-input_steps+1 .. t] -> u[t+1]`` on a periodic 1-D grid.

    Args:
        modes: Fourier modes kept by each spectral convolution.
        width: channels of the hidden representation.
        layers: number of Fourier layers.
        input_steps: length of the history read per prediction.
        generator: source of the initial parameters (a fresh ``torch.Generator`` seeded 0 if None).
    """

    def __init__(self, modes: int, width: int, layers: int, input_steps: int,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        for name, value in (("modes", modes), ("width", width), ("layers", layers), ("input_steps", input_steps)):
            if int(value) < 1:
                raise ValueError(f"FNO1d {name} must be >= 1, got {value!r}")
        self.modes, self.width, self.layers, self.input_steps = modes, width, layers, input_steps
        self.lift = nn.Conv1d(input_steps + 1, width, 1)                   # +1: the grid coordinate
        self.spectral = nn.ModuleList(SpectralConv1d(width, width, modes) for _ in range(layers))
        self.pointwise = nn.ModuleList(nn.Conv1d(width, width, 1) for _ in range(layers))
        self.project = nn.Sequential(nn.Conv1d(width, 2 * width, 1), nn.GELU(), nn.Conv1d(2 * width, 1, 1))
        self.reset_parameters(generator or torch.Generator().manual_seed(0))

    def reset_parameters(self, generator: torch.Generator) -> None:
        """Draw every parameter from ``generator`` (PyTorch's default bounds for the 1x1 convs)."""
        for module in self.modules():
            if isinstance(module, SpectralConv1d):
                module.reset_parameters(generator)
            elif isinstance(module, nn.Conv1d):
                # U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias, as nn.Conv1d does itself,
                # but drawn from our generator instead of the global one.
                bound = 1.0 / math.sqrt(module.in_channels * module.kernel_size[0])
                with torch.no_grad():
                    for tensor in (module.weight, module.bias):
                        if tensor is not None:
                            tensor.copy_((2 * torch.rand(tensor.shape, generator=generator) - 1) * bound)

    def forward(self, history: torch.Tensor) -> torch.Tensor:
        """Predict the next state.

        Args:
            history: ``(B, input_steps, X)``, oldest first.

        Returns:
            ``(B, X)``, the state one step after the last one of ``history``.
        """
        batch, steps, cells = history.shape
        if steps != self.input_steps:
            raise ValueError(f"FNO1d expects {self.input_steps} input steps, got {steps}")
        # Cell centres of the unit periodic domain: the model may use position, as in the reference FNO.
        grid = ((torch.arange(cells, dtype=history.dtype, device=history.device) + 0.5) / cells)
        x = torch.cat((history, grid.expand(batch, 1, cells)), dim=1)      # (B, S+1, X)
        x = self.lift(x)                                                   # (B, W, X)
        for index, (spectral, pointwise) in enumerate(zip(self.spectral, self.pointwise)):
            x = spectral(x) + pointwise(x)                                 # (B, W, X)
            if index < self.layers - 1:  # the last Fourier layer stays linear, as in the reference FNO
                x = F.gelu(x)
        return self.project(x)[:, 0]                                       # (B, X)


def rollout(model: FNO1d, u: torch.Tensor, input_steps: int, n_steps: int | None = None,
            batch_size: int = 256) -> torch.Tensor:
    """Autoregressive prediction from the first ``input_steps`` states, feeding predictions back.

    Args:
        model: the next-step operator (switched to eval mode; no gradients are taken).
        u: ``(B, T, X)`` trajectories; only ``u[:, :input_steps]`` is read.
        input_steps: history length the model reads.
        n_steps: steps to predict; ``T - input_steps`` (the rest of the trajectory) if None.
        batch_size: trajectories per forward pass, to bound memory.

    Returns:
        ``(B, n_steps, X)`` predictions of steps ``input_steps .. input_steps + n_steps - 1``.
    """
    n_steps = u.shape[1] - input_steps if n_steps is None else n_steps
    if input_steps > u.shape[1] or n_steps < 0:
        raise ValueError(f"cannot roll out {n_steps} steps from {input_steps} of {u.shape[1]} given steps")
    model.eval()
    chunks = []
    with torch.no_grad():
        for start in range(0, u.shape[0], batch_size):
            window = u[start:start + batch_size, :input_steps]            # (b, S, X)
            predicted = []
            for _ in range(n_steps):
                step = model(window)                                       # (b, X)
                predicted.append(step)
                window = torch.cat((window[:, 1:], step[:, None]), dim=1)  # slide the history by one
            chunks.append(torch.stack(predicted, dim=1) if predicted
                          else u.new_zeros(window.shape[0], 0, u.shape[2]))
    return torch.cat(chunks, dim=0) if chunks else u.new_zeros(0, n_steps, u.shape[2])
