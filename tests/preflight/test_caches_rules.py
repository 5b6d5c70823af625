"""How the caches a start writes are counted, dropped and compared, on folders made by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from preflight.caches import inventory, prepare_start, summary, written


def _file(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def test_an_inventory_groups_files_two_folders_down_and_sorts_them(tmp_path: Path) -> None:
    _file(tmp_path / "top.json", 2)
    _file(tmp_path / "b" / "one.bin", 3)
    _file(tmp_path / "b" / "c" / "d" / "e" / "deep.bin", 5)
    _file(tmp_path / "b" / "c" / "other.bin", 7)
    _file(tmp_path / "a" / "x" / "y.bin", 11)
    found = inventory(tmp_path)
    assert list(found.items()) == [(".", [1, 2]), ("a/x", [1, 11]), ("b", [1, 3]), ("b/c", [2, 12])]


def test_an_inventory_goes_as_deep_as_asked(tmp_path: Path) -> None:
    _file(tmp_path / "a" / "b" / "c" / "f.bin", 4)
    _file(tmp_path / "a" / "g.bin", 1)
    assert inventory(tmp_path, depth=1) == {"a": [2, 5]}
    assert inventory(tmp_path, depth=3) == {"a": [1, 1], "a/b/c": [1, 4]}


def test_an_inventory_skips_links_and_empty_folders(tmp_path: Path) -> None:
    _file(tmp_path / "real" / "f.bin", 6)
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "f.bin").symlink_to(tmp_path / "real" / "f.bin")
    (tmp_path / "empty" / "inner").mkdir(parents=True)
    assert inventory(tmp_path) == {"real": [1, 6]}


def test_an_inventory_of_a_missing_root_or_a_file_is_empty(tmp_path: Path) -> None:
    _file(tmp_path / "file", 3)
    assert inventory(tmp_path / "missing") == {}
    assert inventory(tmp_path / "file") == {}


@pytest.mark.parametrize(
    ("before", "after", "grown"),
    [
        ({}, {"a": [2, 10]}, {"a": [2, 10]}),
        ({"a": [2, 10]}, {"a": [2, 10]}, {}),
        ({"a": [2, 10]}, {"a": [3, 10]}, {"a": [1, 0]}),
        ({"a": [2, 10]}, {"a": [2, 15]}, {"a": [0, 5]}),
        ({"a": [2, 10]}, {"a": [1, 4]}, {}),
        ({"a": [2, 10]}, {}, {}),
        ({"a": [2, 10], "b": [1, 1]}, {"a": [2, 10], "b": [4, 9]}, {"b": [3, 8]}),
    ],
)
def test_written_keeps_the_folders_that_grew_by_how_much(
    before: dict[str, list[int]], after: dict[str, list[int]], grown: dict[str, list[int]]
) -> None:
    assert written(before, after) == grown


def test_a_start_that_drops_a_root_makes_it_even_when_it_was_missing(tmp_path: Path) -> None:
    roots = {"compile cache": tmp_path / "cache", "home": tmp_path / "deep" / "home", "tmp": tmp_path / "tmp"}
    roots["compile cache"].mkdir()
    _file(roots["compile cache"] / "kept.bin", 1)
    assert prepare_start(roots, "compile-cache") == ["home", "tmp"]
    assert roots["home"].is_dir() and roots["tmp"].is_dir()
    assert (roots["compile cache"] / "kept.bin").exists()


def test_a_dropped_root_is_emptied_down_to_its_deepest_file(tmp_path: Path) -> None:
    roots = {"home": tmp_path / "home"}
    _file(roots["home"] / ".triton" / "cache" / "k" / "a.cubin", 3)
    assert prepare_start(roots, "cold") == ["home"]
    assert list(roots["home"].iterdir()) == []


def test_an_unknown_start_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as refused:
        prepare_start({"home": tmp_path / "home"}, "warm")
    assert str(refused.value) == "unknown start 'warm'; one of cold, compile-cache, all-caches"
    assert not (tmp_path / "home").exists()


def _start(name: str, written_by_root: dict[str, dict[str, list[int]]]) -> dict[str, Any]:
    return {"name": name, "caches": {root: {"before": {}, "written": folders} for root, folders in written_by_root.items()}}


def test_no_starts_have_no_summary() -> None:
    assert summary([]) == {}


def test_a_start_without_caches_has_an_empty_summary() -> None:
    assert summary([{"name": "1-cold"}]) == {}
    # A root that was only listed (its inventory before the start) wrote nothing.
    assert summary([{"name": "1-cold", "caches": {"home": {"before": {}}}}]) == {}


def test_the_summary_has_a_row_per_folder_the_first_start_wrote_and_what_each_later_start_did() -> None:
    starts = [
        _start("1-cold", {"home": {".triton/cache": [900, 5000], ".cache/flashinfer": [30, 800]}, "compile cache": {"torch": [4, 40]}}),
        _start("2-compile-cache", {"home": {".triton/cache": [12, 100], ".cache/flashinfer": [0, 64]}}),
        {"name": "3-all-caches"},
    ]
    assert summary(starts) == {
        "home:.triton/cache": {
            "root": "home",
            "folder": ".triton/cache",
            "cold_files": 900,
            "cold_bytes": 5000,
            "2-compile-cache": "written again (12 files)",
            "3-all-caches": "reused",
        },
        # Bytes without new files: a file rewritten in place, not a compile.
        "home:.cache/flashinfer": {
            "root": "home",
            "folder": ".cache/flashinfer",
            "cold_files": 30,
            "cold_bytes": 800,
            "2-compile-cache": "reused",
            "3-all-caches": "reused",
        },
        "compile cache:torch": {
            "root": "compile cache",
            "folder": "torch",
            "cold_files": 4,
            "cold_bytes": 40,
            "2-compile-cache": "reused",
            "3-all-caches": "reused",
        },
    }


def test_a_folder_written_only_by_a_later_start_has_no_row() -> None:
    starts = [_start("1-cold", {"home": {}}), _start("2-cold", {"home": {".triton/cache": [5, 5]}})]
    assert summary(starts) == {}


def test_a_later_start_writing_one_file_again_is_a_miss() -> None:
    starts = [_start("1-cold", {"tmp": {"x": [1, 1]}}), _start("2-cold", {"tmp": {"x": [1, 1]}})]
    assert summary(starts)["tmp:x"]["2-cold"] == "written again (1 files)"
