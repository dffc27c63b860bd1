"""The numeric family: Square Wave and 1BitMean reports, the channel, the spline fits and their
doubts."""
