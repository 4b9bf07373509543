"""Redis Cluster: a filter's keys must share a hash slot (docs/integrations.md, "Redis Cluster").

A real redis-server in cluster mode owning every slot (one node is enough:
the server refuses a multi-key script or transaction across slots whatever
the number of nodes). A plain name is a ValueError saying how to fix it,
before any bit is written; a hash-tagged name works.
"""

from __future__ import annotations

import time

import pytest

redis = pytest.importorskip("redis")
from redis_server import free_port, running_redis  # noqa: E402

from bloomkit.redis import RedisBloomFilter  # noqa: E402
from bloomkit.redis_family import RedisFilterFamily  # noqa: E402
from bloomkit.redis_window import RedisWindowFilter  # noqa: E402

pytestmark = pytest.mark.integration

ADVICE = r"Redis Cluster refused a command over this filter's keys, which are in different hash slots: .*'\{shown\}'"


@pytest.fixture(scope="module")
def cluster():
    try:
        # The cluster bus listens on its own port (by default the client port + 10000, which
        # does not exist for a free port above 55535): give it a free one too.
        bus = ("--cluster-port", str(free_port()))
        with running_redis(("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", *bus)) as url:
            client = redis.Redis.from_url(url)
            assert client.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383) == b"OK"
            deadline = time.monotonic() + 20
            while b"cluster_state:ok" not in client.execute_command("CLUSTER", "INFO"):
                assert time.monotonic() < deadline, "the one-node cluster did not come up"
                time.sleep(0.05)
            yield client
            client.close()
    except FileNotFoundError as error:
        pytest.skip(str(error))


OPENERS = {
    "RedisBloomFilter": lambda client, key: RedisBloomFilter(client, key, 10_000, 0.01),
    "RedisFilterFamily": lambda client, key: RedisFilterFamily(client, key, 1_000, 0.01).member("u1"),
    "RedisWindowFilter": lambda client, key: RedisWindowFilter(
        client, key, capacity=10_000, error_rate=0.01, window="1h"
    ),
}


@pytest.mark.parametrize("kind", sorted(OPENERS))
def test_keys_in_several_slots_are_a_value_error_and_write_no_bits(cluster, kind):
    with pytest.raises(ValueError, match=ADVICE):
        OPENERS[kind](cluster, f"plain-{kind}").add_many(["a", "b"])
    # Whatever exists under the name holds no bits: only a parameters key may have been written.
    written = [key for key in cluster.keys(f"plain-{kind}*") if key != f"plain-{kind}".encode()]
    assert all(cluster.type(key) != b"string" or not any(cluster.get(key) or b"") for key in written)


@pytest.mark.parametrize("kind", sorted(OPENERS))
def test_a_hash_tagged_name_works_on_a_cluster(cluster, kind):
    f = OPENERS[kind](cluster, "{" + kind + "}")
    keys = [f"k{i}" for i in range(500)]
    new = ~f.add_many(keys)
    assert new.mean() > 0.98  # the rest were false positives at insert (at most 1 %)
    assert f.add_many(keys).all()  # exact test-and-set: nothing is new twice
    assert f.contains_many(keys).all()
