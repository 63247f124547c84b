"""Size limits of issue 16 that keep the runtime readable: src/runtime/session.cc stays at most 300 lines
(Session checks inputs, finds the entry and calls the executor; the lifecycle is runtime::Executor's), and
no function in src/runtime is longer than 80 lines. Function lengths come from lizard (PyPI), which reads
C++ function bodies, members defined inside classes included."""
import os

import lizard

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNTIME = os.path.join(ROOT, "src", "runtime")


def test_session_cc_is_at_most_300_lines():
    with open(os.path.join(RUNTIME, "session.cc")) as f:
        n = sum(1 for _ in f)
    assert n <= 300, f"src/runtime/session.cc has {n} lines; move a concern into a file of its own"


def test_no_runtime_function_is_longer_than_80_lines():
    files = sorted(os.path.join(RUNTIME, f) for f in os.listdir(RUNTIME) if f.endswith((".cc", ".h")))
    assert len(files) > 20
    seen, long = 0, []
    for path in files:
        for fn in lizard.analyze_file(path).function_list:
            seen += 1
            if fn.length > 80:
                long.append(f"{os.path.relpath(path, ROOT)}:{fn.start_line} {fn.name} ({fn.length} lines)")
    assert seen > 200, seen  # lizard read the files
    assert not long, "functions over 80 lines:\n" + "\n".join(long)
