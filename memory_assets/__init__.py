"""Dagster code location of Memory OS: one folder per stage (assets, checks, schedules, sensors), wired
together once in `definitions.py`. Assets are thin: they call `memory_core` with resources."""
