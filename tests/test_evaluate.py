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


def test_ctrl_c_in_a_command_is_one_line_and_exit_130(tmp_path, capsys, monkeypatch):
    import dedup.cli.evaluate as ev

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ev, "evaluate", interrupted)
    (tmp_path / "c").mkdir()
    assert main(["evaluate", str(tmp_path)]) == 130
    assert capsys.readouterr().err == "dedup: interrupted\n"


def test_cli_missing_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "nope")]) == 2
    assert "no such evaluation folder" in capsys.readouterr().err


def test_commands_read_the_decision_knobs_they_are_given():
    """``--t1``/``--t2``/``--knn`` (and evaluate's --weights, --extractor) become the run's DedupConfig;
    what is not given keeps DedupConfig's default, and a bad value is refused by DedupConfig."""
    from dedup.cli import build_parser
    from dedup.cli.commands import config_of
    from dedup.deduplicator import ConfigError, DedupConfig

    parser = build_parser()
    ev = parser.parse_args(["evaluate", "folder", "--t2", "0.3", "--knn", "5", "--weights", "wwt"])
    got, default = config_of(ev, "weights", "extractor"), DedupConfig()
    assert (got.t1, got.t2, got.knn, got.weights, got.extractor) == (default.t1, 0.3, 5, "wwt", default.extractor)
    re = parser.parse_args(["reindex", "http://127.0.0.1:9/a", "http://127.0.0.1:9/b", "--t1", "0.9"])
    assert (config_of(re).t1, config_of(re).t2) == (0.9, default.t2)
    with pytest.raises(ConfigError):
        config_of(parser.parse_args(["reindex", "http://127.0.0.1:9/a", "http://127.0.0.1:9/b", "--t2", "1.5"]))
