"""Entry points (absl flags) and benchmarks."""
