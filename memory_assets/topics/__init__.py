"""Stages 5-7: topics (tuned UMAP + HDBSCAN clusters of segments), weighted_links (topic → concept) and
domains (topics grouped, with anchor entities)."""
