"""Reliability tooling for issue 8: bad-input pages (:mod:`reliability.bad_pages`) and the soak script."""
