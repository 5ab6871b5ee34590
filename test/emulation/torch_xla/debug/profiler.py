"""torch_xla/debug/profiler.py (v2.3.0..v2.9.0): traces are no-ops in the emulation."""
import contextlib
import functools


def start_server(port, only_on_master=True):
  return object()


def trace(service_addr, logdir, duration_ms=1000, **kwargs):
  pass


def trace_detached(service_addr, logdir, duration_ms=1000, **kwargs):
  pass


class Trace(contextlib.ContextDecorator):

  def __init__(self, name, **kwargs):
    self.name = name

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    return False


class StepTrace(Trace):

  def __init__(self, name, **kwargs):
    super().__init__(name)


def trace_me(name):

  def deco(fn):
    return functools.wraps(fn)(fn)

  return deco
