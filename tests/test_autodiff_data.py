"""Data helpers of the autodiff path: the XC / LIBSVM multi-label reader (Mediamill,
Delicious format), label rankings, and the METABRIC split the autodiff scripts use."""
import numpy as np
import pytest

pytest.importorskip("jax")
from coxinfluence.autodiff import datasets  # noqa: E402

XC_TEXT = """3 5 4
1,3 0:0.5 4:-2.25
 2:1e-3
0 1:7 3:0.125 # trailing comment
"""
X_EXPECTED = np.array([[0.5, 0, 0, 0, -2.25],
                       [0, 0, 1e-3, 0, 0],
                       [0, 7.0, 0, 0.125, 0]])


def test_load_xc_header_file(tmp_path):
    p = tmp_path / "mini_xc.txt"
    p.write_text(XC_TEXT)
    D = datasets.load_xc(p)
    assert D.X.dtype == np.float64 and D.X.shape == (3, 5) and D.n_labels == 4
    assert np.array_equal(D.X, X_EXPECTED)
    assert [lb.tolist() for lb in D.labels] == [[1, 3], [], [0]]
    R = datasets.labels_to_rankings(D.labels)
    assert np.array_equal(R, [[1, 3], [-1, -1], [0, -1]])
    assert np.array_equal(datasets.labels_to_rankings(D.labels, max_k=1), [[1], [-1], [0]])


def test_load_plain_libsvm_one_based(tmp_path):
    p = tmp_path / "mini.svm"
    # LIBSVM multi-label lines, 1-based features, no header
    p.write_text("2,0 1:1.5 3:2\n1 2:-1\n")
    D = datasets.load_xc(p)
    assert np.array_equal(D.X, [[1.5, 0, 2.0], [0, -1.0, 0]])
    assert D.n_labels == 3 and [lb.tolist() for lb in D.labels] == [[2, 0], [1]]
    # the same lines read as 0-based get an extra leading column
    D0 = datasets.load_xc(p, zero_based=True)
    assert np.array_equal(D0.X, [[0, 1.5, 0, 2.0], [0, 0, -1.0, 0]])
    # sizes given for a header-less file (1-based: index 3 is the last of 3 features)
    D1 = datasets.load_xc(p, n_features=3, n_labels=5)
    assert np.array_equal(D1.X, D.X) and D1.n_labels == 5


def test_write_xc_round_trip_on_synthetic_mediamill(tmp_path):
    S = datasets.synthetic_mediamill(n_train=40, n_test=10, seed=3)
    labels = [r[r >= 0] for r in S["R_train"]]
    p = tmp_path / "syn.txt"
    datasets.write_xc(p, S["F_train"], labels, 101)
    D = datasets.load_xc(p)
    assert D.X.shape == (40, 8) and D.n_labels == 101
    assert np.array_equal(D.X, S["F_train"])                 # 17 digits: exact
    assert np.array_equal(datasets.labels_to_rankings(D.labels), S["R_train"][:, :max(
        len(lb) for lb in labels)])


@pytest.mark.parametrize("text,match", [
    ("3 5\n1 0:1\n", "feature token '5'"),                 # 2-field first line is data
    ("2 5 4\n1 0:1\n", "header says 2 points, found 1"),
    ("1 5 4\n1 0:1 2\n", r"feature token '2' is not index:value"),
    ("1 5 4\n1 0:\n", "is not index:value"),
    ("1 5 4\n1 a:1\n", "feature index 'a' is not an integer"),
    ("1 5 4\n1 0:abc\n", "feature value 'abc' is not a number"),
    ("1 5 4\n1 0:nan\n", "not finite"),
    ("1 5 4\n1 5:1\n", r"feature index 5 outside \[0, 4\]"),
    ("1 5 4\n4 0:1\n", r"label 4 outside \[0, 3\]"),
    ("1 5 4\n1,x 0:1\n", "label 'x' is not an integer"),
    ("1 5 4\n1,-2 0:1\n", "negative label"),
    ("1 5 4\n1,1 0:1\n", "label is repeated"),
    ("1 5 4\n1 0:1 0:2\n", "feature index is repeated"),
    ("0 5 4\n", "header sizes must be >= 1"),
    ("\n# only a comment\n", "no data lines"),
])
def test_load_xc_malformed_lines(tmp_path, text, match):
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(ValueError, match=match) as ei:
        datasets.load_xc(p)
    if "points" not in match and "no data" not in match:
        assert "bad.txt:" in str(ei.value)                   # names the line


def test_load_xc_argument_errors(tmp_path):
    p = tmp_path / "ok.txt"
    p.write_text(XC_TEXT)
    with pytest.raises(ValueError, match="zero_based"):
        datasets.load_xc(p, zero_based="yes")
    with pytest.raises(ValueError, match="disagree with the header"):
        datasets.load_xc(p, n_features=6)
    with pytest.raises(ValueError, match=r"feature index 0 outside \[1, 5\]"):
        datasets.load_xc(p, zero_based=False)                # the header file is 0-based
    with pytest.raises(ValueError, match="max_k"):
        datasets.labels_to_rankings([[1]], max_k=0)


def test_metabric_split_is_the_core_paper_split(shared_data_dir):
    """The autodiff scripts use coxinfluence.datasets.paper_split (no duplicate):
    1218 training rows, the paper's standardised columns have training mean 0, sd 1."""
    from coxinfluence.datasets import paper_split

    sp = paper_split("metabric", path=shared_data_dir)
    X, t, e = sp.arrays("train")
    assert X.shape == (1218, 9) and X.dtype == np.float64
    std_cols = [0, 1, 2, 3, 8]
    assert np.allclose(X[:, std_cols].mean(0), 0, atol=1e-12)
    assert np.allclose(X[:, std_cols].std(0), 1, atol=1e-12)
    assert not hasattr(datasets, "metabric_split")


# ------------------------------------------- SYNTHETIC Delicious, SVD, sampling (paper)
def _check_rankings(R, n_labels, max_k=None):
    k = (R >= 0).sum(1)
    assert k.min() >= 1 and R.max() < n_labels and R.min() >= -1
    assert np.all((R >= 0) == (np.arange(R.shape[1]) < k[:, None]))   # -1 only at the end
    assert all(len(set(r[r >= 0])) == len(r[r >= 0]) for r in R)      # distinct labels
    if max_k is not None:
        assert k.max() <= max_k
    return k


def test_synthetic_delicious_shape_labels_and_seed():
    """Delicious's published shape (983 labels, 500 features, ~19 labels per point),
    reduced to 8 SVD features with unit training sd; seeded (int or Generator)."""
    D = datasets.synthetic_delicious(n_train=400, n_test=100, seed=0)
    assert D["F_train"].shape == (400, 8) and D["F_test"].shape == (100, 8)
    np.testing.assert_allclose(D["F_train"].std(0), 1.0, rtol=1e-12)
    G = D["F_train"].T @ D["F_train"]                       # SVD components: orthogonal
    assert np.abs(G - np.diag(np.diag(G))).max() < 1e-9 * np.abs(G).max()
    k = np.concatenate([_check_rankings(D["R_train"], 983), _check_rankings(D["R_test"], 983)])
    assert abs(k.mean() - 19.0) < 0.6                       # 1 + Poisson(18): sd 4.2 / sqrt(500)
    D2 = datasets.synthetic_delicious(n_train=400, n_test=100, seed=np.random.default_rng(0))
    for key in D:
        assert np.array_equal(D[key], D2[key])
    D3 = datasets.synthetic_delicious(n_train=400, n_test=100, seed=1)
    assert not np.array_equal(D3["R_train"], D["R_train"])
    # raw binary bag-of-words-like features; a cap on the list length
    raw = datasets.synthetic_delicious(n_train=30, n_test=5, svd_dim=None, max_k=25, seed=2)
    assert raw["F_train"].shape == (30, 500) and set(np.unique(raw["F_train"])) <= {0.0, 1.0}
    _check_rankings(raw["R_train"], 983, max_k=25)
    assert raw["R_train"].shape[1] <= 25
    with pytest.raises(ValueError, match="mean_labels"):
        datasets.synthetic_delicious(n_train=5, n_test=1, mean_labels=0.5)


@pytest.mark.slow
def test_synthetic_delicious_default_shape():
    """The default call is the real set's shape: 12920 / 3185 points, 983 labels."""
    D = datasets.synthetic_delicious(seed=0)
    assert D["F_train"].shape == (12920, 8) and D["F_test"].shape == (3185, 8)
    k = _check_rankings(D["R_train"], 983)
    assert abs(k.mean() - 19.0) < 0.2
    assert np.unique(D["R_train"][D["R_train"] >= 0]).size > 900      # most labels used


def test_load_xc_reads_a_delicious_format_file(tmp_path):
    """A Delicious-format XC file (983 labels, 500 features, long label lists) written by
    write_xc is read back exactly by load_xc: labels in file order, dense features."""
    S = datasets.synthetic_delicious(n_train=6, n_test=1, svd_dim=None, seed=4)
    labels = [r[r >= 0] for r in S["R_train"]]
    p = tmp_path / "Delicious_data.txt"
    datasets.write_xc(p, S["F_train"], labels, 983)
    head = p.read_text().splitlines()[0]
    assert head == "6 500 983"
    D = datasets.load_xc(p)
    assert D.X.shape == (6, 500) and D.n_labels == 983
    assert np.array_equal(D.X, S["F_train"])
    assert [lb.tolist() for lb in D.labels] == [lb.tolist() for lb in labels]
    assert np.array_equal(datasets.labels_to_rankings(D.labels), S["R_train"][:, :max(
        len(lb) for lb in labels)])
    # the highest label and feature indices of the format are accepted
    p.write_text("1 500 983\n982,0 499:1 0:1\n")
    D = datasets.load_xc(p)
    assert D.labels[0].tolist() == [982, 0] and D.X[0, 499] == 1 and D.X[0, 0] == 1


def test_truncated_svd_is_the_top_right_singular_vectors():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 12)) @ np.diag(np.linspace(3, 0.2, 12)) + 0.5   # uncentred
    V = datasets.truncated_svd(X, 4)
    _, s, Vt = np.linalg.svd(X, full_matrices=False)
    assert V.shape == (12, 4)
    for j in range(4):                                       # equal up to the sign
        assert min(np.abs(V[:, j] - Vt[j]).max(), np.abs(V[:, j] + Vt[j]).max()) < 1e-12
        assert V[np.argmax(np.abs(V[:, j])), j] > 0          # the sign convention
    np.testing.assert_allclose(np.linalg.norm(X @ V, axis=0), s[:4], rtol=1e-12)
    # no centring: the first component of a matrix with a large mean is the mean direction
    Y = rng.normal(size=(200, 5)) + 10.0
    v1 = datasets.truncated_svd(Y, 1)[:, 0]
    assert abs(v1 @ np.ones(5) / np.sqrt(5)) > 0.99
    with pytest.raises(ValueError, match="k must be"):
        datasets.truncated_svd(X, 13)


def test_sample_subset_is_seeded_and_leaves_the_global_state_alone():
    np.random.seed(12345)
    state = np.random.get_state()
    a = datasets.sample_subset(3185, 500, 0)
    b = datasets.sample_subset(3185, 500, np.random.default_rng(0))
    assert np.array_equal(a, b) and a.size == 500 and np.unique(a).size == 500
    assert np.all(np.diff(a) > 0) and a.min() >= 0 and a.max() < 3185
    assert not np.array_equal(a, datasets.sample_subset(3185, 500, 1))
    assert np.array_equal(datasets.sample_subset(5, 9, 0), np.arange(5))
    datasets.synthetic_delicious(n_train=20, n_test=5, seed=3)
    datasets.synthetic_mediamill(n_train=20, n_test=5, seed=3)
    after = np.random.get_state()
    assert after[0] == state[0] and np.array_equal(after[1], state[1]) and \
        after[2:] == state[2:]
    with pytest.raises(TypeError, match="seed"):
        datasets.sample_subset(10, 3, None)
    with pytest.raises(TypeError, match="seed"):
        datasets.synthetic_delicious(n_train=5, n_test=1, seed=1.5)
