"""What staging does with sensitive values: the redactor and the pseudonym key of a run."""

from __future__ import annotations

from dataclasses import dataclass, field

from zcl_assets.privacy.pseudonyms import SQL_FUNCTION, key_from_environment
from zcl_assets.privacy.redaction import Redactor, current_redactor


@dataclass(frozen=True)
class PrivacyPolicy:
    """The patterns to redact and, optionally, the key that pseudonymises personal ids.

    Attributes:
        redactor: the patterns (defaults plus the user's).
        pseudonym_key: HMAC key for the contracts' ``personal`` fields; None leaves them as
            landed, and a value of one that matches a pattern is then refused. Never shown
            in a repr.
    """

    redactor: Redactor = field(default_factory=Redactor)
    pseudonym_key: bytes | None = field(default=None, repr=False)

    @property
    def pseudonym_function(self) -> str | None:
        """The SQL function that pseudonymises a personal field, or None without a key."""
        return SQL_FUNCTION if self.pseudonym_key else None


def current_policy() -> PrivacyPolicy:
    """The policy of this process, from ``ZCL_REDACTION_PATTERNS`` and ``ZCL_PSEUDONYM_KEY``.

    Raises:
        ValueError: a pattern file or the key is invalid.
    """
    return PrivacyPolicy(current_redactor(), key_from_environment())
