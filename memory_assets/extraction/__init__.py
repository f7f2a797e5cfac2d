"""Stage 3: mentions and user reactions through the Semantic Mapper (offline teacher or an LLM)."""
