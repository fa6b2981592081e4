"""Landing files to raw and staged tables, one daily partition at a time."""
