"""What the `sdx` commands share: exit codes, one-line usage errors, checked option values, input checks
made before any work starts, and the progress display.

Exit codes (as onnxruntime's tools, trtexec and Triton's perf tools are used in CI):

    0  ok
    1  a check failed: conformance cases failed (without --allow-failures), `bench --compare` found a
       regression, `inspect` found unsupported ops or `--check-replay` a divergence
    2  usage or input error: a bad option value, a missing or unreadable model or .npy file, an unknown
       input name, an engine error about the model or its inputs; one line on stderr, `sdx: error: ...`
    3  internal error (a bug in sdx): the traceback is printed
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


class UsageError(Exception):
    """An input or usage problem: reported as the one line `sdx: error: MESSAGE`, exit status 2."""


def one_line(text: str) -> str:
    """`text` as a single line (engine messages may span several)."""
    return " ".join(str(text).split())


def clean_message(text: str) -> str:
    """A message without a leading `sdx:` / `sdx CMD:` / `sdx CMD: error:` (main adds `sdx: error:`)."""
    return re.sub(r"^sdx(?: [\w-]+)?:\s*(?:error:\s*)?", "", one_line(text))


# ---- option values (argparse types: a bad value is argparse's usual usage + one line, exit 2)

def int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    parse.__name__ = "int"
    return parse


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


# ---- inputs checked before any work starts

def check_model_path(path: str) -> None:
    if not os.path.exists(path):
        raise UsageError(f"cannot open model file '{path}': no such file")
    if os.path.isdir(path):
        raise UsageError(f"cannot open model file '{path}': it is a directory")
    if not os.access(path, os.R_OK):
        raise UsageError(f"cannot open model file '{path}': permission denied")


def check_input_specs(specs) -> None:
    """Every NAME=FILE.npy of `specs` names a readable .npy file (only its header is read here) and no
    NAME=DIMS has a negative dim."""
    import numpy as np

    for spec in specs or []:
        if spec is None or "=" not in spec:
            continue  # feeds.make_feeds reports a spec without '='
        name, value = spec.split("=", 1)
        if not value.endswith(".npy"):
            dims = value.replace(",", "x").split("x")
            if any(d.strip().lstrip("-").isdigit() and int(d) < 0 for d in dims):
                raise UsageError(f"input '{name}': dims must be at least 0, got '{value}'")
            continue  # feeds.make_feeds reports dims that are not numbers
        try:
            with open(value, "rb") as f:
                magic = f.read(6)
            if magic != b"\x93NUMPY":
                raise UsageError(f"input '{name}': '{value}' is not a .npy file (no .npy header)")
            np.load(value, mmap_mode="r", allow_pickle=False)
        except OSError as e:
            raise UsageError(f"cannot read input '{name}' from '{value}': {e.strerror or one_line(e)}") from None
        except (ValueError, EOFError) as e:
            first = one_line(e).split(". ")[0].rstrip(".")
            raise UsageError(f"input '{name}': '{value}' is not a readable .npy array ({first})") from None


# ---- progress

class Progress:
    """Progress of a loop of `total` steps on stderr: on a terminal one line redrawn with a carriage return
    (cleared by close()), otherwise a plain line at each tenth of the way. Nothing before `delay_s` seconds
    have passed (quick loops stay silent) and nothing at all when not `enabled`.

        with Progress("sdx conformance", len(cases), "cases") as bar:
            for i, case in enumerate(cases, 1):
                ...
                bar.update(i)
    """

    WIDTH = 24

    def __init__(self, label: str, total: int, unit: str = "", stream=None, enabled: bool = True,
                 delay_s: float = 0.0) -> None:
        self.label, self.total, self.unit = label, max(0, int(total)), unit
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and self.total > 0
        self.delay_s = delay_s
        try:
            self.tty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self.tty = False
        self.t0 = time.monotonic()
        self.last_draw = 0.0
        self.drawn = 0  # characters of the terminal line now shown
        self.tenth = -1  # the last tenth reported in plain mode

    def update(self, done: int, note: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        elapsed = now - self.t0
        if elapsed < self.delay_s:
            return
        done = min(max(0, int(done)), self.total)
        unit = f" {self.unit}" if self.unit else ""
        extra = f", {note}" if note else ""
        if self.tty:
            if now - self.last_draw < 0.1 and done < self.total:
                return
            self.last_draw = now
            filled = self.WIDTH * done // self.total
            line = (f"{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{self.total}{unit} "
                    f"({elapsed:.0f}s{extra})")
            line = line[:max(20, shutil.get_terminal_size().columns - 1)]  # a wrapped line cannot be redrawn
            self.stream.write("\r" + line + " " * max(0, self.drawn - len(line)))
            self.drawn = len(line)
        else:
            tenth = 10 * done // self.total
            if tenth <= self.tenth:
                return
            self.tenth = tenth
            self.stream.write(f"{self.label}: {done}/{self.total}{unit} ({elapsed:.0f}s{extra})\n")
        self.stream.flush()

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * self.drawn + "\r")
            self.stream.flush()
            self.drawn = 0

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
