"""Stage 1-2: messages (parse + store) and segments (rounds under a token cap)."""
