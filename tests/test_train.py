"""The genetic reference-text trainer (seed 000 §3.6): variation operators, Eq. 1 fitness
against a brute-force computation, reproducibility, provenance, the CLI, and refusal of
signatures made with another reference text."""
import json
import random

import numpy as np
import pytest

from dedup.cli import main
from dedup.deduplicator import Deduplicator
from dedup.features import Featurizer
from dedup.mrc import (REFERENCE_ENV, IncompatibleSignature, _gram_id, ReferenceText, cosine_counts, default_reference,
                       gram_counts, gram_text, tfidf_grams)
from dedup.page import parse_page
from dedup.store import MemoryIndex
from dedup.train.genetic import (PairSet, TrainConfig, crossover, initial_population, load_corpus, mae_of_reference, mutate,
                         reference_from_genes, tfidf_pool, train_reference)
from dedup.train.genetic import _offspring

WORDS = ("river bridge council harbour repairs spring engineers cables inspection autumn ferries buses shops "
         "trade mayor closure safety budget bakery prize sourdough crust flavour classes residents award oven "
         "apprentices weather storm flood garden school teacher pupils library museum painting concert orchestra "
         "violin market farmer harvest wheat barley orchard apples cider railway station platform timetable "
         "journey mountain valley glacier summit hikers rescue helicopter hospital nurse patients vaccine "
         "election candidate ballot votes parliament minister treasury taxes pension wages factory workers "
         "strike union contract lawyer court judge verdict appeal prison police detective witness evidence").split()


def corpus(n: int, seed: int = 0) -> list[str]:
    """``n`` documents of seeded random sentences; each leans on its own topic words."""
    rnd = random.Random(seed)
    docs = []
    for _ in range(n):
        topic = rnd.sample(WORDS, 12)
        sentences = []
        for _ in range(rnd.randint(3, 12)):
            words = [rnd.choice(topic) if rnd.random() < 0.6 else rnd.choice(WORDS) for _ in range(rnd.randint(5, 14))]
            sentences.append("The " + " ".join(words) + ".")
        docs.append(" ".join(sentences))
    return docs


TINY = TrainConfig(length=60, partitions=10, population=6, generations=3, pool=300, sample=20, eval_sample=10, seed=3)


# -- variation operators ------------------------------------------------------------------------

def test_crossover_is_single_cut():
    a, b = np.arange(10), np.arange(10, 20)
    c, d = crossover(a, b, 3)
    assert c.tolist() == [0, 1, 2, 13, 14, 15, 16, 17, 18, 19]
    assert d.tolist() == [10, 11, 12, 3, 4, 5, 6, 7, 8, 9]
    assert a.tolist() == list(range(10))  # parents untouched


def test_mutate_replaces_only_given_positions():
    g = np.arange(20)
    out = mutate(g, np.array([2, 7]), np.array([100, 101]))
    assert out[2] == 100 and out[7] == 101
    assert np.array_equal(np.delete(out, [2, 7]), np.delete(g, [2, 7])) and g[2] == 2


def test_offspring_mutation_replaces_ten_percent_with_pool_grams():
    rng = np.random.default_rng(0)
    parent = np.arange(200)
    pop = np.stack([parent] * 4)  # crossover of equal parents is the parent: only mutation changes genes
    children = _offspring(rng, pop, 8, 5000, TrainConfig(length=200, pool=5000))
    assert children.shape == (8, 200)
    for child in children:
        changed = np.flatnonzero(child != parent)
        assert 15 <= changed.size <= 20  # 10% of 200 positions drawn (a drawn gram may equal the old one)
        assert (child < 5000).all() and (child >= 0).all()
    # no mutation: each child of two different parents is one of their single-cut recombinations
    a, b = np.arange(50), np.arange(50, 100)
    for child in _offspring(rng, np.stack([a, b]), 6, 100, TrainConfig(length=50, pool=100, mutation_rate=0.0)):
        assert any(np.array_equal(child, np.concatenate([x[:c], y[c:]]))
                   for c in range(1, 50) for x, y in ((a, b), (b, a)))


def test_initial_population_texts_are_distinct_pool_grams():
    pop = initial_population(np.random.default_rng(1), 5, 40, 100)
    assert pop.shape == (5, 40)
    assert all(len(set(row.tolist())) == 40 for row in pop)
    assert pop.min() >= 0 and pop.max() < 100


# -- fitness ------------------------------------------------------------------------------------

def test_tfidf_pool_matches_tfidf_grams():
    docs = corpus(30)
    pool = tfidf_pool([gram_counts(d) for d in docs], 150)
    assert [gram_text(g) for g in pool] == tfidf_grams(docs, 150)


def brute_force_mae(ref: ReferenceText, docs: list[str]) -> tuple[np.ndarray, np.ndarray]:
    sigs = [ref.signature(d) for d in docs]
    counts = [gram_counts(d) for d in docs]
    mrc, exact = [], []
    for i in range(len(docs)):
        for j in range(i + 1, len(docs)):
            mrc.append(sigs[i].similarity(sigs[j]))
            exact.append(cosine_counts(counts[i], counts[j]))
    return np.array(mrc), np.array(exact)


@pytest.mark.parametrize("partitions", [1, 7, 60])
def test_fitness_equals_brute_force_eq1(partitions):
    docs = corpus(25, seed=5)
    counts = [gram_counts(d) for d in docs]
    pool = tfidf_pool(counts, 200)
    pairs = PairSet(counts, pool)
    rng = np.random.default_rng(2)
    genes = rng.integers(0, pool.size, size=(4, 60))
    genes[0, :5] = genes[0, 5]  # a 3-gram repeated inside a partition counts twice, as in ReferenceText
    fast_mrc = pairs.mrc(genes, partitions)
    fast_mae = pairs.mae(genes, partitions)
    for t in range(genes.shape[0]):
        ref = reference_from_genes(pool, genes[t], partitions)
        mrc, exact = brute_force_mae(ref, docs)
        assert pairs.pairs == len(docs) * (len(docs) - 1) // 2
        np.testing.assert_allclose(pairs.exact, exact, atol=1e-12)
        np.testing.assert_allclose(fast_mrc[t], mrc, atol=1e-5)
        assert fast_mae[t] == pytest.approx(np.abs(mrc - exact).mean(), abs=1e-5)
        assert mae_of_reference(ref, counts) == pytest.approx(fast_mae[t], abs=1e-9)


def test_fitness_in_batches_equals_one_batch(monkeypatch):
    counts = [gram_counts(d) for d in corpus(12, seed=8)]
    pool = tfidf_pool(counts, 100)
    pairs = PairSet(counts, pool)
    genes = np.random.default_rng(0).integers(0, pool.size, size=(9, 40))
    whole = pairs.mae(genes, 8)
    monkeypatch.setattr(PairSet, "BATCH_ELEMENTS", 1)
    np.testing.assert_allclose(pairs.mae(genes, 8), whole, atol=1e-12)


def test_a_document_without_pool_grams_has_mrc_zero():
    counts = [gram_counts(d) for d in ("alpha beta gamma delta", "alpha beta gamma delta epsilon", "zzz qqq xxx")]
    pool = np.array([_gram_id(g) for g in ("alp", "bet", "gam", "del")], dtype=np.uint64)
    mrc = PairSet(counts, pool).mrc(np.arange(4)[None], 2)[0]  # pairs (0,1), (0,2), (1,2)
    assert mrc[0] == pytest.approx(1.0) and mrc[1] == 0.0 and mrc[2] == 0.0


# -- the loop -----------------------------------------------------------------------------------

def test_training_is_reproducible_and_improves():
    docs = corpus(60)
    a = train_reference(docs, TINY, corpus="tiny")
    b = train_reference(docs, TINY, corpus="tiny")
    assert a.reference.grams == b.reference.grams and a.reference.id == b.reference.id
    assert a.reference.provenance == b.reference.provenance
    c = train_reference(docs, TrainConfig(**{**TINY.__dict__, "seed": 4}), corpus="tiny")
    assert c.reference.grams != a.reference.grams
    best = [g.best for g in a.history]
    assert len(best) == TINY.generations + 1 and all(x >= y for x, y in zip(best, best[1:]))
    assert a.fitness_mae == best[-1]
    assert a.fitness_mae <= a.tfidf_fitness_mae  # the tf-idf-only text starts in the population
    assert a.reference.length == 60 and a.reference.partitions == 10


def test_provenance_names_corpus_parameters_seed_and_maes():
    result = train_reference(corpus(60), TINY, corpus="tiny corpus", provenance={"licence": "CC0"})
    p = result.reference.provenance
    assert p["corpus"] == "tiny corpus" and p["licence"] == "CC0" and p["seed"] == 3
    assert p["parameters"]["length"] == 60 and p["parameters"]["partitions"] == 10
    assert p["parameters"]["population"] == 6 and p["parameters"]["pool"] == 300
    assert p["documents"] == 60 and p["fitness_documents"] == 48 and p["evaluation_documents"] == 12
    assert p["generations_run"] == 3 and p["fitness_pairs"] == 190 and p["evaluation_pairs"] == 45
    assert p["evaluation_mae"] == pytest.approx(result.evaluation_mae, abs=1e-6)
    assert 0 <= p["evaluation_mae"] < 1 and 0 <= p["tfidf_evaluation_mae"] < 1
    assert result.tfidf.length == 60 and result.tfidf.provenance["method"] == "tfidf"


def test_target_stops_early():
    result = train_reference(corpus(60), TrainConfig(**{**TINY.__dict__, "generations": 50, "target": 1.0}))
    assert result.reference.provenance["generations_run"] == 0 and len(result.history) == 1


def test_bad_parameters_and_small_corpora():
    with pytest.raises(ValueError, match="pool must be >= length"):
        TrainConfig(length=100, pool=50).check()
    with pytest.raises(ValueError, match="partitions"):
        TrainConfig(length=10, partitions=11, pool=20).check()
    with pytest.raises(ValueError, match="at least 4 documents"):
        train_reference(["one document", "two"], TINY)
    with pytest.raises(ValueError, match="fewer than the reference length 60"):
        train_reference(["abc abd abe"] * 10, TINY)


# -- corpus files and the CLI -------------------------------------------------------------------

def test_load_corpus_formats(tmp_path):
    docs = corpus(3)
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "b.txt").write_text(docs[1])
    (folder / "sub" / "a.md").write_text(docs[0])
    (folder / "skip.bin").write_text("not a document")
    (folder / "page.html").write_text(f"<html><body><article><p>{docs[2]}</p></article></body></html>")
    got = load_corpus(folder)
    assert got[0] == docs[1] and got[2] == docs[0] and len(got) == 3
    assert "sourdough" in got[1] or got[1].split()[:3] == docs[2].split()[:3]
    jl = tmp_path / "items.jsonl"
    jl.write_text("\n".join(json.dumps({"url": f"u{i}", "body": d}) for i, d in enumerate(docs)) + "\n\n")
    assert load_corpus(jl, field="body") == docs
    js = tmp_path / "docs.json"
    js.write_text(json.dumps(docs))
    assert load_corpus(js) == docs
    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join(docs) + "\n\n")
    assert load_corpus(lines) == docs
    with pytest.raises(ValueError, match="string 'text' field"):
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"text": 3}\n')
        load_corpus(bad)
    with pytest.raises(FileNotFoundError):
        load_corpus(tmp_path / "missing")


def test_cli_trains_on_a_tiny_corpus(tmp_path, capsys):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i, d in enumerate(corpus(40)):
        (folder / f"{i:03d}.txt").write_text(d)
    test_set = tmp_path / "other.jsonl"
    test_set.write_text("\n".join(json.dumps({"text": d}) for d in corpus(8, seed=9)))
    out = tmp_path / "ref.json"
    args = ["train-reference", str(folder), "-o", str(out), "--length", "60", "--partitions", "10",
            "--population", "6", "--generations", "2", "--pool", "300", "--sample", "20", "--seed", "1",
            "--test", str(test_set)]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "generation 2/2: best MAE" in captured.err and " s" in captured.err
    assert "s/generation" in captured.out and "evaluation part" in captured.out
    ref = ReferenceText.load(out)
    p = ref.provenance
    assert ref.length == 60 and ref.partitions == 10 and ref.id in captured.out
    assert p["corpus"] == "corpus" and p["seed"] == 1 and p["parameters"]["generations"] == 2
    assert p["tests"][0]["documents"] == 8 and 0 <= p["tests"][0]["mae"] < 1
    # same corpus, same seed, same parameters: the same file
    out2 = tmp_path / "ref2.json"
    assert main(args[:3] + [str(out2)] + args[4:] + ["--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["id"] == ref.id and out2.read_text() == out.read_text()
    assert summary["generations"] == 2 and summary["seconds_per_generation"] >= 0


def test_cli_help_prints_percent_signs_once(capsys):
    with pytest.raises(SystemExit):
        main(["train-reference", "--help"])
    out = capsys.readouterr().out
    assert "%%" not in out and "10% mutation" in " ".join(out.split())


def test_load_corpus_reports_progress_per_file(tmp_path):
    for i, d in enumerate(corpus(5)):
        (tmp_path / f"{i}.txt").write_text(d)
    seen = []
    load_corpus(tmp_path, progress=lambda n, total: seen.append((n, total)))
    assert seen == [(n, 5) for n in range(1, 6)]


def test_cli_reports_bad_input(tmp_path, capsys):
    assert main(["train-reference", str(tmp_path / "nothing"), "-o", str(tmp_path / "r.json")]) == 2
    assert "no such corpus" in capsys.readouterr().err
    assert main(["train-reference", str(tmp_path), "-o", str(tmp_path / "r.json"), "--pool", "10"]) == 2
    assert "pool must be >= length" in capsys.readouterr().err


# -- using a trained text, and refusing signatures of an old one -------------------------------

STORY = ("The harbour bridge will close for three weeks of repairs in the spring, the council said on Monday. "
         "Engineers found corrosion in the main cables during an inspection last autumn. "
         "Ferries will run every fifteen minutes while the bridge is closed, and buses will be rerouted.")


def trained(tmp_path) -> tuple[ReferenceText, str]:
    ref = train_reference(corpus(60), TINY, corpus="tiny").reference
    path = tmp_path / "trained.json"
    ref.save(path)
    return ref, str(path)


def test_dedup_reference_environment_variable(tmp_path, monkeypatch):
    ref, path = trained(tmp_path)
    shipped = default_reference()
    monkeypatch.setenv(REFERENCE_ENV, path)
    assert default_reference().id == ref.id
    monkeypatch.delenv(REFERENCE_ENV)
    assert default_reference().id == shipped.id
    monkeypatch.setenv(REFERENCE_ENV, str(tmp_path / "missing.json"))
    with pytest.raises(FileNotFoundError, match="DEDUP_REFERENCE"):
        default_reference()


def test_signatures_of_an_old_reference_are_refused(tmp_path):
    new, _ = trained(tmp_path)
    old = default_reference()
    with pytest.raises(IncompatibleSignature, match="recompute") as info:
        old.signature(STORY).similarity(new.signature(STORY))
    assert "rebuild the index" in str(info.value) and REFERENCE_ENV in str(info.value)
    page = parse_page(f"<html><body><article><p>{STORY}</p></article></body></html>", "http://a.example/1")
    again = parse_page(f"<html><body><article><p>{STORY} More.</p></article></body></html>", "http://b.example/2")
    memory = MemoryIndex()
    Deduplicator(memory).process(page)  # kept with the shipped reference
    with pytest.raises(ValueError, match="reference text") as info:
        Deduplicator(memory, featurizer=Featurizer(reference=new)).process(again)
    assert old.id in str(info.value) and new.id in str(info.value)
    # the embedded index a crawl writes by default (local://) says how to recompute them
    from index.local import LocalIndex

    with LocalIndex(tmp_path / "ix") as local:
        Deduplicator(local).process(page)
        with pytest.raises(ValueError, match="reference text") as info:
            Deduplicator(local, featurizer=Featurizer(reference=new)).process(again)
        message = str(info.value)
        assert old.id in message and new.id in message and ("reindex" in message or "rebuild" in message)
        assert len(local) == 1
