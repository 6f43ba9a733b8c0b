"""Accuracy on the Gold Set half shipped beside the repo (evaluation-only data)."""
from pathlib import Path

import pytest

from dedup.cli import main
from dedup.cli.evaluate import evaluate, metric

GOLDSET = Path(__file__).resolve().parents[2] / "shared" / "data" / "goldset-dev"

needs_goldset = pytest.mark.skipif(
    not GOLDSET.is_dir(),
    reason=f"Gold Set not found at {GOLDSET} (evaluation-only data, not shipped with the repo)",
)


@pytest.mark.goldset
@needs_goldset
def test_goldset_online_metric_meets_targets():
    report = evaluate(GOLDSET, seed=7)
    m = metric(report.outcomes)
    assert len(report.outcomes) == 1055
    assert m["precision"] >= 0.97, m["precision"]
    assert m["recall"] >= 0.95, m["recall"]


def test_cli_evaluate_json_on_a_tiny_folder(tmp_path, capsys):
    story = "<html><head><title>{t}</title></head><body><article>{p}</article></body></html>"
    para = "".join(f"<p>Sentence number {i} about the harbour bridge repairs and the ferries.</p>" for i in range(12))
    other = "".join(f"<p>Line {i} on the bakery prize, sourdough crust and weekend classes.</p>" for i in range(12))
    (tmp_path / "bridge").mkdir()
    (tmp_path / "bakery").mkdir()
    (tmp_path / "bridge" / "a.htm").write_text(story.format(t="Bridge", p=para))
    (tmp_path / "bridge" / "b.htm").write_text(story.format(t="Bridge!", p=para + "<p>Extra line.</p>"))
    (tmp_path / "bakery" / "a.htm").write_text(story.format(t="Bakery", p=other))
    assert main(["evaluate", str(tmp_path), "--json", "--sweep", "0.2:0.4:0.1"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["pages"] == 3 and out["precision"] == 1.0 and out["recall"] == 1.0
    assert {"precision", "recall", "f1", "pages", "pages_per_second"} <= set(out)
    assert [r["t2"] for r in out["sweep"]] == [0.2, 0.3, 0.4]
    # the reference text it used is named; numbers are rounded (180 * (1 - 0.8) is 36.0)
    from dedup.mrc import DEFAULT_REFERENCE_PATH, default_reference

    assert out["reference"]["id"] == default_reference().id and out["reference"]["file"] == str(DEFAULT_REFERENCE_PATH)
    assert out["thresholds"]["angle"] == 36.0
    assert main(["evaluate", str(tmp_path)]) == 0
    assert f"reference text {default_reference().id} (shipped: {DEFAULT_REFERENCE_PATH}" in capsys.readouterr().out


def test_cli_missing_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "nope")]) == 2
    assert "no such evaluation folder" in capsys.readouterr().err
