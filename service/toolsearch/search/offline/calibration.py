"""A model's abstention cosine carried to another query side of it, on training requests.

The calibrated thresholds (`embedding.manifest.Calibration`) judge the best tool's cosine to the
request before its words are translated (`Signals.untranslated`); a query side trained for
search (`embedding.query_layers`) moves those cosines, so e5's 0.808 doubts far more requests
than it did. e5's threshold was set at about the 5th percentile of servable requests' cosine;
the trained side's is set at the same percentile of its own cosines on the same requests: the
share of training requests that e5's threshold doubts (`doubted_share`) is the share the new
one doubts (`cosine_at_share`). The lexical thresholds stay: BM25F and the translated words are
the same whichever side embeds the request (words are embedded by the shared passage graph,
`Embedder.embed_words`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toolsearch.search.hybrid import HybridIndex
from toolsearch.search.offline.evaluation import Query


def judged_cosines(index: HybridIndex, queries: Sequence[Query]) -> np.ndarray:
    """For each query that names no tool (a named tool is never doubted), the cosine the
    thresholds judge: the best fused tool's before translation."""
    cosines = []
    for query in queries:
        request = index.request(query.text)
        if not len(request.named):
            cosines.append(index.evidence(query.text).signals.untranslated[0])
    return np.asarray(cosines, dtype=np.float64)


def doubted_share(cosines: np.ndarray, threshold: float) -> float:
    """The share of `cosines` below `threshold`."""
    return float(np.mean(cosines < threshold))


def cosine_at_share(cosines: np.ndarray, share: float) -> float:
    """The threshold below which `share` of `cosines` fall, rounded to three decimals as the
    manifests keep them."""
    return round(float(np.quantile(cosines, share)), 3)
