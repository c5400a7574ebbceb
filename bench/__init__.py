"""Benchmark of the explorer against torchvision and today's pipeline: ``python -m bench.run``."""
