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
