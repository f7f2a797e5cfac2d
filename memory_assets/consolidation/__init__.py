"""Stage 4: canonical_concepts (the Concept Memory Loop over the Semantic Mapper's mentions)."""
