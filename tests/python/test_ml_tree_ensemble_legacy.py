"""TreeEnsembleClassifier / TreeEnsembleRegressor (ai.onnx.ml opsets 1-3,
src/backend/cpu/kernels/ml_tree_ensemble_legacy.cc) against the ONNX reference implementation."""
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import sdx

MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]


def _random_trees(rng, n_trees, depth, n_features):
    """Complete binary trees: node lists as the legacy operators take them, leaves listed too."""
    nodes = {k: [] for k in ("treeids", "nodeids", "featureids", "values", "modes", "truenodeids", "falsenodeids",
                             "missing_value_tracks_true")}
    leaves = []
    for t in range(n_trees):
        count = 2 ** (depth + 1) - 1
        for i in range(count):
            leaf = i >= 2 ** depth - 1
            nodes["treeids"].append(t)
            nodes["nodeids"].append(i)
            nodes["featureids"].append(0 if leaf else int(rng.integers(n_features)))
            nodes["values"].append(0.0 if leaf else float(np.round(rng.standard_normal(), 1)))
            nodes["modes"].append("LEAF" if leaf else MODES[int(rng.integers(len(MODES)))])
            nodes["truenodeids"].append(0 if leaf else 2 * i + 1)
            nodes["falsenodeids"].append(0 if leaf else 2 * i + 2)
            nodes["missing_value_tracks_true"].append(int(rng.integers(2)))
            if leaf:
                leaves.append((t, i))
    return {"nodes_" + k: v for k, v in nodes.items()}, leaves


def _run_both(node, x, outputs):
    g = helper.make_graph([node], "trees", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, x.shape[1]])],
                          outputs)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    got = sdx.InferenceSession(model.SerializeToString()).run(None, {"X": x})
    want = ReferenceEvaluator(model).run(None, {"X": x})
    return got, want


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"])
@pytest.mark.parametrize("n_classes,binary", [(3, False), (2, True), (2, False)])
def test_classifier_matches_the_reference(post, n_classes, binary):
    if post == "PROBIT" and not binary:
        pytest.skip("the ONNX reference's PROBIT takes one score column (binary models)")
    rng = np.random.default_rng(n_classes * 10 + len(post))
    attrs, leaves = _random_trees(rng, n_trees=3, depth=3, n_features=4)
    cls = {"class_treeids": [], "class_nodeids": [], "class_ids": [], "class_weights": []}
    for t, i in leaves:
        for c in ([0] if binary else range(n_classes)):
            cls["class_treeids"].append(t)
            cls["class_nodeids"].append(i)
            cls["class_ids"].append(c)
            cls["class_weights"].append(float(np.round(rng.random() * (0.3 if post == "PROBIT" else 1), 3)))
    node = helper.make_node("TreeEnsembleClassifier", ["X"], ["label", "probs"], domain="ai.onnx.ml",
                            classlabels_int64s=list(range(10, 10 + n_classes)), post_transform=post,
                            base_values=[0.1] * (1 if binary else n_classes), **attrs, **cls)
    x = np.round(rng.standard_normal((16, 4)), 1).astype(np.float32)
    x[3, 1] = np.nan
    (label, probs), (want_label, want_probs) = _run_both(
        node, x, [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                  helper.make_tensor_value_info("probs", TensorProto.FLOAT, [None, n_classes])])
    np.testing.assert_allclose(probs, want_probs, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(label, want_label)


@pytest.mark.parametrize("agg", ["SUM", "AVERAGE", "MIN", "MAX"])
def test_regressor_matches_the_reference(agg):
    rng = np.random.default_rng(len(agg))
    attrs, leaves = _random_trees(rng, n_trees=4, depth=2, n_features=3)
    tgt = {"target_treeids": [t for t, _ in leaves], "target_nodeids": [i for _, i in leaves],
           "target_ids": [int(rng.integers(2)) for _ in leaves],
           "target_weights": [float(np.round(rng.standard_normal(), 2)) for _ in leaves]}
    node = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=2,
                            aggregate_function=agg, base_values=[0.5, -0.5], **attrs, **tgt)
    x = np.round(rng.standard_normal((10, 3)), 1).astype(np.float32)
    (y,), (want,) = _run_both(node, x, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 2])])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_string_labels_and_bad_models():
    attrs, leaves = _random_trees(np.random.default_rng(1), 1, 1, 2)
    node = helper.make_node("TreeEnsembleClassifier", ["X"], ["label", "probs"], domain="ai.onnx.ml",
                            classlabels_strings=["no", "yes"], class_treeids=[0, 0], class_nodeids=[1, 2],
                            class_ids=[1, 0], class_weights=[1.0, 1.0], **attrs)
    x = np.array([[-5.0, -5.0], [5.0, 5.0]], np.float32)
    (label, _), (want, _) = _run_both(node, x, [helper.make_tensor_value_info("label", TensorProto.STRING, [None]),
                                                helper.make_tensor_value_info("probs", TensorProto.FLOAT, [None, 2])])
    assert label.tolist() == list(want)
    bad = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=1,
                           target_treeids=[0], target_nodeids=[0], target_ids=[0], target_weights=[1.0], **attrs)
    with pytest.raises(sdx.SdxError, match="node 0 of tree 0, which is not a leaf"):
        _run_both(bad, x, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 1])])
