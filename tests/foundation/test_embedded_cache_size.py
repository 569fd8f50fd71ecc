"""The embedded PostgreSQL's automatic cache size: a quarter of the machine's (or its container's) memory."""

from __future__ import annotations

import os

from memoryos_site.database import machine_memory, shared_buffers_default

GB = 1024**3
MB = 1024**2
UNLIMITED_CGROUP_V1 = 9223372036854771712  # memory.limit_in_bytes when no limit is set


def test_it_is_a_quarter_of_the_physical_memory():
    assert shared_buffers_default(physical_bytes=24 * GB, cgroup_limit_bytes=None) == "6144MB"


def test_it_rounds_down_to_whole_megabytes():
    assert shared_buffers_default(physical_bytes=4 * 1001 * MB + 3, cgroup_limit_bytes=None) == "1001MB"
    assert shared_buffers_default(physical_bytes=4 * 1001 * MB - 1, cgroup_limit_bytes=None) == "1000MB"


def test_it_is_at_most_8gb():
    assert shared_buffers_default(physical_bytes=256 * GB, cgroup_limit_bytes=None) == "8192MB"


def test_it_is_never_below_postgresqls_own_128mb():
    assert shared_buffers_default(physical_bytes=256 * MB, cgroup_limit_bytes=None) == "128MB"


def test_a_smaller_cgroup_limit_sizes_it_instead_of_the_host():
    assert shared_buffers_default(physical_bytes=64 * GB, cgroup_limit_bytes=2 * GB) == "512MB"


def test_a_cgroup_limit_larger_than_the_machine_changes_nothing():
    assert shared_buffers_default(physical_bytes=24 * GB, cgroup_limit_bytes=UNLIMITED_CGROUP_V1) == "6144MB"
    assert shared_buffers_default(physical_bytes=24 * GB, cgroup_limit_bytes=32 * GB) == "6144MB"


def test_the_machines_physical_memory_is_read_from_sysconf(tmp_path):
    physical_bytes, _ = machine_memory(tmp_path)
    assert physical_bytes == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") > 0


def test_the_cgroup_v2_limit_is_read_and_max_means_none(tmp_path):
    (tmp_path / "memory.max").write_text("2147483648\n")
    assert machine_memory(tmp_path)[1] == 2 * GB
    (tmp_path / "memory.max").write_text("max\n")
    assert machine_memory(tmp_path)[1] is None


def test_the_cgroup_v1_limit_is_read_when_there_is_no_v2_file(tmp_path):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text(f"{UNLIMITED_CGROUP_V1}\n")
    physical_bytes, cgroup_limit_bytes = machine_memory(tmp_path)
    assert cgroup_limit_bytes == UNLIMITED_CGROUP_V1
    assert shared_buffers_default(physical_bytes=physical_bytes, cgroup_limit_bytes=cgroup_limit_bytes) == (
        shared_buffers_default(physical_bytes=physical_bytes, cgroup_limit_bytes=None)
    ), "v1's huge value for no limit means none"


def test_no_cgroup_files_mean_no_limit(tmp_path):
    assert machine_memory(tmp_path)[1] is None
