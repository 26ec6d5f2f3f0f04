#!/bin/sh
# The Python interpreter of Bazel's py_runtime (see //third_party/bazel:BUILD): the project's
# venv, found next to this script's real location (Bazel runs it through a runfiles symlink),
# so no absolute path of the checkout is written in any BUILD file. XLNET_TF_PYTHON overrides
# it (the Makefile passes --test_env=XLNET_TF_PYTHON=... for a VENV other than .venv).
if [ -z "${XLNET_TF_PYTHON:-}" ]; then
  here=$(dirname "$(readlink -f "$0")")
  XLNET_TF_PYTHON="$here/../../.venv/bin/python"
fi
if [ ! -x "$XLNET_TF_PYTHON" ]; then
  echo "venv_python.sh: no interpreter at $XLNET_TF_PYTHON (run 'make venv' first)" >&2
  exit 1
fi
exec "$XLNET_TF_PYTHON" "$@"
