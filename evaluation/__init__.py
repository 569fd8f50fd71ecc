"""Evaluation and benchmarks: the LoCoMo harness (`locomo_eval`) and the scale benchmark (`memory_bench`).

Nothing here is on the product's request path; the management commands of the same names drive it.
"""
