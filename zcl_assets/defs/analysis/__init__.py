"""The nightly side: verified experience, frozen plans and one look per night."""
