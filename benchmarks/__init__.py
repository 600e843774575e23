"""The benchmarks of air_magics: a small harness (``benchmarks.harness``) and one module per scenario
(``benchmarks.scenarios``).

Run them all with ``python -m benchmarks [--quick]`` from the repository root, or one with
``python benchmarks/bench_<name>.py`` / ``python -m benchmarks.scenarios.<name>``. This package is
imported by the measured child processes too (some of them in the reference library's own venv), so
importing it must stay free of anything but the standard library.
"""
