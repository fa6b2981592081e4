"""The PostgreSQL source's resource, bound here so that the code location loads without it:
``ZCL_POSTGRES_URI`` is read when a run of ``postgres_landing`` starts, never at import."""

import dagster as dg

from resources.postgres import URI_VARIABLE, PostgresSource

defs = dg.Definitions(resources={"postgres": PostgresSource(uri=dg.EnvVar(URI_VARIABLE))})
