"""Renderings of looks and tables for the command line and the UI."""
