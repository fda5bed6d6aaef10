"""Ranking: a candidate's score S and decision, selection per task, the selectors, and the metrics
(Best@K, ROC-AUC, PR-AUC, bootstrap intervals) computed on them."""
