"""The intervention catalogue: 40-70 changes per research environment, placebos included.

Entries are ``(slug, text, diff, group)``; a group in the ``placebo`` component marks a placebo.
``tests/envs/forecast/test_catalogue.py`` runs ``lint_catalogue`` over all of them.
"""

from __future__ import annotations

import functools
from typing import Any

from .catalogue_small import REGRESSION, SEQUENCE, WINE, bc_mlp
from .catalogue_studies import boosting_study, c_sweep, knn_study, logistic_study, svm_study, text_study
from .classify import BOOSTING_BASELINE, KNN_BASELINE, LOGREG_BASELINE, SVM_BASELINE
from .text_bow import TEXT_LOGREG_BASELINE, TEXT_NB_BASELINE
from .interventions import Intervention

__all__ = ["catalogue", "interventions_of"]

Entry = tuple[str, str, dict[str, Any], str]

# changes every gradient-trained environment shares (values are relative to each baseline below)
def _optimizer(lr: float, sgd_lr: float, alt: str, beta2: float, beta2_up: float) -> list[Entry]:
    return [
        ("lr_x3", f"Raise the learning rate 3x (to {lr * 3:g}).", {"lr": lr * 3}, "optimizer:lr:up"),
        ("lr_x10", f"Raise the learning rate 10x (to {lr * 10:g}).", {"lr": lr * 10}, "optimizer:lr:up"),
        ("lr_x100", f"Raise the learning rate 100x (to {lr * 100:g}).", {"lr": lr * 100}, "optimizer:lr:up"),
        ("lr_div3", f"Lower the learning rate 3x (to {lr / 3:g}).", {"lr": lr / 3}, "optimizer:lr:down"),
        ("lr_div10", f"Lower the learning rate 10x (to {lr / 10:g}).", {"lr": lr / 10}, "optimizer:lr:down"),
        ("beta2_down", f"Lower Adam's beta2 to {beta2:g}.", {"beta2": beta2}, "optimizer:beta2:down"),
        ("beta2_up", f"Raise Adam's beta2 to {beta2_up:g}.", {"beta2": beta2_up}, "optimizer:beta2:up"),
        ("beta1_down", "Lower Adam's beta1 (momentum) to 0.8.", {"beta1": 0.8}, "optimizer:beta1:down"),
        ("sgd", "Switch to SGD with momentum 0.9, same learning rate.", {"optimizer": "sgd"}, "swap:optimizer=sgd"),
        ("sgd_tuned", f"Switch to SGD with momentum 0.9 at learning rate {sgd_lr:g}.",
         {"optimizer": "sgd", "lr": sgd_lr}, "swap:optimizer=sgd"),
        ("rmsprop", "Switch to RMSprop, same learning rate.", {"optimizer": "rmsprop"}, "swap:optimizer=rmsprop"),
        ("adagrad", f"Switch to Adagrad at learning rate {lr * 10:g}.", {"optimizer": "adagrad", "lr": lr * 10},
         "swap:optimizer=adagrad"),
        (alt, f"Switch the optimizer to {alt} (weight decay unchanged).", {"optimizer": alt}, f"swap:optimizer={alt}"),
        ("cosine", "Decay the learning rate with a cosine schedule to 0.", {"schedule": "cosine"}, "swap:schedule=cosine"),
        ("linear", "Decay the learning rate linearly to 0.", {"schedule": "linear"}, "swap:schedule=linear"),
        ("step_decay", "Divide the learning rate by 10 halfway through.", {"schedule": "step"}, "swap:schedule=step"),
        ("warmup", "Add a linear warmup over the first 10% of steps.", {"warmup_frac": 0.1}, "schedule:warmup:up"),
        ("cosine_warmup", "Cosine decay after a 10% linear warmup.", {"schedule": "cosine", "warmup_frac": 0.1},
         "swap:schedule=cosine"),
    ]


def _placebos(log_every: int) -> list[Entry]:
    return [
        ("log_less", f"Log the training loss every {log_every * 3} instead of every {log_every} steps/epochs.",
         {"log_every": log_every * 3}, "placebo:log_every:up"),
        ("run_name", "Rename the run to 'ablation-b'.", {"run_name": "ablation-b"}, "placebo:run_name:rename"),
        ("reseed_data", "Draw the data order from a different seed.", {"data_seed_offset": 1000},
         "placebo:data_seed:reseed"),
        ("reseed_init", "Draw the initial weights from a different seed.", {"init_seed_offset": 1000},
         "placebo:init_seed:reseed"),
        ("reseed_both", "Redraw both the data order and the initial weights.",
         {"data_seed_offset": 2000, "init_seed_offset": 2000}, "placebo:seeds:reseed"),
    ]


_CHARLM: list[Entry] = [
    *_optimizer(3e-3, 0.3, "adam", 0.95, 0.999),
    ("no_clip", "Turn gradient clipping off (was 1.0).", {"grad_clip": 0.0}, "optimizer:grad_clip:off"),
    ("clip_tight", "Clip gradients at norm 0.1 instead of 1.0.", {"grad_clip": 0.1}, "optimizer:grad_clip:down"),
    ("batch_x2", "Double the batch (32 sequences) at the same token budget (half the steps).",
     {"batch_size": 32}, "batch:batch_size:up"),
    ("batch_half", "Halve the batch (8 sequences) at the same token budget (twice the steps).",
     {"batch_size": 8}, "batch:batch_size:down"),
    ("batch_x2_lr", "Double the batch and the learning rate, same tokens.", {"batch_size": 32, "lr": 6e-3},
     "batch:batch_size:up"),
    ("context_x2", "Context 64 with batch 8 (same tokens per step).", {"context": 64, "batch_size": 8},
     "batch:context:up"),
    ("context_half", "Context 16 with batch 32 (same tokens per step).", {"context": 16, "batch_size": 32},
     "batch:context:down"),
    ("wider", "Widen the model to d_model 64.", {"d_model": 64}, "architecture:width:up"),
    ("narrower", "Narrow the model to d_model 32.", {"d_model": 32}, "architecture:width:down"),
    ("deeper", "Use 3 transformer layers instead of 2.", {"n_layers": 3}, "architecture:depth:up"),
    ("shallower", "Use 1 transformer layer instead of 2.", {"n_layers": 1}, "architecture:depth:down"),
    ("one_head", "Use 1 attention head instead of 4.", {"n_heads": 1}, "architecture:heads:down"),
    ("eight_heads", "Use 8 attention heads instead of 4.", {"n_heads": 8}, "architecture:heads:up"),
    ("mlp_half", "Halve the MLP expansion (ratio 2).", {"mlp_ratio": 2}, "architecture:mlp_ratio:down"),
    ("relu", "Use ReLU instead of GELU in the MLP.", {"activation": "relu"}, "swap:activation=relu"),
    ("post_norm", "Post-LayerNorm blocks instead of pre-LayerNorm.", {"norm": "post"}, "swap:norm=post"),
    ("tied", "Tie the input embedding and the output head.", {"tie_embeddings": True}, "architecture:tie_embeddings:on"),
    ("init_big", "Initialise weights with std 0.1 instead of 0.02.", {"init_std": 0.1}, "init:std:up"),
    ("init_small", "Initialise weights with std 0.005 instead of 0.02.", {"init_std": 0.005}, "init:std:down"),
    ("dropout", "Add dropout 0.1.", {"dropout": 0.1}, "regularization:dropout:up"),
    ("weight_decay", "Weight decay 0.1 in AdamW.", {"weight_decay": 0.1}, "regularization:weight_decay:up"),
    ("label_smoothing", "Label smoothing 0.1.", {"label_smoothing": 0.1}, "regularization:label_smoothing:up"),
    ("quarter_data", "Train on the first 25% of the training text only.", {"train_fraction": 0.25},
     "data:train_fraction:down"),
    ("lowercase", "Lowercase the text (training and validation).", {"lowercase": True}, "data:lowercase:on"),
    *_placebos(10),
]

_DIGITS_COMMON: list[Entry] = [
    *_optimizer(1e-3, 0.05, "adamw", 0.99, 0.9999),
    ("clip", "Clip gradients at norm 1.0.", {"grad_clip": 1.0}, "optimizer:grad_clip:up"),
    ("batch_x2", "Batch 128 (half the steps per epoch).", {"batch_size": 128}, "batch:batch_size:up"),
    ("batch_half", "Batch 32 (twice the steps per epoch).", {"batch_size": 32}, "batch:batch_size:down"),
    ("batch_x2_lr", "Batch 128 and learning rate 2e-3.", {"batch_size": 128, "lr": 2e-3}, "batch:batch_size:up"),
    ("tanh", "Use tanh activations instead of ReLU.", {"activation": "tanh"}, "swap:activation=tanh"),
    ("gelu", "Use GELU activations instead of ReLU.", {"activation": "gelu"}, "swap:activation=gelu"),
    ("batchnorm", "Add batch normalisation after each hidden layer.", {"batch_norm": True},
     "architecture:batch_norm:on"),
    ("xavier", "Xavier-uniform initialisation.", {"init": "xavier"}, "swap:init=xavier"),
    ("kaiming", "Kaiming-normal initialisation.", {"init": "kaiming"}, "swap:init=kaiming"),
    ("init_small", "Scale the initial weights by 0.3.", {"init_gain": 0.3}, "init:gain:down"),
    ("init_big", "Scale the initial weights by 3.", {"init_gain": 3.0}, "init:gain:up"),
    ("dropout", "Add dropout 0.2.", {"dropout": 0.2}, "regularization:dropout:up"),
    ("weight_decay", "Weight decay 0.01 (coupled, in Adam).", {"weight_decay": 0.01}, "regularization:weight_decay:up"),
    ("label_smoothing", "Label smoothing 0.1.", {"label_smoothing": 0.1}, "regularization:label_smoothing:up"),
    ("half_data", "Train on a random half of the training images.", {"train_fraction": 0.5}, "data:train_fraction:down"),
    ("standardise", "Standardise each pixel with training mean and std.", {"input_scale": "standard"},
     "swap:input_scale=standard"),
    ("raw_pixels", "Feed raw pixel values 0..16 (no scaling).", {"input_scale": "raw"}, "swap:input_scale=raw"),
    ("label_noise", "Replace 10% of the training labels by random labels.", {"label_noise": 0.1}, "data:label_noise:up"),
    ("label_noise_heavy", "Replace 30% of the training labels by random labels.", {"label_noise": 0.3},
     "data:label_noise:up"),
    ("quarter_data", "Train on a random quarter of the training images.", {"train_fraction": 0.25},
     "data:train_fraction:down"),
    ("lr_x1_5", "Raise the learning rate 1.5x (to 0.0015).", {"lr": 1.5e-3}, "optimizer:lr:up"),
    ("beta1_up", "Raise Adam's beta1 (momentum) to 0.95.", {"beta1": 0.95}, "optimizer:beta1:up"),
    ("batch_16", "Batch 16 (four times the steps per epoch).", {"batch_size": 16}, "batch:batch_size:down"),
    ("long_warmup", "A linear warmup over the first 30% of steps.", {"warmup_frac": 0.3}, "schedule:warmup:up"),
    ("dropout_heavy", "Add dropout 0.5.", {"dropout": 0.5}, "regularization:dropout:up"),
    ("smoothing_heavy", "Label smoothing 0.3.", {"label_smoothing": 0.3}, "regularization:label_smoothing:up"),
    ("weight_decay_small", "Weight decay 0.001 (coupled, in Adam).", {"weight_decay": 1e-3},
     "regularization:weight_decay:up"),
    *_placebos(1),
]

_DIGITS_MLP: list[Entry] = [
    *_DIGITS_COMMON,
    ("wider", "Hidden width 128 instead of 64.", {"width": 128}, "architecture:width:up"),
    ("narrower", "Hidden width 16 instead of 64.", {"width": 16}, "architecture:width:down"),
    ("deeper", "Two hidden layers instead of one.", {"depth": 2}, "architecture:depth:up"),
    ("sigmoid", "Use sigmoid activations instead of ReLU.", {"activation": "sigmoid"}, "swap:activation=sigmoid"),
]

_DIGITS_CNN: list[Entry] = [
    *_DIGITS_COMMON,
    ("wider", "16 convolution channels instead of 8.", {"channels": 16}, "architecture:width:up"),
    ("narrower", "4 convolution channels instead of 8.", {"channels": 4}, "architecture:width:down"),
    ("deeper", "Two convolution layers instead of one.", {"conv_layers": 2}, "architecture:depth:up"),
    ("kernel5", "5x5 convolutions instead of 3x3.", {"kernel": 5}, "architecture:kernel:up"),
    ("avg_pool", "Average pooling instead of max pooling.", {"pool": "avg"}, "swap:pool=avg"),
    ("augment", "Random one-pixel shifts of each training batch.", {"augment_shift": True}, "data:augment_shift:on"),
]

_TABULAR: list[Entry] = [
    *c_sweep(),
    ("l1_lbfgs", "Switch to an L1 penalty (solver left at lbfgs).", {"penalty": "l1"}, "swap:penalty=l1"),
    ("l1_liblinear", "L1 penalty with the liblinear solver.", {"penalty": "l1", "solver": "liblinear"}, "swap:penalty=l1"),
    ("liblinear", "Use the liblinear solver.", {"solver": "liblinear"}, "swap:solver=liblinear"),
    ("newton", "Use the newton-cg solver.", {"solver": "newton-cg"}, "swap:solver=newton-cg"),
    ("saga", "Use the saga solver.", {"solver": "saga"}, "swap:solver=saga"),
    ("few_iters", "Stop the solver after 5 iterations.", {"max_iter": 5}, "optimizer:max_iter:down"),
    ("balanced", "Balanced class weights.", {"class_weight": "balanced"}, "swap:class_weight=balanced"),
    ("no_scaling", "Remove the standard scaler.", {"scaler": "none"}, "swap:scaler=none"),
    ("minmax", "Min-max scaling instead of standardisation.", {"scaler": "minmax"}, "swap:scaler=minmax"),
    ("robust", "Robust (median/IQR) scaling.", {"scaler": "robust"}, "swap:scaler=robust"),
    ("quantile", "Quantile-transform the features to uniform.", {"scaler": "quantile"}, "swap:scaler=quantile"),
    ("poly2", "Add degree-2 polynomial features.", {"poly_degree": 2}, "features:poly_degree:up"),
    ("mean_only", "Use only the 10 'mean' measurements.", {"features": "mean_only"}, "swap:features=mean_only"),
    ("worst_only", "Use only the 10 'worst' measurements.", {"features": "worst_only"}, "swap:features=worst_only"),
    ("mean_se", "Drop the 10 'worst' measurements.", {"features": "mean_and_se"}, "swap:features=mean_and_se"),
    ("half_data", "Fit on a random half of each training fold.", {"train_fraction": 0.5}, "data:train_fraction:down"),
    ("tenth_data", "Fit on a random 10% of each training fold.", {"train_fraction": 0.1}, "data:train_fraction:down"),
    ("svm", "RBF support vector machine (C = 1).", {"model": "svm_rbf"}, "swap:model=svm_rbf"),
    ("svm_C10", "RBF support vector machine with C = 10.", {"model": "svm_rbf", "C": 10.0}, "swap:model=svm_rbf"),
    ("linear_svm", "Linear SVM (C = 1).", {"model": "linear_svm"}, "swap:model=linear_svm"),
    ("forest", "Random forest, 30 trees.", {"model": "random_forest"}, "swap:model=random_forest"),
    ("forest_shallow", "Random forest, 30 trees of depth 3.", {"model": "random_forest", "max_depth": 3},
     "swap:model=random_forest"),
    ("boosting", "Gradient boosting, 30 trees of depth 3.", {"model": "gradient_boosting"},
     "swap:model=gradient_boosting"),
    ("boosting_fast", "Gradient boosting with learning rate 0.5.", {"model": "gradient_boosting", "learning_rate": 0.5},
     "swap:model=gradient_boosting"),
    ("knn", "k-nearest neighbours, k = 5.", {"model": "knn"}, "swap:model=knn"),
    ("knn15", "k-nearest neighbours, k = 15.", {"model": "knn", "n_neighbors": 15}, "swap:model=knn"),
    ("tree", "A single decision tree.", {"model": "decision_tree"}, "swap:model=decision_tree"),
    ("stump3", "A single decision tree of depth 3.", {"model": "decision_tree", "max_depth": 3},
     "swap:model=decision_tree"),
    ("ridge", "Ridge classifier (alpha = 1/C).", {"model": "ridge"}, "swap:model=ridge"),
    ("svm_gamma", "RBF SVM with gamma 0.01.", {"model": "svm_rbf", "gamma": 0.01}, "swap:model=svm_rbf"),
    ("svm_C01", "RBF SVM with C = 0.1.", {"model": "svm_rbf", "C": 0.1}, "swap:model=svm_rbf"),
    ("forest_10", "Random forest, 10 trees.", {"model": "random_forest", "n_estimators": 10}, "swap:model=random_forest"),
    ("boosting_deep", "Gradient boosting, 30 trees of depth 5.", {"model": "gradient_boosting", "max_depth": 5},
     "swap:model=gradient_boosting"),
    ("boosting_10", "Gradient boosting, 10 trees of depth 3.", {"model": "gradient_boosting", "n_estimators": 10},
     "swap:model=gradient_boosting"),
    ("knn1", "1-nearest neighbour.", {"model": "knn", "n_neighbors": 1}, "swap:model=knn"),
    ("knn_unscaled", "k-nearest neighbours (k = 5) on unscaled features.", {"model": "knn", "scaler": "none"},
     "swap:model=knn"),
    ("unscaled_C01", "Remove the scaler and set C = 0.1.", {"scaler": "none", "C": 0.1}, "swap:scaler=none"),
    ("balanced_C10", "Balanced class weights and C = 10.", {"class_weight": "balanced", "C": 10.0},
     "swap:class_weight=balanced"),
    ("ridge_strong", "Ridge classifier with alpha = 100.", {"model": "ridge", "C": 0.01}, "swap:model=ridge"),
    ("linear_svm_C01", "Linear SVM with C = 0.1.", {"model": "linear_svm", "C": 0.1}, "swap:model=linear_svm"),
    ("tree_depth5", "A single decision tree of depth 5.", {"model": "decision_tree", "max_depth": 5},
     "swap:model=decision_tree"),
    ("quarter_data", "Fit on a random quarter of each training fold.", {"train_fraction": 0.25},
     "data:train_fraction:down"),
    ("some_iters", "Stop the solver after 20 iterations.", {"max_iter": 20}, "optimizer:max_iter:down"),
    ("C_x30", "Weaker regularisation: C = 30.", {"C": 30.0}, "regularization:c:up"),
    ("run_name", "Rename the run to 'ablation-b'.", {"run_name": "ablation-b"}, "placebo:run_name:rename"),
    ("model_seed", "Change the model's random_state.", {"model_seed_offset": 1000}, "placebo:model_seed:reseed"),
    ("resplit", "Draw the cross-validation folds from a different seed.", {"split_seed_offset": 1000},
     "placebo:split_seed:reseed"),
    ("quiet", "Set the solver's verbosity to 0 explicitly (it was 0).", {"verbose": False}, "placebo:verbose:off"),
    ("resplit_named", "Redraw the folds and rename the run.", {"split_seed_offset": 2000, "run_name": "resplit"},
     "placebo:split_seed:reseed"),
]

_BY_ENV: dict[str, list[Entry]] = {
    "charlm-pydoc": _CHARLM, "charlm-stdlib": _CHARLM,
    "digits-mlp": _DIGITS_MLP, "digits-cnn": _DIGITS_CNN, "tabular-bc": _TABULAR,
    "tabular-wine": WINE, "bc-mlp": bc_mlp(_optimizer(1e-3, 0.05, "adamw", 0.99, 0.9999), _placebos(1)),
    "regress-diabetes": REGRESSION, "regress-friedman": REGRESSION, "seq-ar": SEQUENCE, "seq-season": SEQUENCE,
    "seq-threshold": SEQUENCE,
    "clf-moons": logistic_study(LOGREG_BASELINE),
    "clf-sparse": [e for e in logistic_study(LOGREG_BASELINE) if not e[0].startswith("poly3")],
    "clf-circles": svm_study(SVM_BASELINE), "clf-hastie": boosting_study(BOOSTING_BASELINE),
    "knn-blobs": knn_study(KNN_BASELINE, (2, 4)), "knn-digits": knn_study(KNN_BASELINE, (5, 10, 20)),
    "text-topics": text_study(TEXT_NB_BASELINE, probabilistic=False),
    "text-spam": text_study(TEXT_LOGREG_BASELINE, probabilistic=True),
    # degree-3 features of 50-60 columns are 23,000-40,000 columns: left out where they would dwarf every other run
    "regress-friedman3": REGRESSION, "regress-sparse": [e for e in REGRESSION if e[0] != "poly3"],
    # round five: the same studies on other data sets (cheap runs: more targets for the experience verdict)
    "regress-friedman2": REGRESSION, "regress-lowrank": [e for e in REGRESSION if e[0] != "poly3"],
    "regress-uncorrelated": REGRESSION, "seq-chaos": SEQUENCE, "seq-arma": SEQUENCE, "seq-period7": SEQUENCE,
    "svm-moons": svm_study(SVM_BASELINE), "svm-bc": svm_study(SVM_BASELINE), "knn-wine": knn_study(KNN_BASELINE, (2, 5)),
    "clf-quantiles": logistic_study(LOGREG_BASELINE),
    # round six: new data or another model family on the studies above (cheap runs: more targets, bigger small groups)
    "text-sentiment": text_study(TEXT_LOGREG_BASELINE, probabilistic=False),
    "text-authors": text_study(TEXT_NB_BASELINE, probabilistic=True),
    "text-topics-lr": text_study(TEXT_LOGREG_BASELINE, probabilistic=True),
    "text-spam-nb": text_study(TEXT_NB_BASELINE, probabilistic=False),
    "knn-patches": knn_study(KNN_BASELINE, (5, 10, 20)),
    # polynomial features of 64 pixels are 2,144 columns: left out on the patches
    "svm-patches": [e for e in svm_study(SVM_BASELINE) if "poly2" not in e[0]],
    "logreg-patches": [e for e in logistic_study(LOGREG_BASELINE) if not e[0].startswith("poly")],
    "clf-iris": logistic_study(LOGREG_BASELINE),
    "regress-scurve": REGRESSION, "regress-swissroll": REGRESSION, "regress-linnerud": REGRESSION,
    "seq-walk": SEQUENCE, "seq-twoseason": SEQUENCE, "seq-resonant": SEQUENCE,
}


@functools.lru_cache(maxsize=1)
def catalogue() -> tuple[Intervention, ...]:
    """Every intervention of every research environment, in a fixed order."""
    return tuple(Intervention(id=f"{env}/{slug}", text=text, diff=dict(diff), group=group,
                              placebo=group.startswith("placebo:"))
                 for env, entries in _BY_ENV.items() for slug, text, diff, group in entries)


def interventions_of(environment: str) -> tuple[Intervention, ...]:
    """The interventions of one research environment."""
    return tuple(iv for iv in catalogue() if iv.environment == environment)
