import numpy as np
import pytest

from dedup.mrc import (IncompatibleSignature, _gram_id, ReferenceText, cosine_counts, default_reference, gram_counts,
                       gram_ids, gram_text, tfidf_grams)

TEXT = "The harbour bridge will close for repairs in the spring, the council said on Monday."


def test_gram_ids_round_trip_and_folding():
    ids = gram_ids("Ab  c")
    assert [gram_text(g) for g in ids] == ["ab ", "b c"]
    assert gram_ids("ab").size == 0


def test_signature_is_cosine_to_each_partition():
    ref = ReferenceText(["the", "he ", "bri", "xyz", "rep", "air"], partitions=3)
    sig = ref.signature(TEXT).vector
    ids, counts = gram_counts(TEXT)
    for p, grams in enumerate((["the", "he "], ["bri", "xyz"], ["rep", "air"])):
        part = (np.sort(np.array([_gram_id(g) for g in grams], dtype=np.uint64)), np.ones(len(grams)))
        assert sig[p] == pytest.approx(cosine_counts((ids, counts), part), rel=1e-5)
    assert sig[1] > 0  # "bri" occurs, "xyz" does not


def test_similar_texts_have_similar_signatures():
    ref = default_reference()
    a = ref.signature(TEXT)
    b = ref.signature(TEXT.replace("Monday", "Tuesday"))
    c = ref.signature("Zebras graze quietly; xylophones clatter off-key in Kyoto jazz clubs.")
    assert a.similarity(b) > a.similarity(c)
    assert a.similarity(a) == pytest.approx(1.0, abs=1e-6)


def test_default_reference_shape_and_id():
    ref = default_reference()
    assert ref.length == 1000 and ref.partitions == 150
    assert ref.id.startswith("mrc-1000x150-")
    assert ref.signature(TEXT).vector.shape == (150,)
    assert ref.provenance["corpus"].startswith("WordNet")


def test_signatures_from_other_reference_refused():
    ref = default_reference()
    other = ReferenceText(ref.grams[::-1], 150)
    with pytest.raises(IncompatibleSignature, match="recompute"):
        ref.signature(TEXT).similarity(other.signature(TEXT))


def test_bad_parameters():
    with pytest.raises(ValueError, match="partitions=7, length=3"):
        ReferenceText(["abc", "bcd", "cde"], partitions=7)
    with pytest.raises(ValueError, match="3 characters"):
        ReferenceText(["ab"], partitions=1)


def test_save_load_round_trip(tmp_path):
    ref = ReferenceText(tfidf_grams(["alpha beta gamma", "beta delta", "epsilon alpha zeta eta"], 20), 4)
    ref.save(tmp_path / "r.json")
    again = ReferenceText.load(tmp_path / "r.json")
    assert again.id == ref.id and again.grams == ref.grams


def test_empty_text_signature_is_zero():
    sig = default_reference().signature("")
    assert not sig.vector.any()
