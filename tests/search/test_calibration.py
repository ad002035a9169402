"""A calibrated abstention cosine carried to another query side: the same share of requests doubted."""

from __future__ import annotations

import numpy as np

from toolsearch.search.offline.calibration import cosine_at_share, doubted_share


def test_the_share_doubted_is_that_of_cosines_below_the_threshold() -> None:
    assert doubted_share(np.array([0.70, 0.80, 0.81, 0.90]), 0.808) == 0.5


def test_a_query_side_whose_cosines_are_lower_gets_a_threshold_as_much_lower() -> None:
    reference = np.linspace(0.70, 0.90, 201)
    share = doubted_share(reference, 0.808)
    assert cosine_at_share(reference - 0.05, share) == 0.758
    assert doubted_share(reference - 0.05, 0.758) == share
