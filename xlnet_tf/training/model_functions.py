"""A model's `tf.function`s, built once and kept with the model: one trace per signature.

An evaluation that wraps `model(...)` in a new `tf.function` at every call traces the
model again at every evaluation, and once more for the last, smaller batch of a split.
Traces are costly (seconds for a large model), and a run that evaluates repeatedly sets
off TensorFlow's "5 out of the last 5 calls to <function> triggered tf.function
retracing" warning. `ModelFunctions` builds `tf.function(fn)` once for each model and
input signature (e.g. a dataset's `element_spec`, whose batch size is unknown), so every
batch of every evaluation of that model runs the one graph.

  >>> steps = ModelFunctions(lambda model, batch: model(batch, training=False))
  >>> step = steps.get(model, dataset.element_spec)    # traced at its first call only
  >>> outputs = [step(batch) for batch in dataset]

`fn(model, *args)` must depend on nothing but the model and its arguments (not on
objects made for one call, such as metrics): the function built for the first call is
the one every later call runs. The model is held weakly: a model that is no longer used
frees its functions.
"""

import functools
from typing import Any, Callable, Hashable
import weakref

import tensorflow as tf


def _call(fn: Callable[..., Any], model_ref: weakref.ref, *args):
  return fn(model_ref(), *args)


def _frozen(signature) -> Hashable:
  """A hashable copy of a nest (dicts, lists, tuples) of `tf.TypeSpec`s or None."""
  if isinstance(signature, dict):
    return tuple(sorted((key, _frozen(value)) for key, value in signature.items()))
  if isinstance(signature, (list, tuple)):
    return (type(signature).__name__,) + tuple(_frozen(value) for value in signature)
  return signature


class ModelFunctions:
  """`tf.function(lambda *args: fn(model, *args))`, one per model and input signature."""

  def __init__(self, fn: Callable[..., Any], **options):
    """`fn(model, *args)`; `options` are `tf.function`'s (e.g. autograph=False)."""
    self._fn = fn
    self._options = options
    self._functions = weakref.WeakKeyDictionary()    # model -> {signature key: function}

  def get(self, model, *input_signature) -> Callable[..., Any]:
    """The function of `model` taking arguments of `input_signature` (`tf.TypeSpec`
    nests, one per argument; none: the arguments' own shapes, one trace per shape),
    built on the first request."""
    signature = tuple(input_signature) if input_signature else None
    functions = self._functions.setdefault(model, {})
    key = _frozen(signature)
    if key not in functions:
      functions[key] = tf.function(
          functools.partial(_call, self._fn, weakref.ref(model)),
          input_signature=None if signature is None else list(signature), **self._options)
    return functions[key]
