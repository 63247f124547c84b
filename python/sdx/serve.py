"""`sdx serve`: serve a model repository over gRPC with the KServe v2 protocol (Triton's clients work).

The server is a C++ executable, sdx-serve (src/serve/), installed in the package's bin/ folder beside
lib/libsdx.so (the build tree stages it the same way, build/<dir>/python/sdx/bin/). `sdx serve` checks its
arguments and replaces itself with it (exec), so signals (SIGTERM: drain and stop) and the exit status
are the server's own:

    sdx serve --model-repository models [--host 127.0.0.1] [--port 8001] [--metrics-port 8002]
              [--max-queue N] [--model-concurrency N] [--max-message-bytes N] [--max-model-bytes N]
              [--auth-token-file F] [--tls-cert F --tls-key F] [--memory-budget BYTES]
              [--model-cache-dir DIR] [--log-requests]

Beside KServe's service it serves sdx's own sdx.v1.RemoteService (proto/sdx/v1/remote.proto): models
registered by fingerprint, sessions with leases, outputs kept on the server as references.

SDX_SERVE_EXECUTABLE, when set, names the executable to run instead.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from ._cli_support import UsageError, int_at_least

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def find_server() -> str | None:
    """The sdx-serve executable: $SDX_SERVE_EXECUTABLE, else the package's bin/sdx-serve; None if absent."""
    path = os.environ.get("SDX_SERVE_EXECUTABLE") or os.path.join(_PACKAGE_DIR, "bin", "sdx-serve")
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


_UNITS = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}


def byte_size(text: str) -> int:
    """--memory-budget's value, as sdx-serve reads it: digits, then optionally K, M, G or T (powers of 1024;
    KiB ... TiB too)."""
    m = re.fullmatch(r"([0-9]+)([A-Za-z]*)", text)
    if not m or m.group(2) not in _UNITS or int(m.group(1)) << _UNITS[m.group(2)] > (1 << 63) - 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a byte count (digits, then optionally K, M, G or T; "
                                         "0: unlimited)")
    return int(m.group(1)) << _UNITS[m.group(2)]


def server_argv(args) -> list[str]:
    """The sdx-serve command line for parsed `sdx serve` arguments (the executable first)."""
    exe = find_server()
    if exe is None:
        raise UsageError("sdx-serve is not part of this installation (sdx was built without gRPC: "
                         "apt-get install libgrpc++-dev protobuf-compiler-grpc, then rebuild)")
    if not os.path.isdir(args.model_repository):
        raise UsageError(f"model repository '{args.model_repository}' is not a folder")
    argv = [exe, "--model-repository", args.model_repository, "--host", args.host, "--port", str(args.port),
            "--metrics-port", str(args.metrics_port), "--max-queue", str(args.max_queue),
            "--model-concurrency", str(args.model_concurrency), "--max-message-bytes", str(args.max_message_bytes),
            "--max-model-bytes", str(args.max_model_bytes), "--memory-budget", str(args.memory_budget)]
    if args.model_cache_dir is not None:
        argv += ["--model-cache-dir", args.model_cache_dir]
    if (args.tls_cert is None) != (args.tls_key is None):
        raise UsageError("--tls-cert and --tls-key go together")
    for flag, value in (("--auth-token-file", args.auth_token_file), ("--tls-cert", args.tls_cert),
                        ("--tls-key", args.tls_key)):
        if value is not None:
            argv += [flag, value]  # the server reads the files (an unreadable or empty one: exit 2)
    return argv + (["--log-requests"] if args.log_requests else [])


def cmd_serve(args) -> int:
    argv = server_argv(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)  # does not return


def add_parser(sub) -> None:
    """Registers `sdx serve` on the CLI's subparsers."""
    p = sub.add_parser("serve", help="serve a model repository over gRPC (KServe v2 protocol; Triton's clients work)",
                       description="Serve the ONNX models of a repository folder (NAME/VERSION/model.onnx) over gRPC "
                                   "with the KServe v2 / Open Inference Protocol and the gRPC health service. "
                                   "SIGTERM or SIGINT stops it after the requests in flight finish.")
    p.add_argument("--model-repository", required=True, metavar="DIR",
                   help="folder of NAME/VERSION/model.onnx; every model in it is loaded at start")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int_at_least(0), default=8001,
                   help="port to listen on (default 8001; 0: a free port, printed when listening)")
    p.add_argument("--metrics-port", type=int_at_least(0), default=8002, metavar="PORT",
                   help="Prometheus metrics at http://HOST:PORT/metrics (default 8002; 0: no metrics endpoint)")
    p.add_argument("--max-queue", type=int_at_least(1), default=64, metavar="N",
                   help="requests in flight or waiting per model (default 64); beyond it ModelInfer answers "
                        "RESOURCE_EXHAUSTED with a retry hint")
    p.add_argument("--model-concurrency", type=int_at_least(0), default=0, metavar="N",
                   help="requests running at once per model (default 0: the hardware threads)")
    p.add_argument("--log-requests", action="store_true",
                   help="log one structured line per request on stderr (debug)")
    p.add_argument("--max-message-bytes", type=int_at_least(1024), default=1 << 30, metavar="N",
                   help="largest request or response message (default 1073741824)")
    p.add_argument("--max-model-bytes", type=int_at_least(1), default=2 << 30, metavar="N",
                   help="largest model an sdx.v1 client may upload, all chunks together (default 2147483648)")
    p.add_argument("--auth-token-file", metavar="F",
                   help="every call of the KServe and sdx.v1 services needs gRPC metadata `authorization: Bearer "
                        "TOKEN`, TOKEN this file's text (one trailing newline stripped), else UNAUTHENTICATED; "
                        "the health service stays open and /metrics is not covered")
    p.add_argument("--tls-cert", metavar="F", help="TLS on the gRPC port: PEM certificate (chain); with --tls-key")
    p.add_argument("--tls-key", metavar="F", help="TLS on the gRPC port: PEM private key; with --tls-cert")
    p.add_argument("--memory-budget", type=byte_size, default=0, metavar="BYTES",
                   help="bytes of model weights held loaded at once, repository and sdx.v1 models together "
                        "(K, M, G, T: powers of 1024; default 0: unlimited); a load past it evicts the models of "
                        "lowest value (access frequency x load time / bytes) that no request runs on, and they "
                        "reload on their next request; a model that cannot fit gets RESOURCE_EXHAUSTED")
    p.add_argument("--model-cache-dir", metavar="DIR",
                   help="with --memory-budget: where sdx.v1 uploads are kept (mode 0600) for their reloads "
                        "(default: a private temporary folder, removed at exit)")
    p.set_defaults(fn=cmd_serve)
