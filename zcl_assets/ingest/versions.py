"""What a derived table was built by: the fingerprint of the code that builds it.

A consumer of the change log (``zcl_assets.ingest.changelog``) keeps the fingerprint of its
code beside its cursor; a changed fingerprint (its SQL or rules edited) rebuilds it in full.
"""

from __future__ import annotations

import hashlib


def code_fingerprint(*code: str) -> str:
    """SHA-256 of code texts (SQL, rules): what a table was built by, whatever its inputs."""
    digest = hashlib.sha256()
    for text in code:
        digest.update(text.encode() + b"\x00")
    return digest.hexdigest()
