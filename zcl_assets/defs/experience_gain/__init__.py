"""Experience Gain (memory on vs off, per task and pooled) and loop health."""
