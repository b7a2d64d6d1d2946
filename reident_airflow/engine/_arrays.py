"""The NumPy array types that the engine's signatures name, defined once.

An internal module of the engine: its names are imported by the engine's modules only.
"""

import numpy as np
from numpy.typing import NDArray

__all__ = ["BoolArray", "FloatArray", "IntArray"]

#: Codes, class sizes, counts, indices.
IntArray = NDArray[np.int64]
#: Weights, risks, scores.
FloatArray = NDArray[np.float64]
#: Masks.
BoolArray = NDArray[np.bool_]
