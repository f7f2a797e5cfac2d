"""Stage 10: the gardener — Phase 0 triage (nightly), Phase 1 refactoring (on demand, dry run by default)."""
