"""The benchmarks: the scale benchmark (run.py, `memory_bench`) and the console in a browser (console_browser.py)."""
