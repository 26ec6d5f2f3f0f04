"""The benchmarks' description of the CPU's bfloat16 support."""

from xlnet_tf.benchmarks import timing


def test_bfloat16_instructions_are_named_when_present():
  assert timing.bfloat16_description({"avx2", "avx512_bf16"}) == (
      "bfloat16 instructions: avx512_bf16")
  assert timing.bfloat16_description({"amx_bf16", "avx512_bf16"}).endswith(
      "avx512_bf16 amx_bf16")


def test_without_bfloat16_instructions_bfloat16_is_called_emulated():
  text = timing.bfloat16_description({"avx2", "avx512f"})
  assert "none" in text and "emulated" in text
