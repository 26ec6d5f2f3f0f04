"""Entry points: each module parses its absl flags and calls the library (xlnet_tf)."""
