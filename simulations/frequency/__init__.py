"""Frequency estimation: the accuracy of each kind (rr, grr, cms, hcms, olh, oue, ss, hh)
against its closed form, and which one to choose for a domain and an epsilon."""
