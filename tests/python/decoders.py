"""The GPT-2-architecture decoder in Optimum's with-past layout that scripts/make_gpt2_decoder.py writes, for the
decode tests (test_generate.py, test_paged_generate.py, test_kv_streams.py, test_paged_graph_fuzz.py)."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def gpt2_maker():
    """scripts/make_gpt2_decoder.py as a module (build, check)."""
    spec = importlib.util.spec_from_file_location("make_gpt2_decoder", os.path.join(ROOT, "scripts", "make_gpt2_decoder.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def gpt2_decoder(layers: int, d_model: int, heads: int, vocab: int, max_pos: int, seed: int = 0):
    """The onnx.ModelProto make_gpt2_decoder.build gives (random weights from `seed`)."""
    return gpt2_maker().build(layers, d_model, heads, vocab, max_pos, seed=seed)
