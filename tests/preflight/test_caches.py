"""Where a start's JIT and compile caches land, and which a later start reused: the real runs' inventories."""

from __future__ import annotations

from pathlib import Path

import pytest

from preflight.caches import CACHE_DIRS, inventory, prepare_start, summary, written
from tests.preflight.runs import BATCH, DEV, report


def test_every_folder_a_real_cold_start_wrote_is_summarised_and_each_jit_cache_in_the_home_has_its_variable() -> None:
    cold = report(DEV)["starts"][0]["caches"]
    table = summary(report(DEV)["starts"])
    written_folders = {f"{root}:{folder}": files for root, found in cold.items() for folder, (files, _) in found["written"].items()}
    assert {key: row["cold_files"] for key, row in table.items()} == written_folders
    # Each compiler's folder in the home is one a known variable moves; vLLM's usage stats (.config/vllm) are no cache.
    home = {row["folder"] for row in table.values() if row["root"] == "home"} - {".config/vllm"}
    assert home and all(any(folder in c.default and c.variable and c.source for c in CACHE_DIRS) for folder in home), home


def test_with_only_the_compile_cache_the_triton_and_flashinfer_kernels_are_compiled_again() -> None:
    table = summary(report(DEV)["starts"])
    assert table["home:.triton/cache"]["2-compile-cache"] == "written again (972 files)"
    assert table["home:.cache/flashinfer"]["2-compile-cache"] == "written again (35 files)"
    assert table["compile cache:torch_compile_cache/aa92d62dd5"]["2-compile-cache"] == "reused"
    # With every folder kept, FlashInfer compiled nothing.
    assert table["home:.cache/flashinfer"]["3-all-caches"] == "reused"


def test_keeping_the_cold_starts_home_does_not_keep_inductors_triton_kernels() -> None:
    table = summary(report(BATCH)["starts"])
    assert table["home:.triton/cache"]["2-all-caches"] == "written again (953 files)"


def test_an_inventory_counts_files_by_folder_and_sees_what_grew(tmp_path: Path) -> None:
    (tmp_path / ".triton" / "cache" / "k1").mkdir(parents=True)
    (tmp_path / ".triton" / "cache" / "k1" / "a.cubin").write_bytes(b"12345")
    before = inventory(tmp_path)
    assert before == {".triton/cache": [1, 5]}
    (tmp_path / ".triton" / "cache" / "k2").mkdir()
    (tmp_path / ".triton" / "cache" / "k2" / "b.cubin").write_bytes(b"123")
    (tmp_path / "top.json").write_text("{}")
    after = inventory(tmp_path)
    assert written(before, after) == {".triton/cache": [1, 3], ".": [1, 2]}


@pytest.mark.parametrize(
    ("mode", "dropped"), [("cold", ["compile cache", "home", "tmp"]), ("compile-cache", ["home", "tmp"]), ("all-caches", [])]
)
def test_a_start_drops_what_a_new_pod_would_not_have(tmp_path: Path, mode: str, dropped: list[str]) -> None:
    roots = {name: tmp_path / name.replace(" ", "-") for name in ("compile cache", "home", "tmp")}
    for root in roots.values():
        root.mkdir()
        (root / "kept").write_text("x")
    assert prepare_start(roots, mode) == dropped
    assert sorted(name for name, root in roots.items() if (root / "kept").exists()) == sorted(set(roots) - set(dropped))


def test_an_unknown_start_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown start"):
        prepare_start({"home": tmp_path}, "lukewarm")
