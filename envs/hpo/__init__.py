"""Hyperparameter search: fine-tune a pretrained neural operator on a shifted 1-D PDE."""
