"""The catalogues of the environments added in round four: one study per model family.

``logistic_study`` (``clf-moons``, ``clf-sparse``), ``svm_study`` (``clf-circles``),
``boosting_study`` (``clf-hastie``), ``knn_study`` (``knn-blobs``, ``knn-digits``) and ``text_study``
(``text-topics``, ``text-spam``); ``seq-threshold`` and the two new regressions take theirs from
``catalogue_small``. Entries are
``(slug, text, diff, group)`` as in ``catalogue``; Round six reuses them on new data or another baseline model (``catalogue._BY_ENV``).
``applicable`` drops the entries that would set
a knob to its baseline value (a model swap to the model already used), so a study serves
environments with different baselines. Placebos are chosen by their diff alone (a run name, a model
or split seed, a logging interval), never by their outcome.
"""

from __future__ import annotations

from typing import Any, Mapping

from .catalogue_small import Entry, data_fractions, model_swaps, sklearn_placebos

__all__ = ["applicable", "c_sweep", "logistic_study", "svm_study", "boosting_study", "knn_study", "text_study"]


def applicable(entries: list[Entry], baseline: Mapping[str, Any]) -> list[Entry]:
    """``entries`` without those whose diff sets some knob to the value the baseline already has."""
    return [e for e in entries if not any(k in baseline and baseline[k] == v and type(baseline[k]) is type(v)
                                          for k, v in e[2].items())]


def c_sweep() -> list[Entry]:
    return [
        ("C_x3", "Weaker regularisation: C = 3.", {"C": 3.0}, "regularization:c:up"),
        ("C_x10", "Weaker regularisation: C = 10.", {"C": 10.0}, "regularization:c:up"),
        ("C_x100", "Much weaker regularisation: C = 100.", {"C": 100.0}, "regularization:c:up"),
        ("C_div3", "Stronger regularisation: C = 0.3.", {"C": 0.3}, "regularization:c:down"),
        ("C_div10", "Stronger regularisation: C = 0.1.", {"C": 0.1}, "regularization:c:down"),
        ("C_div100", "Much stronger regularisation: C = 0.01.", {"C": 0.01}, "regularization:c:down"),
    ]


def _scalers() -> list[Entry]:
    return [
        ("no_scaling", "Remove the standard scaler.", {"scaler": "none"}, "swap:scaler=none"),
        ("minmax", "Min-max scaling instead of standardisation.", {"scaler": "minmax"}, "swap:scaler=minmax"),
        ("robust", "Robust (median/IQR) scaling.", {"scaler": "robust"}, "swap:scaler=robust"),
        ("quantile", "Quantile-transform the features to uniform.", {"scaler": "quantile"}, "swap:scaler=quantile"),
    ]


def _feature_halves() -> list[Entry]:
    return [
        ("first_half", "Use only the first half of the features.", {"features": "first_half"},
         "swap:features=first_half"),
        ("second_half", "Use only the second half of the features.", {"features": "second_half"},
         "swap:features=second_half"),
    ]


def _other_classifiers() -> list[Entry]:
    return [
        ("naive_bayes", "Gaussian naive Bayes.", {"model": "naive_bayes"}, "swap:model=naive_bayes"),
        ("lda", "Linear discriminant analysis.", {"model": "lda"}, "swap:model=lda"),
        ("qda", "Quadratic discriminant analysis (regularised 0.1).", {"model": "qda"}, "swap:model=qda"),
    ]


def logistic_study(baseline: Mapping[str, Any]) -> list[Entry]:
    """Regularisation, penalties, solvers, scaling, polynomial features and other models around a logistic regression."""
    return applicable([
        *c_sweep(),
        ("l1_saga", "L1 penalty with the saga solver.", {"penalty": "l1", "solver": "saga"}, "swap:penalty=l1"),
        ("l1_liblinear", "L1 penalty with the liblinear solver.", {"penalty": "l1", "solver": "liblinear"},
         "swap:penalty=l1"),
        ("l1_C10", "L1 penalty (saga) and C = 10.", {"penalty": "l1", "solver": "saga", "C": 10.0}, "swap:penalty=l1"),
        ("newton", "Use the newton-cg solver.", {"solver": "newton-cg"}, "swap:solver=newton-cg"),
        ("few_iters", "Stop the solver after 5 iterations.", {"max_iter": 5}, "optimizer:max_iter:down"),
        ("balanced", "Balanced class weights.", {"class_weight": "balanced"}, "swap:class_weight=balanced"),
        *_scalers(),
        ("poly2", "Add degree-2 polynomial features.", {"poly_degree": 2}, "features:poly_degree:up"),
        ("poly3", "Add degree-3 polynomial features.", {"poly_degree": 3}, "features:poly_degree:up"),
        ("poly3_C10", "Degree-3 polynomial features and C = 10.", {"poly_degree": 3, "C": 10.0},
         "features:poly_degree:up"),
        *_feature_halves(),
        *data_fractions("training fold"),
        ("svm", "RBF support vector machine with Platt probabilities (C = 1).", {"model": "svm_rbf"},
         "swap:model=svm_rbf"),
        ("svm_C10", "RBF support vector machine with C = 10.", {"model": "svm_rbf", "C": 10.0}, "swap:model=svm_rbf"),
        ("svm_poly", "Support vector machine with a cubic polynomial kernel.", {"model": "svm_rbf", "kernel": "poly"},
         "swap:model=svm_rbf"),
        *model_swaps(),
        *_other_classifiers(),
        *sklearn_placebos(),
    ], baseline)


def svm_study(baseline: Mapping[str, Any]) -> list[Entry]:
    """C, kernel width, kernels, scaling and other models around an RBF support vector machine."""
    return applicable([
        *c_sweep(),
        ("gamma_001", "Kernel width gamma = 0.01 (smoother boundary).", {"gamma": 0.01}, "swap:gamma=0.01"),
        ("gamma_01", "Kernel width gamma = 0.1.", {"gamma": 0.1}, "swap:gamma=0.1"),
        ("gamma_1", "Kernel width gamma = 1.", {"gamma": 1.0}, "swap:gamma=1.0"),
        ("gamma_10", "Kernel width gamma = 10 (a very wiggly boundary).", {"gamma": 10.0}, "swap:gamma=10.0"),
        ("gamma_auto", "gamma = 1 / n_features ('auto') instead of 'scale'.", {"gamma": "auto"}, "swap:gamma=auto"),
        ("gamma_10_C01", "gamma = 10 with C = 0.1.", {"gamma": 10.0, "C": 0.1}, "swap:gamma=10.0"),
        ("linear_kernel", "A linear kernel.", {"kernel": "linear"}, "swap:kernel=linear"),
        ("poly_kernel", "A cubic polynomial kernel.", {"kernel": "poly"}, "swap:kernel=poly"),
        ("poly2_kernel", "A quadratic polynomial kernel.", {"kernel": "poly", "degree": 2}, "swap:kernel=poly"),
        ("sigmoid_kernel", "A sigmoid kernel.", {"kernel": "sigmoid"}, "swap:kernel=sigmoid"),
        ("balanced", "Balanced class weights.", {"class_weight": "balanced"}, "swap:class_weight=balanced"),
        *_scalers(),
        ("poly2", "Add degree-2 polynomial features.", {"poly_degree": 2}, "features:poly_degree:up"),
        *_feature_halves(),
        *data_fractions("training fold"),
        ("logreg", "Logistic regression (C = 1).", {"model": "logreg"}, "swap:model=logreg"),
        ("logreg_poly2", "Logistic regression on degree-2 polynomial features.", {"model": "logreg", "poly_degree": 2},
         "swap:model=logreg"),
        ("linear_svm", "Linear SVM (C = 1).", {"model": "linear_svm"}, "swap:model=linear_svm"),
        *model_swaps(),
        *_other_classifiers(),
        *sklearn_placebos(),
    ], baseline)


def boosting_study(baseline: Mapping[str, Any]) -> list[Entry]:
    """Trees, learning rate, depth, subsampling and other ensembles around gradient boosting."""
    return applicable([
        ("trees_x2", "60 trees instead of 30.", {"n_estimators": 60}, "budget:n_estimators:up"),
        ("trees_x4", "120 trees instead of 30.", {"n_estimators": 120}, "budget:n_estimators:up"),
        ("trees_half", "15 trees instead of 30.", {"n_estimators": 15}, "budget:n_estimators:down"),
        ("trees_10", "10 trees instead of 30.", {"n_estimators": 10}, "budget:n_estimators:down"),
        ("lr_x3", "Learning rate 0.3.", {"learning_rate": 0.3}, "optimizer:learning_rate:up"),
        ("lr_x10", "Learning rate 1.0.", {"learning_rate": 1.0}, "optimizer:learning_rate:up"),
        ("lr_div3", "Learning rate 0.03.", {"learning_rate": 0.03}, "optimizer:learning_rate:down"),
        ("lr_div10", "Learning rate 0.01.", {"learning_rate": 0.01}, "optimizer:learning_rate:down"),
        ("slow_long", "Learning rate 0.05 with 60 trees.", {"learning_rate": 0.05, "n_estimators": 60},
         "optimizer:learning_rate:down"),
        ("stumps", "Stumps (depth 1) instead of depth 2.", {"max_depth": 1}, "architecture:max_depth:down"),
        ("depth3", "Trees of depth 3.", {"max_depth": 3}, "architecture:max_depth:up"),
        ("depth4", "Trees of depth 4.", {"max_depth": 4}, "architecture:max_depth:up"),
        ("depth6", "Trees of depth 6.", {"max_depth": 6}, "architecture:max_depth:up"),
        ("subsample_half", "Stochastic boosting: each tree sees half the rows.", {"subsample": 0.5},
         "regularization:subsample:down"),
        ("subsample_08", "Stochastic boosting: each tree sees 80% of the rows.", {"subsample": 0.8},
         "regularization:subsample:down"),
        ("leaf5", "At least 5 rows per leaf.", {"min_samples_leaf": 5}, "regularization:min_samples_leaf:up"),
        ("leaf20", "At least 20 rows per leaf.", {"min_samples_leaf": 20}, "regularization:min_samples_leaf:up"),
        ("sqrt_features", "Each split considers sqrt(n_features) features.", {"max_features": "sqrt"},
         "swap:max_features=sqrt"),
        ("half_features", "Each split considers half the features.", {"max_features": 0.5}, "swap:max_features=0.5"),
        ("standardise", "Standardise the features first.", {"scaler": "standard"}, "swap:scaler=standard"),
        *_feature_halves(),
        *data_fractions("training fold"),
        ("hist", "Histogram gradient boosting (30 iterations, depth 2).", {"model": "hist_boosting"},
         "swap:model=hist_boosting"),
        ("hist_deep", "Histogram gradient boosting with unlimited depth.", {"model": "hist_boosting", "max_depth": 0},
         "swap:model=hist_boosting"),
        ("adaboost", "AdaBoost (30 stumps, learning rate 0.1).", {"model": "adaboost"}, "swap:model=adaboost"),
        ("adaboost_fast", "AdaBoost with learning rate 1.", {"model": "adaboost", "learning_rate": 1.0},
         "swap:model=adaboost"),
        ("forest", "Random forest, 30 fully grown trees.", {"model": "random_forest", "max_depth": 0},
         "swap:model=random_forest"),
        ("forest_shallow", "Random forest, 30 trees of depth 2.", {"model": "random_forest"}, "swap:model=random_forest"),
        ("extra_trees", "Extremely randomised trees, 30 fully grown.", {"model": "extra_trees", "max_depth": 0},
         "swap:model=extra_trees"),
        ("tree", "A single fully grown decision tree.", {"model": "decision_tree", "max_depth": 0},
         "swap:model=decision_tree"),
        ("tree_depth5", "A single decision tree of depth 5.", {"model": "decision_tree", "max_depth": 5},
         "swap:model=decision_tree"),
        ("logreg", "Standardised logistic regression.", {"model": "logreg", "scaler": "standard"}, "swap:model=logreg"),
        ("logreg_poly2", "Standardised logistic regression on degree-2 polynomial features.",
         {"model": "logreg", "scaler": "standard", "poly_degree": 2}, "swap:model=logreg"),
        ("svm", "Standardised RBF support vector machine.", {"model": "svm_rbf", "scaler": "standard"},
         "swap:model=svm_rbf"),
        ("knn", "Standardised k-nearest neighbours, k = 5.", {"model": "knn", "scaler": "standard"}, "swap:model=knn"),
        ("knn15", "Standardised k-nearest neighbours, k = 15.", {"model": "knn", "scaler": "standard", "n_neighbors": 15},
         "swap:model=knn"),
        *_other_classifiers(),
        *sklearn_placebos(),
    ], baseline)


def knn_study(baseline: Mapping[str, Any], pca: tuple[int, ...]) -> list[Entry]:
    """Neighbours, weights, distances, scaling, projections and other models around k-nearest neighbours."""
    return applicable([
        ("k1", "1 nearest neighbour.", {"n_neighbors": 1}, "regularization:n_neighbors:down"),
        ("k3", "3 nearest neighbours.", {"n_neighbors": 3}, "regularization:n_neighbors:down"),
        ("k10", "10 nearest neighbours.", {"n_neighbors": 10}, "regularization:n_neighbors:up"),
        ("k15", "15 nearest neighbours.", {"n_neighbors": 15}, "regularization:n_neighbors:up"),
        ("k30", "30 nearest neighbours.", {"n_neighbors": 30}, "regularization:n_neighbors:up"),
        ("k60", "60 nearest neighbours.", {"n_neighbors": 60}, "regularization:n_neighbors:up"),
        ("distance", "Weight neighbours by inverse distance.", {"weights": "distance"}, "swap:weights=distance"),
        ("distance_k15", "15 neighbours weighted by inverse distance.", {"weights": "distance", "n_neighbors": 15},
         "swap:weights=distance"),
        ("manhattan", "Manhattan (L1) distance.", {"p": 1}, "metric:p:down"),
        ("distance_manhattan", "Inverse-distance weights with the Manhattan distance.", {"weights": "distance", "p": 1},
         "swap:weights=distance"),
        ("minkowski3", "Minkowski distance with p = 3.", {"p": 3}, "metric:p:up"),
        *_scalers(),
        *[(f"pca{n}", f"Project onto the first {n} principal components.", {"pca_components": n},
           "features:pca_components:up") for n in pca],
        *_feature_halves(),
        *data_fractions("training fold"),
        ("logreg", "Logistic regression (C = 1).", {"model": "logreg"}, "swap:model=logreg"),
        ("logreg_C01", "Logistic regression with C = 0.1.", {"model": "logreg", "C": 0.1}, "swap:model=logreg"),
        ("svm", "RBF support vector machine (C = 1).", {"model": "svm_rbf"}, "swap:model=svm_rbf"),
        ("svm_C10", "RBF support vector machine with C = 10.", {"model": "svm_rbf", "C": 10.0}, "swap:model=svm_rbf"),
        ("linear_svm", "Linear SVM (C = 1).", {"model": "linear_svm"}, "swap:model=linear_svm"),
        ("forest", "Random forest, 30 trees.", {"model": "random_forest"}, "swap:model=random_forest"),
        ("forest_10", "Random forest, 10 trees.", {"model": "random_forest", "n_estimators": 10},
         "swap:model=random_forest"),
        ("extra_trees", "Extremely randomised trees, 30 trees.", {"model": "extra_trees"}, "swap:model=extra_trees"),
        ("hist", "Histogram gradient boosting, 30 iterations.", {"model": "hist_boosting"}, "swap:model=hist_boosting"),
        ("tree", "A single decision tree.", {"model": "decision_tree"}, "swap:model=decision_tree"),
        ("stump3", "A single decision tree of depth 3.", {"model": "decision_tree", "max_depth": 3},
         "swap:model=decision_tree"),
        *_other_classifiers(),
        *sklearn_placebos(),
    ], baseline)


def text_study(baseline: Mapping[str, Any], *, probabilistic: bool) -> list[Entry]:
    """Weighting, vocabulary selection, smoothing and other models for bag-of-words classifiers.

    ``probabilistic``: the metric needs predicted probabilities, so models without them are left out.
    """
    naive_bayes = baseline["model"].endswith("_nb")
    tuning = ([("alpha_01", "Less smoothing: alpha = 0.1.", {"nb_alpha": 0.1}, "regularization:nb_alpha:down"),
               ("alpha_001", "Much less smoothing: alpha = 0.01.", {"nb_alpha": 0.01}, "regularization:nb_alpha:down"),
               ("alpha_3", "More smoothing: alpha = 3.", {"nb_alpha": 3.0}, "regularization:nb_alpha:up"),
               ("alpha_10", "Much more smoothing: alpha = 10.", {"nb_alpha": 10.0}, "regularization:nb_alpha:up"),
               ("select100_alpha01", "Keep 100 words (chi-square) and smooth with alpha = 0.1.",
                {"select_k": 100, "nb_alpha": 0.1}, "features:select_k:up")]
              if naive_bayes else
              [*c_sweep()[:5],
               ("l1", "L1 penalty (liblinear).", {"penalty": "l1", "solver": "liblinear"}, "swap:penalty=l1"),
               ("l1_C10", "L1 penalty (liblinear) and C = 10.", {"penalty": "l1", "solver": "liblinear", "C": 10.0},
                "swap:penalty=l1"),
               ("balanced", "Balanced class weights.", {"class_weight": "balanced"}, "swap:class_weight=balanced"),
               ("few_iters", "Stop the solver after 5 iterations.", {"max_iter": 5}, "optimizer:max_iter:down")])
    no_probabilities = [
        ("linear_svm", "Linear SVM (C = 1).", {"model": "linear_svm"}, "swap:model=linear_svm"),
        ("ridge", "Ridge classifier (alpha = 1).", {"model": "ridge"}, "swap:model=ridge"),
    ]
    return applicable([
        *tuning,
        ("counts", "Raw word counts (no TF-IDF).", {"weighting": "counts"}, "swap:weighting=counts"),
        ("binary", "Word presence (0/1) instead of counts.", {"weighting": "binary"}, "swap:weighting=binary"),
        ("tfidf", "TF-IDF weighting.", {"weighting": "tfidf"}, "swap:weighting=tfidf"),
        ("sublinear", "Sublinear TF-IDF (1 + log of the count).", {"weighting": "sublinear_tfidf"},
         "swap:weighting=sublinear_tfidf"),
        ("select50", "Keep the 50 words with the highest chi-square score.", {"select_k": 50}, "features:select_k:up"),
        ("select100", "Keep the 100 words with the highest chi-square score.", {"select_k": 100}, "features:select_k:up"),
        ("select200", "Keep the 200 words with the highest chi-square score.", {"select_k": 200}, "features:select_k:up"),
        ("select20", "Keep the 20 words with the highest chi-square score.", {"select_k": 20}, "features:select_k:up"),
        ("binary_select100", "Word presence over the 100 best chi-square words.", {"weighting": "binary", "select_k": 100},
         "swap:weighting=binary"),
        ("sublinear_select200", "Sublinear TF-IDF over the 200 best chi-square words.",
         {"weighting": "sublinear_tfidf", "select_k": 200}, "swap:weighting=sublinear_tfidf"),
        ("maxabs", "Scale each word column by its largest absolute value.", {"scaler": "maxabs"}, "swap:scaler=maxabs"),
        ("normalize", "Normalise each document to unit length.", {"scaler": "normalize"}, "swap:scaler=normalize"),
        *data_fractions("training fold"),
        ("multinomial_nb", "Multinomial naive Bayes (alpha 1).", {"model": "multinomial_nb"},
         "swap:model=multinomial_nb"),
        ("multinomial_nb_counts", "Multinomial naive Bayes on raw counts.",
         {"model": "multinomial_nb", "weighting": "counts"}, "swap:model=multinomial_nb"),
        ("complement_nb", "Complement naive Bayes (alpha 1).", {"model": "complement_nb"}, "swap:model=complement_nb"),
        ("complement_nb_tfidf", "Complement naive Bayes on TF-IDF.", {"model": "complement_nb", "weighting": "tfidf"},
         "swap:model=complement_nb"),
        ("bernoulli_nb_alpha01", "Bernoulli naive Bayes on word presence, alpha = 0.1.",
         {"model": "bernoulli_nb", "weighting": "binary", "nb_alpha": 0.1}, "swap:model=bernoulli_nb"),
        ("bernoulli_nb", "Bernoulli naive Bayes on word presence.", {"model": "bernoulli_nb", "weighting": "binary"},
         "swap:model=bernoulli_nb"),
        ("logreg", "L2 logistic regression (C = 1).", {"model": "logreg"}, "swap:model=logreg"),
        ("logreg_C10", "L2 logistic regression with C = 10.", {"model": "logreg", "C": 10.0}, "swap:model=logreg"),
        ("logreg_tfidf", "L2 logistic regression on TF-IDF.", {"model": "logreg", "weighting": "tfidf"},
         "swap:model=logreg"),
        ("logreg_l1", "L1 logistic regression (liblinear).", {"model": "logreg", "penalty": "l1", "solver": "liblinear"},
         "swap:model=logreg"),
        *([] if probabilistic else no_probabilities),
        ("knn", "k-nearest neighbours (k = 5) on unit-length documents.", {"model": "knn", "scaler": "normalize"},
         "swap:model=knn"),
        ("knn15", "k-nearest neighbours (k = 15) on unit-length documents.",
         {"model": "knn", "scaler": "normalize", "n_neighbors": 15}, "swap:model=knn"),
        ("forest", "Random forest, 30 trees.", {"model": "random_forest"}, "swap:model=random_forest"),
        ("forest_shallow", "Random forest, 30 trees of depth 3.", {"model": "random_forest", "max_depth": 3},
         "swap:model=random_forest"),
        ("forest_100", "Random forest, 100 trees.", {"model": "random_forest", "n_estimators": 100},
         "swap:model=random_forest"),
        ("extra_trees", "Extremely randomised trees, 30 trees.", {"model": "extra_trees"}, "swap:model=extra_trees"),
        ("svm", "RBF support vector machine on unit-length documents.", {"model": "svm_rbf", "scaler": "normalize"},
         "swap:model=svm_rbf"),
        ("svm_C10", "RBF support vector machine (C = 10) on unit-length documents.",
         {"model": "svm_rbf", "scaler": "normalize", "C": 10.0}, "swap:model=svm_rbf"),
        ("tree", "A single decision tree.", {"model": "decision_tree"}, "swap:model=decision_tree"),
        ("tree_depth5", "A single decision tree of depth 5.", {"model": "decision_tree", "max_depth": 5},
         "swap:model=decision_tree"),
        *sklearn_placebos(),
    ], baseline)
