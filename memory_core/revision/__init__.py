"""The revision layer (docs/architecture.md §1.6–1.7, §4.11–4.12)."""
