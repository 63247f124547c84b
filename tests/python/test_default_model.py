"""The bundled default model (scripts/make_default_model.py) agrees with onnx's reference evaluator."""
import importlib.util
import os

import numpy as np
from onnx.reference import ReferenceEvaluator

import sdx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _build_default_model():
    spec = importlib.util.spec_from_file_location("make_default_model", os.path.join(ROOT, "scripts", "make_default_model.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build()


def test_default_model_matches_reference():
    model = _build_default_model()
    sess = sdx.InferenceSession(model.SerializeToString())
    x = np.random.default_rng(3).standard_normal((2, 3, 32, 32)).astype(np.float32)
    (probs,) = sess.run(None, {"image": x})
    (ref,) = ReferenceEvaluator(model).run(None, {"image": x})
    assert probs.shape == (2, 10)
    np.testing.assert_allclose(probs, ref, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)
