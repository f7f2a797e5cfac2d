"""Stages 8-9: graph (the ontology in the graph store) and indexes (FAISS families and BM25 lexical indexes)
for the read side."""
