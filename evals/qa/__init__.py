"""QA mode: an LLM reader answers from retrieved evidence; an LLM judge (LongMemEval) or token F1 (LoCoMo) scores."""
