"""``secret_key=``: from the user's secret bytes to the key the core hashes with.

A keyed filter hashes every key's canonical bytes with SipHash-2-4-128
(cpp/include/bloomkit/siphash.hpp) instead of MurmurHash3, so an adversary
who chooses keys cannot aim them at chosen bits (docs/RELIABILITY.md,
"Keyed hashing"). The secret may be any length from 16 bytes; it is turned
into SipHash's 128-bit key once, here, by BLAKE2b:

    master = BLAKE2b(secret_key, digest_size=16, person=b"bloomkit.key.v1")

The core derives each filter's SipHash key from ``master`` and the seed,
and stores only a key check (a SipHash output on a fixed label) in saved
frames, never the key.
"""

from __future__ import annotations

import hashlib

from ._core import SecretKeyError

__all__ = ["SecretKeyError", "master_key", "apply", "refuse_pickle"]

MIN_SECRET_BYTES = 16
_PERSON = b"bloomkit.key.v1"


def master_key(secret_key) -> bytes | None:
    """The 16-byte master key for ``secret_key`` (None stays None)."""
    if secret_key is None:
        return None
    if isinstance(secret_key, str) or not isinstance(secret_key, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"secret_key must be bytes (at least {MIN_SECRET_BYTES} random bytes, e.g. secrets.token_bytes(32)), "
            f"got {type(secret_key).__name__}"
        )
    secret = bytes(secret_key)
    if len(secret) < MIN_SECRET_BYTES:
        raise ValueError(
            f"secret_key must be at least {MIN_SECRET_BYTES} bytes (128 bits) long, got {len(secret)}; "
            "use secrets.token_bytes(32)"
        )
    return hashlib.blake2b(secret, digest_size=16, person=_PERSON).digest()


def apply(filter_, master: bytes | None) -> None:
    """Make a newly constructed, still empty filter keyed with ``master`` (from :func:`master_key`).

    Constructors derive ``master`` before building the core, so a bad
    secret_key raises before anything is allocated.
    """
    if master is not None:
        filter_._set_key(master)


def refuse_pickle(filter_) -> None:
    """Pickling a keyed filter would have to put the key in the pickle, or lose it: refuse."""
    if filter_.keyed:
        raise TypeError(
            f"cannot pickle a keyed {type(filter_).__name__}: its secret_key is never serialized. "
            "Send filter.to_bytes() and rebuild it with from_bytes(data, secret_key=...)"
        )
