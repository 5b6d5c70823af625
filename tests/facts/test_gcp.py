"""Cloud Storage's refused words in bucket names.

The refused words follow cloud.google.com/storage/docs/buckets#naming: no "goog" prefix, and no "google" or a close
misspelling of it (a letter dropped, doubled or swapped; 0, 1 and 3 read as o, l and e). The vendored machine shapes
and A4 zones are tested through the settings that read them (tests/components/test_benchmark.py, tests/facts/test_zones.py).
"""

from __future__ import annotations

import pytest

from facts.gcp import _misspellings, bucket_name_problem


def test_the_close_misspellings_are_a_letter_dropped_doubled_or_swapped_with_the_next() -> None:
    # The words are built once, when the module loads: this checks the rule itself.
    assert _misspellings("abc") == {"bc", "ac", "ab", "aabc", "abbc", "abcc", "bac", "acb"}
    # A one-letter word dropped is nothing, which is no word.
    assert _misspellings("a") == {"aa"}


@pytest.mark.parametrize("name", ["goog-data", "googlers", "goog"])
def test_a_bucket_name_may_not_begin_with_goog(name: str) -> None:
    assert bucket_name_problem(name) == 'begins with "goog"'


@pytest.mark.parametrize(
    ("name", "word"),
    [
        ("data-gogle", "gogle"),  # a letter dropped
        ("data-oogle-x", "oogle"),  # the first letter dropped
        ("data-gooogle", "gooogle"),  # a letter doubled
        ("data-ggoogle", "ggoogle"),  # the first letter doubled
        ("data-goole", "goole"),  # the second g dropped
        ("data-googe", "googe"),  # the l dropped
        ("data-goolge", "goolge"),  # two letters swapped
        ("data-gogole", "gogole"),  # the second and third swapped
        ("data-g0ogle", "googl"),  # 0 reads as o: "google", whose first misspelling in order is "googl"
        ("data-goog1e", "googl"),  # 1 reads as l
        ("data-googl3", "googl"),  # 3 reads as e
    ],
)
def test_a_bucket_name_may_not_hold_google_or_a_close_misspelling(name: str, word: str) -> None:
    assert bucket_name_problem(name) == f'holds "google" or a close misspelling of it ({word})'


@pytest.mark.parametrize("name", ["example-project-dev-batch", "goggles-data", "g-o-o-g-l-e", "ago0d"])
def test_a_bucket_name_far_from_google_has_no_problem(name: str) -> None:
    assert bucket_name_problem(name) is None
