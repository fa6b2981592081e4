"""Secrets to plant in landed rows: one of every kind the default patterns know.

Each is made up in its provider's documented format; none is a real credential. ``core`` is
the part that must never be found anywhere once the pipeline has run (for a bearer token,
the token, since the word "Bearer" is kept before its placeholder).
"""

from __future__ import annotations

PEM_BODY = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfnygWyF8PbnGy0AHB7MaF0"
PLANTED: dict[str, tuple[str, str]] = {  # kind: (text landed, core that must never reappear)
    "openai_key": ("sk-proj-aB3_dE6-gH9jK2mN5pQ8sT1vW4yZ7aB3_dE6", "aB3_dE6-gH9jK2mN5pQ8sT1vW4yZ7aB3_dE6"),
    "anthropic_key": ("sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0", "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0"),
    "aws_access_key_id": ("AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    "github_token": ("ghp_R2d2C3poR2d2C3poR2d2C3poR2d2C3poR2d2", "R2d2C3poR2d2C3poR2d2C3poR2d2C3po"),
    "slack_token": ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"),
    "google_api_key": ("AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    "stripe_key": ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    "jwt": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
    "bearer_token": ("Bearer tok3n.Q1w2E3r4T5y6U7i8", "tok3n.Q1w2E3r4T5y6U7i8"),
    "private_key": (f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----", PEM_BODY),
    "email": ("grace.hopper@example.com", "grace.hopper@example.com"),
    "credential": ("password=Tr0ub4dor&3", "Tr0ub4dor"),
    "uri_password": ("postgresql://zcl:S3cretPw0rd@10.0.0.5:5432/zcl", "S3cretPw0rd"),
    "basic_auth": ("Authorization: Basic dXNlcjpQbGFudGVkUGFzcw==", "dXNlcjpQbGFudGVkUGFzcw=="),
}
CORES: tuple[str, ...] = tuple(core for _, core in PLANTED.values())


def leaks(text: str) -> list[str]:
    """The planted cores found in ``text``."""
    return [core for core in CORES if core in text]
