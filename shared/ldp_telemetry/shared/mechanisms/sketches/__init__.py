"""The count-mean sketches (cms, hcms): what they share, each one, and the row totals."""
