"""The catalogues of the six environments added in round three (runs of a few seconds or less).

``tabular-wine`` (probabilistic classifiers, CV log-loss), ``regress-diabetes`` and
``regress-friedman`` (one shared regression catalogue), ``seq-ar`` and ``seq-season`` (one shared
lag-window catalogue) and ``bc-mlp`` (a torch MLP; the optimizer changes shared with the digits
environments; its training entries are ``batch_entries``, ``epoch_entries``, ``init_entries`` and
``regularisation_entries``, for the next small neural environment). Entries are ``(slug, text, diff, group)`` as in ``catalogue``; placebos are chosen by
their diff alone: a run name, a logging interval, a model or split seed, a redrawn data
realisation; none is chosen, kept or dropped by its outcome.
"""

from __future__ import annotations

from typing import Any

__all__ = ["WINE", "REGRESSION", "SEQUENCE", "bc_mlp", "sklearn_placebos", "model_swaps",
           "data_fractions", "batch_entries", "epoch_entries", "init_entries", "regularisation_entries", "Entry"]

Entry = tuple[str, str, dict[str, Any], str]


def sklearn_placebos() -> list[Entry]:
    return [
        ("run_name", "Rename the run to 'ablation-b'.", {"run_name": "ablation-b"}, "placebo:run_name:rename"),
        ("model_seed", "Change the model's random_state.", {"model_seed_offset": 1000}, "placebo:model_seed:reseed"),
        ("resplit", "Draw the cross-validation folds from a different seed.", {"split_seed_offset": 1000},
         "placebo:split_seed:reseed"),
        ("resplit_named", "Redraw the folds and rename the run.", {"split_seed_offset": 2000, "run_name": "resplit"},
         "placebo:split_seed:reseed"),
    ]


def model_swaps() -> list[Entry]:
    """Tree and neighbour models every scikit-learn environment shares (same diffs, same groups)."""
    return [
        ("forest", "Random forest, 30 trees.", {"model": "random_forest"}, "swap:model=random_forest"),
        ("forest_shallow", "Random forest, 30 trees of depth 3.", {"model": "random_forest", "max_depth": 3},
         "swap:model=random_forest"),
        ("forest_10", "Random forest, 10 trees.", {"model": "random_forest", "n_estimators": 10},
         "swap:model=random_forest"),
        ("boosting", "Gradient boosting, 30 trees of depth 3.", {"model": "gradient_boosting"},
         "swap:model=gradient_boosting"),
        ("boosting_fast", "Gradient boosting with learning rate 0.5.",
         {"model": "gradient_boosting", "learning_rate": 0.5}, "swap:model=gradient_boosting"),
        ("boosting_10", "Gradient boosting, 10 trees of depth 3.", {"model": "gradient_boosting", "n_estimators": 10},
         "swap:model=gradient_boosting"),
        ("boosting_deep", "Gradient boosting, 30 trees of depth 5.", {"model": "gradient_boosting", "max_depth": 5},
         "swap:model=gradient_boosting"),
        ("knn", "k-nearest neighbours, k = 5.", {"model": "knn"}, "swap:model=knn"),
        ("knn15", "k-nearest neighbours, k = 15.", {"model": "knn", "n_neighbors": 15}, "swap:model=knn"),
        ("knn1", "1-nearest neighbour.", {"model": "knn", "n_neighbors": 1}, "swap:model=knn"),
        ("knn_unscaled", "k-nearest neighbours (k = 5) on unscaled features.", {"model": "knn", "scaler": "none"},
         "swap:model=knn"),
        ("tree", "A single decision tree.", {"model": "decision_tree"}, "swap:model=decision_tree"),
        ("stump3", "A single decision tree of depth 3.", {"model": "decision_tree", "max_depth": 3},
         "swap:model=decision_tree"),
        ("tree_depth5", "A single decision tree of depth 5.", {"model": "decision_tree", "max_depth": 5},
         "swap:model=decision_tree"),
    ]


def data_fractions(unit: str) -> list[Entry]:
    return [
        ("half_data", f"Fit on a random half of each {unit}.", {"train_fraction": 0.5}, "data:train_fraction:down"),
        ("quarter_data", f"Fit on a random quarter of each {unit}.", {"train_fraction": 0.25},
         "data:train_fraction:down"),
        ("tenth_data", f"Fit on a random 10% of each {unit}.", {"train_fraction": 0.1}, "data:train_fraction:down"),
    ]


WINE: list[Entry] = [
    ("C_x3", "Weaker regularisation: C = 3.", {"C": 3.0}, "regularization:c:up"),
    ("C_x10", "Weaker regularisation: C = 10.", {"C": 10.0}, "regularization:c:up"),
    ("C_x30", "Weaker regularisation: C = 30.", {"C": 30.0}, "regularization:c:up"),
    ("C_x100", "Much weaker regularisation: C = 100.", {"C": 100.0}, "regularization:c:up"),
    ("C_div3", "Stronger regularisation: C = 0.3.", {"C": 0.3}, "regularization:c:down"),
    ("C_div10", "Stronger regularisation: C = 0.1.", {"C": 0.1}, "regularization:c:down"),
    ("C_div100", "Much stronger regularisation: C = 0.01.", {"C": 0.01}, "regularization:c:down"),
    ("l1_lbfgs", "Switch to an L1 penalty (solver left at lbfgs).", {"penalty": "l1"}, "swap:penalty=l1"),
    ("l1_saga", "L1 penalty with the saga solver.", {"penalty": "l1", "solver": "saga"}, "swap:penalty=l1"),
    ("newton", "Use the newton-cg solver.", {"solver": "newton-cg"}, "swap:solver=newton-cg"),
    ("saga", "Use the saga solver.", {"solver": "saga"}, "swap:solver=saga"),
    ("few_iters", "Stop the solver after 5 iterations.", {"max_iter": 5}, "optimizer:max_iter:down"),
    ("balanced", "Balanced class weights.", {"class_weight": "balanced"}, "swap:class_weight=balanced"),
    ("balanced_C10", "Balanced class weights and C = 10.", {"class_weight": "balanced", "C": 10.0},
     "swap:class_weight=balanced"),
    ("no_scaling", "Remove the standard scaler.", {"scaler": "none"}, "swap:scaler=none"),
    ("unscaled_C01", "Remove the scaler and set C = 0.1.", {"scaler": "none", "C": 0.1}, "swap:scaler=none"),
    ("minmax", "Min-max scaling instead of standardisation.", {"scaler": "minmax"}, "swap:scaler=minmax"),
    ("robust", "Robust (median/IQR) scaling.", {"scaler": "robust"}, "swap:scaler=robust"),
    ("poly2", "Add degree-2 polynomial features.", {"poly_degree": 2}, "features:poly_degree:up"),
    ("first_seven", "Use only the first 7 measurements (alcohol to proanthocyanins).", {"features": "first_seven"},
     "swap:features=first_seven"),
    ("last_six", "Use only the last 6 measurements (colour, hue, OD280/OD315, proline).", {"features": "last_six"},
     "swap:features=last_six"),
    *data_fractions("training fold"),
    ("svm", "RBF support vector machine with Platt probabilities (C = 1).", {"model": "svm_rbf"},
     "swap:model=svm_rbf"),
    ("svm_C10", "RBF support vector machine with C = 10.", {"model": "svm_rbf", "C": 10.0}, "swap:model=svm_rbf"),
    ("svm_C01", "RBF SVM with C = 0.1.", {"model": "svm_rbf", "C": 0.1}, "swap:model=svm_rbf"),
    *model_swaps(),
    ("naive_bayes", "Gaussian naive Bayes.", {"model": "naive_bayes"}, "swap:model=naive_bayes"),
    ("nb_smooth", "Gaussian naive Bayes with variance smoothing 0.01.",
     {"model": "naive_bayes", "var_smoothing": 0.01}, "swap:model=naive_bayes"),
    ("lda", "Linear discriminant analysis.", {"model": "lda"}, "swap:model=lda"),
    ("qda", "Quadratic discriminant analysis (regularised 0.1).", {"model": "qda"}, "swap:model=qda"),
    *sklearn_placebos(),
]

REGRESSION: list[Entry] = [
    ("alpha_x10", "Stronger ridge penalty: alpha = 10.", {"alpha": 10.0}, "regularization:alpha:up"),
    ("alpha_x100", "Much stronger ridge penalty: alpha = 100.", {"alpha": 100.0}, "regularization:alpha:up"),
    ("alpha_div10", "Weaker ridge penalty: alpha = 0.1.", {"alpha": 0.1}, "regularization:alpha:down"),
    ("alpha_div100", "Much weaker ridge penalty: alpha = 0.01.", {"alpha": 0.01}, "regularization:alpha:down"),
    ("ols", "Ordinary least squares (no penalty).", {"model": "ols"}, "swap:model=ols"),
    ("lasso", "Lasso with alpha = 1.", {"model": "lasso"}, "swap:model=lasso"),
    ("lasso_small", "Lasso with alpha = 0.1.", {"model": "lasso", "alpha": 0.1}, "swap:model=lasso"),
    ("lasso_tiny", "Lasso with alpha = 0.01.", {"model": "lasso", "alpha": 0.01}, "swap:model=lasso"),
    ("elastic_net", "Elastic net with alpha = 1 and l1_ratio 0.5.", {"model": "elastic_net"},
     "swap:model=elastic_net"),
    ("enet_small", "Elastic net with alpha = 0.01.", {"model": "elastic_net", "alpha": 0.01}, "swap:model=elastic_net"),
    ("huber", "Huber regression (robust to outliers).", {"model": "huber"}, "swap:model=huber"),
    ("svr", "RBF support vector regression (C = 1, epsilon 0.1) on the raw target.", {"model": "svr"},
     "swap:model=svr"),
    ("svr_scaled", "RBF support vector regression on a standardised target.",
     {"model": "svr", "target_scaling": "standard"}, "swap:model=svr"),
    ("svr_C10", "RBF SVR with C = 10 on a standardised target.",
     {"model": "svr", "target_scaling": "standard", "C": 10.0}, "swap:model=svr"),
    ("kernel_ridge", "RBF kernel ridge regression (alpha = 1).", {"model": "kernel_ridge"}, "swap:model=kernel_ridge"),
    ("kernel_ridge_small", "RBF kernel ridge regression with alpha = 0.1.",
     {"model": "kernel_ridge", "alpha": 0.1}, "swap:model=kernel_ridge"),
    *model_swaps(),
    ("boosting_100", "Gradient boosting, 100 trees of depth 3.", {"model": "gradient_boosting", "n_estimators": 100},
     "swap:model=gradient_boosting"),
    ("no_scaling", "Remove the standard scaler.", {"scaler": "none"}, "swap:scaler=none"),
    ("minmax", "Min-max scaling instead of standardisation.", {"scaler": "minmax"}, "swap:scaler=minmax"),
    ("robust", "Robust (median/IQR) scaling.", {"scaler": "robust"}, "swap:scaler=robust"),
    ("target_standard", "Standardise the target before the fit (and undo it after).",
     {"target_scaling": "standard"}, "swap:target_scaling=standard"),
    ("poly2", "Add degree-2 polynomial features.", {"poly_degree": 2}, "features:poly_degree:up"),
    ("poly2_alpha10", "Degree-2 polynomial features with alpha = 10.", {"poly_degree": 2, "alpha": 10.0},
     "features:poly_degree:up"),
    ("poly3", "Add degree-3 polynomial features.", {"poly_degree": 3}, "features:poly_degree:up"),
    ("first_half", "Use only the first half of the features.", {"features": "first_half"},
     "swap:features=first_half"),
    ("second_half", "Use only the second half of the features.", {"features": "second_half"},
     "swap:features=second_half"),
    *data_fractions("training fold"),
    *sklearn_placebos(),
]

SEQUENCE: list[Entry] = [
    ("lags_1", "Use 1 lag instead of 4.", {"lags": 1}, "features:lags:down"),
    ("lags_2", "Use 2 lags instead of 4.", {"lags": 2}, "features:lags:down"),
    ("lags_8", "Use 8 lags instead of 4.", {"lags": 8}, "features:lags:up"),
    ("lags_12", "Use 12 lags instead of 4.", {"lags": 12}, "features:lags:up"),
    ("lags_24", "Use 24 lags instead of 4.", {"lags": 24}, "features:lags:up"),
    ("lags12_season", "12 lags plus sine/cosine features of the 12-step phase.", {"lags": 12, "season_features": True},
     "features:lags:up"),
    ("season", "Add sine/cosine features of the 12-step phase.", {"season_features": True},
     "features:season_features:on"),
    ("difference", "Predict the change from the last value (differenced inputs and target).", {"difference": True},
     "features:difference:on"),
    ("difference_season", "Differencing plus the phase features.", {"difference": True, "season_features": True},
     "features:difference:on"),
    ("alpha_x10", "Stronger ridge penalty: alpha = 10.", {"alpha": 10.0}, "regularization:alpha:up"),
    ("alpha_x100", "Much stronger ridge penalty: alpha = 100.", {"alpha": 100.0}, "regularization:alpha:up"),
    ("alpha_div10", "Weaker ridge penalty: alpha = 0.1.", {"alpha": 0.1}, "regularization:alpha:down"),
    ("alpha_div100", "Much weaker ridge penalty: alpha = 0.01.", {"alpha": 0.01}, "regularization:alpha:down"),
    ("lasso", "Lasso with alpha = 0.01.", {"model": "lasso"}, "swap:model=lasso"),
    ("lasso_strong", "Lasso with alpha = 0.1.", {"model": "lasso", "alpha": 10.0}, "swap:model=lasso"),
    *model_swaps(),
    ("boosting_100", "Gradient boosting, 100 trees of depth 3.", {"model": "gradient_boosting", "n_estimators": 100},
     "swap:model=gradient_boosting"),
    ("forest_lags12", "Random forest on 12 lags.", {"model": "random_forest", "lags": 12}, "swap:model=random_forest"),
    ("boosting_season", "Gradient boosting with the phase features.",
     {"model": "gradient_boosting", "season_features": True}, "swap:model=gradient_boosting"),
    ("no_scaling", "Remove the standard scaler.", {"scaler": "none"}, "swap:scaler=none"),
    ("minmax", "Min-max scaling instead of standardisation.", {"scaler": "minmax"}, "swap:scaler=minmax"),
    *data_fractions("training span (the most recent windows)"),
    ("run_name", "Rename the run to 'ablation-b'.", {"run_name": "ablation-b"}, "placebo:run_name:rename"),
    ("log_less", "Log the running test error 3x less often.", {"log_every": 3}, "placebo:log_every:up"),
    ("model_seed", "Change the model's random_state.", {"model_seed_offset": 1000}, "placebo:model_seed:reseed"),
    ("reseed_data", "Draw the sequence from a different seed.", {"data_seed_offset": 1000}, "placebo:data_seed:reseed"),
    ("reseed_named", "Redraw the sequence and rename the run.", {"data_seed_offset": 2000, "run_name": "reseed"},
     "placebo:data_seed:reseed"),
]


def batch_entries(batch: int) -> list[Entry]:
    return [
        ("clip", "Clip gradients at norm 1.0.", {"grad_clip": 1.0}, "optimizer:grad_clip:up"),
        ("batch_x2", f"Batch {batch * 2} (half the steps per epoch).", {"batch_size": batch * 2}, "batch:batch_size:up"),
        ("batch_half", f"Batch {batch // 2} (twice the steps per epoch).", {"batch_size": batch // 2},
         "batch:batch_size:down"),
    ]


def epoch_entries(epochs: int) -> list[Entry]:
    return [
        ("epochs_x2", f"Train {epochs * 2} epochs instead of {epochs}.", {"epochs": epochs * 2}, "budget:epochs:up"),
        ("epochs_half", f"Train {epochs // 2} epochs instead of {epochs}.", {"epochs": epochs // 2},
         "budget:epochs:down"),
    ]


def init_entries() -> list[Entry]:
    return [
        ("init_small", "Scale the initial weights by 0.3.", {"init_gain": 0.3}, "init:gain:down"),
        ("init_big", "Scale the initial weights by 3.", {"init_gain": 3.0}, "init:gain:up"),
    ]


def regularisation_entries(unit: str) -> list[Entry]:
    """Dropout, weight decay, label smoothing and less data: shared by the small neural environments."""
    return [
        ("dropout", "Add dropout 0.2.", {"dropout": 0.2}, "regularization:dropout:up"),
        ("dropout_heavy", "Add dropout 0.5.", {"dropout": 0.5}, "regularization:dropout:up"),
        ("weight_decay", "Weight decay 0.01 (coupled, in Adam).", {"weight_decay": 0.01},
         "regularization:weight_decay:up"),
        ("weight_decay_small", "Weight decay 0.001 (coupled, in Adam).", {"weight_decay": 1e-3},
         "regularization:weight_decay:up"),
        ("label_smoothing", "Label smoothing 0.1.", {"label_smoothing": 0.1}, "regularization:label_smoothing:up"),
        ("smoothing_heavy", "Label smoothing 0.3.", {"label_smoothing": 0.3}, "regularization:label_smoothing:up"),
        ("half_data", f"Train on a random half of the training {unit}.", {"train_fraction": 0.5},
         "data:train_fraction:down"),
        ("quarter_data", f"Train on a random quarter of the training {unit}.", {"train_fraction": 0.25},
         "data:train_fraction:down"),
    ]


def bc_mlp(optimizer: list[Entry], placebos: list[Entry]) -> list[Entry]:
    """The bc-mlp catalogue: ``optimizer`` and ``placebos`` are the digits environments' (learning rate 1e-3)."""
    return [
        *optimizer,
        *batch_entries(32),
        ("batch_x2_lr", "Batch 64 and learning rate 2e-3.", {"batch_size": 64, "lr": 2e-3}, "batch:batch_size:up"),
        *epoch_entries(10),
        ("tanh", "Use tanh activations instead of ReLU.", {"activation": "tanh"}, "swap:activation=tanh"),
        ("gelu", "Use GELU activations instead of ReLU.", {"activation": "gelu"}, "swap:activation=gelu"),
        ("sigmoid", "Use sigmoid activations instead of ReLU.", {"activation": "sigmoid"}, "swap:activation=sigmoid"),
        ("batchnorm", "Add batch normalisation after each hidden layer.", {"batch_norm": True},
         "architecture:batch_norm:on"),
        *init_entries(),
        ("wider", "Hidden width 64 instead of 32.", {"width": 64}, "architecture:width:up"),
        ("narrower", "Hidden width 8 instead of 32.", {"width": 8}, "architecture:width:down"),
        ("deeper", "Two hidden layers instead of one.", {"depth": 2}, "architecture:depth:up"),
        *regularisation_entries("rows"),
        ("minmax_inputs", "Min-max scale the features instead of standardising them.", {"input_scale": "minmax"},
         "swap:input_scale=minmax"),
        ("raw_inputs", "Feed the raw feature values (no scaling).", {"input_scale": "raw"}, "swap:input_scale=raw"),
        ("label_noise", "Flip 10% of the training labels.", {"label_noise": 0.1}, "data:label_noise:up"),
        ("label_noise_heavy", "Flip 30% of the training labels.", {"label_noise": 0.3}, "data:label_noise:up"),
        *placebos,
    ]
