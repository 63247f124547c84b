"""Module-level functions of onnxruntime's API: version and build information, the device, the default
logger (severity and callback) and telemetry switches."""
from __future__ import annotations

from typing import Any, Callable

from . import _sdx

__version__ = "0.1.0"

# onnxruntime's severities: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal. New sessions log at this
# level unless their SessionOptions set log_severity_level (or sdx's log_level).
_default_severity = 2


def default_severity() -> int:
    return _default_severity


def get_version_string() -> str:
    return __version__


def get_build_info() -> str:
    """One line: sdx's version, build id, compiler and the CPU kernel level in use."""
    return f"Build Info: {_sdx.build_info()}"


def get_device() -> str:
    """The device sdx runs on ("CPU"), as onnxruntime.get_device() reports it."""
    return "CPU"


def _check_severity(severity: Any) -> int:
    if isinstance(severity, bool) or not isinstance(severity, int) or not 0 <= severity <= 4:
        raise RuntimeError(f"sdx: log severity must be an int from 0 (verbose) to 4 (fatal), not {severity!r}")
    return severity


def set_default_logger_severity(severity: int) -> None:
    global _default_severity
    _default_severity = _check_severity(severity)


def set_default_logger_verbosity(verbosity: int) -> None:
    """Accepted: sdx has no verbosity levels below verbose severity."""
    if isinstance(verbosity, bool) or not isinstance(verbosity, int) or verbosity < 0:
        raise RuntimeError(f"sdx: log verbosity must be a non-negative int, not {verbosity!r}")


def set_default_logger_callback(callback: Callable[[int, str, str, str, str], None] | None,
                                severity: int | None = None) -> None:
    """Routes sdx's log records to callback(severity, category, logid, code_location, message) instead of
    stderr; None restores stderr. `severity` also sets the default severity of new sessions. An exception
    raised by the callback is reported (sys.unraisablehook) and never reaches sdx."""
    if callback is not None and not callable(callback):
        raise RuntimeError(f"sdx: the logger callback must be callable or None, not {type(callback).__name__}")
    if severity is not None:
        set_default_logger_severity(_check_severity(severity))
    if callback is None:
        _sdx.set_log_callback(None)
        return

    def sink(sev: int, category: str, logid: str, where: str, message: str) -> None:
        if sev >= _default_severity:
            callback(sev, category, logid, where, message)

    _sdx.set_log_callback(sink)


def enable_telemetry_events() -> None:
    """sdx collects no telemetry: nothing to enable."""


def disable_telemetry_events() -> None:
    """sdx collects no telemetry: nothing to disable."""
