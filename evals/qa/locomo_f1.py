"""LoCoMo QA scoring as the benchmark's own code does it: token F1 after normalisation.

Normalisation: lower case, punctuation removed, the articles a/an/the (and "and", as the benchmark's code
also drops it) removed, whitespace collapsed, every token Porter-stemmed (NLTK). Category 1 (multi-hop):
answer and prediction are split on commas, each gold part takes its best prediction part, the parts are
averaged. Category 3: the gold answer is its first `;` alternative. Category 5 (adversarial): 1 when the
prediction says the information is not mentioned / not available, else 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter

from nltk.stem import PorterStemmer

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
NOT_MENTIONED = ("not mentioned", "no information available")


class F1Scorer:
    def __init__(self):
        self._stemmer = PorterStemmer()

    def tokens(self, text: str) -> list[str]:
        text = _ARTICLES.sub(" ", str(text).lower().translate(_PUNCT))
        return [self._stemmer.stem(w) for w in text.split()]

    def f1(self, prediction: str, gold: str) -> float:
        pred, ref = self.tokens(prediction), self.tokens(gold)
        same = sum((Counter(pred) & Counter(ref)).values())
        if same == 0:
            return 0.0
        precision, recall = same / len(pred), same / len(ref)
        return 2 * precision * recall / (precision + recall)

    def score(self, category: int, prediction: str, gold: str) -> float:
        if category == 5:
            return float(any(p in prediction.lower() for p in NOT_MENTIONED))
        if category == 3:
            gold = gold.split(";")[0].strip()
        if category == 1:
            preds = [p.strip() for p in prediction.split(",")]
            golds = [g.strip() for g in gold.split(",")]
            return sum(max(self.f1(p, g) for p in preds) for g in golds) / len(golds)
        return self.f1(prediction, gold)
