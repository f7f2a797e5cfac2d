"""Retrieval methods behind one interface (`base.Retriever`): flat BM25, flat dense, and the pipeline's memory."""
