"""Sources that land their rows as landing files (docs/landing.md): the ZCL PostgreSQL schema.

Plain functions and dataclasses, no Dagster: ``resources/postgres.py`` and
``zcl_assets/defs/sources/`` put them in the code location, ``zcl import postgres`` runs them by hand.
"""
